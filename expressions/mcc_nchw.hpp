// SPDX-License-Identifier: MIT
// MCC NCHW: O(n,k,p,q) = +_{c,r,s} I(n, c, sh*p+r, sw*q+s) * F(k,c,r,s);  (++ x4, pw(+) x3).
#pragma once

#include <cstdint>

#include <mdh/error.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

// Multi-channel convolution in PyTorch's/cuDNN's default layout (GTC'20, PACT'20 write MCC this
// way; benchmarks.md's conv3x3_resnet), VALID padding, strides (sh, sw), dilations (dh, dw).
// Sizes (n, k, p, q, c, r, s); the image extent is derived, H = sh*(P-1) + dh*(R-1) + 1.
template <class T = float>
auto mcc_nchw(std::int64_t stride_h = 1, std::int64_t stride_w = 1, std::int64_t dilation_h = 1,
              std::int64_t dilation_w = 1) {
  if (stride_h < 1 || stride_w < 1 || dilation_h < 1 || dilation_w < 1)
    throw error("mdh::ops::mcc_nchw: strides and dilations must be >= 1");
  auto [n, k, p, q, c, r, s] = indices<7>();
  return computation("mcc_nchw", out_view(out<T, "O">(n, k, p, q)),
                     md_hom([](auto x, auto f) { return x * f; }, cc, cc, cc, cc, pw(add), pw(add),
                            pw(add)),
                     inp_view(in<T, "I">(n, c, stride_h * p + dilation_h * r,
                                         stride_w * q + dilation_w * s),
                              in<T, "F">(k, c, r, s)))
      .with_dim_names({"n", "k", "p", "q", "c", "r", "s"});
}

}  // namespace mdh::ops
