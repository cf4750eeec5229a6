// SPDX-License-Identifier: MIT
// Operator library: data-parallel patterns (PRL, histogram, scan, map, reduce, MBBS) against hand
// loops, and the laws of the custom combine operators.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <expressions/all.hpp>

#include "ops_test_util.hpp"

using namespace ops_test;
using mdh::host_tensor;
using mdh::reference;

namespace {
constexpr double kReduceTol = 1e-5;  // times the sum of |terms| (see ops_linalg.cpp)
}  // namespace

// ---------------------------------------------------------------- PRL

TEST_CASE("ops::prl against a loop (ties broken by the smaller id)") {
  const auto f0 = mdh::ops::prl_field::from_probabilities(0.95, 0.01);
  const auto f1 = mdh::ops::prl_field::from_probabilities(0.9, 0.1);
  auto c = mdh::ops::prl();
  for (auto [I, J] :
       std::vector<std::pair<int, int>>{{1, 1}, {7, 33}, {100, 7}, {33, 100}, {500, 1000}}) {
    auto n = c.sizes(I, J);
    // Few distinct field values, so equal weights (ties) are frequent.
    auto N0 = tensor<std::int32_t>(c, "N0", n, 301, 1, 3);
    auto N1 = tensor<std::int32_t>(c, "N1", n, 302, 1, 4);
    auto E0 = tensor<std::int32_t>(c, "E0", n, 303, 1, 3);
    auto E1 = tensor<std::int32_t>(c, "E1", n, 304, 1, 4);
    host_tensor<std::int32_t> id(c.shape("E_id", n));
    std::iota(id.vector().begin(), id.vector().end(), 1000);
    std::shuffle(id.vector().begin(), id.vector().end(), std::mt19937_64(305));
    host_tensor<float> Mw(c.shape("M_w", n));
    host_tensor<std::int32_t> Mid(c.shape("M_id", n));
    reference(c, n, {N0, N1, E0, E1, id}, {Mw, Mid});
    std::vector<double> ww, wid;
    for (int i = 0; i < I; ++i) {
      float best = -std::numeric_limits<float>::infinity();
      std::int32_t best_id = std::numeric_limits<std::int32_t>::max();
      for (int j = 0; j < J; ++j) {
        float w =
            (N0[i] == E0[j] ? f0.agree : f0.disagree) + (N1[i] == E1[j] ? f1.agree : f1.disagree);
        if (w > best || (w == best && id[j] < best_id)) best = w, best_id = id[j];
      }
      ww.push_back(best), wid.push_back(best_id);
    }
    expect_exact("prl weight " + show(n), Mw, ww);
    expect_exact("prl id " + show(n), Mid, wid);
  }
  CHECK_THROWS_AS(mdh::ops::prl_field::from_probabilities(1.0, 0.5), mdh::error);
}

// ---------------------------------------------------------------- histogram

TEST_CASE("ops::histogram against a loop (exact int32 counts)") {
  auto c = mdh::ops::histogram();
  for (auto [E, B] : std::vector<std::pair<int, int>>{{1, 1}, {100, 7}, {1000, 33}, {100003, 16}}) {
    auto n = c.sizes(E, B);
    auto elems = tensor<std::int32_t>(c, "Elems", n, 311 + E, 1, 12);
    host_tensor<std::int32_t> bins(c.shape("Bins", n));
    std::iota(bins.vector().begin(), bins.vector().end(), 0);  // bin 0 stays empty
    host_tensor<std::int32_t> out(c.shape("Out", n));
    reference(c, n, {elems, bins}, {out});
    std::vector<double> want(B);
    for (int e = 0; e < E; ++e)
      for (int b = 0; b < B; ++b) want[b] += elems[e] == bins[b];
    expect_exact("histogram " + show(n), out, want);
    if (B == 16) CHECK(std::accumulate(out.vector().begin(), out.vector().begin() + 13, 0) == E);
  }
}

// ---------------------------------------------------------------- scan, map, reduce, MBBS

