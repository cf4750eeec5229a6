// SPDX-License-Identifier: MIT
// Element types known to the IR, their C spellings and sizes, and their C++ counterparts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace mdh {

enum class scalar_type : std::uint8_t { f32, f64, i32, i64, boolean };

constexpr std::string_view c_name(scalar_type t) {
  switch (t) {
    case scalar_type::f32:
      return "float";
    case scalar_type::f64:
      return "double";
    case scalar_type::i32:
      return "int";
    case scalar_type::i64:
      return "long long";
    case scalar_type::boolean:
      return "bool";
  }
  return "?";
}

// Short name used in printing and hashing (stable across versions).
constexpr std::string_view short_name(scalar_type t) {
  switch (t) {
    case scalar_type::f32:
      return "f32";
    case scalar_type::f64:
      return "f64";
    case scalar_type::i32:
      return "i32";
    case scalar_type::i64:
      return "i64";
    case scalar_type::boolean:
      return "bool";
  }
  return "?";
}

constexpr std::size_t size_of(scalar_type t) {
  switch (t) {
    case scalar_type::f32:
      return 4;
    case scalar_type::f64:
      return 8;
    case scalar_type::i32:
      return 4;
    case scalar_type::i64:
      return 8;
    case scalar_type::boolean:
      return 1;
  }
  return 0;
}

constexpr bool is_floating(scalar_type t) { return t == scalar_type::f32 || t == scalar_type::f64; }

// The C++ arithmetic-conversion result of two IR types (as for `a + b` in C++).
constexpr scalar_type promote(scalar_type a, scalar_type b) {
  auto rank = [](scalar_type t) {
    switch (t) {
      case scalar_type::boolean:
        return 0;
      case scalar_type::i32:
        return 1;
      case scalar_type::i64:
        return 2;
      case scalar_type::f32:
        return 3;
      case scalar_type::f64:
        return 4;
    }
    return 0;
  };
  scalar_type r = rank(a) >= rank(b) ? a : b;
  return r == scalar_type::boolean ? scalar_type::i32 : r;  // bool + bool is int in C++
}

template <class T>
inline constexpr bool is_element_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>;

template <class T>
constexpr scalar_type scalar_type_of() {
  static_assert(is_element_type_v<T>,
                "mdh::scalar_type_of<T>() requires 'T' to be an element type "
                "(float, double, std::int32_t, std::int64_t or bool)");
  if constexpr (std::is_same_v<T, float>)
    return scalar_type::f32;
  else if constexpr (std::is_same_v<T, double>)
    return scalar_type::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return scalar_type::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return scalar_type::i64;
  else
    return scalar_type::boolean;
}

}  // namespace mdh
