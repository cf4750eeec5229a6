// SPDX-License-Identifier: MIT
// atf::search::surrogate: a technique that ranks before it measures. It wraps another technique
// (the AUC bandit by default) and, once enough points are measured, answers each ask with the
// candidates its cost model (knn_cost_model) predicts fastest instead of the inner technique's
// own proposals: the inner technique's points, the neighbours of the best points measured so far
// and of their neighbours, and a few random points, all unmeasured, ranked, the best taken. A
// share of the slots (`explore`) still goes to the inner technique's own points unranked, so the
// search is not confined to what the model already believes.
//
// The inner technique is told a cost for every point it proposed: the measurement where the
// point was measured, else the model's prediction, but never better than the worst point
// measured in the same ask (a point not measured must not look like a new best to it).
//
// The model weighs the parameters by how much they matter to this kernel, learned from what
// was measured (knn_cost_model::fit_weights, refitted as the measurements double).
//
// The model learns from everything the tuner measures (technique::observe): resumed logs,
// start configurations and the tuner's idle-slot fillers included, so a resumed or warm-started
// search ranks from its first ask.
#pragma once

#include <atf/search/auc_bandit.hpp>
#include <atf/search/cost_model.hpp>
#include <atf/search/technique.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace atf::search {

struct surrogate_options {
  std::size_t neighbours = 8;   // k of the kNN model
  std::size_t candidates = 16;  // candidates ranked per point asked (at least 32 an ask)
  double explore = 0.1;         // chance that a slot takes the inner technique's own point
  std::size_t warmup = 0;       // valid measurements before ranking (0: max(16, 2 x dimensions))
  std::size_t bests = 4;        // how many of the best points' neighbourhoods are candidates
  // Fit the model's feature weights (knn_cost_model::fit_weights) when ranking starts and
  // again whenever the measured points have doubled since.
  bool fit_weights = true;
};

class surrogate final : public technique {
 public:
  explicit surrogate(std::unique_ptr<technique> inner = std::make_unique<auc_bandit>(),
                     surrogate_options o = {})
      : inner_(std::move(inner)), opt_(o), model_(o.neighbours) {
    if (!inner_) throw error("surrogate: needs an inner technique");
    if (!(opt_.explore >= 0 && opt_.explore <= 1))
      throw error("surrogate: explore must be in [0, 1], not " + std::to_string(opt_.explore));
    if (opt_.candidates == 0 || opt_.bests == 0)
      throw error("surrogate: candidates and bests must be at least 1");
  }

