// SPDX-License-Identifier: MIT
// Compile-time buffer names: in `mdh::in<float, "A">(i, k)` the name "A" is a template argument,
// so a computation can check at compile time that one name means one buffer (one element type,
// one rank) and that no output is named twice.
#pragma once

#include <cstddef>
#include <string_view>

namespace mdh {

// A string literal usable as a template argument: `template <buffer_name Name>`.
template <std::size_t N>
struct buffer_name {
  char value[N]{};

  constexpr buffer_name(const char (&s)[N]) {  // NOLINT: implicit, so "A" converts
    for (std::size_t k = 0; k < N; ++k) value[k] = s[k];
  }
  constexpr std::string_view view() const { return {value, N - 1}; }
  constexpr bool empty() const { return N <= 1; }
};

}  // namespace mdh
