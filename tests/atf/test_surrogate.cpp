// SPDX-License-Identifier: MIT
// The kNN cost model and the surrogate technique that ranks candidates with it before they are
// measured (issue 19: fewer compiles per improvement).
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <vector>

#include "test_support.hpp"

namespace {

// A kernel-like space: two tile sizes, threads, a vector width and pipeline stages, with
// register pressure (ti * tj * stages > 512) failing at run time.
atf::search_space kernel_space() {
  atf::tp ti("ti", atf::powers_of_two(1, 64));
  atf::tp tj("tj", atf::powers_of_two(1, 64));
  atf::tp thr("thr", atf::powers_of_two(32, 1024));
  atf::tp vec("vec", atf::powers_of_two(1, 8), atf::divides(tj));
  atf::tp stages("stages", atf::interval<std::int64_t>(1, 4));
  return atf::search_space({ti, tj, thr, vec, stages}, {ti * thr <= 4096});
}
double sq(double x) { return x * x; }
// Multiplicative in the parameters' logarithms like a kernel's time, optimum at
// (8, 16, 128, 4, 3): 100 us; invalid where the "registers" run out.
double kernel_cost(const atf::configuration& c) {
  const auto ti = c.get<std::int64_t>("ti"), tj = c.get<std::int64_t>("tj");
  const auto thr = c.get<std::int64_t>("thr"), vec = c.get<std::int64_t>("vec");
  const auto st = c.get<std::int64_t>("stages");
  if (ti * tj * st > 512) throw std::runtime_error("too many registers");
  return 100 * (1 + 0.3 * sq(std::log2(double(ti)) - 3)) *
         (1 + 0.2 * sq(std::log2(double(tj)) - 4)) *
         (1 + 0.5 * std::abs(std::log2(double(thr)) - 7)) *
         (1 + 0.15 * sq(std::log2(double(vec)) - 2)) * (st == 3 ? 1.0 : 1.2);
}

// An inner technique that records what it is asked and told.
struct spy final : atf::search::technique {
  atf::search::random inner;
  std::vector<std::size_t>* asked_sizes;
  std::vector<std::size_t>* told_sizes;
  std::size_t* observed;
  spy(std::vector<std::size_t>* a, std::vector<std::size_t>* t, std::size_t* o)
      : asked_sizes(a), told_sizes(t), observed(o) {}
  std::string name() const override { return "spy"; }
  void initialize(const atf::search_space& s, std::uint64_t seed) override {
    inner.initialize(s, seed);
  }
  std::vector<atf::point> ask(std::size_t n) override {
    auto b = inner.ask(n);
    asked_sizes->push_back(b.size());
    return b;
  }
  void tell(const std::vector<double>& c) override {
    told_sizes->push_back(c.size());
    inner.tell(c);
  }
  void observe(const atf::point&, double) override { ++*observed; }
};

}  // namespace

