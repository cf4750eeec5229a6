// SPDX-License-Identifier: MIT
// Tests of the search techniques and the abort conditions.
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <thread>

#include "test_support.hpp"

namespace {

// A convex bowl over a constrained 3-D space with its optimum at (13, 7, 5).
atf::search_space bowl_space() {
  atf::tp x("x", atf::interval<std::int64_t>(1, 24));
  atf::tp y("y", atf::interval<std::int64_t>(1, 24));
  atf::tp z("z", atf::interval<std::int64_t>(1, 12));
  return atf::search_space({x, y, z}, {x + y <= 30, z <= y});
}
double bowl(const atf::configuration& c) {
  const double x = static_cast<double>(c.get<std::int64_t>("x")) - 13;
  const double y = static_cast<double>(c.get<std::int64_t>("y")) - 7;
  const double z = static_cast<double>(c.get<std::int64_t>("z")) - 5;
  return 1 + x * x + 2 * y * y + 3 * z * z;
}

auto make(const std::string& name) { return atf_test::make_technique(name); }

}  // namespace

TEST_CASE("every technique finds the optimum of a small convex landscape") {
  auto space = bowl_space();
  const auto n = static_cast<std::uint64_t>(space.size());
  for (std::string name : {"exhaustive", "random", "simulated_annealing", "differential_evolution",
                           "pattern_search", "torczon", "auc_bandit", "surrogate"}) {
    CAPTURE(name);
    // Local techniques: the best of a few seeds reaches the optimum within a third of the space.
    double best = 1e300;
    for (std::uint64_t seed = 1; seed <= 3 && best > 1; ++seed) {
      atf::tuner t;
      t.technique(make(name)).seed(seed).progress(atf::progress_mode::off);
      t.abort_when(atf::abort::evaluations(name == "exhaustive" ? n : n / 3) ||
                   atf::abort::cost(1));
      auto r = t.tune(space, bowl);
      best = std::min(best, r.best_cost);
      CHECK(r.evaluations <= n);
    }
    CHECK(best == 1.0);
  }
}

TEST_CASE("only unique evaluations count and the same seed reproduces a run") {
  auto space = bowl_space();
  std::set<std::string> measured;
  int calls = 0;
  auto cost = [&](const atf::configuration& c) {
    ++calls;
    CHECK(measured.insert(c.key()).second);  // never measured twice
    return bowl(c);
  };
  atf::tuner t;
  t.seed(42).progress(atf::progress_mode::off).abort_when(atf::abort::evaluations(150));
  auto r1 = t.tune(space, cost);
  CHECK(r1.evaluations == 150);
  CHECK(calls == 150);
  measured.clear();
  atf::tuner t2;
  t2.seed(42).progress(atf::progress_mode::off).abort_when(atf::abort::evaluations(150));
  auto r2 = t2.tune(space, cost);
  CHECK(r2.best == r1.best);
  CHECK(r2.improvements == r1.improvements);
}

TEST_CASE("exhaustive search stops when the space is exhausted") {
  auto space = bowl_space();
  atf::tuner t;
  t.technique(atf::search::exhaustive{}).progress(atf::progress_mode::off);
  auto r = t.tune(space, bowl);
  CHECK(atf::index_t(r.evaluations) == space.size());
  CHECK(r.best_cost == 1.0);
}

TEST_CASE("abort conditions and their composition") {
  auto space = bowl_space();
  auto run = [&](atf::abort::condition c,
                 std::function<double(const atf::configuration&)> f = bowl) {
    atf::tuner t;
    t.technique(atf::search::random{}).seed(5).progress(atf::progress_mode::off).abort_when(c);
    return t.tune(space, f);
  };
  CHECK(run(atf::abort::evaluations(37)).evaluations == 37);
  {
    auto half_invalid = [](const atf::configuration& c) -> double {
      if (c.get<std::int64_t>("x") % 2) throw std::runtime_error("odd");
      return bowl(c);
    };
    auto r = run(atf::abort::valid_evaluations(20), half_invalid);
    CHECK(r.valid == 20);
    CHECK(r.invalid > 0);
  }
  {
    auto r = run(atf::abort::fraction(0.25));
    CHECK(r.evaluations ==
          static_cast<std::uint64_t>(std::ceil(0.25 * static_cast<double>(space.size()))));
  }
  {
    auto r = run(atf::abort::cost(50));
    CHECK(r.best_cost <= 50);
  }
  {
    auto slow = [](const atf::configuration& c) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return bowl(c);
    };
    auto t0 = std::chrono::steady_clock::now();
    auto r = run(atf::abort::duration(std::chrono::milliseconds(150)), slow);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s >= 0.15);
    CHECK(s < 1.5);
    CHECK(r.evaluations > 5);
  }
  {
    // A constant landscape never improves: stops one window after the first evaluation.
    auto r =
        run(atf::abort::no_improvement(1.0, 10), [](const atf::configuration&) { return 1.0; });
    CHECK(r.evaluations == 11);
  }
  CHECK(run(atf::abort::evaluations(10) || atf::abort::evaluations(20)).evaluations == 10);
  CHECK(run(atf::abort::evaluations(10) && atf::abort::evaluations(20)).evaluations == 20);
  CHECK(run(atf::abort::evaluations(30) &&
            (atf::abort::valid_evaluations(5) || atf::abort::evaluations(3)))
            .evaluations == 30);
  CHECK_THROWS_AS(atf::abort::fraction(1.5), atf::error);
  // Progress of a composed condition.
  atf::tuning_status st;
  st.evaluations = 5;
  CHECK((atf::abort::evaluations(10) && atf::abort::evaluations(20)).progress(st) ==
        doctest::Approx(0.25));
  CHECK((atf::abort::evaluations(10) || atf::abort::evaluations(20)).progress(st) ==
        doctest::Approx(0.5));
}
