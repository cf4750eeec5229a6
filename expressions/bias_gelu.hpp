// SPDX-License-Identifier: MIT
// Bias + GELU: Y(i,j) = gelu(X(i,j) + b(j)), gelu(v) = 0.5 v (1 + erf(v / sqrt 2)); (++, ++).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// BERT's FFN activation fused with its bias (benchmarks.md bias_gelu), the exact erf form.
// Sizes (i, j), e.g. (2048, 3072). `X` names the input: a GEMM's output ("C") when bias_gelu is
// its epilogue (mdh::with_epilogue, expressions/gemm_epilogues.hpp).
template <class T = float, buffer_name X = "X">
auto bias_gelu() {
  auto [i, j] = indices<2>();
  return computation("bias_gelu", out_view(out<T, "Y">(i, j)),
                     md_hom(
                         [](auto x, auto b) {
                           auto v = x + b;
                           using V = compute_type_t<T>;
                           return V(0.5) * v * (V(1) + mdh::erf(v * V(0.70710678118654752440)));
                         },
                         cc, cc),
                     inp_view(in<T, X>(i, j), in<T, "b">(j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