TEST_CASE("ops::scan against a loop") {
  for (std::int64_t N : {1, 7, 33, 100, 10007}) {
    auto c = mdh::ops::scan();
    auto n = c.sizes(N);
    auto x = tensor<float>(c, "X", n, 321);
    host_tensor<float> y(c.shape("Y", n));
    reference(c, n, {x}, {y});
    std::vector<double> want, mag;
    double s = 0, m = 0;
    for (std::int64_t i = 0; i < N; ++i) {
      s += x[i], m += std::fabs(x[i]);
      want.push_back(s), mag.push_back(m);
    }
    expect_close("scan(add) N=" + std::to_string(N), y, want, mag, kReduceTol);

    auto cm = mdh::ops::scan<float>(mdh::max, "scan_max");
    host_tensor<float> ym(cm.shape("Y", n));
    reference(cm, n, {x}, {ym});
    want.clear();
    double best = -INFINITY;
    for (std::int64_t i = 0; i < N; ++i) want.push_back(best = std::max(best, double(x[i])));
    expect_exact("scan(max) N=" + std::to_string(N), ym, want);

    auto ci = mdh::ops::scan<std::int32_t>();
    auto xi = tensor<std::int32_t>(ci, "X", n, 322, -100, 100);
    host_tensor<std::int32_t> yi(ci.shape("Y", n));
    reference(ci, n, {xi}, {yi});
    want.clear();
    double t = 0;
    for (std::int64_t i = 0; i < N; ++i) want.push_back(t += xi[i]);
    expect_exact("scan<int32_t>(add) N=" + std::to_string(N), yi, want);
  }
}

TEST_CASE("ops::map against a loop") {
  auto sq = mdh::ops::map([](auto x) { return x * x + 1.0f; }, "square_plus_one");
  auto to_int = mdh::ops::map<float, std::int32_t>(
      [](auto x) { return mdh::cast<std::int32_t>(x * 100.0f); }, "quantize");
  for (std::int64_t N : {1, 7, 33, 100, 100000}) {
    auto n = sq.sizes(N);
    auto x = tensor<float>(sq, "X", n, 331);
    host_tensor<float> y(sq.shape("Y", n));
    host_tensor<std::int32_t> q(to_int.shape("Y", n));
    reference(sq, n, {x}, {y});
    reference(to_int, n, {x}, {q});
    std::vector<double> want, wq;
    for (std::int64_t i = 0; i < N; ++i) {
      want.push_back(double(x[i]) * x[i] + 1);
      wq.push_back(double(std::int32_t(x[i] * 100.0f)));  // the same float product, truncated
    }
    expect_close("map x*x+1 N=" + std::to_string(N), y, want, {}, 1e-6);
    expect_exact("map quantize N=" + std::to_string(N), q, wq);
  }
}

TEST_CASE("ops::reduce against a loop") {
  for (std::int64_t N : {1, 7, 33, 100, 100003}) {
    auto c = mdh::ops::reduce();
    auto n = c.sizes(N);
    auto x = tensor<float>(c, "X", n, 341 + N);
    host_tensor<float> y(c.shape("Y", n));
    CHECK(y.shape().empty());
    reference(c, n, {x}, {y});
    double s = 0, m = 0, mx = -INFINITY, mn = INFINITY;
    for (std::int64_t i = 0; i < N; ++i)
      s += x[i], m += std::fabs(x[i]), mx = std::max(mx, double(x[i])),
                                       mn = std::min(mn, double(x[i]));
    expect_close("reduce(add) N=" + std::to_string(N), y, {s}, {m}, kReduceTol);

    auto cmax = mdh::ops::reduce<float>(mdh::max, "reduce_max");
    auto cmin = mdh::ops::reduce<float>(mdh::min, "reduce_min");
    host_tensor<float> ymax(cmax.shape("Y", n)), ymin(cmin.shape("Y", n));
    reference(cmax, n, {x}, {ymax});
    reference(cmin, n, {x}, {ymin});
    expect_exact("reduce(max) N=" + std::to_string(N), ymax, {mx});
    expect_exact("reduce(min) N=" + std::to_string(N), ymin, {mn});

    // A scalar custom operator: the element of largest magnitude (ties: the larger value).
    auto absmax = mdh::custom(
        "absmax",
        [](auto a, auto b) {
          auto take_b = (mdh::abs(b) > mdh::abs(a)) || ((mdh::abs(b) == mdh::abs(a)) && (b > a));
          return mdh::select(take_b, b, a);
        },
        0.0);
    auto ca = mdh::ops::reduce<float>(absmax, "reduce_absmax");
    host_tensor<float> ya(ca.shape("Y", n));
    reference(ca, n, {x}, {ya});
    double best = 0;
    for (std::int64_t i = 0; i < N; ++i)
      if (std::fabs(x[i]) > std::fabs(best) || (std::fabs(x[i]) == std::fabs(best) && x[i] > best))
        best = x[i];
    expect_exact("reduce(absmax) N=" + std::to_string(N), ya, {best});
    check_combine_laws(
        ca,
        [rng = std::mt19937_64(343)]() mutable {
          return std::tuple<float>(random_value<float>(rng, -2, 2) * float(rng() % 2 ? 1 : -1));
        },
        200, 0);
  }
}

