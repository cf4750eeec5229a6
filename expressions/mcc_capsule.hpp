// SPDX-License-Identifier: MIT
// MCC_Capsule: O(n,p,q,k,mi,mj) = +_{r,s,c,mk} I(n,p+r,q+s,c,mi,mk) * F(k,r,s,c,mk,mj).
#pragma once

#include <cstdint>

#include <mdh/error.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

// The capsule variant of MCC (TOPLAS Fig. 14): every image and filter element is a matrix
// (MI x MK and MK x MJ, 4 x 4 in TOPLAS). Ten dimensions (n, p, q, k, r, s, c, mi, mj, mk)
// with combine operators (++,++,++,++, pw(+),pw(+),pw(+), ++,++, pw(+)); strides as in mcc.
template <class T = float>
auto mcc_capsule(std::int64_t stride_h = 1, std::int64_t stride_w = 1) {
  if (stride_h < 1 || stride_w < 1) throw error("mdh::ops::mcc_capsule: strides must be >= 1");
  auto [n, p, q, k, r, s, c, mi, mj, mk] = indices<10>();
  return computation("mcc_capsule", out_view(out<T, "O">(n, p, q, k, mi, mj)),
                     md_hom([](auto x, auto f) { return x * f; }, cc, cc, cc, cc, pw(add), pw(add),
                            pw(add), cc, cc, pw(add)),
                     inp_view(in<T, "I">(n, stride_h * p + r, stride_w * q + s, c, mi, mk),
                              in<T, "F">(k, r, s, c, mk, mj)))
      .with_dim_names({"n", "p", "q", "k", "r", "s", "c", "mi", "mj", "mk"});
}

}  // namespace mdh::ops
