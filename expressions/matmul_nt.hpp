// SPDX-License-Identifier: MIT
// MatMul with B transposed: C[i,j] = +_k A[i,k] * B[j,k]; (++, ++, pw(+)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// A linear layer with the weight stored as [out features, in features] (PyTorch's nn.Linear):
// Y = X W^T. Sizes (i, j, k).
template <class T = float>
auto matmul_nt() {
  auto [i, j, k] = indices<3>();
  return computation("matmul_nt", out_view(out<T, "C">(i, j)),
                     md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                     inp_view(in<T, "A">(i, k), in<T, "B">(j, k)))
      .with_dim_names({"i", "j", "k"});
}

}  // namespace mdh::ops
