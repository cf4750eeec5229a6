// SPDX-License-Identifier: MIT
// Softmax: (M,S)(r) = max_sum_c (X(r,c), 1), (++, pw(max_sum)); Y(r,c) = exp(X(r,c) - M(r)) / S(r).
#pragma once

#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The online-softmax operator on (running max, sum of exp(x - max)):
//   (m1, s1) max_sum (m2, s2) = (m, s1 * exp(m1 - m) + s2 * exp(m2 - m)), m = max(m1, m2),
// where a side whose max is m contributes its sum unscaled (select), so the identity
// (-inf, 0) combines exactly and never produces NaN (exp(-inf - -inf) is never taken).
inline auto max_sum() {
  return custom(
      "max_sum",
      [](auto lhs, auto rhs) {
        auto [m1, s1] = lhs;
        auto [m2, s2] = rhs;
        auto m = mdh::max(m1, m2);
        auto t1 = select(m1 == m, s1, s1 * mdh::exp(m1 - m));
        auto t2 = select(m2 == m, s2, s2 * mdh::exp(m2 - m));
        return std::make_tuple(m, t1 + t2);
      },
      -std::numeric_limits<double>::infinity(), 0.0);
}

// Softmax step 1, the row statistics in one pass: M(r) = max_c X(r,c) and
// S(r) = sum_c exp(X(r,c) - M(r)). Sizes (r, c); a [16,12,128,128] tensor is (16*12*128, 128).
// M and S are stored in the compute type (float for bf16/f16 X): a max rounded to 8 bits would
// scale a row's every output by exp(rounding error), 2 % for scores near 10.
template <class T = float>
auto softmax_stats() {
  static_assert(
      std::is_floating_point_v<T> || is_float16_v<T>,
      "mdh::ops::softmax_stats<T>() requires 'T' to be float, double, mdh::bf16 or mdh::f16");
  using V = compute_type_t<T>;
  auto [r, c] = indices<2>();
  return computation("softmax_stats", out_view(out<V, "M">(r), out<V, "S">(r)),
                     md_hom([](auto x) { return std::make_tuple(x, V(1)); }, cc, pw(max_sum())),
                     inp_view(in<T, "X">(r, c)))
      .with_dim_names({"r", "c"});
}

// Softmax step 2, the normalising map: Y(r,c) = exp(X(r,c) - M(r)) / S(r), M and S in the
// compute type (softmax_stats). Sizes (r, c).
template <class T = float>
auto softmax_normalize() {
  static_assert(
      std::is_floating_point_v<T> || is_float16_v<T>,
      "mdh::ops::softmax_normalize<T>() requires 'T' to be float, double, mdh::bf16 or mdh::f16");
  using V = compute_type_t<T>;
  auto [r, c] = indices<2>();
  return computation("softmax_normalize", out_view(out<T, "Y">(r, c)),
                     md_hom([](auto x, auto m, auto s) { return mdh::exp(x - m) / s; }, cc, cc),
                     inp_view(in<T, "X">(r, c), in<V, "M">(r), in<V, "S">(r)))
      .with_dim_names({"r", "c"});
}

// Both steps: `auto [stats, normalize] = mdh::ops::softmax();`, run in that order.
template <class T = float>
auto softmax() {
  return std::make_pair(softmax_stats<T>(), softmax_normalize<T>());
}

}  // namespace mdh::ops
