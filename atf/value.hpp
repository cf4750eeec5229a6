// SPDX-License-Identifier: MIT
// atf::value: the value of one tuning parameter (int64, double, bool or string).
#pragma once

#include <atf/error.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

namespace atf {

using value = std::variant<std::int64_t, double, bool, std::string>;

namespace detail {

inline const char* type_name(const value& v) {
  switch (v.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "bool";
    default:
      return "string";
  }
}

// Turns any C++ scalar into the matching alternative (all integers become int64).
template <class T>
value make_value(T&& x) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, value>) {
    return x;
  } else if constexpr (std::is_same_v<U, bool>) {
    return value{x};
  } else if constexpr (std::is_integral_v<U>) {
    return value{static_cast<std::int64_t>(x)};
  } else if constexpr (std::is_floating_point_v<U>) {
    return value{static_cast<double>(x)};
  } else {
    return value{std::string(std::forward<T>(x))};
  }
}

// Reads a value as T; ints widen to double, nothing else converts.
template <class T>
bool try_value_as(const value& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (auto* b = std::get_if<bool>(&v)) return out = *b, true;
    return false;
  } else if constexpr (std::is_integral_v<T>) {
    auto* i = std::get_if<std::int64_t>(&v);
    if (!i) return false;
    if constexpr (!std::is_same_v<T, std::int64_t>) {
      if (!std::in_range<T>(*i)) return false;
    }
    return out = static_cast<T>(*i), true;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (auto* d = std::get_if<double>(&v)) return out = static_cast<T>(*d), true;
    if (auto* i = std::get_if<std::int64_t>(&v)) return out = static_cast<T>(*i), true;
    return false;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (auto* s = std::get_if<std::string>(&v)) return out = *s, true;
    return false;
  } else if constexpr (std::is_same_v<T, value>) {
    return out = v, true;
  } else {
    static_assert(sizeof(T) == 0, "atf: unsupported parameter type");
  }
}

inline std::string format_double(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip form
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it visibly a float
  return s;
}

}  // namespace detail

inline std::string to_string(const value& v) {
  switch (v.index()) {
    case 0:
      return std::to_string(std::get<0>(v));
    case 1:
      return detail::format_double(std::get<1>(v));
    case 2:
      return std::get<2>(v) ? "true" : "false";
    default:
      return nlohmann::json(std::get<3>(v)).dump();  // quoted and escaped
  }
}

inline nlohmann::json to_json(const value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

inline value value_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  throw error(where + ": expected a number, bool or string, got " + j.dump());
}

}  // namespace atf
