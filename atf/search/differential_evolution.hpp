// SPDX-License-Identifier: MIT
// Differential evolution (rand/1/bin) on coordinates: each generation proposes one trial per
// population member, which replaces the member when it is no worse.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class differential_evolution final : public coordinate_technique {
 public:
  explicit differential_evolution(std::size_t population = 30, double f = 0.7, double cr = 0.5)
      : np_(std::max<std::size_t>(population, 4)), f_(f), cr_(cr) {}
  std::string name() const override { return "differential_evolution"; }

  std::vector<point> ask(std::size_t) override {
    batch_.clear();
    if (pop_.empty()) {
      for (std::size_t i = 0; i < np_; ++i) batch_.push_back(random_coords());
    } else {
      for (std::size_t i = 0; i < np_; ++i) {
        std::size_t a, b, c;
        do a = pick(np_);
        while (a == i);
        do b = pick(np_);
        while (b == i || b == a);
        do c = pick(np_);
        while (c == i || c == a || c == b);
        coords t = pop_[i];
        const std::size_t jr = pick(dims_);
        for (std::size_t d = 0; d < dims_; ++d)
          if (d == jr || uniform() < cr_) t[d] = pop_[a][d] + f_ * (pop_[b][d] - pop_[c][d]);
        clamp(t);
        batch_.push_back(std::move(t));
      }
    }
    std::vector<point> out;
    for (const auto& c : batch_) out.push_back(to_point(c));
    return out;
  }

  void tell(const std::vector<double>& costs) override {
    if (pop_.empty()) {
      pop_ = batch_;
      fit_ = costs;
      return;
    }
    for (std::size_t i = 0; i < np_; ++i)
      if (costs[i] <= fit_[i]) pop_[i] = batch_[i], fit_[i] = costs[i];
  }

 private:
  void reset() override { pop_.clear(), fit_.clear(); }
  std::size_t np_;
  double f_, cr_;
  std::vector<coords> pop_, batch_;
  std::vector<double> fit_;
};

}  // namespace atf::search
