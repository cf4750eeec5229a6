// SPDX-License-Identifier: MIT
// The AUC bandit (as in OpenTuner's AUCBanditQueue, ported by ATF): picks among several techniques
// by the area under each one's recent "found a new best" curve plus an exploration bonus.
#pragma once

#include <atf/search/pattern_search.hpp>
#include <atf/search/simulated_annealing.hpp>
#include <atf/search/technique.hpp>
#include <atf/search/torczon.hpp>

#include <deque>

namespace atf::search {

class auc_bandit final : public technique {
 public:
  // Default arms as in ATF: simulated annealing, pattern search, Torczon.
  auc_bandit() : auc_bandit(default_arms()) {}
  explicit auc_bandit(std::vector<std::unique_ptr<technique>> arms, std::size_t window = 500,
                      double c = 0.05)
      : arms_(std::move(arms)), window_(window), c_(c) {
    if (arms_.empty()) throw error("auc_bandit: needs at least one technique");
  }
  static std::vector<std::unique_ptr<technique>> default_arms() {
    std::vector<std::unique_ptr<technique>> a;
    a.push_back(std::make_unique<simulated_annealing>());
    a.push_back(std::make_unique<pattern_search>());
    a.push_back(std::make_unique<torczon>());
    return a;
  }

  std::string name() const override {
    std::string s = "auc_bandit(";
    for (std::size_t i = 0; i < arms_.size(); ++i) s += (i ? "," : "") + arms_[i]->name();
    return s + ")";
  }
  void initialize(const search_space& space, std::uint64_t seed) override {
    rng_.seed(seed);
    for (std::size_t i = 0; i < arms_.size(); ++i) arms_[i]->initialize(space, seed * 7919 + i + 1);
    history_.clear();
    best_ = invalid_cost;
  }

  std::vector<point> ask(std::size_t max_points) override {
    current_ = select();
    return arms_[current_]->ask(max_points);
  }

  void tell(const std::vector<double>& costs) override {
    arms_[current_]->tell(costs);
    for (double f : costs) {
      const bool better = f < best_;
      if (better) best_ = f;
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

  struct use {
    std::size_t arm;
    bool improved;
  };
  std::vector<std::unique_ptr<technique>> arms_;
  std::size_t window_;
  double c_;
  std::mt19937_64 rng_;
  std::deque<use> history_;
  double best_ = invalid_cost;
  std::size_t current_ = 0;
};

}  // namespace atf::search
