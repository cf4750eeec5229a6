// SPDX-License-Identifier: MIT
// Abort after n unique evaluations (valid or not), or after n valid ones.
#pragma once

#include <atf/abort/condition.hpp>

namespace atf::abort {

inline condition evaluations(std::uint64_t n) {
  struct c final : condition::impl {
    std::uint64_t n;
    explicit c(std::uint64_t x) : n(x) {}
    bool stop(const tuning_status& s) const override { return s.evaluations >= n; }
    double progress(const tuning_status& s) const override {
      return n ? std::min(1.0, static_cast<double>(s.evaluations) / static_cast<double>(n)) : 1.0;
    }
    std::uint64_t remaining(const tuning_status& s) const override {
      return s.evaluations >= n ? 0 : n - s.evaluations;
    }
    std::string describe() const override { return "evaluations(" + std::to_string(n) + ")"; }
  };
  return condition(std::make_shared<c>(n));
}

inline condition valid_evaluations(std::uint64_t n) {
  struct c final : condition::impl {
    std::uint64_t n;
    explicit c(std::uint64_t x) : n(x) {}
    bool stop(const tuning_status& s) const override { return s.valid >= n; }
    double progress(const tuning_status& s) const override {
      return n ? std::min(1.0, static_cast<double>(s.valid) / static_cast<double>(n)) : 1.0;
    }
    std::uint64_t remaining(const tuning_status& s) const override {
      return s.valid >= n ? 0 : n - s.valid;
    }
    std::string describe() const override { return "valid_evaluations(" + std::to_string(n) + ")"; }
  };
  return condition(std::make_shared<c>(n));
}

}  // namespace atf::abort
