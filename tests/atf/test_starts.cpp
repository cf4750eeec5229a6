// SPDX-License-Identifier: MIT
// Tests of start configurations: evaluated first, skipped when not in the space, not measured again
// on resume, within the evaluation budget, and a head start for the AUC bandit.
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <any>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

using atf_test::cost_of;
using atf_test::small_space;
atf::configuration xy(std::int64_t x, std::int64_t y) {
  atf::configuration c;
  c.set("x", x);
  c.set("y", y);
  return c;
}

std::filesystem::path temp_path(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("atf_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove(p);
  return p;
}

auto make(const std::string& name) { return atf_test::make_technique(name); }

}  // namespace

TEST_CASE("start configurations are evaluated first, in order, with every technique") {
  auto space = small_space();
  // (5, 7): 7 does not divide 10; (3, 2) twice: measured once.
  const std::vector<atf::configuration> starts = {xy(3, 2), xy(5, 7), xy(20, 8), xy(3, 2),
                                                  xy(11, 2)};
  const std::vector<std::string> expected = {xy(3, 2).key(), xy(20, 8).key(), xy(11, 2).key()};
  for (std::string name : {"exhaustive", "random", "simulated_annealing", "differential_evolution",
                           "pattern_search", "torczon", "auc_bandit", "surrogate"}) {
    CAPTURE(name);
    std::vector<std::string> order;
    atf::tuner t;
    t.technique(make(name)).seed(5).progress(atf::progress_mode::off).start_with(starts);
    if (name != "exhaustive") t.abort_when(atf::abort::evaluations(30));
    auto r = t.tune(space, [&](const atf::configuration& c) {
      order.push_back(c.key());
      return cost_of(c);
    });
    REQUIRE(order.size() >= expected.size());
    CHECK(std::vector<std::string>(order.begin(), order.begin() + 3) == expected);
    CHECK(std::set<std::string>(order.begin(), order.end()).size() == order.size());
    CHECK(r.measured == order.size());
    CHECK(r.evaluations == (name == "exhaustive" ? std::uint64_t(space.size()) : 30));
    CHECK(r.starts_evaluated == 3);
    CHECK(r.starts_skipped == 1);
  }
}

TEST_CASE("a start configuration not in the space is skipped and reported, not evaluated") {
  auto space = small_space();
  atf::configuration missing;
  missing.set("x", std::int64_t{4});
  atf::configuration extra = xy(4, 2);
  extra.set("z", std::int64_t{1});
  atf::configuration wrong_type;
  wrong_type.set("x", 4.0);
  wrong_type.set("y", std::int64_t{2});
  const std::vector<atf::configuration> bad = {xy(5, 7), xy(21, 1), missing, extra, wrong_type};
  std::set<std::string> evaluated;
  atf::tuner t;
  t.seed(2)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(15))
      .start_with(bad);
  atf::tuning_result r;
  CHECK_NOTHROW(r = t.tune(space, [&](const atf::configuration& c) {
    evaluated.insert(c.key());
    return cost_of(c);
  }));
  CHECK(r.starts_skipped == bad.size());
  CHECK(r.starts_evaluated == 0);
  CHECK(r.evaluations == 15);
  for (const auto& c : bad) CHECK_FALSE(evaluated.count(c.key()));
  REQUIRE(r.skipped_starts.size() == bad.size());
  CHECK(r.skipped_starts[0] == "{x=5;y=7}: violates a constraint");
  CHECK(r.skipped_starts[1].find("x=21 is not in its range") != std::string::npos);
  CHECK(r.skipped_starts[2].find("no value for parameter 'y'") != std::string::npos);
  CHECK(r.skipped_starts[3].find("unknown parameter 'z'") != std::string::npos);
  CHECK(r.skipped_starts[4].find("is not in its range") != std::string::npos);
}

TEST_CASE("on resume, start configurations already in the log are not evaluated again") {
  auto space = small_space();
  const auto log = temp_path("starts.jsonl");
  const std::vector<atf::configuration> first = {xy(3, 2), xy(20, 8), xy(11, 2)};
  std::set<std::string> logged;
  {
    atf::tuner t;
    t.seed(4)
        .log_file(log)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(10))
        .start_with(first);
    auto r = t.tune(space, [&](const atf::configuration& c) {
      logged.insert(c.key());
      return cost_of(c);
    });
    CHECK(r.starts_evaluated == 3);
    CHECK(logged.size() == 10);
  }
  std::vector<atf::configuration> again = first;
  again.push_back(xy(6, 4));
  std::vector<std::string> order;
  atf::tuner t;
  t.seed(4)
      .log_file(log)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(20))
      .start_with(again);
  auto r = t.tune(space, [&](const atf::configuration& c) {
    CHECK_MESSAGE(!logged.count(c.key()), "measured again: " << c.key());
    order.push_back(c.key());
    return cost_of(c);
  });
  CHECK(r.resumed == 10);
  CHECK(r.starts_evaluated == 1);
  CHECK(r.measured == 10);
  CHECK(r.evaluations == 20);
  REQUIRE_FALSE(order.empty());
  CHECK(order.front() == xy(6, 4).key());
  std::filesystem::remove(log);
}

