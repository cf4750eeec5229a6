// SPDX-License-Identifier: MIT
// MCC NHWC: O(n,p,q,k) = +_{r,s,c} I(n, sh*p+r, sw*q+s, c) * F(k,r,s,c);  (++ x4, pw(+) x3).
#pragma once

#include <cstdint>

#include <mdh/error.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

// Multi-channel convolution as in TOPLAS (ResNet-50/VGG-16/MobileNet layers), VALID padding,
// with strides (sh, sw) and dilations (dh, dw): I(n, sh*p + dh*r, sw*q + dw*s, c).
// Sizes (n, p, q, k, r, s, c); the image extent is derived, H = sh*(P-1) + dh*(R-1) + 1
// (e.g. 229 for ResNet-50's first layer: its 230th row is never read).
template <class T = float>
auto mcc(std::int64_t stride_h = 1, std::int64_t stride_w = 1, std::int64_t dilation_h = 1,
         std::int64_t dilation_w = 1) {
  if (stride_h < 1 || stride_w < 1 || dilation_h < 1 || dilation_w < 1)
    throw error("mdh::ops::mcc: strides and dilations must be >= 1");
  auto [n, p, q, k, r, s, c] = indices<7>();
  return computation("mcc", out_view(out<T, "O">(n, p, q, k)),
                     md_hom([](auto x, auto f) { return x * f; }, cc, cc, cc, cc, pw(add), pw(add),
                            pw(add)),
                     inp_view(in<T, "I">(n, stride_h * p + dilation_h * r,
                                         stride_w * q + dilation_w * s, c),
                              in<T, "F">(k, r, s, c)))
      .with_dim_names({"n", "p", "q", "k", "r", "s", "c"});
}

}  // namespace mdh::ops