  std::string name() const override { return "surrogate(knn," + inner_->name() + ")"; }
  void initialize(const search_space& space, std::uint64_t seed) override {
    space_ = &space;
    inner_->initialize(space, seed);
    rng_.seed(seed ^ 0x2545f4914f6cdd1dull);
    features_ = point_features(space);
    model_ = knn_cost_model(opt_.neighbours);
    known_.clear();
    best_.clear();
    warmup_ = opt_.warmup ? opt_.warmup : std::max<std::size_t>(16, 2 * space.dimensions());
    ranked_asks_ = 0;
    fitted_at_ = 0;
  }
  bool finished() const override { return inner_->finished(); }
  void suggest_start(const point& p) override { inner_->suggest_start(p); }
  void observe(const point& p, double cost) override {
    if (!space_ || !known_.emplace(p, cost).second) return;
    model_.add(features_(p), cost);
    inner_->observe(p, cost);
    if (!std::isfinite(cost)) return;
    // the few best points so far, best first
    best_.emplace_back(cost, p);
    std::sort(best_.begin(), best_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (best_.size() > opt_.bests) best_.pop_back();
  }

  std::vector<point> ask(std::size_t max_points) override {
    inner_batch_ = inner_->ask(max_points);
    if (model_.valid() < warmup_ || inner_batch_.empty()) {
      asked_ = inner_batch_;
      return asked_;
    }
    ++ranked_asks_;
    if (opt_.fit_weights && model_.size() >= 2 * fitted_at_) {
      model_.fit_weights();
      fitted_at_ = std::max<std::size_t>(1, model_.size());
    }
    const std::size_t slots = std::max<std::size_t>(1, max_points);
    auto unknown = [&](const point& p) { return !known_.count(p); };
    std::vector<point> inner_new;
    for (const auto& p : inner_batch_)
      if (unknown(p) && std::find(inner_new.begin(), inner_new.end(), p) == inner_new.end())
        inner_new.push_back(p);

    // the candidates: the inner technique's, the best points' neighbourhoods, a few random
    std::vector<point> cand;
    std::unordered_set<point, point_hash> in_cand;
    const std::size_t want = std::max<std::size_t>(32, opt_.candidates * slots);
    auto offer = [&](const point& p) {
      if (cand.size() < want + inner_new.size() && unknown(p) && in_cand.insert(p).second)
        cand.push_back(p);
    };
    for (const auto& p : inner_new) offer(p);
    for (const auto& [c, b] : best_) {
      auto near = space_->neighbours(b);
      std::shuffle(near.begin(), near.end(), rng_);
      for (const auto& q : near) offer(q);
      // a step further: two parameters changed at once
      for (std::size_t i = 0; i < near.size() && i < 4; ++i) {
        auto far = space_->neighbours(near[i]);
        std::shuffle(far.begin(), far.end(), rng_);
        for (std::size_t j = 0; j < far.size() && j < 4; ++j) offer(far[j]);
      }
    }
    for (int tries = 0; cand.size() < want + inner_new.size() && tries < 64; ++tries)
      offer(space_->random_point(rng_));

    std::vector<std::pair<double, std::size_t>> ranked;
    ranked.reserve(cand.size());
    for (std::size_t i = 0; i < cand.size(); ++i)
      ranked.emplace_back(model_.predict(features_(cand[i])), i);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });

    asked_.clear();
    std::unordered_set<point, point_hash> chosen;
    std::size_t next_ranked = 0, next_inner = 0;
    std::bernoulli_distribution explore(opt_.explore);
    while (asked_.size() < slots) {
      const point* p = nullptr;
      if (explore(rng_))
        while (!p && next_inner < inner_new.size())
          if (const auto& q = inner_new[next_inner++]; !chosen.count(q)) p = &q;
      while (!p && next_ranked < ranked.size())
        if (const auto& q = cand[ranked[next_ranked++].second]; !chosen.count(q)) p = &q;
      if (!p) break;
      chosen.insert(*p);
      asked_.push_back(*p);
    }
    if (asked_.empty()) asked_ = inner_batch_;  // nothing new to offer: let the inner one go on
    return asked_;
  }

  void tell(const std::vector<double>& costs) override {
    if (costs.size() != asked_.size())
      throw error("surrogate: told " + std::to_string(costs.size()) + " costs for " +
                  std::to_string(asked_.size()) + " points");
    double worst_measured = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < costs.size(); ++i) {
      // atf's tuner has observed these already (known_ drops repeats); a driver of plain
      // ask/tell has not, and the model must learn either way
      observe(asked_[i], costs[i]);
      if (std::isfinite(costs[i])) worst_measured = std::max(worst_measured, costs[i]);
    }
    std::vector<double> inner_costs;
    inner_costs.reserve(inner_batch_.size());
    for (const auto& p : inner_batch_) {
      if (auto k = known_.find(p); k != known_.end()) {
        inner_costs.push_back(k->second);
        continue;
      }
      const double predicted = std::exp(model_.predict(features_(p)));
      inner_costs.push_back(std::max(predicted, worst_measured));
    }
    inner_->tell(inner_costs);
  }

  // How many asks the model ranked (the others went to the inner technique as they were).
  std::size_t ranked_asks() const { return ranked_asks_; }

 private:
  std::unique_ptr<technique> inner_;
  surrogate_options opt_;
  const search_space* space_ = nullptr;
  std::mt19937_64 rng_;
  point_features features_;
  knn_cost_model model_;
  std::unordered_map<point, double, point_hash> known_;
  std::vector<std::pair<double, point>> best_;
  std::vector<point> inner_batch_, asked_;
  std::size_t warmup_ = 16, ranked_asks_ = 0;
  std::size_t fitted_at_ = 0;  // the model's size at its last fit_weights
};

}  // namespace atf::search
