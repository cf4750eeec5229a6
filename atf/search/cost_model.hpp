// SPDX-License-Identifier: MIT
// atf::search::knn_cost_model: a cost model learned during the search, used to rank candidate
// configurations before any of them is compiled (issue 19: NVRTC takes ~0.5 s per kernel, the
// measurement a few ms, so a candidate not compiled is the saving). It predicts a point's log
// cost as the inverse-distance-weighted mean of its k nearest measured points (a distance in
// which each feature counts as fit_weights learned from the measurements); invalid
// configurations count as `invalid_penalty` (natural log) worse than the worst valid one, so a
// region that fails to compile or launch ranks low. Nearest neighbours rather than a fitted
// function: tuning costs are not smooth in the parameters (a tile that stops dividing the size,
// an occupancy step). How well it ranks the logged H100 searches: bench/convergence/cost_model.md
// (bench/cost_model_replay).
//
// atf::search::point_features: what the model sees of a point, one number per parameter in
// [0, 1]: numbers by log2(|v| + 1) (tile sizes and thread counts act multiplicatively), booleans
// as 0/1, strings by their position in the range; each scaled by its parameter's span.
#pragma once

#include <atf/error.hpp>
#include <atf/search_space.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace atf::search {

class point_features {
 public:
  point_features() = default;
  explicit point_features(const search_space& space) : space_(&space) {
    for (const auto& name : space.names()) {
      const auto& vals = space.values_of(name);
      std::vector<double> f(vals.size());
      for (std::size_t i = 0; i < vals.size(); ++i) f[i] = raw(vals[i], i);
      const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
      const double a = f.empty() ? 0 : *lo, span = f.empty() ? 0 : *hi - *lo;
      for (auto& x : f) x = span > 0 ? (x - a) / span : 0;
      table_.push_back(std::move(f));
    }
  }
  std::size_t dimensions() const { return table_.size(); }
  std::vector<double> operator()(const point& p) const {
    if (!space_) throw error("point_features: not bound to a search space");
    const auto vi = space_->value_indices(p);
    std::vector<double> out(vi.size());
    for (std::size_t i = 0; i < vi.size(); ++i) out[i] = table_[i][vi[i]];
    return out;
  }

 private:
  static double raw(const value& v, std::size_t position) {
    if (const auto* i = std::get_if<std::int64_t>(&v))
      return std::copysign(std::log2(std::abs(static_cast<double>(*i)) + 1),
                           static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(&v))
      return std::copysign(std::log2(std::abs(*d) + 1), *d);
    if (const auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
    return static_cast<double>(position);  // a string: its place in the declared order
  }
  const search_space* space_ = nullptr;
  std::vector<std::vector<double>> table_;  // [parameter][value index] -> feature
};

// Spearman's rank correlation of two equally long series (ties ranked in order of position):
// how well a model's predictions order what was measured (1: the same order, 0: chance).
inline double rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2)
    throw error("rank_correlation: needs two series of the same length >= 2 (got " +
                std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")");
  auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<double>(i);
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) - 1) / 2;
  double num = 0, da = 0, db = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (ra[i] - mean) * (rb[i] - mean);
    da += (ra[i] - mean) * (ra[i] - mean);
    db += (rb[i] - mean) * (rb[i] - mean);
  }
  return num / std::sqrt(da * db);
}

class knn_cost_model {
 public:
  // k: neighbours per prediction; invalid_penalty: how much worse (natural log) than the worst
  // valid cost an invalid configuration counts (ln 4: four times slower).
  explicit knn_cost_model(std::size_t k = 8, double invalid_penalty = std::log(4.0))
      : k_(k), invalid_penalty_(invalid_penalty) {
    if (k_ == 0) throw error("knn_cost_model: k must be at least 1");
  }
  std::size_t size() const { return y_.size(); }
  std::size_t valid() const { return valid_; }
  // A measured point: a cost (a time: finite and > 0), or +infinity for an invalid one.
  void add(std::span<const double> features, double cost) {
    if (y_.empty()) dims_ = features.size();
    if (features.size() != dims_)
      throw error("knn_cost_model: a point of " + std::to_string(features.size()) +
                  " features after points of " + std::to_string(dims_));
    const bool ok = std::isfinite(cost);
    if (ok && !(cost > 0))
      throw error("knn_cost_model: cost " + std::to_string(cost) +
                  " is not positive (the model ranks times by their logarithm)");
    if (w_.size() != dims_) w_.assign(dims_, 1.0);
    x_.insert(x_.end(), features.begin(), features.end());
    y_.push_back(ok ? std::log(cost) : std::numeric_limits<double>::quiet_NaN());
    if (ok) ++valid_, worst_ = std::max(worst_, y_.back());
  }
  // The predicted log cost (+infinity while nothing valid has been measured).
  double predict(std::span<const double> features) const {
    if (valid_ == 0) return std::numeric_limits<double>::infinity();
    if (features.size() != dims_)
      throw error("knn_cost_model: asked about " + std::to_string(features.size()) +
                  " features, trained on " + std::to_string(dims_));
    const std::size_t n = y_.size(), k = std::min(k_, n);
    // the k nearest in one pass: a max-heap of (distance, row), a row's sum abandoned once it
    // passes the heap's farthest (tens of thousands of rows are asked about per search ask)
    near_.clear();
    for (std::size_t r = 0; r < n; ++r) {
      const double* row = x_.data() + r * dims_;
      const double bound =
          near_.size() == k ? near_.front().first : std::numeric_limits<double>::infinity();
      double d = 0;
      for (std::size_t j = 0; j < dims_ && d <= bound; ++j)
        d += w_[j] * (row[j] - features[j]) * (row[j] - features[j]);
      if (near_.size() < k) {
        near_.emplace_back(d, r);
        std::push_heap(near_.begin(), near_.end());
      } else if (d < bound) {  // ties keep the earlier row: the same observations, the same answer
        std::pop_heap(near_.begin(), near_.end());
        near_.back() = {d, r};
        std::push_heap(near_.begin(), near_.end());
      }
    }
    std::sort(near_.begin(), near_.end());
    return weighted_mean(near_);
  }

