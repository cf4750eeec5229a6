// SPDX-License-Identifier: MIT
// Attention mask add: Y(b,h,i,j) = S(b,h,i,j) + (1 - mask(b,0,0,j)) * -10000;  md_hom(f, (++ x4)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// BERT's masked attention scores (benchmarks.md attn_mask_subgraph): scores[B,H,S,S] plus the
// additive mask built from mask[B,1,1,S], fused. Sizes (b, h, i, j), e.g. (16, 12, 128, 128).
template <class T = float>
auto attn_mask_add() {
  auto [b, h, i, j] = indices<4>();
  return computation("attn_mask_add", out_view(out<T, "Y">(b, h, i, j)),
                     md_hom(
                         [](auto s, auto m) {
                           using V = compute_type_t<T>;
                           return s + (V(1) - m) * V(-10000);
                         },
                         cc, cc, cc, cc),
                     inp_view(in<T, "S">(b, h, i, j), in<T, "mask">(b, 0, 0, j)))
      .with_dim_names({"b", "h", "i", "j"});
}

}  // namespace mdh::ops
