// SPDX-License-Identifier: MIT
// Abort once a configuration with cost at or below a target has been found.
#pragma once

#include <atf/abort/condition.hpp>

namespace atf::abort {

inline condition cost(double target) {
  struct c final : condition::impl {
    double t;
    explicit c(double x) : t(x) {}
    bool stop(const tuning_status& s) const override { return s.best_cost <= t; }
    std::string describe() const override { return "cost(" + std::to_string(t) + ")"; }
  };
  return condition(std::make_shared<c>(target));
}

}  // namespace atf::abort
