// SPDX-License-Identifier: MIT
// The progress of a tuning run on stderr: a live line redrawn in place on a terminal; without
// one (a log file, a pipe, CI) the same content as a plain line every few seconds, so a long run
// is never silent.
#pragma once

#include <atf/status.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace atf {

// automatic: the live line on a terminal, plain lines otherwise; on: the live line; lines: plain
// lines (one every `plain_interval`); off: nothing.
enum class progress_mode { automatic, on, lines, off };

// How often plain progress lines are written.
inline constexpr std::chrono::seconds plain_interval{5};

namespace detail {

class progress_line {
 public:
  // `unit`: the cost's unit ("us"), shown after the best cost; empty for a unitless cost.
  explicit progress_line(progress_mode m, std::string unit = "")
      : live_(m == progress_mode::on || (m == progress_mode::automatic && ::isatty(STDERR_FILENO))),
        plain_(!live_ && m != progress_mode::off),
        unit_(std::move(unit)) {}

  // fraction: how much of the abort condition's budget is used; seconds_left: of its time
  // budget (each <0 unknown). Without a time budget, the time left is extrapolated from the
  // fraction. `force` writes now (the last line of a run).
  void update(const tuning_status& s, double fraction, double seconds_left, bool force = false) {
    if (!live_ && !plain_) return;
    const auto now = std::chrono::steady_clock::now();
    if (live_ && !force && now - last_ < std::chrono::milliseconds(250)) return;
    if (plain_ && !force) {
      if (last_ == std::chrono::steady_clock::time_point{}) last_ = now;  // first line: later
      if (now - last_ < plain_interval) return;
    }
    last_ = now;
    std::string left = "?";
    if (seconds_left >= 0)
      left = format_time(seconds_left);
    else if (fraction > 0 && fraction <= 1 && s.elapsed_s > 0)
      left = format_time(s.elapsed_s * (1 - fraction) / fraction);
    const std::string text = "[atf] evaluations " + std::to_string(s.evaluations) + " (valid " +
                             std::to_string(s.valid) + ")  best " + format_cost(s.best_cost) +
                             "  elapsed " + format_time(s.elapsed_s) + "  left " + left;
    if (live_)
      std::fprintf(stderr, "\r%s   ", text.c_str());
    else
      std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  // The best cost as the line shows it: two decimals and the unit (as mdh-tune's summary).
  std::string format_cost(double cost) const {
    if (!std::isfinite(cost)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, "%.2f", cost);
    return unit_.empty() ? std::string(b) : std::string(b) + " " + unit_;
  }
  void finish() {
    if (live_ && shown_) std::fputs("\n", stderr);
  }

 private:
  static std::string format_time(double s) {
    char b[32];
    const auto t = static_cast<long long>(s + 0.5);
    std::snprintf(b, sizeof b, "%02lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return b;
  }
  bool live_, plain_;
  std::string unit_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace detail

}  // namespace atf
