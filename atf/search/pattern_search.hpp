// SPDX-License-Identifier: MIT
// Pattern search (Hooke-Jeeves style): probe +-h along every coordinate, move to the best improving
// probe, halve h when none improves, restart from a random point when h is tiny.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class pattern_search final : public coordinate_technique {
 public:
  explicit pattern_search(double step = 0.1, double min_step = 1e-3) : h0_(step), hmin_(min_step) {}
  std::string name() const override { return "pattern_search"; }

  std::vector<point> ask(std::size_t) override {
    batch_.clear();
    if (!have_) {
      batch_.push_back(start_coords());
    } else {
      for (std::size_t d = 0; d < dims_; ++d)
        for (double s : {-h_, h_}) {
          coords c = base_;
          c[d] = clamp01(c[d] + s);
          batch_.push_back(std::move(c));
        }
    }
    std::vector<point> out;
    for (const auto& c : batch_) out.push_back(to_point(c));
    return out;
  }

  void tell(const std::vector<double>& costs) override {
    auto j = static_cast<std::size_t>(std::min_element(costs.begin(), costs.end()) - costs.begin());
    if (!have_) {
      if (std::isfinite(costs[j])) base_ = batch_[j], fbase_ = costs[j], have_ = true, h_ = h0_;
      return;
    }
    if (costs[j] < fbase_) {
      base_ = batch_[j];
      fbase_ = costs[j];
    } else if ((h_ *= 0.5) < hmin_) {
      have_ = false;
    }
  }

 private:
  void reset() override { have_ = false; }
  double h0_, hmin_, h_ = 0.1;
  bool have_ = false;
  coords base_;
  double fbase_ = 0;
  std::vector<coords> batch_;
};

}  // namespace atf::search
