// SPDX-License-Identifier: MIT
// atf::search::knn_cost_model: a cost model learned during the search, used to rank candidate
// configurations before any of them is compiled (issue 19: NVRTC takes ~0.5 s per kernel, the
// measurement a few ms, so a candidate not compiled is the saving). It predicts a point's log
// cost as the inverse-distance-weighted mean of its k nearest measured points; invalid
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
        d += (row[j] - features[j]) * (row[j] - features[j]);
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
    double sw = 0, sy = 0;
    for (const auto& [d, r] : near_) {
      const double y = std::isnan(y_[r]) ? worst_ + invalid_penalty_ : y_[r];
      if (d == 0) return y;  // measured: the measurement
      const double w = 1 / (d + 1e-3);
      sw += w, sy += w * y;
    }
    return sy / sw;
  }

 private:
  std::size_t k_;
  double invalid_penalty_;
  std::size_t dims_ = 0, valid_ = 0;
  double worst_ = -std::numeric_limits<double>::infinity();
  std::vector<double> x_, y_;  // features row-major; log costs (NaN: invalid)
  mutable std::vector<std::pair<double, std::size_t>> near_;
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

}  // namespace atf::search
