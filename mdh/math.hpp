// SPDX-License-Identifier: MIT
// The functions a scalar function may call: each works on numbers (the CPU reference) and on
// `sym` (code generation). Write `mdh::exp(x)`, `mdh::select(c, a, b)`, `mdh::cast<float>(x)`.
#pragma once

#include <cmath>
#include <type_traits>
#include <utility>

#include <mdh/symbolic.hpp>

namespace mdh {

namespace detail {
// Math on integers computes in double, as std::exp(int) does; on bf16/f16 in float.
template <class T>
using math_result_t =
    std::conditional_t<std::is_same_v<T, float> || is_float16_v<T>, float, double>;

inline sym unary_math(ir::op o, const sym& a) {
  scalar_type t =
      arithmetic_type(a.type()) == scalar_type::f32 ? scalar_type::f32 : scalar_type::f64;
  return sym::make(o, t, convert(a, t).node());
}
}  // namespace detail

#define MDH_UNARY_MATH(NAME, STD)                                                          \
  inline sym NAME(const sym& a) { return detail::unary_math(ir::op::NAME, a); }            \
  template <class T>                                                                       \
  requires std::is_arithmetic_v<T> || is_float16_v<T> detail::math_result_t<T> NAME(T a) { \
    return STD(static_cast<detail::math_result_t<T>>(a));                                  \
  }
MDH_UNARY_MATH(exp, std::exp)
MDH_UNARY_MATH(log, std::log)
MDH_UNARY_MATH(sqrt, std::sqrt)
MDH_UNARY_MATH(tanh, std::tanh)
MDH_UNARY_MATH(erf, std::erf)
#undef MDH_UNARY_MATH

inline sym abs(const sym& a) {
  if (!is_float16(a.type())) return sym::make(ir::op::abs, a.type(), a.node());
  return sym::make(ir::op::abs, scalar_type::f32, detail::convert(a, scalar_type::f32).node());
}
template <class T>
requires std::is_arithmetic_v<T> T abs(T a) { return a < T(0) ? T(-a) : a; }
template <class T>
requires is_float16_v<T>
float abs(T a) { return abs(float(a)); }

// select(c, a, b): c ? a : b, with C++'s common type of a and b.
template <class C, class A, class B>
auto select(const C& c, const A& a, const B& b) {
  if constexpr (is_sym_v<C> || is_sym_v<A> || is_sym_v<B>) {
    sym x = detail::to_sym(a), y = detail::to_sym(b);
    scalar_type t = promote(x.type(), y.type());
    if (x.type() == y.type()) t = x.type();  // bool ? bool : bool stays bool, as in C++
    sym cc = detail::convert(detail::to_sym(c), scalar_type::boolean);
    return sym::make(ir::op::select, t, cc.node(), detail::convert(x, t).node(),
                     detail::convert(y, t).node());
  } else {
    return c ? a : b;
  }
}

// cast<T>(x): static_cast on numbers, a cast node on symbols.
template <class T, class X>
auto cast(const X& x) {
  if constexpr (is_sym_v<X>)
    return detail::convert(x, scalar_type_of<T>());
  else
    return static_cast<T>(x);
}

namespace detail {
template <ir::op Kind>
struct minmax_fn {
  template <class A, class B>
  auto operator()(const A& a, const B& b) const {
    if constexpr (is_sym_v<A> || is_sym_v<B>) {
      return detail::arith(Kind, detail::to_sym(a), detail::to_sym(b));
    } else {
      // C++'s common type; with a bf16/f16 operand, the type of a + b (float or double)
      using T = std::conditional_t<is_float16_v<A> || is_float16_v<B>,
                                   decltype(std::declval<A>() + std::declval<B>()),
                                   std::common_type_t<A, B>>;
      T x = static_cast<T>(a), y = static_cast<T>(b);
      if constexpr (Kind == ir::op::min)
        return y < x ? y : x;
      else
        return x < y ? y : x;
    }
  }
};
}  // namespace detail

}  // namespace mdh
