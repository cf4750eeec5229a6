// SPDX-License-Identifier: MIT
// Random search: configurations drawn uniformly from the valid ones.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class random final : public technique {
 public:
  std::string name() const override { return "random"; }
  void initialize(const search_space& space, std::uint64_t seed) override {
    space_ = &space;
    rng_.seed(seed);
  }
  std::vector<point> ask(std::size_t max_points) override {
    std::vector<point> out;
    for (std::size_t i = 0; i < std::max<std::size_t>(1, max_points); ++i)
      out.push_back(space_->random_point(rng_));
    return out;
  }
  void tell(const std::vector<double>&) override {}

 private:
  const search_space* space_ = nullptr;
  std::mt19937_64 rng_;
};

}  // namespace atf::search
