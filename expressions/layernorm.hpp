// SPDX-License-Identifier: MIT
// LayerNorm: (S,Q)(r) = +_c (X, X*X), (++, pw(+)); then Y = (X - mean) / sqrt(var + eps) * g + b.
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include <mdh/error.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

// LayerNorm step 1, the row statistics in one pass: S(r) = sum_c X(r,c) and
// Q(r) = sum_c X(r,c)^2 (pw(add) on both components). Sizes (r, c), e.g. (2048, 768).
// S and Q are stored in the compute type (float for bf16/f16 X): rounded to 8 bits, the
// variance Q/cols - mean^2 would lose all its digits once the mean exceeds the spread.
template <class T = float>
auto layernorm_stats() {
  static_assert(
      std::is_floating_point_v<T> || is_float16_v<T>,
      "mdh::ops::layernorm_stats<T>() requires 'T' to be float, double, mdh::bf16 or mdh::f16");
  using V = compute_type_t<T>;
  auto [r, c] = indices<2>();
  return computation("layernorm_stats", out_view(out<V, "S">(r), out<V, "Q">(r)),
                     md_hom([](auto x) { return std::make_tuple(x, x * x); }, cc, pw(add)),
                     inp_view(in<T, "X">(r, c)))
      .with_dim_names({"r", "c"});
}

// LayerNorm step 2, the normalising map over rows of `cols` elements:
//   mean = S(r)/cols, var = max(Q(r)/cols - mean^2, 0),
//   Y(r,c) = (X(r,c) - mean) / sqrt(var + eps) * gamma(c) + beta(c).
// S and Q in the compute type, as layernorm_stats writes them. `cols` must equal the c size of both
// steps (BERT: 768, eps 1e-12). Sizes (r, c).
template <class T = float>
auto layernorm_normalize(std::int64_t cols, compute_type_t<T> eps = compute_type_t<T>(1e-12)) {
  static_assert(
      std::is_floating_point_v<T> || is_float16_v<T>,
      "mdh::ops::layernorm_normalize<T>() requires 'T' to be float, double, mdh::bf16 or mdh::f16");
  if (cols < 1) throw error("mdh::ops::layernorm_normalize: cols must be >= 1");
  using V = compute_type_t<T>;  // bf16/f16 compute in float
  const V inv_n = V(1) / V(cols);
  auto [r, c] = indices<2>();
  return computation("layernorm_normalize", out_view(out<T, "Y">(r, c)),
                     md_hom(
                         [inv_n, eps](auto x, auto s, auto q, auto g, auto b) {
                           auto mean = s * inv_n;
                           auto var = mdh::max(q * inv_n - mean * mean, V(0));
                           return (x - mean) / mdh::sqrt(var + eps) * g + b;
                         },
                         cc, cc),
                     inp_view(in<T, "X">(r, c), in<V, "S">(r), in<V, "Q">(r), in<T, "gamma">(c),
                              in<T, "beta">(c)))
      .with_dim_names({"r", "c"});
}

// Both steps: `auto [stats, normalize] = mdh::ops::layernorm(768);`, run in that order.
template <class T = float>
auto layernorm(std::int64_t cols, compute_type_t<T> eps = compute_type_t<T>(1e-12)) {
  return std::make_pair(layernorm_stats<T>(), layernorm_normalize<T>(cols, eps));
}

}  // namespace mdh::ops
