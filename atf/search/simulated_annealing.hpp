// SPDX-License-Identifier: MIT
// Simulated annealing in coordinate space: Gaussian moves around the current point, Metropolis
// acceptance on the relative cost change, geometric cooling and a restart from a random point once
// cold.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class simulated_annealing final : public coordinate_technique {
 public:
  explicit simulated_annealing(double initial_temperature = 1.0, double cooling = 0.95,
                               double step = 0.1)
      : t0_(initial_temperature), cooling_(cooling), step_(step) {}
  std::string name() const override { return "simulated_annealing"; }

  std::vector<point> ask(std::size_t max_points) override {
    batch_.clear();
    if (!have_) {
      batch_.push_back(start_coords());
    } else {
      const std::size_t k = std::clamp<std::size_t>(max_points, 1, 4);
      const double p = std::max(1.0 / static_cast<double>(dims_), 0.3);
      for (std::size_t i = 0; i < k; ++i) {
        coords c = cur_;
        bool moved = false;
        for (std::size_t d = 0; d < dims_; ++d)
          if (uniform() < p) c[d] += step_ * normal(), moved = true;
        if (!moved) c[pick(dims_)] += step_ * normal();
        clamp(c);
        batch_.push_back(std::move(c));
      }
    }
    std::vector<point> out;
    for (const auto& c : batch_) out.push_back(to_point(c));
    return out;
  }

  void tell(const std::vector<double>& costs) override {
    std::size_t j =
        static_cast<std::size_t>(std::min_element(costs.begin(), costs.end()) - costs.begin());
    const double f = costs[j];
    if (!have_) {
      if (std::isfinite(f)) cur_ = batch_[j], fcur_ = f, have_ = true, temp_ = t0_;
      return;
    }
    if (std::isfinite(f)) {
      const double rel = (f - fcur_) / std::max(std::abs(fcur_), 1e-300);
      if (rel <= 0 || uniform() < std::exp(-rel / temp_)) cur_ = batch_[j], fcur_ = f;
    }
    temp_ *= cooling_;
    if (temp_ < 1e-3 * t0_) have_ = false;  // cold: restart elsewhere
  }

 private:
  void reset() override { have_ = false; }
  double t0_, cooling_, step_, temp_ = 1;
  bool have_ = false;
  coords cur_;
  double fcur_ = 0;
  std::vector<coords> batch_;
};

}  // namespace atf::search
