// SPDX-License-Identifier: MIT
// Abort once a fraction of the search space has been evaluated.
#pragma once

#include <atf/abort/condition.hpp>
#include <atf/error.hpp>

#include <cmath>

namespace atf::abort {

inline condition fraction(double f) {
  if (!(f >= 0 && f <= 1))
    throw error("abort::fraction: " + std::to_string(f) + " is not in [0, 1]");
  struct c final : condition::impl {
    double f;
    explicit c(double x) : f(x) {}
    std::uint64_t target(const tuning_status& s) const {
      const double t = std::ceil(f * static_cast<double>(s.space_size));
      return t >= 1.8e19 ? unlimited : static_cast<std::uint64_t>(t);
    }
    bool stop(const tuning_status& s) const override { return s.evaluations >= target(s); }
    double progress(const tuning_status& s) const override {
      const auto t = target(s);
      return t ? std::min(1.0, static_cast<double>(s.evaluations) / static_cast<double>(t)) : 1.0;
    }
    std::uint64_t remaining(const tuning_status& s) const override {
      const auto t = target(s);
      return s.evaluations >= t ? 0 : t - s.evaluations;
    }
    std::string describe() const override { return "fraction(" + std::to_string(f) + ")"; }
  };
  return condition(std::make_shared<c>(f));
}

}  // namespace atf::abort
