// SPDX-License-Identifier: MIT
// Element types known to the IR, their C spellings and sizes, and their C++ counterparts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <mdh/float16.hpp>

namespace mdh {

// bf16 and f16 are storage types: values of them are read as f32 before any arithmetic.
// (New types go at the end: the numbers are part of the structural hash.)
enum class scalar_type : std::uint8_t { f32, f64, i32, i64, boolean, bf16, f16 };

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
    case scalar_type::bf16:
    case scalar_type::f16:
      return "unsigned short";  // the raw bits; kernels convert through helper functions
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
    case scalar_type::bf16:
      return "bf16";
    case scalar_type::f16:
      return "f16";
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
    case scalar_type::bf16:
    case scalar_type::f16:
      return 2;
  }
  return 0;
}

constexpr bool is_float16(scalar_type t) { return t == scalar_type::bf16 || t == scalar_type::f16; }
constexpr bool is_floating(scalar_type t) {
  return t == scalar_type::f32 || t == scalar_type::f64 || is_float16(t);
}

// The type arithmetic on a value of type t computes in: bf16/f16 are read as f32, bool as int
// (C++'s integral promotion).
constexpr scalar_type arithmetic_type(scalar_type t) {
  return is_float16(t) ? scalar_type::f32 : t == scalar_type::boolean ? scalar_type::i32 : t;
}

// The type of the value a reduction accumulates for a result stored as t: f32 for bf16/f16
// (the default: the user may choose another with pw(op, accumulate<T>)), else t itself.
constexpr scalar_type default_accumulation_type(scalar_type t) {
  return is_float16(t) ? scalar_type::f32 : t;
}

// The C++ arithmetic-conversion result of two IR types (as for `a + b` in C++; bf16 and f16
// convert to float first, so bf16 * bf16 is a float).
constexpr scalar_type promote(scalar_type a, scalar_type b) {
  if (is_float16(a)) a = scalar_type::f32;
  if (is_float16(b)) b = scalar_type::f32;
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
      default:
        return 3;  // bf16, f16: replaced by f32 above
    }
    return 0;
  };
  scalar_type r = rank(a) >= rank(b) ? a : b;
  return r == scalar_type::boolean ? scalar_type::i32 : r;  // bool + bool is int in C++
}

template <class T>
inline constexpr bool is_element_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, bf16> ||
    std::is_same_v<T, f16>;

template <class T>
constexpr scalar_type scalar_type_of() {
  static_assert(is_element_type_v<T>,
                "mdh::scalar_type_of<T>() requires 'T' to be an element type "
                "(float, double, std::int32_t, std::int64_t, bool, mdh::bf16 or mdh::f16)");
  if constexpr (std::is_same_v<T, float>)
    return scalar_type::f32;
  else if constexpr (std::is_same_v<T, double>)
    return scalar_type::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return scalar_type::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return scalar_type::i64;
  else if constexpr (std::is_same_v<T, bf16>)
    return scalar_type::bf16;
  else if constexpr (std::is_same_v<T, f16>)
    return scalar_type::f16;
  else
    return scalar_type::boolean;
}

// The C++ type a value of element type T computes in: float for bf16/f16, T otherwise. Write
// the constants of a scalar function templated on T in it (bf16(0.1) would round them).
template <class T>
using compute_type_t = std::conditional_t<is_float16_v<T>, float, T>;

}  // namespace mdh
