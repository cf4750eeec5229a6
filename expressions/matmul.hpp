// SPDX-License-Identifier: MIT
// MatMul: C(i,j) = +_k A(i,k) * B(k,j);  md_hom(*, (++, ++, pw(+))) over (i, j, k).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// C = A * B with A I x K and B K x J, all row-major; sizes (i, j, k).
template <class T = float>
auto matmul() {
  auto [i, j, k] = indices<3>();
  return computation("matmul", out_view(out<T, "C">(i, j)),
                     md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                     inp_view(in<T, "A">(i, k), in<T, "B">(k, j)))
      .with_dim_names({"i", "j", "k"});
}

}  // namespace mdh::ops