TEST_CASE("knn cost model: measured points exactly, a smooth landscape in order, errors") {
  auto space = kernel_space();
  atf::search::point_features features(space);
  CHECK(features.dimensions() == 5);
  std::mt19937_64 rng(3);
  atf::search::knn_cost_model model(8);
  CHECK(std::isinf(model.predict(features(space.random_point(rng)))));  // nothing measured yet
  std::vector<atf::point> seen;
  for (int i = 0; i < 120; ++i) {
    auto p = space.random_point(rng);
    double cost;
    try {
      cost = kernel_cost(space.to_configuration(p));
    } catch (const std::exception&) {
      cost = atf::search::invalid_cost;
    }
    model.add(features(p), cost);
    seen.push_back(p);
  }
  CHECK(model.size() == 120);
  // a measured valid point is predicted as measured
  for (const auto& p : seen)
    if (auto c = space.to_configuration(p);
        c.get<std::int64_t>("ti") * c.get<std::int64_t>("tj") * c.get<std::int64_t>("stages") <=
        512) {
      CHECK(model.predict(features(p)) == doctest::Approx(std::log(kernel_cost(c))));
      break;
    }
  // unseen valid points: the predicted order follows the true one
  std::vector<double> predicted, truth;
  for (int i = 0; i < 400; ++i) {
    auto p = space.random_point(rng);
    auto c = space.to_configuration(p);
    if (c.get<std::int64_t>("ti") * c.get<std::int64_t>("tj") * c.get<std::int64_t>("stages") > 512)
      continue;
    predicted.push_back(model.predict(features(p)));
    truth.push_back(kernel_cost(c));
  }
  REQUIRE(predicted.size() > 100);
  const double rho = atf::search::rank_correlation(predicted, truth);
  INFO("Spearman rank correlation " << rho << " over " << predicted.size() << " points");
  CHECK(rho > 0.3);  // chance: 0; 0.40 measured with these 120 random points (seed 3)

  // an invalid region ranks below the worst valid point
  atf::search::knn_cost_model two(1);
  two.add(std::vector<double>{0.0}, 10.0);
  two.add(std::vector<double>{1.0}, atf::search::invalid_cost);
  CHECK(two.predict(std::vector<double>{0.9}) > std::log(10.0));
  CHECK_THROWS_AS(atf::search::knn_cost_model(0), atf::error);
  CHECK(atf::search::rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1));
  CHECK(atf::search::rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1));
  CHECK_THROWS_AS(atf::search::rank_correlation({1, 2}, {1}), atf::error);
  CHECK_THROWS_WITH_AS(two.add(std::vector<double>{0.5}, -1.0), doctest::Contains("not positive"),
                       atf::error);
  CHECK_THROWS_WITH_AS(two.add(std::vector<double>{0.5, 0.5}, 1.0),
                       doctest::Contains("2 features after points of 1"), atf::error);
}

TEST_CASE("knn cost model: fit_weights drops features the cost does not depend on") {
  // cost depends on features 0 and 1; features 2-5 are noise that crowds out the neighbours
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  auto cost = [](const std::vector<double>& x) {
    return std::exp(3 * (x[0] - 0.3) * (x[0] - 0.3) + 2 * (x[1] - 0.7) * (x[1] - 0.7));
  };
  auto draw = [&] {
    std::vector<double> x(6);
    for (auto& v : x) v = u(rng);
    return x;
  };
  atf::search::knn_cost_model plain(8);
  for (int i = 0; i < 200; ++i) {
    auto x = draw();
    plain.add(x, cost(x));
  }
  atf::search::knn_cost_model fitted = plain;
  const double loo = fitted.fit_weights();
  const auto& w = fitted.weights();
  REQUIRE(w.size() == 6);
  INFO("weights " << w[0] << " " << w[1] << " " << w[2] << " " << w[3] << " " << w[4] << " " << w[5]
                  << ", leave-one-out rank correlation " << loo);
  CHECK(w[0] >= 1);
  CHECK(w[1] >= 1);
  CHECK(w[2] + w[3] + w[4] + w[5] <= 1);  // from 4: the noise mostly dropped (all 0 measured)
  std::vector<double> p_plain, p_fit, truth;
  for (int i = 0; i < 400; ++i) {
    auto x = draw();
    p_plain.push_back(plain.predict(x)), p_fit.push_back(fitted.predict(x)),
        truth.push_back(cost(x));
  }
  const double rho_plain = atf::search::rank_correlation(p_plain, truth),
               rho_fit = atf::search::rank_correlation(p_fit, truth);
  INFO("fresh points: Spearman " << rho_plain << " with every weight 1, " << rho_fit << " fitted");
  CHECK(rho_fit > rho_plain + 0.05);                         // 0.89 and 0.99 measured (seed 11)
  CHECK(atf::search::knn_cost_model(8).fit_weights() == 0);  // nothing to learn from
}

