// SPDX-License-Identifier: MIT
// MatMulT: C(j,i) = +_k A(k,i) * B(j,k);  md_hom(*, (++, ++, pw(+))) over (i, j, k).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The transposed MatMul of TOPLAS Fig. 14: C^T = A^T * B^T with A K x I, B J x K, C J x I
// (all row-major); sizes (i, j, k).
template <class T = float>
auto matmul_t() {
  auto [i, j, k] = indices<3>();
  return computation("matmul_t", out_view(out<T, "C">(j, i)),
                     md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                     inp_view(in<T, "A">(k, i), in<T, "B">(j, k)))
      .with_dim_names({"i", "j", "k"});
}

}  // namespace mdh::ops
