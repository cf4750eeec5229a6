// SPDX-License-Identifier: MIT
// reduce(+, max): (Sum(), Max()) = sum_max_i (X(i), X(i));  md_hom(x -> (x, x), (pw(sum_max))).
#pragma once

#include <limits>
#include <tuple>
#include <type_traits>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The tuple operator (+, max) of two results: (s1, m1) sum_max (s2, m2) = (s1 + s2, max(m1, m2)),
// identity (0, -inf). Component-wise, hence associative and commutative.
inline auto sum_max() {
  return custom(
      "sum_max",
      [](auto lhs, auto rhs) {
        return std::make_tuple(std::get<0>(lhs) + std::get<0>(rhs),
                               mdh::max(std::get<1>(lhs), std::get<1>(rhs)));
      },
      0.0, -std::numeric_limits<double>::infinity());
}

// Two reductions of one vector in one pass (TOPLAS Fig. 14, reduce(⊕,⊗)): its sum and its
// maximum, both written to rank-0 outputs. Size (i).
template <class T = float>
auto reduce_sum_max() {
  static_assert(std::is_floating_point_v<T> || is_float16_v<T>,
                "mdh::ops::reduce_sum_max<T>() requires 'T' to be float or double (its "
                "identity is -inf)");
  auto [i] = indices<1>();
  return computation("reduce_sum_max", out_view(out<T, "Sum">(), out<T, "Max">()),
                     md_hom([](auto x) { return std::make_tuple(x, x); }, pw(sum_max())),
                     inp_view(in<T, "X">(i)))
      .with_dim_names({"i"});
}

}  // namespace mdh::ops
