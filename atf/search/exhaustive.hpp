// SPDX-License-Identifier: MIT
// Exhaustive search: every configuration in index order.
#pragma once

#include <atf/search/technique.hpp>

namespace atf::search {

class exhaustive final : public technique {
 public:
  std::string name() const override { return "exhaustive"; }
  void initialize(const search_space& space, std::uint64_t) override {
    space_ = &space;
    next_ = 0;
  }
  std::vector<point> ask(std::size_t max_points) override {
    std::vector<point> out;
    for (; out.size() < max_points && next_ < space_->size(); ++next_)
      out.push_back(space_->point_at(next_));
    return out;
  }
  void tell(const std::vector<double>&) override {}
  bool finished() const override { return next_ >= space_->size(); }

 private:
  const search_space* space_ = nullptr;
  index_t next_ = 0;
};

}  // namespace atf::search
