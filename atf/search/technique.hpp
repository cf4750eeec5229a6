// SPDX-License-Identifier: MIT
// atf::search::technique: the ask/tell interface of search techniques, and a base for techniques
// that move in the coordinate space [0,1)^n (mapped to configurations by leaf-count weighting).
#pragma once

#include <atf/search_space.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace atf::search {

class technique {
 public:
  virtual ~technique() = default;
  virtual std::string name() const = 0;
  virtual void initialize(const search_space& space, std::uint64_t seed) = 0;
  // Points to evaluate next, about max_points of them (at least one unless finished()).
  virtual std::vector<point> ask(std::size_t max_points) = 0;
  // The costs of the last ask's points, in order; +infinity marks an invalid configuration.
  virtual void tell(const std::vector<double>& costs) = 0;
  virtual bool finished() const { return false; }
  // A good point found elsewhere (e.g. the incumbent of a bandit): a local technique starts its
  // next (re)start from it instead of from a random point. Default: ignored.
  virtual void suggest_start(const point&) {}
  // Every measurement the tuner has, whoever asked for it (a resumed log, start configurations,
  // idle-slot fillers, this technique's own asks), once each: for techniques that learn a model
  // of the cost (surrogate). +infinity: invalid. Default: ignored.
  virtual void observe(const point&, double /*cost*/) {}
};

inline constexpr double invalid_cost = std::numeric_limits<double>::infinity();

// Shared plumbing for techniques working on coordinates.
class coordinate_technique : public technique {
 public:
  void initialize(const search_space& space, std::uint64_t seed) override {
    space_ = &space;
    dims_ = space.dimensions();
    rng_.seed(seed);
    have_hint_ = false;
    reset();
  }
  void suggest_start(const point& p) override {
    if (!space_) return;
    hint_ = space_->coordinates_of(p);
    have_hint_ = true;
  }

 protected:
  using coords = std::vector<double>;
  virtual void reset() {}

  coords random_coords() {
    coords c(dims_);
    for (auto& x : c) x = unit_(rng_);
    return c;
  }
  // Where a (re)start begins: the suggested point once, else a random one.
  coords start_coords() {
    if (have_hint_) {
      have_hint_ = false;
      return hint_;
    }
    return random_coords();
  }
  static double clamp01(double x) { return std::clamp(x, 0.0, std::nextafter(1.0, 0.0)); }
  static void clamp(coords& c) {
    for (auto& x : c) x = clamp01(x);
  }
  point to_point(const coords& c) const { return space_->point_at_coordinates(c); }
  double normal() { return normal_(rng_); }
  double uniform() { return unit_(rng_); }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  const search_space* space_ = nullptr;
  std::size_t dims_ = 0;
  std::mt19937_64 rng_;

 private:
  coords hint_;
  bool have_hint_ = false;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::normal_distribution<double> normal_{0.0, 1.0};
};

}  // namespace atf::search