TEST_CASE("surrogate: asks unmeasured points of the space, tells its inner technique everything") {
  auto space = kernel_space();
  std::vector<std::size_t> asked, told;
  std::size_t observed = 0;
  atf::search::surrogate_options o;
  o.warmup = 10;
  atf::search::surrogate s(std::make_unique<spy>(&asked, &told, &observed), o);
  CHECK(s.name() == "surrogate(knn,spy)");
  atf::tuner t;
  std::set<std::string> measured;
  auto cost = [&](const atf::configuration& c) {
    CHECK(measured.insert(c.key()).second);  // never measured twice
    return kernel_cost(c);
  };
  t.technique(std::move(s))
      .seed(4)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(80));
  auto r = t.tune(space, cost);
  CHECK(r.evaluations == 80);
  CHECK(r.technique == "surrogate(knn,spy)");
  REQUIRE(!asked.empty());
  CHECK(told.size() >= asked.size() - 1);  // the last ask may be cut by the budget
  for (std::size_t i = 0; i < told.size(); ++i) CHECK(told[i] == asked[i]);
  CHECK(observed == 80);  // every measurement, once

  CHECK_THROWS_AS(atf::search::surrogate(nullptr), atf::error);
  atf::search::surrogate_options bad;
  bad.explore = 1.5;
  CHECK_THROWS_WITH_AS(atf::search::surrogate(std::make_unique<atf::search::random>(), bad),
                       doctest::Contains("explore"), atf::error);
}

TEST_CASE("surrogate: the same seed reproduces a run; a resumed log trains the model first") {
  auto space = kernel_space();
  auto run = [&](std::uint64_t evals, const std::filesystem::path* log = nullptr) {
    atf::tuner t;
    t.technique(atf::search::surrogate{})
        .seed(11)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(evals));
    if (log) t.log_file(*log);
    return t.tune(space, kernel_cost);
  };
  auto a = run(60), b = run(60);
  CHECK(a.best == b.best);
  CHECK(a.improvements == b.improvements);

  // a spy behind the tuner sees the resumed records before its first ask
  auto log = std::filesystem::temp_directory_path() /
             ("atf_surrogate_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(log);
  run(30, &log);
  std::vector<std::size_t> asked, told;
  std::size_t observed = 0;
  struct first_ask_check final : atf::search::technique {
    spy s;
    std::size_t* observed;
    std::size_t observed_at_first_ask = 0;
    bool asked_once = false;
    std::size_t* out;
    first_ask_check(spy sp, std::size_t* o, std::size_t* result)
        : s(std::move(sp)), observed(o), out(result) {}
    std::string name() const override { return "check"; }
    void initialize(const atf::search_space& sp, std::uint64_t seed) override {
      s.initialize(sp, seed);
    }
    std::vector<atf::point> ask(std::size_t n) override {
      if (!asked_once) *out = *observed, asked_once = true;
      return s.ask(n);
    }
    void tell(const std::vector<double>& c) override { s.tell(c); }
    void observe(const atf::point& p, double c) override { s.observe(p, c); }
  };
  std::size_t at_first_ask = 0;
  atf::tuner t;
  t.technique(first_ask_check(spy(&asked, &told, &observed), &observed, &at_first_ask))
      .seed(11)
      .log_file(log)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(40));
  auto r = t.tune(space, kernel_cost);
  CHECK(r.resumed == 30);
  CHECK(at_first_ask == 30);
  CHECK(observed == 40);
  std::filesystem::remove(log);
}

TEST_CASE("surrogate: fewer measurements to a good configuration than random sampling") {
  // The best after 60 evaluations, median of 7 seeds: the model's ranking must beat sampling
  // the same space uniformly (a model that ranked no better than chance would not).
  auto space = kernel_space();
  auto median_best = [&](auto make) {
    std::vector<double> best;
    for (std::uint64_t seed = 1; seed <= 7; ++seed) {
      atf::tuner t;
      t.technique(make())
          .seed(seed)
          .progress(atf::progress_mode::off)
          .abort_when(atf::abort::evaluations(60));
      best.push_back(t.tune(space, kernel_cost).best_cost);
    }
    std::sort(best.begin(), best.end());
    return best[best.size() / 2];
  };
  const double with_model = median_best([] { return atf::search::surrogate{}; });
  const double by_random = median_best([] { return atf::search::random{}; });
  const double bandit = median_best([] { return atf::search::auc_bandit{}; });
  MESSAGE("median best after 60 evaluations: surrogate " << with_model << ", auc_bandit " << bandit
                                                         << ", random " << by_random
                                                         << " (optimum 100)");
  CHECK(with_model < by_random);
  CHECK(with_model <= 1.25 * 100);
}