TEST_CASE("the evaluation budget holds even with more start configurations than it allows") {
  auto space = small_space();
  std::vector<atf::configuration> starts;
  for (std::int64_t x = 1; x <= 10; ++x) starts.push_back(xy(x, 1));
  for (bool parallel : {false, true}) {
    CAPTURE(parallel);
    std::vector<std::string> order;
    std::mutex m;
    auto measure = [&](const atf::configuration& c, std::any&) {
      std::lock_guard lock(m);
      order.push_back(c.key());
      return cost_of(c);
    };
    // Parallel: 4 prepare threads and 2 measuring workers, so more than 4 could be in flight.
    atf::evaluator ev =
        parallel ? atf::evaluator([](const atf::configuration&) { return 0; }, measure, 4, 2)
                 : atf::evaluator([&](const atf::configuration& c) {
                     std::any none;
                     return measure(c, none);
                   });
    atf::tuner t;
    t.seed(1)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(4))
        .start_with(starts);
    auto r = t.tune(space, ev);
    CHECK(r.evaluations == 4);
    CHECK(r.measured == 4);
    CHECK(r.starts_evaluated == 4);
    CHECK(r.stop_reason == "abort condition evaluations(4)");
    REQUIRE(order.size() == 4);
    // Submitted in order; parallel workers may finish them in another order.
    CHECK(std::set<std::string>(order.begin(), order.end()) ==
          std::set<std::string>{xy(1, 1).key(), xy(2, 1).key(), xy(3, 1).key(), xy(4, 1).key()});
  }
}

TEST_CASE("with a budget of valid evaluations, invalid start configurations leave room") {
  auto space = small_space();
  std::vector<atf::configuration> starts;
  for (std::int64_t x = 1; x <= 10; ++x) starts.push_back(xy(x, 1));
  std::vector<std::string> order;
  atf::tuner t;
  t.seed(1)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::valid_evaluations(3))
      .start_with(starts);
  auto r = t.tune(space, [&](const atf::configuration& c) {
    order.push_back(c.key());
    if (c.get<std::int64_t>("x") % 2 == 0) throw std::runtime_error("even");
    return cost_of(c);
  });
  CHECK(r.valid == 3);
  CHECK(r.evaluations == 5);
  CHECK(r.starts_evaluated == 5);
  CHECK(order == std::vector<std::string>{xy(1, 1).key(), xy(2, 1).key(), xy(3, 1).key(),
                                          xy(4, 1).key(), xy(5, 1).key()});
}

TEST_CASE("auc_bandit: a suggested start is the incumbent until a better point is told") {
  atf::tp x("x", atf::interval<std::int64_t>(1, 64));
  atf::tp y("y", atf::interval<std::int64_t>(1, 64));
  atf::tp z("z", atf::interval<std::int64_t>(1, 64));
  atf::search_space space(x, y, z);
  const atf::point hint = *space.find([] {
    atf::configuration c;
    c.set("x", std::int64_t{40});
    c.set("y", std::int64_t{20});
    c.set("z", std::int64_t{30});
    return c;
  }());
  for (bool better_found : {false, true}) {
    CAPTURE(better_found);
    std::vector<std::unique_ptr<atf::search::technique>> arms;
    arms.push_back(std::make_unique<atf::search::pattern_search>());
    atf::search::auc_bandit b(std::move(arms));
    b.initialize(space, 3);
    b.suggest_start(hint);
    auto first = b.ask(8);
    REQUIRE(first.size() == 1);  // asked once more only to learn its cost
    CHECK(first[0] == hint);
    b.tell({10.0});
    // The random phase is shortened from max(10, 2 * 3) to 4 samples.
    std::vector<atf::point> explored;
    for (int i = 0; i < 4; ++i) {
      auto p = b.ask(1);
      REQUIRE(p.size() == 1);
      CHECK(p[0] != hint);
      explored.push_back(p[0]);
      b.tell({better_found && i == 2 ? 5.0 : 20.0});
    }
    // The single (local) arm now starts from the incumbent.
    auto next = b.ask(1);
    REQUIRE(next.size() == 1);
    CHECK(next[0] == (better_found ? explored[2] : hint));
  }
}

TEST_CASE("auc_bandit finds a sharp optimum quickly from a start configuration next to it") {
  // 64^3 configurations; the cost is flat (2) except within a few steps of (41, 17, 29). 80
  // evaluations: every seed from 1 to 20 finds it (without the starts, 2 of 20 did).
  atf::tp x("x", atf::interval<std::int64_t>(1, 64));
  atf::tp y("y", atf::interval<std::int64_t>(1, 64));
  atf::tp z("z", atf::interval<std::int64_t>(1, 64));
  atf::search_space space(x, y, z);
  auto sharp = [](const atf::configuration& c) {
    const double dx = static_cast<double>(c.get<std::int64_t>("x") - 41);
    const double dy = static_cast<double>(c.get<std::int64_t>("y") - 17);
    const double dz = static_cast<double>(c.get<std::int64_t>("z") - 29);
    return 2 - std::exp(-(dx * dx + dy * dy + dz * dz) / 2);
  };
  atf::configuration far, near;
  far.set("x", std::int64_t{5});
  far.set("y", std::int64_t{60});
  far.set("z", std::int64_t{3});
  near.set("x", std::int64_t{42});
  near.set("y", std::int64_t{17});
  near.set("z", std::int64_t{29});
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    CAPTURE(seed);
    atf::tuner t;
    t.seed(seed)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(80) || atf::abort::cost(1))
        .start_with({far, near});  // the best start, not the first, is where the search begins
    auto r = t.tune(space, sharp);
    CHECK(r.best_cost == 1.0);
    CHECK(r.best.get<std::int64_t>("x") == 41);
    CHECK(r.evaluations <= 80);
  }
}
