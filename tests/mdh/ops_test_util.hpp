// SPDX-License-Identifier: MIT
// Helpers for the operator-library tests (ops_*.cpp): tensors, tolerant comparison, IR checks.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <mdh/mdh.hpp>

namespace ops_test {

using sizes_t = std::vector<std::int64_t>;

// A tensor of the shape `c` derives for `buffer`, random (never zero) when seed != 0.
template <class T, class C>
mdh::host_tensor<T> tensor(const C& c, const char* buffer, const sizes_t& n, std::uint64_t seed,
                           double lo = -1.0, double hi = 1.0) {
  mdh::host_tensor<T> t(c.shape(buffer, n));
  if (seed) t.randomize(seed, lo, hi);
  return t;
}

inline std::string show(const sizes_t& n) { return mdh::to_string(n); }

// Compares got[k] with want[k]: |got - want| <= rtol * scale[k] + atol, where scale[k] is the
// sum of the magnitudes of the terms that were combined into want[k] (for a reduction) or
// |want[k]| (element-wise); integer outputs use rtol = atol = 0 (exact). Reports the first few
// mismatches and checks the count, so a million elements cost one assertion.
template <class T>
void expect_close(const std::string& what, const mdh::host_tensor<T>& got,
                  const std::vector<double>& want, const std::vector<double>& scale, double rtol,
                  double atol = 0) {
  REQUIRE(static_cast<std::size_t>(got.size()) == want.size());
  std::size_t bad = 0;
  double worst = 0;
  std::ostringstream first;
  for (std::size_t k = 0; k < want.size(); ++k) {
    double g = static_cast<double>(got[static_cast<std::int64_t>(k)]);
    double err = std::fabs(g - want[k]);
    double bound = rtol * (scale.empty() ? std::fabs(want[k]) : scale[k]) + atol;
    if (!(err <= bound)) {  // also catches NaN
      if (bad < 5) first << "  [" << k << "] got " << g << ", want " << want[k] << "\n";
      ++bad;
    }
    double rel = err / (std::fabs(want[k]) + 1e-30);
    if (rel > worst && std::isfinite(rel)) worst = rel;
  }
  INFO(what, ": ", bad, " of ", want.size(), " elements off (rtol ", rtol, ", atol ", atol, ")\n",
       first.str());
  CHECK(bad == 0);
}

template <class T>
void expect_exact(const std::string& what, const mdh::host_tensor<T>& got,
                  const std::vector<double>& want) {
  expect_close(what, got, want, {}, 0.0, 0.0);
}

// ---------- symbolic IR against the numeric lambda ----------

template <class T>
T random_value(std::mt19937_64& rng, double lo, double hi) {
  if constexpr (std::is_same_v<T, bool>) {
    return (rng() & 1) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<std::int64_t> u(static_cast<std::int64_t>(lo),
                                                  static_cast<std::int64_t>(hi));
    return static_cast<T>(u(rng));
  } else {
    std::uniform_real_distribution<double> u(lo, hi);
    T x;
    do x = static_cast<T>(u(rng));
    while (x == T(0));
    return x;
  }
}

template <class Tuple, std::size_t... K>
Tuple random_tuple(std::mt19937_64& rng, double lo, double hi, double int_lo, double int_hi,
                   std::index_sequence<K...>) {
  auto one = [&]<class T>(T*) {
    return std::is_floating_point_v<T> ? random_value<T>(rng, lo, hi)
                                       : random_value<T>(rng, int_lo, int_hi);
  };
  return Tuple{one(static_cast<std::tuple_element_t<K, Tuple>*>(nullptr))...};
}
template <class Tuple>
Tuple random_tuple(std::mt19937_64& rng, double lo, double hi, double int_lo, double int_hi) {
  return random_tuple<Tuple>(rng, lo, hi, int_lo, int_hi,
                             std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

template <class Tuple>
std::vector<double> to_doubles(const Tuple& t) {
  return std::apply([](const auto&... x) { return std::vector<double>{double(x)...}; }, t);
}

// Numeric equality of two result values as computed in type T: exact for integers; for floats
// within `ulps` relative steps (transcendental functions may round differently in float and
// in double-then-float).
template <class T>
bool same_value(double a, double b, double rel) {
  if constexpr (!std::is_floating_point_v<T>) {
    return a == b;
  } else {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (a == b) return true;
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
  }
}

template <class Tuple, std::size_t... K>
bool same_tuple(const std::vector<double>& a, const std::vector<double>& b, double rel,
                std::index_sequence<K...>) {
  return (same_value<std::tuple_element_t<K, Tuple>>(a[K], b[K], rel) && ...);
}
template <class Tuple>
bool same_tuple(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  return a.size() == b.size() &&
         same_tuple<Tuple>(a, b, rel, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

inline std::string list(const std::vector<double>& v) {
  std::ostringstream os;
  os.precision(17);
  os << "(";
  for (std::size_t k = 0; k < v.size(); ++k) os << (k ? ", " : "") << v[k];
  return os.str() + ")";
}

// The computation's result tuple holding the custom operator's identity.
template <class C>
typename C::result_tuple identity_of(const C& c) {
  using R = typename C::result_tuple;
  const auto& id = c.ir().reduction.identity;
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return R{static_cast<std::tuple_element_t<K, R>>(id.at(K))...};
  }
  (std::make_index_sequence<std::tuple_size_v<R>>{});
}

// For `trials` random argument tuples: ir::evaluate(c.ir().f, args in IR order) equals
// c.apply(args...) (relative `rel` for floats, exact for integers; the interpreter computes
// exp/erf/... in double and rounds, the lambda calls the float functions). For a custom reduction,
// the recorded operator also equals c.combine on random results and on the identity.
template <class C>
void check_ir_matches_lambda(const C& c, std::uint64_t seed, double lo = -2.0, double hi = 2.0,
                             double int_lo = 0, double int_hi = 3, double rel = 1e-6,
                             int trials = 200) {
  using A = typename C::arg_types;
  using R = typename C::result_tuple;
  const mdh::ir::computation& ir = c.ir();
  std::vector<int> first;
  int n = 0;
  for (auto& b : ir.inputs) {
    first.push_back(n);
    n += int(b.accesses.size());
  }
  REQUIRE(std::size_t(n) == C::num_args);
  std::mt19937_64 rng(seed);
  std::size_t bad = 0;
  std::string example;
  std::vector<R> results;
  for (int t = 0; t < trials; ++t) {
    A args = random_tuple<A>(rng, lo, hi, int_lo, int_hi);
    std::vector<double> lambda_order = to_doubles(args);
    std::vector<double> ir_order(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < C::num_args; ++k) {
      auto [b, a] = c.arg_source()[k];
      ir_order[std::size_t(first[std::size_t(b)] + a)] = lambda_order[k];
    }
    R want = std::apply([&](const auto&... x) { return c.apply(x...); }, args);
    results.push_back(want);
    std::vector<double> got = mdh::ir::evaluate(ir.f, ir_order);
    if (!same_tuple<R>(got, to_doubles(want), rel)) {
      if (!bad++)
        example = "args " + list(lambda_order) + ": ir " + list(got) + ", lambda " +
                  list(to_doubles(want));
    }
  }
  {
    INFO(c.name(), ": scalar function, ", bad, " of ", trials, " samples differ; ", example);
    CHECK(bad == 0);
  }

  if constexpr (!std::is_void_v<typename C::reduction_type>) {
    if (ir.reduction.kind == mdh::ir::builtin::custom) {
      results.push_back(identity_of(c));
      std::size_t bad_op = 0;
      std::string ex;
      for (std::size_t t = 0; t + 1 < results.size(); ++t) {
        for (std::size_t u : {t + 1, results.size() - 1}) {  // a neighbour and the identity
          const R& l = results[t];
          const R& r = results[u];
          std::vector<double> args = to_doubles(l), rhs = to_doubles(r);
          args.insert(args.end(), rhs.begin(), rhs.end());
          std::vector<double> got = mdh::ir::evaluate(ir.reduction.custom, args);
          std::vector<double> want = to_doubles(c.combine(l, r));
          if (!same_tuple<R>(got, want, 1e-6) && !bad_op++)
            ex = "operands " + list(args) + ": ir " + list(got) + ", lambda " + list(want);
        }
      }
      INFO(c.name(), ": combine operator '", ir.reduction.name, "', ", bad_op, " samples differ; ",
           ex);
      CHECK(bad_op == 0);
    }
  }
}

// The laws of a custom combine operator on samples: identity (exact, both sides),
// commutativity (exact) and associativity (floats within rel_assoc, integers exact).
// `sample()` returns a result_tuple.
template <class C, class Sample>
void check_combine_laws(const C& c, Sample sample, int trials, double rel_assoc) {
  using R = typename C::result_tuple;
  const R e = identity_of(c);
  std::size_t bad_id = 0, bad_comm = 0, bad_assoc = 0;
  std::string ex_id, ex_comm, ex_assoc;
  auto same = [](const R& x, const R& y, double rel) {
    return same_tuple<R>(to_doubles(x), to_doubles(y), rel);
  };
  for (int t = 0; t < trials; ++t) {
    R a = sample(), b = sample(), d = sample();
    if (!same(c.combine(e, a), a, 0) || !same(c.combine(a, e), a, 0))
      if (!bad_id++) ex_id = list(to_doubles(a)) + " -> " + list(to_doubles(c.combine(e, a)));
    if (!same(c.combine(a, b), c.combine(b, a), 0))
      if (!bad_comm++)
        ex_comm = list(to_doubles(a)) + ", " + list(to_doubles(b)) + ": " +
                  list(to_doubles(c.combine(a, b))) + " vs " + list(to_doubles(c.combine(b, a)));
    R left = c.combine(c.combine(a, b), d), right = c.combine(a, c.combine(b, d));
    // Rounding differs with the grouping: compare relative to the operands' magnitudes.
    std::vector<double> l = to_doubles(left), r = to_doubles(right), sa = to_doubles(a),
                        sb = to_doubles(b), sd = to_doubles(d);
    bool assoc = same(left, right, 0);
    if (!assoc && rel_assoc > 0) {
      assoc = true;
      for (std::size_t k = 0; k < l.size(); ++k) {
        double scale = std::fabs(sa[k]) + std::fabs(sb[k]) + std::fabs(sd[k]) + std::fabs(l[k]);
        if (!(l[k] == r[k] || std::fabs(l[k] - r[k]) <= rel_assoc * scale)) assoc = false;
      }
    }
    if (!assoc)
      if (!bad_assoc++)
        ex_assoc = list(to_doubles(a)) + ", " + list(to_doubles(b)) + ", " + list(to_doubles(d)) +
                   ": " + list(to_doubles(left)) + " vs " + list(to_doubles(right));
  }
  const std::string op = c.ir().reduction.name;
  {
    INFO(op, ": identity fails on ", bad_id, " of ", trials, " samples; ", ex_id);
    CHECK(bad_id == 0);
  }
  {
    INFO(op, ": commutativity fails on ", bad_comm, " of ", trials, " samples; ", ex_comm);
    CHECK(bad_comm == 0);
  }
  {
    INFO(op, ": associativity fails on ", bad_assoc, " of ", trials, " samples; ", ex_assoc);
    CHECK(bad_assoc == 0);
  }
  // The identity with itself stays the identity (no NaN from -inf - -inf and the like).
  CHECK(same(c.combine(e, e), e, 0));
}

}  // namespace ops_test
