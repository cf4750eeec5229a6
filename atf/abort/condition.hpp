// SPDX-License-Identifier: MIT
// atf::abort::condition: when a tuning run stops; conditions compose with && (stop when both hold)
// and || (stop when either holds).
#pragma once

#include <atf/status.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace atf::abort {

inline constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

class condition {
 public:
  struct impl {
    virtual ~impl() = default;
    virtual bool stop(const tuning_status& s) const = 0;
    // Fraction of the budget used, in [0,1]; negative when it cannot be told.
    virtual double progress(const tuning_status&) const { return -1; }
    // At most how many more evaluations may start before stop() can become true.
    virtual std::uint64_t remaining(const tuning_status&) const { return unlimited; }
    // Seconds until a time budget runs out; negative when there is none (or it cannot be told).
    virtual double seconds_left(const tuning_status&) const { return -1; }
    virtual std::string describe() const = 0;
  };

  explicit condition(std::shared_ptr<const impl> p) : p_(std::move(p)) {}

  bool stop(const tuning_status& s) const { return p_->stop(s); }
  double progress(const tuning_status& s) const { return p_->progress(s); }
  std::uint64_t remaining(const tuning_status& s) const { return p_->remaining(s); }
  double seconds_left(const tuning_status& s) const { return p_->seconds_left(s); }
  std::string describe() const { return p_->describe(); }

  friend condition operator&&(const condition& a, const condition& b) {
    struct both final : impl {
      condition a, b;
      both(condition x, condition y) : a(std::move(x)), b(std::move(y)) {}
      bool stop(const tuning_status& s) const override { return a.stop(s) && b.stop(s); }
      double progress(const tuning_status& s) const override {
        double x = a.progress(s), y = b.progress(s);
        return x < 0 || y < 0 ? -1 : std::min(x, y);
      }
      std::uint64_t remaining(const tuning_status& s) const override {
        return std::max(a.remaining(s), b.remaining(s));
      }
      double seconds_left(const tuning_status& s) const override {
        double x = a.seconds_left(s), y = b.seconds_left(s);
        return x < 0 || y < 0 ? -1 : std::max(x, y);
      }
      std::string describe() const override {
        return "(" + a.describe() + " and " + b.describe() + ")";
      }
    };
    return condition(std::make_shared<both>(a, b));
  }
  friend condition operator||(const condition& a, const condition& b) {
    struct either final : impl {
      condition a, b;
      either(condition x, condition y) : a(std::move(x)), b(std::move(y)) {}
      bool stop(const tuning_status& s) const override { return a.stop(s) || b.stop(s); }
      double progress(const tuning_status& s) const override {
        return std::max(a.progress(s), b.progress(s));
      }
      std::uint64_t remaining(const tuning_status& s) const override {
        return std::min(a.remaining(s), b.remaining(s));
      }
      double seconds_left(const tuning_status& s) const override {
        double x = a.seconds_left(s), y = b.seconds_left(s);
        return x < 0 ? y : y < 0 ? x : std::min(x, y);
      }
      std::string describe() const override {
        return "(" + a.describe() + " or " + b.describe() + ")";
      }
    };
    return condition(std::make_shared<either>(a, b));
  }

 private:
  std::shared_ptr<const impl> p_;
};

// Builds a condition from a predicate (for custom conditions).
template <class F>
condition when(std::string description, F f) {
  struct custom final : condition::impl {
    std::string d;
    F f;
    custom(std::string x, F g) : d(std::move(x)), f(std::move(g)) {}
    bool stop(const tuning_status& s) const override { return f(s); }
    std::string describe() const override { return d; }
  };
  return condition(std::make_shared<custom>(std::move(description), std::move(f)));
}

}  // namespace atf::abort