  // The weight of each feature in the distance (all 1 until fit_weights).
  const std::vector<double>& weights() const { return w_; }

  // Learns how much each feature counts in the distance: one sweep of coordinate ascent over
  // the weights {0, 1/4, 1, 4} per feature, from all 1, keeping a change when it raises the rank
  // correlation of the leave-one-out predictions (each of the last `max_points` measured points
  // predicted from the others) with what was measured. Parameters that do not matter to this
  // kernel then stop deciding who is near (they still count where their weight stays). Returns
  // that correlation. Cost: about 3 x dimensions x max_points^2 x dimensions operations.
  double fit_weights(std::size_t max_points = 300) {
    const std::size_t n = y_.size(), m = std::min(n, max_points), first = n - m;
    if (m < 2 * k_ + 2 || valid_ == 0) return 0;  // too few to judge a weight by
    // per pair and feature, the squared difference, once
    std::vector<double> diff(m * m * dims_);
    for (std::size_t a = 0; a < m; ++a)
      for (std::size_t b = 0; b < m; ++b)
        for (std::size_t j = 0; j < dims_; ++j) {
          const double t = x_[(first + a) * dims_ + j] - x_[(first + b) * dims_ + j];
          diff[(a * m + b) * dims_ + j] = t * t;
        }
    std::vector<double> truth(m);
    for (std::size_t a = 0; a < m; ++a) truth[a] = value_of(first + a);
    std::vector<double> pred(m), dist(m);
    std::vector<std::pair<double, std::size_t>> near;
    auto score = [&](const std::vector<double>& w) {
      for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = 0; b < m; ++b) {
          const double* d = diff.data() + (a * m + b) * dims_;
          double s = 0;
          for (std::size_t j = 0; j < dims_; ++j) s += w[j] * d[j];
          dist[b] = s;
        }
        near.clear();
        for (std::size_t b = 0; b < m; ++b)
          if (b != a) near.emplace_back(dist[b], first + b);
        const std::size_t k = std::min(k_, near.size());
        std::partial_sort(near.begin(), near.begin() + std::ptrdiff_t(k), near.end());
        near.resize(k);
        pred[a] = weighted_mean(near);
      }
      return rank_correlation(pred, truth);
    };
    std::vector<double> w(dims_, 1.0);
    double best = score(w);
    // one sweep, a change kept only when it gains 0.005: of the few settings tried on the
    // replayed logs (two sweeps; margins 0.002-0.02) this one ranked their later points best
    for (std::size_t j = 0; j < dims_; ++j)
      for (double v : {0.0, 0.25, 1.0, 4.0}) {
        if (v == w[j]) continue;
        const double keep = w[j];
        w[j] = v;
        if (const double s = score(w); s > best + 0.005)
          best = s;
        else
          w[j] = keep;
      }
    w_ = std::move(w);
    return best;
  }

 private:
  std::size_t k_;
  double invalid_penalty_;
  std::size_t dims_ = 0, valid_ = 0;
  double worst_ = -std::numeric_limits<double>::infinity();
  std::vector<double> x_, y_;  // features row-major; log costs (NaN: invalid)
  std::vector<double> w_;      // per feature, its weight in the squared distance

  // Row r's log cost as the model counts it (an invalid one: the worst valid plus the penalty).
  double value_of(std::size_t r) const {
    return std::isnan(y_[r]) ? worst_ + invalid_penalty_ : y_[r];
  }
  // The inverse-distance-weighted mean of the neighbours' costs (distance 0: that measurement).
  double weighted_mean(const std::vector<std::pair<double, std::size_t>>& near) const {
    double sw = 0, sy = 0;
    for (const auto& [d, r] : near) {
      if (d == 0) return value_of(r);
      const double w = 1 / (d + 1e-3);
      sw += w, sy += w * value_of(r);
    }
    return sy / sw;
  }
  mutable std::vector<std::pair<double, std::size_t>> near_;
};

}  // namespace atf::search
