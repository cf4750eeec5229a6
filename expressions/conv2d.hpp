// SPDX-License-Identifier: MIT
// Conv2D: O(p,q) = +_{r,s} I(p+r, q+s) * F(r,s);  md_hom(*, (++, ++, pw(+), pw(+))) over (p,q,r,s).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Single-channel 2-D convolution (cross-correlation, VALID): I is (P+R-1) x (Q+S-1);
// sizes (p, q, r, s).
template <class T = float>
auto conv2d() {
  auto [p, q, r, s] = indices<4>();
  return computation("conv2d", out_view(out<T, "O">(p, q)),
                     md_hom([](auto x, auto f) { return x * f; }, cc, cc, pw(add), pw(add)),
                     inp_view(in<T, "I">(p + r, q + s), in<T, "F">(r, s)))
      .with_dim_names({"p", "q", "r", "s"});
}

}  // namespace mdh::ops
