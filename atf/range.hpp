// SPDX-License-Identifier: MIT
// atf::range: the finite, ordered list of values a tuning parameter may take, and its generators.
#pragma once

#include <atf/error.hpp>
#include <atf/value.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace atf {

class range {
 public:
  range() = default;
  range(std::vector<value> values, std::string description)
      : values_(std::move(values)), description_(std::move(description)) {}

  const std::vector<value>& values() const { return values_; }
  std::size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  const std::string& description() const { return description_; }

 private:
  std::vector<value> values_;
  std::string description_;
};

// [begin, end] inclusive, every step-th value; the optional generator maps each to the stored
// value.
template <class T, class Gen>
range interval(T begin, T end, T step, Gen&& generator) {
  static_assert(std::is_arithmetic_v<T>, "atf::interval needs an arithmetic type");
  std::string desc = "interval(" + to_string(detail::make_value(begin)) + ", " +
                     to_string(detail::make_value(end)) + ", " +
                     to_string(detail::make_value(step)) + ")";
  if (!(step > T{0})) throw error(desc + ": step must be positive");
  std::vector<value> vals;
  if constexpr (std::is_integral_v<T>) {
    for (T x = begin; x <= end; x += step) {
      vals.push_back(detail::make_value(generator(x)));
      if (end - x < step) break;  // no overflow at the top of the type
    }
  } else {
    // Index-based so rounding does not accumulate; a tiny slack keeps an exact end inside.
    const double n = std::floor((static_cast<double>(end) - begin) / step * (1 + 1e-12) + 1e-9);
    for (std::int64_t i = 0; i <= static_cast<std::int64_t>(n); ++i)
      vals.push_back(detail::make_value(generator(static_cast<T>(begin + i * step))));
  }
  if (vals.empty()) throw error(desc + " is empty");
  return range(std::move(vals), std::move(desc));
}

template <class T>
range interval(T begin, T end, T step = T{1}) {
  return interval<T>(begin, end, step, [](T x) { return x; });
}

// 2^k for every k with lo <= 2^k <= hi.
inline range powers_of_two(std::int64_t lo, std::int64_t hi) {
  std::vector<value> vals;
  for (std::int64_t p = 1; p > 0 && p <= hi; p *= 2)
    if (p >= lo) vals.emplace_back(p);
  std::string desc = "powers_of_two(" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
  if (vals.empty()) throw error(desc + " is empty");
  return range(std::move(vals), std::move(desc));
}

// Every positive divisor of n, ascending.
inline range divisors(std::int64_t n) {
  std::string desc = "divisors(" + std::to_string(n) + ")";
  if (n <= 0) throw error(desc + ": n must be positive");
  std::vector<std::int64_t> lo, hi;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      lo.push_back(d);
      if (d != n / d) hi.push_back(n / d);
    }
  std::vector<value> vals(lo.begin(), lo.end());
  for (auto it = hi.rbegin(); it != hi.rend(); ++it) vals.emplace_back(*it);
  return range(std::move(vals), std::move(desc));
}

template <class T>
range set(const std::vector<T>& xs) {
  std::vector<value> vals;
  std::string desc = "set(";
  for (const auto& x : xs) {
    vals.push_back(detail::make_value(x));
    desc += (vals.size() > 1 ? ", " : "") + to_string(vals.back());
  }
  if (vals.empty()) throw error("set(): range is empty");
  return range(std::move(vals), desc + ")");
}
template <class T>
range set(std::initializer_list<T> xs) {
  return set(std::vector<T>(xs));
}

inline range booleans() { return set({false, true}); }

}  // namespace atf