TEST_CASE("ops::reduce_sum_max (two results, one tuple operator) against a loop") {
  auto c = mdh::ops::reduce_sum_max();
  for (std::int64_t N : {1, 7, 33, 100, 100003}) {
    auto n = c.sizes(N);
    auto x = tensor<float>(c, "X", n, 351 + N);
    host_tensor<float> s(c.shape("Sum", n)), m(c.shape("Max", n));
    reference(c, n, {x}, {s, m});
    double ws = 0, mag = 0, wm = -INFINITY;
    for (std::int64_t i = 0; i < N; ++i)
      ws += x[i], mag += std::fabs(x[i]), wm = std::max(wm, double(x[i]));
    expect_close("reduce_sum_max sum N=" + std::to_string(N), s, {ws}, {mag}, kReduceTol);
    expect_exact("reduce_sum_max max N=" + std::to_string(N), m, {wm});
  }
}

TEST_CASE("ops::mbbs against a loop") {
  auto c = mdh::ops::mbbs();
  for (auto [I, J] : std::vector<std::pair<int, int>>{{1, 1}, {7, 33}, {100, 7}, {33, 100}}) {
    auto n = c.sizes(I, J);
    auto x = tensor<float>(c, "X", n, 361);
    host_tensor<float> y(c.shape("Y", n));
    reference(c, n, {x}, {y});
    std::vector<double> want, mag;
    double s = 0, m = 0;
    for (int i = 0; i < I; ++i) {
      for (int j = 0; j < J; ++j) s += x.at({i, j}), m += std::fabs(x.at({i, j}));
      want.push_back(s), mag.push_back(m);
    }
    expect_close("mbbs " + show(n), y, want, mag, kReduceTol);
  }
}

// ---------------------------------------------------------------- combine-operator laws

TEST_CASE("max_prl: identity, commutativity, associativity (exact)") {
  auto c = mdh::ops::prl();
  std::mt19937_64 rng(401);
  // Few weights and ids, so ties in weight and in id both occur.
  auto sample = [&] {
    const float w[] = {-7.5f, -1.25f, 0.0f, 3.17f, 6.57f, -INFINITY};
    return std::tuple<float, std::int32_t>(w[rng() % 6], std::int32_t(rng() % 5));
  };
  check_combine_laws(c, sample, 2000, 0);
  // The larger weight wins; equal weights: the smaller id.
  using R = std::tuple<float, std::int32_t>;
  CHECK(c.combine(R{1.f, 7}, R{2.f, 9}) == R{2.f, 9});
  CHECK(c.combine(R{2.f, 7}, R{2.f, 3}) == R{2.f, 3});
  CHECK(c.combine(R{2.f, 3}, R{2.f, 7}) == R{2.f, 3});
}

TEST_CASE("max_sum (online softmax): identity exact, no NaN, commutative, associative") {
  auto c = mdh::ops::softmax_stats();
  std::mt19937_64 rng(402);
  // Samples as the reduction produces them: a fold of f(x) = (x, 1) over 1..4 values, and
  // now and then an -inf value (a masked score).
  auto sample = [&] {
    auto x = [&] { return rng() % 8 ? random_value<float>(rng, -20, 20) : -INFINITY; };
    auto acc = c.apply(x());
    for (int k = int(rng() % 4); k > 0; --k) acc = c.combine(acc, c.apply(x()));
    return acc;
  };
  check_combine_laws(c, sample, 2000, 1e-5);
  using R = std::tuple<float, float>;
  const R e{-INFINITY, 0.f};
  CHECK(c.combine(e, e) == e);
  CHECK(c.combine(e, R{3.f, 2.f}) == R{3.f, 2.f});
  CHECK(c.combine(R{-INFINITY, 2.f}, R{-INFINITY, 1.f}) == R{-INFINITY, 3.f});
  auto [m, s] = c.combine(R{0.f, 1.f}, R{std::log(3.f), 1.f});
  CHECK(m == std::log(3.f));
  CHECK(s == doctest::Approx(1 + 1.0 / 3).epsilon(1e-6));
}

TEST_CASE("sum_max: identity, commutativity, associativity") {
  auto c = mdh::ops::reduce_sum_max();
  std::mt19937_64 rng(403);
  auto sample = [&] {
    float a = random_value<float>(rng, -10, 10), b = random_value<float>(rng, -10, 10);
    return std::tuple<float, float>(a, b);
  };
  check_combine_laws(c, sample, 2000, 1e-6);
}
