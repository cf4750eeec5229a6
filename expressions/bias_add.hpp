// SPDX-License-Identifier: MIT
// BiasAdd<NHWC>: OB1(n,h,w,c) = IB1(n,h,w,c) + IB2(c);  md_hom(+, (++, ++, ++, ++)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TensorFlow's BiasAdd in NHWC (C4ML'25 poster): the bias broadcast over n, h, w.
// Sizes (n, h, w, c).
template <class T = float>
auto bias_add() {
  auto [n, h, w, c] = indices<4>();
  return computation("bias_add", out_view(out<T, "OB1">(n, h, w, c)),
                     md_hom([](auto x, auto b) { return x + b; }, cc, cc, cc, cc),
                     inp_view(in<T, "IB1">(n, h, w, c), in<T, "IB2">(c)))
      .with_dim_names({"n", "h", "w", "c"});
}

}  // namespace mdh::ops
