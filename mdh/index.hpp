// SPDX-License-Identifier: MIT
// Index placeholders and affine index functions: `i`, `2*i + j + 1`, `0` (broadcast).
// The set of placeholders an index function uses is part of its type, so views can be checked
// against the md_hom's dimensions at compile time; coefficients and offsets are values.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <tuple>
#include <utility>

#include <mdh/error.hpp>

namespace mdh {

// The most dimensions one md_hom may have (MCC_Capsule needs 10).
inline constexpr std::size_t max_rank = 16;

// An affine function of the iteration point: sum_d coeff[d] * i_d + offset.
// `Uses` has bit d set when placeholder d occurs in the expression.
template <std::uint32_t Uses>
struct affine_expr {
  std::array<std::int64_t, max_rank> coeff{};
  std::int64_t offset = 0;
  static constexpr std::uint32_t uses = Uses;
};

// Index placeholder number N: the md_hom's dimension N.
template <std::size_t N>
struct index_var : affine_expr<(1u << N)> {
  static_assert(N < max_rank, "mdh::index_var<N> requires 'N' to be below mdh::max_rank (16)");
  static constexpr std::size_t number = N;
  constexpr index_var() { this->coeff[N] = 1; }
};

// `auto [i, j, k] = mdh::indices<3>();` - placeholders for dimensions 0, 1, 2 in that order.
template <std::size_t D>
constexpr auto indices() {
  return []<std::size_t... N>(std::index_sequence<N...>) { return std::tuple<index_var<N>...>{}; }
  (std::make_index_sequence<D>{});
}

template <class T>
struct is_affine_expr : std::false_type {};
template <std::uint32_t U>
struct is_affine_expr<affine_expr<U>> : std::true_type {};
template <std::size_t N>
struct is_affine_expr<index_var<N>> : std::true_type {};
template <class T>
inline constexpr bool is_affine_expr_v = is_affine_expr<std::remove_cvref_t<T>>::value;

// What an index argument may be: an affine expression or an integer constant (e.g. 0).
template <class T>
concept IndexArgument = is_affine_expr_v<T> || std::integral<std::remove_cvref_t<T>>;

template <IndexArgument T>
constexpr auto as_affine(const T& x) {
  if constexpr (is_affine_expr_v<T>) {
    return affine_expr<std::remove_cvref_t<T>::uses>{x.coeff, x.offset};
  } else {
    affine_expr<0> r;
    r.offset = static_cast<std::int64_t>(x);
    return r;
  }
}

template <std::uint32_t A, std::uint32_t B>
constexpr affine_expr<A | B> operator+(const affine_expr<A>& a, const affine_expr<B>& b) {
  affine_expr<A | B> r;
  for (std::size_t d = 0; d < max_rank; ++d) r.coeff[d] = a.coeff[d] + b.coeff[d];
  r.offset = a.offset + b.offset;
  return r;
}
template <std::uint32_t A>
constexpr affine_expr<A> operator-(const affine_expr<A>& a) {
  affine_expr<A> r;
  for (std::size_t d = 0; d < max_rank; ++d) r.coeff[d] = -a.coeff[d];
  r.offset = -a.offset;
  return r;
}
template <std::uint32_t A, std::uint32_t B>
constexpr affine_expr<A | B> operator-(const affine_expr<A>& a, const affine_expr<B>& b) {
  return a + (-b);
}
template <std::uint32_t A>
constexpr affine_expr<A> operator+(const affine_expr<A>& a, std::int64_t c) {
  affine_expr<A> r{a.coeff, a.offset + c};
  return r;
}
template <std::uint32_t A>
constexpr affine_expr<A> operator+(std::int64_t c, const affine_expr<A>& a) {
  return a + c;
}
template <std::uint32_t A>
constexpr affine_expr<A> operator-(const affine_expr<A>& a, std::int64_t c) {
  return a + (-c);
}
template <std::uint32_t A>
constexpr affine_expr<A> operator-(std::int64_t c, const affine_expr<A>& a) {
  return (-a) + c;
}
template <std::uint32_t A>
constexpr affine_expr<A> operator*(std::int64_t c, const affine_expr<A>& a) {
  affine_expr<A> r;
  for (std::size_t d = 0; d < max_rank; ++d) r.coeff[d] = c * a.coeff[d];
  r.offset = c * a.offset;
  return r;
}
template <std::uint32_t A>
constexpr affine_expr<A> operator*(const affine_expr<A>& a, std::int64_t c) {
  return c * a;
}

// What is not affine: each says so, instead of a list of every operator* in scope.
template <std::uint32_t A, std::uint32_t B>
affine_expr<A | B> operator*(const affine_expr<A>&, const affine_expr<B>&) {
  static_assert(detail::always_false<affine_expr<A | B>>,
                "mdh index functions are affine: multiply a placeholder by an integer constant "
                "(2 * i), never by another placeholder (i * k); give a product its own md_hom "
                "dimension");
  return {};
}
template <std::uint32_t A, std::floating_point F>
affine_expr<A> operator*(F, const affine_expr<A>&) {
  static_assert(detail::always_false<F>,
                "mdh index functions are affine with integer coefficients: write 2 * i, not "
                "0.5 * i or 2.0 * i");
  return {};
}
template <std::uint32_t A, std::floating_point F>
affine_expr<A> operator*(const affine_expr<A>&, F) {
  static_assert(detail::always_false<F>,
                "mdh index functions are affine with integer coefficients: write 2 * i, not "
                "i * 0.5 or i * 2.0");
  return {};
}
template <std::uint32_t A, class X>
affine_expr<A> operator/(const affine_expr<A>&, const X&) {
  static_assert(detail::always_false<X>,
                "mdh index functions are affine: i / n and i % n are not; split the dimension "
                "instead, e.g. dimensions (p, r) indexing 2 * p + r");
  return {};
}
template <std::uint32_t A, class X>
affine_expr<A> operator%(const affine_expr<A>&, const X&) {
  static_assert(detail::always_false<X>,
                "mdh index functions are affine: i / n and i % n are not; split the dimension "
                "instead, e.g. dimensions (p, r) indexing 2 * p + r");
  return {};
}

}  // namespace mdh
