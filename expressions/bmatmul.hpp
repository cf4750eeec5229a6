// SPDX-License-Identifier: MIT
// bMatMul: C(b,i,j) = +_k A(b,i,k) * B(b,k,j);  md_hom(*, (++, ++, ++, pw(+))) over (b, i, j, k).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Batched MatMul with one batch dimension (TOPLAS Fig. 14); sizes (b, i, j, k).
template <class T = float>
auto bmatmul() {
  auto [b, i, j, k] = indices<4>();
  return computation("bmatmul", out_view(out<T, "C">(b, i, j)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, pw(add)),
                     inp_view(in<T, "A">(b, i, k), in<T, "B">(b, k, j)))
      .with_dim_names({"b", "i", "j", "k"});
}

}  // namespace mdh::ops
