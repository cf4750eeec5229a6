// SPDX-License-Identifier: MIT
// Abort when the best cost has not improved by a factor within a window (of evaluations or time):
// stop when best(window ago) / best(now) < factor.
#pragma once

#include <atf/abort/condition.hpp>
#include <atf/error.hpp>

#include <chrono>
#include <cmath>

namespace atf::abort {

namespace detail {
// Best cost at or before a point: the last improvement not after it.
template <class Key>
double best_at(const tuning_status& s, Key at, bool by_time) {
  double best = std::numeric_limits<double>::infinity();
  const auto& imp = *s.improvements;
  for (std::size_t i = 0; i < imp.size(); ++i) {
    const bool before = by_time ? (*s.improvement_times)[i] <= static_cast<double>(at)
                                : imp[i].first <= static_cast<std::uint64_t>(at);
    if (!before) break;
    best = imp[i].second;
  }
  return best;
}
}  // namespace detail

inline condition no_improvement(double factor, std::uint64_t window_evaluations) {
  if (!(factor >= 1)) throw error("abort::no_improvement: factor must be >= 1");
  struct c final : condition::impl {
    double f;
    std::uint64_t w;
    c(double x, std::uint64_t y) : f(x), w(y) {}
    bool stop(const tuning_status& s) const override {
      if (s.evaluations < w || !s.improvements || s.improvements->empty()) return false;
      const double then = detail::best_at(s, s.evaluations - w, false);
      if (!std::isfinite(then)) return false;
      return then <= f * s.best_cost;
    }
    std::string describe() const override {
      return "no_improvement(" + std::to_string(f) + ", " + std::to_string(w) + " evaluations)";
    }
  };
  return condition(std::make_shared<c>(factor, window_evaluations));
}

template <class Rep, class Period>
condition no_improvement(double factor, std::chrono::duration<Rep, Period> window) {
  if (!(factor >= 1)) throw error("abort::no_improvement: factor must be >= 1");
  struct c final : condition::impl {
    double f, w;
    c(double x, double y) : f(x), w(y) {}
    bool stop(const tuning_status& s) const override {
      if (s.elapsed_s < w || !s.improvements || s.improvements->empty()) return false;
      const double then = detail::best_at(s, s.elapsed_s - w, true);
      if (!std::isfinite(then)) return false;
      return then <= f * s.best_cost;
    }
    std::string describe() const override {
      return "no_improvement(" + std::to_string(f) + ", " + std::to_string(w) + " s)";
    }
  };
  return condition(std::make_shared<c>(factor, std::chrono::duration<double>(window).count()));
}

}  // namespace atf::abort
