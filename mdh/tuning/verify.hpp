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
#include <mdh/ir/with_producer.hpp>
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

// A with_producer pair (attention): two reductions in sequence, the producer's (head dim D)
// and the consumer's (keys S). Their f32 bounds add (tolerance below): the length L with
// 84 eps + 8.4 eps sqrt(L) = (84 eps + 8.4 eps sqrt(D)) + (84 eps + 8.4 eps sqrt(S)) is
// (sqrt(D) + sqrt(S) + 10)^2; a 16-bit output is still rounded once.
inline std::int64_t reduction_length(const ir::produced& x,
                                     const std::vector<std::int64_t>& sizes) {
  const auto ps = ir::producer_sizes(x, sizes);
  const double r = std::sqrt(double(reduction_length(x.producer, ps))) +
                   std::sqrt(double(reduction_length(x.consumer, ir::consumer_sizes(x, sizes)))) +
                   10;
  return std::int64_t(std::ceil(r * r));
}

// Machine epsilon (the distance from 1 to the next value) of a floating element type.
constexpr double machine_epsilon(scalar_type t) {
  switch (t) {
    case scalar_type::f64:
      return 0x1p-52;
    case scalar_type::bf16:
      return 0x1p-7;
    case scalar_type::f16:
      return 0x1p-10;
    default:
      return 0x1p-23;  // f32 (and what the integer types are never compared with)
  }
}

// The relative L2 error a correct kernel may have against the reference, for outputs stored as
// t after a reduction of `reduction_length` terms; the derivation is in docs/expressions.md
// ("Tolerances"). Kernel and reference read the same inputs (TF32-rounded alike when the
// computation reads TF32) and compute f in the same types; they differ in the order of the
// accumulation, whose rounding errors add up like a random walk (~ eps * sqrt(K) for inputs of
// random sign, not the worst case eps * K), and bf16/f16 outputs may then round to neighbouring
// values: at most one unit in the last place, relative eps_t, per element (and once more
// through an intermediate a fused pair stores in 16 bits).
//   f32: 84 eps + 8.4 eps sqrt(K)  (= 1e-5 + 1e-6 sqrt(K))
//   f64: 1e-12 + 1e-14 sqrt(K)
//   bf16, f16 (accumulated in f32 or f64): 2 eps_t + the f32 bound
inline double tolerance(scalar_type t, std::int64_t reduction_length) {
  const double k = std::sqrt(double(reduction_length));
  if (t == scalar_type::f64) return 1e-12 + 1e-14 * k;
  const double f32 =
      84 * machine_epsilon(scalar_type::f32) + 8.4 * machine_epsilon(scalar_type::f32) * k;
  return is_float16(t) ? 2 * machine_epsilon(t) + f32 : f32;
}

namespace detail {
template <class T>
std::string compare_typed(const T* got, const T* want, std::int64_t n, double tol) {
  if constexpr (std::is_floating_point_v<T> || is_float16_v<T>) {
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
    case scalar_type::bf16:
      return detail::compare_typed(got.as<bf16>(), want.as<bf16>(), want.size(), tol);
    case scalar_type::f16:
      return detail::compare_typed(got.as<f16>(), want.as<f16>(), want.size(), tol);
  }
  return "unknown type";
}

}  // namespace mdh::tuning
