// SPDX-License-Identifier: MIT
// Abort once the tuning has run for a given time: duration() sums every session of a resumed log,
// session_duration() counts this session alone ("tune S seconds more", whatever the log holds).
#pragma once

#include <atf/abort/condition.hpp>

#include <algorithm>
#include <chrono>

namespace atf::abort {

namespace detail {
struct time_budget final : condition::impl {
  double s;
  bool session;  // this session's clock, not the log's total
  time_budget(double x, bool y) : s(x), session(y) {}
  double clock(const tuning_status& st) const { return session ? st.session_s : st.elapsed_s; }
  bool stop(const tuning_status& st) const override { return clock(st) >= s; }
  double progress(const tuning_status& st) const override {
    return s > 0 ? std::min(1.0, clock(st) / s) : 1.0;
  }
  double seconds_left(const tuning_status& st) const override {
    return std::max(0.0, s - clock(st));
  }
  std::string describe() const override {
    return (session ? "session_duration(" : "duration(") + std::to_string(s) + " s)";
  }
};
}  // namespace detail

template <class Rep, class Period>
condition duration(std::chrono::duration<Rep, Period> limit) {
  return condition(
      std::make_shared<detail::time_budget>(std::chrono::duration<double>(limit).count(), false));
}

template <class Rep, class Period>
condition session_duration(std::chrono::duration<Rep, Period> limit) {
  return condition(
      std::make_shared<detail::time_budget>(std::chrono::duration<double>(limit).count(), true));
}

}  // namespace atf::abort
