// SPDX-License-Identifier: MIT
// The live progress line on stderr (only when stderr is a terminal, unless forced).
#pragma once

#include <atf/status.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace atf {

enum class progress_mode { automatic, on, off };

namespace detail {

class progress_line {
 public:
  explicit progress_line(progress_mode m)
      : on_(m == progress_mode::on || (m == progress_mode::automatic && ::isatty(STDERR_FILENO))) {}

  // fraction: how much of the abort condition's budget is used; seconds_left: of its time
  // budget (each <0 unknown). Without a time budget, the time left is extrapolated from the
  // fraction.
  void update(const tuning_status& s, double fraction, double seconds_left, bool force = false) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    std::string left = "?";
    if (seconds_left >= 0)
      left = format_time(seconds_left);
    else if (fraction > 0 && fraction <= 1 && s.elapsed_s > 0)
      left = format_time(s.elapsed_s * (1 - fraction) / fraction);
    char buf[256];
    std::snprintf(
        buf, sizeof buf, "\r[atf] evaluations %llu (valid %llu)  best %s  elapsed %s  left %s   ",
        static_cast<unsigned long long>(s.evaluations), static_cast<unsigned long long>(s.valid),
        std::isfinite(s.best_cost) ? std::to_string(s.best_cost).c_str() : "-",
        format_time(s.elapsed_s).c_str(), left.c_str());
    std::fputs(buf, stderr);
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (on_ && shown_) std::fputs("\n", stderr);
  }

 private:
  static std::string format_time(double s) {
    char b[32];
    const auto t = static_cast<long long>(s + 0.5);
    std::snprintf(b, sizeof b, "%02lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return b;
  }
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace detail

}  // namespace atf
