// SPDX-License-Identifier: MIT
// Combine operators, one per md_hom dimension: cc (concatenation ++), pw(op) (point-wise
// reduction) and ps(op) (prefix sum, for scans), with op one of add, mul, max, min or a
// custom(name, fn, identity...) operator that must be associative and commutative.
// add/mul/max/min are also callable, so `mdh::max(a, b)` works inside a scalar function.
#pragma once

#include <array>
#include <string>
#include <tuple>
#include <type_traits>

#include <mdh/ir/computation.hpp>
#include <mdh/math.hpp>

namespace mdh {

struct concat_t {
  static constexpr ir::combine_kind kind = ir::combine_kind::concat;
};
inline constexpr concat_t cc{};

struct add_t {
  static constexpr ir::builtin kind = ir::builtin::add;
  static constexpr const char* name = "add";
  template <class A, class B>
  auto operator()(const A& a, const B& b) const {
    return a + b;
  }
};
struct mul_t {
  static constexpr ir::builtin kind = ir::builtin::mul;
  static constexpr const char* name = "mul";
  template <class A, class B>
  auto operator()(const A& a, const B& b) const {
    return a * b;
  }
};
struct max_t : detail::minmax_fn<ir::op::max> {
  static constexpr ir::builtin kind = ir::builtin::max;
  static constexpr const char* name = "max";
};
struct min_t : detail::minmax_fn<ir::op::min> {
  static constexpr ir::builtin kind = ir::builtin::min;
  static constexpr const char* name = "min";
};
inline constexpr add_t add{};
inline constexpr mul_t mul{};
inline constexpr max_t max{};
inline constexpr min_t min{};

// A user-defined ⊕ over M result components. `fn(lhs, rhs)` receives two scalars (M == 1) or
// two std::tuples of M values and returns the same shape. The identity has one value per
// component. Associativity and commutativity are the user's promise (tests check samples).
template <class F, std::size_t M>
struct custom_op {
  static constexpr ir::builtin kind = ir::builtin::custom;
  static constexpr std::size_t components = M;
  std::string name;
  F fn;
  std::array<double, M> identity;
};

template <class F, class... Id>
requires(sizeof...(Id) >= 1 && (std::is_arithmetic_v<Id> &&
                                ...)) custom_op<F, sizeof...(Id)> custom(std::string name, F fn,
                                                                         Id... identity) {
  return {std::move(name), std::move(fn), {static_cast<double>(identity)...}};
}

template <class Op>
struct is_reduction_op : std::false_type {};
template <>
struct is_reduction_op<add_t> : std::true_type {};
template <>
struct is_reduction_op<mul_t> : std::true_type {};
template <>
struct is_reduction_op<max_t> : std::true_type {};
template <>
struct is_reduction_op<min_t> : std::true_type {};
template <class F, std::size_t M>
struct is_reduction_op<custom_op<F, M>> : std::true_type {};
template <class Op>
inline constexpr bool is_reduction_op_v = is_reduction_op<std::remove_cvref_t<Op>>::value;

// The type a reduction accumulates in, stated with pw(op, accumulate<T>) or ps(op,
// accumulate<T>): every result component is combined in T and converted to its output's
// element type once, when it is written. Without it: float for bf16/f16 outputs, the output's
// own type otherwise (mdh::default_accumulation_type).
template <class T>
struct accumulate_t {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
                "mdh::accumulate<T> requires 'T' to be float, double, std::int32_t or "
                "std::int64_t (a 16-bit accumulator loses the sum: store in bf16/f16, "
                "accumulate in float)");
  using type = T;
};
template <class T>
inline constexpr accumulate_t<T> accumulate{};

template <class T>
struct is_accumulate : std::false_type {};
template <class T>
struct is_accumulate<accumulate_t<T>> : std::true_type {};

// Acc: the accumulation type stated by the user, or void for the default.
template <class Op, class Acc = void>
struct pw_t {
  static constexpr ir::combine_kind kind = ir::combine_kind::pointwise;
  using op_type = Op;
  using accumulate_type = Acc;
  Op op;
};
template <class Op, class Acc = void>
struct ps_t {
  static constexpr ir::combine_kind kind = ir::combine_kind::prefix_sum;
  using op_type = Op;
  using accumulate_type = Acc;
  Op op;
};

template <class Op>
constexpr pw_t<std::remove_cvref_t<Op>> pw(Op&& op) {
  static_assert(is_reduction_op_v<Op>,
                "mdh::pw(op) requires 'op' to be a reduction operator (add, mul, max, min or "
                "mdh::custom(name, fn, identity...))");
  return {std::forward<Op>(op)};
}
template <class Op, class T>
constexpr pw_t<std::remove_cvref_t<Op>, T> pw(Op&& op, accumulate_t<T>) {
  static_assert(is_reduction_op_v<Op>,
                "mdh::pw(op, accumulate<T>) requires 'op' to be a reduction operator (add, mul, "
                "max, min or mdh::custom(name, fn, identity...))");
  return {std::forward<Op>(op)};
}
template <class Op>
constexpr ps_t<std::remove_cvref_t<Op>> ps(Op&& op) {
  static_assert(is_reduction_op_v<Op>,
                "mdh::ps(op) requires 'op' to be a reduction operator (add, mul, max, min or "
                "mdh::custom(name, fn, identity...))");
  return {std::forward<Op>(op)};
}
template <class Op, class T>
constexpr ps_t<std::remove_cvref_t<Op>, T> ps(Op&& op, accumulate_t<T>) {
  static_assert(is_reduction_op_v<Op>,
                "mdh::ps(op, accumulate<T>) requires 'op' to be a reduction operator (add, mul, "
                "max, min or mdh::custom(name, fn, identity...))");
  return {std::forward<Op>(op)};
}

template <class T>
struct is_combine_operator : std::false_type {};
template <>
struct is_combine_operator<concat_t> : std::true_type {};
template <class Op, class Acc>
struct is_combine_operator<pw_t<Op, Acc>> : std::true_type {};
template <class Op, class Acc>
struct is_combine_operator<ps_t<Op, Acc>> : std::true_type {};
template <class T>
inline constexpr bool is_combine_operator_v = is_combine_operator<std::remove_cvref_t<T>>::value;

}  // namespace mdh
