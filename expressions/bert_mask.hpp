// SPDX-License-Identifier: MIT
// BERT mask subgraph: OB1(i1,i2,i3,i4) = (1 - IB1(i1,i3,0) * IB2(i1,0,i4)) * -10000; (++ x4).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The fused attention-mask subgraph of SC21 Fig. 1, Mul -> ExpandDims<1> -> Sub(1, .) ->
// Mul(., -10000) as one md_hom: float32[16,1,384,384] from m1 = IB1[16,384,1] and
// m2 = IB2[16,1,384], i.e. sizes (16, 1, 384, 384).
template <class T = float>
auto bert_mask() {
  auto [i1, i2, i3, i4] = indices<4>();
  return computation("bert_mask", out_view(out<T, "OB1">(i1, i2, i3, i4)),
                     md_hom(
                         [](auto x1, auto x2) {
                           using V = compute_type_t<T>;
                           return (V(1) - x1 * x2) * V(-10000);
                         },
                         cc, cc, cc, cc),
                     inp_view(in<T, "IB1">(i1, i3, 0), in<T, "IB2">(i1, 0, i4)))
      .with_dim_names({"i1", "i2", "i3", "i4"});
}

}  // namespace mdh::ops
