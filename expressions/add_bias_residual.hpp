// SPDX-License-Identifier: MIT
// Bias and residual add: Y[..., j] = X[..., j] + b[j] + R[..., j]; (++, ..., ++).
#pragma once

#include <cstddef>
#include <tuple>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// BERT's attention-output and FFN-output projections end so (then layernorm). `X` names the
// input: a GEMM's output ("C") when this is its epilogue (expressions/gemm_epilogues.hpp).
template <class T = float, buffer_name X = "X", std::size_t N = 2>
auto add_bias_residual() {
  return std::apply(
      [](auto... d) {
        const auto j = std::get<N - 1>(std::make_tuple(d...));
        return computation(
            "add_bias_residual", out_view(out<T, "Y">(d...)),
            md_hom([](auto x, auto b, auto r) { return x + b + r; }, (void(d), cc)...),
            inp_view(in<T, X>(d...), in<T, "b">(j), in<T, "R">(d...)));
      },
      indices<N>());
}

}  // namespace mdh::ops
