// SPDX-License-Identifier: MIT
// Abort once the tuning has run for a given time (summed over resumed sessions).
#pragma once

#include <atf/abort/condition.hpp>

#include <chrono>

namespace atf::abort {

template <class Rep, class Period>
condition duration(std::chrono::duration<Rep, Period> limit) {
  struct c final : condition::impl {
    double s;
    explicit c(double x) : s(x) {}
    bool stop(const tuning_status& st) const override { return st.elapsed_s >= s; }
    double progress(const tuning_status& st) const override {
      return s > 0 ? std::min(1.0, st.elapsed_s / s) : 1.0;
    }
    std::string describe() const override { return "duration(" + std::to_string(s) + " s)"; }
  };
  return condition(std::make_shared<c>(std::chrono::duration<double>(limit).count()));
}

}  // namespace atf::abort
