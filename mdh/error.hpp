// SPDX-License-Identifier: MIT
// mdh::error for user errors (bad sizes, bad configurations, failed compiles); MDH_ASSERT for bugs.
#pragma once

#include <stdexcept>
#include <string>

namespace mdh {

// A user-facing error: the message says what went wrong and where.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("mdh: " + what) {}
};

// The machinery failed, not the input: a compiler process out of memory or resources, a kernel
// cache that lost a race with another process. Trying again may succeed; a tuner never counts it
// against the configuration it was compiling.
class infrastructure_error : public error {
 public:
  using error::error;
};

// An internal invariant broke: a bug in mdh, not in the caller's input.
class internal_error : public std::logic_error {
 public:
  explicit internal_error(const std::string& what)
      : std::logic_error("mdh internal error: " + what) {}
};

namespace detail {
// False, but only once T is known: `static_assert(detail::always_false<T>, "...")` in a template
// fires when that template is used, turning a common mistake into one message.
template <class T>
inline constexpr bool always_false = false;
}  // namespace detail

}  // namespace mdh

#define MDH_ASSERT(cond, msg)                                                              \
  do {                                                                                     \
    if (!(cond))                                                                           \
      throw ::mdh::internal_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                  ": " #cond ": " + (msg));                                \
  } while (0)
