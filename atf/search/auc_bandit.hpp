// SPDX-License-Identifier: MIT
// The AUC bandit (as in OpenTuner's AUCBanditQueue, ported by ATF): picks among several techniques
// by the area under each one's recent "found a new best" curve plus an exploration bonus.
// Short tuning runs matter, so it first samples a few configurations uniformly at random (local
// searches from random starting points waste their first evaluations far from anything good), and
// afterwards every local arm (re)starts from the best configuration found so far whenever that
// has improved since the arm last started from it; uniform random sampling is an arm too, so the
// bandit keeps exploring when the local searches stall. A suggested start point (e.g. the best
// of the tuner's start configurations) is asked once more to learn its cost (the tuner answers
// from its cache), so it is the incumbent until something better is found.
#pragma once

#include <atf/search/pattern_search.hpp>
#include <atf/search/random.hpp>
#include <atf/search/simulated_annealing.hpp>
#include <atf/search/technique.hpp>
#include <atf/search/torczon.hpp>

#include <deque>
#include <optional>

namespace atf::search {

class auc_bandit final : public technique {
 public:
  // Default arms: simulated annealing, pattern search, Torczon (as in ATF) and random sampling.
  auc_bandit() : auc_bandit(default_arms()) {}
  // initial_samples: uniform random configurations before the arms take over (default
  // max(10, 2 * dimensions), a quarter of that (at least 4) once a start point is suggested);
  // restart_from_best: local arms restart from the incumbent.
  explicit auc_bandit(std::vector<std::unique_ptr<technique>> arms, std::size_t window = 500,
                      double c = 0.05, std::optional<std::size_t> initial_samples = std::nullopt,
                      bool restart_from_best = true)
      : arms_(std::move(arms)),
        window_(window),
        c_(c),
        initial_(initial_samples),
        restart_from_best_(restart_from_best) {
    if (arms_.empty()) throw error("auc_bandit: needs at least one technique");
  }
  static std::vector<std::unique_ptr<technique>> default_arms() {
    std::vector<std::unique_ptr<technique>> a;
    a.push_back(std::make_unique<simulated_annealing>());
    a.push_back(std::make_unique<pattern_search>());
    a.push_back(std::make_unique<torczon>());
    a.push_back(std::make_unique<random>());
    return a;
  }

  std::string name() const override {
    std::string s = "auc_bandit(";
    for (std::size_t i = 0; i < arms_.size(); ++i) s += (i ? "," : "") + arms_[i]->name();
    return s + ")";
  }
  void initialize(const search_space& space, std::uint64_t seed) override {
    space_ = &space;
    rng_.seed(seed);
    for (std::size_t i = 0; i < arms_.size(); ++i) arms_[i]->initialize(space, seed * 7919 + i + 1);
    history_.clear();
    best_ = invalid_cost;
    best_point_.clear();
    improvements_ = 0;
    started_from_.assign(arms_.size(), 0);
    told_ = 0;
    explore_ = initial_ ? *initial_ : std::max<std::size_t>(10, 2 * space.dimensions());
    hint_.clear();
  }

  void suggest_start(const point& p) override {
    for (auto& a : arms_) a->suggest_start(p);
    hint_ = p;
    // Good points are already known, so less uniform sampling is needed before the local arms.
    if (!initial_) explore_ = std::min(explore_, std::max<std::size_t>(4, explore_ / 4));
  }

  std::vector<point> ask(std::size_t max_points) override {
    asked_.clear();
    if (!hint_.empty()) {  // learn the hint's cost: tell() then makes it the incumbent
      current_ = hint_asked;
      asked_.push_back(std::move(hint_));
      hint_.clear();
      return asked_;
    }
    if (told_ < explore_ || best_point_.empty()) {  // uniform exploration first
      current_ = arms_.size();
      const std::size_t k =
          std::clamp<std::size_t>(max_points, 1, explore_ > told_ ? explore_ - told_ : 1);
      for (std::size_t i = 0; i < k; ++i) asked_.push_back(space_->random_point(rng_));
      return asked_;
    }
    current_ = select();
    if (restart_from_best_ && started_from_[current_] != improvements_) {
      arms_[current_]->suggest_start(best_point_);
      started_from_[current_] = improvements_;
    }
    asked_ = arms_[current_]->ask(max_points);
    return asked_;
  }

  void tell(const std::vector<double>& costs) override {
    if (current_ != hint_asked) told_ += costs.size();
    if (current_ < arms_.size()) arms_[current_]->tell(costs);
    for (std::size_t i = 0; i < costs.size(); ++i) {
      const double f = costs[i];
      const bool better = f < best_;
      if (better) {
        best_ = f;
        if (i < asked_.size()) best_point_ = asked_[i], ++improvements_;
      }
      if (current_ >= arms_.size()) continue;  // exploration and the hint credit no arm
      history_.push_back({current_, better});
      if (history_.size() > window_) history_.pop_front();
    }
  }

 private:
  std::size_t select() {
    double best_score = -1;
    std::vector<std::size_t> ties;
    const double total = static_cast<double>(history_.size());
    for (std::size_t a = 0; a < arms_.size(); ++a) {
      double uses = 0, credit = 0;
      for (const auto& h : history_)
        if (h.arm == a) uses += 1, credit += h.improved ? uses : 0;
      double score;
      if (uses == 0) {
        score = std::numeric_limits<double>::infinity();
      } else {
        const double auc = credit / (uses * (uses + 1) / 2);
        score = auc + c_ * std::sqrt(2 * std::log2(std::max(total, 2.0)) / uses);
      }
      if (score > best_score)
        best_score = score, ties.assign(1, a);
      else if (score == best_score)
        ties.push_back(a);
    }
    return ties[std::uniform_int_distribution<std::size_t>(0, ties.size() - 1)(rng_)];
  }

  static constexpr std::size_t hint_asked = std::numeric_limits<std::size_t>::max();
  struct use {
    std::size_t arm;
    bool improved;
  };
  std::vector<std::unique_ptr<technique>> arms_;
  std::size_t window_;
  double c_;
  std::optional<std::size_t> initial_;
  bool restart_from_best_;
  const search_space* space_ = nullptr;
  std::size_t explore_ = 0, told_ = 0;
  std::vector<point> asked_;
  point best_point_, hint_;
  std::uint64_t improvements_ = 0;
  std::vector<std::uint64_t> started_from_;
  std::mt19937_64 rng_;
  std::deque<use> history_;
  double best_ = invalid_cost;
  std::size_t current_ = 0;
};

}  // namespace atf::search
