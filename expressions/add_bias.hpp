// SPDX-License-Identifier: MIT
// Bias add over the last dimension of a rank-N tensor: Y[..., j] = X[..., j] + b[j]; (++, ..., ++).
#pragma once

#include <cstddef>
#include <tuple>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// A linear layer's bias. `X` names the input: a GEMM's output ("C") when add_bias is its
// epilogue (mdh::with_epilogue, expressions/gemm_epilogues.hpp). Sizes: the N dimensions of X.
template <class T = float, buffer_name X = "X", std::size_t N = 2>
auto add_bias() {
  return std::apply(
      [](auto... d) {
        const auto j = std::get<N - 1>(std::make_tuple(d...));
        return computation("add_bias", out_view(out<T, "Y">(d...)),
                           md_hom([](auto x, auto b) { return x + b; }, (void(d), cc)...),
                           inp_view(in<T, X>(d...), in<T, "b">(j)));
      },
      indices<N>());
}

}  // namespace mdh::ops
