// SPDX-License-Identifier: MIT
// Torczon's multi-directional search: a simplex reflected through its best vertex, expanded when
// the reflection improves, contracted otherwise; restarted when it has shrunk to nothing.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class torczon final : public coordinate_technique {
 public:
  explicit torczon(double side = 0.1, double expansion = 2.0, double contraction = 0.5)
      : side_(side), expansion_(expansion), contraction_(contraction) {}
  std::string name() const override { return "torczon"; }

  std::vector<point> ask(std::size_t) override {
    batch_.clear();
    if (phase_ == phase::init) {
      coords v0 = start_coords();
      batch_.push_back(v0);
      for (std::size_t d = 0; d < dims_; ++d) {
        coords v = v0;
        v[d] = v[d] + side_ < 1 ? v[d] + side_ : v[d] - side_;
        clamp(v);
        batch_.push_back(std::move(v));
      }
    } else {
      const double f = phase_ == phase::reflect  ? -1.0
                       : phase_ == phase::expand ? -expansion_
                                                 : contraction_;
      for (std::size_t i = 1; i < simplex_.size(); ++i) {
        coords v(dims_);
        for (std::size_t d = 0; d < dims_; ++d)
          v[d] = simplex_[0][d] + f * (simplex_[i][d] - simplex_[0][d]);
        clamp(v);
        batch_.push_back(std::move(v));
      }
    }
    std::vector<point> out;
    for (const auto& c : batch_) out.push_back(to_point(c));
    return out;
  }

  void tell(const std::vector<double>& costs) override {
    const double best = *std::min_element(costs.begin(), costs.end());
    switch (phase_) {
      case phase::init:
        simplex_ = batch_;
        values_ = costs;
        if (!std::isfinite(best)) return;  // try another start
        sort_simplex();
        phase_ = phase::reflect;
        return;
      case phase::reflect:
        if (best < values_[0]) {
          reflected_ = batch_;
          reflected_costs_ = costs;
          phase_ = phase::expand;
        } else {
          phase_ = phase::contract;
        }
        return;
      case phase::expand: {
        const double rbest = *std::min_element(reflected_costs_.begin(), reflected_costs_.end());
        replace(best < rbest ? batch_ : reflected_, best < rbest ? costs : reflected_costs_);
        return;
      }
      case phase::contract:
        replace(batch_, costs);
        return;
    }
  }

 private:
  enum class phase { init, reflect, expand, contract };
  void reset() override { phase_ = phase::init; }
  void replace(const std::vector<coords>& vs, const std::vector<double>& fs) {
    for (std::size_t i = 1; i < simplex_.size(); ++i)
      simplex_[i] = vs[i - 1], values_[i] = fs[i - 1];
    sort_simplex();
    double size = 0;
    for (std::size_t i = 1; i < simplex_.size(); ++i)
      for (std::size_t d = 0; d < dims_; ++d)
        size = std::max(size, std::abs(simplex_[i][d] - simplex_[0][d]));
    phase_ = size < 1e-3 ? phase::init : phase::reflect;
  }
  void sort_simplex() {
    auto j = static_cast<std::size_t>(std::min_element(values_.begin(), values_.end()) -
                                      values_.begin());
    std::swap(simplex_[0], simplex_[j]);
    std::swap(values_[0], values_[j]);
  }
  double side_, expansion_, contraction_;
  phase phase_ = phase::init;
  std::vector<coords> simplex_, batch_, reflected_;
  std::vector<double> values_, reflected_costs_;
};

}  // namespace atf::search
