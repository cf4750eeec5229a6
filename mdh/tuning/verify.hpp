// SPDX-License-Identifier: MIT
// Compares a kernel's outputs with the CPU reference's. Integers must match exactly; floating
// outputs by relative L2 error ||got - want|| / ||want|| under a tolerance that grows with the
// reduction length (both sides round, in different orders); a NaN or infinity where the
// reference has a finite value (an unwritten, poisoned element) never passes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/tensor.hpp>

namespace mdh::tuning {

// How many terms are combined into one output element (product of the pw/ps dimensions).
inline std::int64_t reduction_length(const ir::computation& c,
                                     const std::vector<std::int64_t>& sizes) {
  std::int64_t l = 1;
  for (std::size_t d = 0; d < c.rank(); ++d)
    if (c.is_reduction(d)) l *= sizes[d];
  return l;
}

// A fused pair: the longer of its stages' reductions (the second stage's outputs depend on both).
inline std::int64_t reduction_length(const ir::fused& f, const std::vector<std::int64_t>& sizes) {
  return std::max(reduction_length(f.first, sizes), reduction_length(f.second, sizes));
}

inline double tolerance(scalar_type t, std::int64_t reduction_length) {
  double eps = t == scalar_type::f32 ? 1e-5 : 1e-12;
  double per_term = t == scalar_type::f32 ? 1e-6 : 1e-14;
  return eps + per_term * std::sqrt(double(reduction_length));
}

namespace detail {
template <class T>
std::string compare_typed(const T* got, const T* want, std::int64_t n, double tol) {
  if constexpr (std::is_floating_point_v<T>) {
    double diff2 = 0, ref2 = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      double g = double(got[k]), w = double(want[k]);
      if (std::isfinite(w) != std::isfinite(g) || (std::isnan(w) != std::isnan(g)))
        return "element " + std::to_string(k) + " is " + std::to_string(g) + ", expected " +
               std::to_string(w);
      if (!std::isfinite(w)) {
        if (g != w) return "element " + std::to_string(k) + " has the wrong infinity";
        continue;
      }
      diff2 += (g - w) * (g - w);
      ref2 += w * w;
    }
    double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    if (!(rel <= tol))
      return "relative L2 error " + std::to_string(rel) + " above tolerance " + std::to_string(tol);
    return {};
  } else {
    for (std::int64_t k = 0; k < n; ++k)
      if (got[k] != want[k])
        return "element " + std::to_string(k) + " is " + std::to_string(got[k]) + ", expected " +
               std::to_string(want[k]);
    return {};
  }
}
}  // namespace detail

// Empty when `got` matches `want`; otherwise what differs.
inline std::string compare(const buffer_ref& got, const buffer_ref& want,
                           std::int64_t reduction_len) {
  if (got.type != want.type || got.shape != want.shape) return "type or shape differs";
  double tol = tolerance(want.type, reduction_len);
  switch (want.type) {
    case scalar_type::f32:
      return detail::compare_typed(got.as<float>(), want.as<float>(), want.size(), tol);
    case scalar_type::f64:
      return detail::compare_typed(got.as<double>(), want.as<double>(), want.size(), tol);
    case scalar_type::i32:
      return detail::compare_typed(got.as<std::int32_t>(), want.as<std::int32_t>(), want.size(),
                                   tol);
    case scalar_type::i64:
      return detail::compare_typed(got.as<std::int64_t>(), want.as<std::int64_t>(), want.size(),
                                   tol);
    case scalar_type::boolean:
      return detail::compare_typed(got.as<bool>(), want.as<bool>(), want.size(), tol);
  }
  return "unknown type";
}

}  // namespace mdh::tuning
