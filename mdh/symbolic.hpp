// SPDX-License-Identifier: MIT
// Symbolic scalars: calling the user's scalar function with `sym` arguments records an
// expression tree (ir::scalar_function) instead of computing a number. Operators follow C++'s
// arithmetic conversions, so the tree computes in the same types the numeric call does.
#pragma once

#include <concepts>
#include <type_traits>

#include <mdh/error.hpp>
#include <mdh/ir/scalar_expr.hpp>

namespace mdh {

namespace detail {
// The tree being recorded on this thread (set by a recording_scope).
inline thread_local ir::scalar_function* current_recording = nullptr;
}  // namespace detail

class sym;

// Records into `f` while alive; nested scopes restore the outer recording.
class recording_scope {
 public:
  explicit recording_scope(ir::scalar_function& f) : saved_(detail::current_recording) {
    detail::current_recording = &f;
  }
  ~recording_scope() { detail::current_recording = saved_; }
  recording_scope(const recording_scope&) = delete;
  recording_scope& operator=(const recording_scope&) = delete;

 private:
  ir::scalar_function* saved_;
};

// A symbolic value: a node of the tree under construction.
class sym {
 public:
  sym(int node, scalar_type type) : node_(node), type_(type) {}

  // A constant converts implicitly, so `select(c, x, 0.0f)` and `x + 1` work.
  template <class T>
  requires std::is_arithmetic_v<T> sym(T value) : sym(constant(value)) {}

  int node() const { return node_; }
  scalar_type type() const { return type_; }

  // A symbolic value has no number and no truth value. These two conversions exist only to turn
  // the usual slips into one message: std::exp(x) (it picks std::exp(double)), and c ? a : b,
  // if (c), std::max(a, b) (they convert the condition to bool).
  template <class T>
  requires std::same_as<T, double>
  operator T() const {
    static_assert(detail::always_false<T>,
                  "mdh::md_hom(f, ops...) requires 'f' to call mdh::exp, log, sqrt, tanh, erf, "
                  "abs, max, min instead of std:: math, and mdh::cast<T>(x) instead of a "
                  "conversion (the arguments of 'f' are symbolic while mdh records it)");
    return 0;
  }
  template <class T>
  requires std::same_as<T, bool>
  explicit operator T() const {
    static_assert(detail::always_false<T>,
                  "mdh::md_hom(f, ops...) requires 'f' to write mdh::select(c, a, b) instead of "
                  "c ? a : b or if, and mdh::max(a, b) / mdh::min(a, b) instead of std::max / "
                  "std::min (the arguments of 'f' are symbolic while mdh records it)");
    return false;
  }

  static sym arg(int index, scalar_type t) {
    ir::node n;
    n.kind = ir::op::arg;
    n.type = t;
    n.index = index;
    return {tree().add(n), t};
  }
  template <class T>
  static sym constant(T value) {
    using U = std::conditional_t<
        std::is_same_v<T, bool>, bool,
        std::conditional_t<std::is_floating_point_v<T>,
                           std::conditional_t<sizeof(T) <= 4, float, double>,
                           std::conditional_t<sizeof(T) <= 4, std::int32_t, std::int64_t>>>;
    ir::node n;
    n.kind = ir::op::constant;
    n.type = scalar_type_of<U>();
    n.value = static_cast<double>(value);
    return {tree().add(n), n.type};
  }
  static sym make(ir::op o, scalar_type t, int a, int b = -1, int c = -1) {
    ir::node n;
    n.kind = o;
    n.type = t;
    n.a = a, n.b = b, n.c = c;
    return {tree().add(n), t};
  }

  static ir::scalar_function& tree() {
    if (!detail::current_recording)
      throw internal_error("mdh::sym used outside of a recording_scope");
    return *detail::current_recording;
  }

 private:
  int node_;
  scalar_type type_;
};

template <class T>
inline constexpr bool is_sym_v = std::is_same_v<std::remove_cvref_t<T>, sym>;

// A number a scalar function may mix with symbols: arithmetic, or a bf16/f16 value (a float
// constant, as bf16 + float is a float in C++).
template <class T>
concept SymConstant = std::is_arithmetic_v<std::remove_cvref_t<T>> || is_float16_v<T>;

// True when at least one operand is symbolic and the others are symbolic or constants.
template <class A, class B>
concept SymOperands = (is_sym_v<A> || is_sym_v<B>)&&(is_sym_v<A> ||
                                                     SymConstant<A>)&&(is_sym_v<B> ||
                                                                       SymConstant<B>);

namespace detail {
inline sym to_sym(const sym& s) { return s; }
template <class T>
requires std::is_arithmetic_v<T> sym to_sym(T v) { return sym::constant(v); }
template <class T>
requires is_float16_v<T> sym to_sym(T v) { return sym::constant(float(v)); }

inline sym convert(const sym& s, scalar_type t) {
  return s.type() == t ? s : sym::make(ir::op::cast, t, s.node());
}
inline sym arith(ir::op o, const sym& a, const sym& b) {
  scalar_type t = promote(a.type(), b.type());
  return sym::make(o, t, convert(a, t).node(), convert(b, t).node());
}
inline sym compare(ir::op o, const sym& a, const sym& b) {
  scalar_type t = promote(a.type(), b.type());
  return sym::make(o, scalar_type::boolean, convert(a, t).node(), convert(b, t).node());
}
}  // namespace detail

#define MDH_SYM_BINARY(OP, KIND, HOW)                                       \
  template <class A, class B>                                               \
  requires SymOperands<A, B> sym operator OP(const A& a, const B& b) {      \
    return detail::HOW(ir::op::KIND, detail::to_sym(a), detail::to_sym(b)); \
  }
MDH_SYM_BINARY(+, add, arith)
MDH_SYM_BINARY(-, sub, arith)
MDH_SYM_BINARY(*, mul, arith)
MDH_SYM_BINARY(/, div, arith)
MDH_SYM_BINARY(<, lt, compare)
MDH_SYM_BINARY(<=, le, compare)
MDH_SYM_BINARY(>, gt, compare)
MDH_SYM_BINARY(>=, ge, compare)
MDH_SYM_BINARY(==, eq, compare)
MDH_SYM_BINARY(!=, ne, compare)
#undef MDH_SYM_BINARY

template <class A, class B>
requires SymOperands<A, B> sym operator&&(const A& a, const B& b) {
  auto x = detail::convert(detail::to_sym(a), scalar_type::boolean);
  auto y = detail::convert(detail::to_sym(b), scalar_type::boolean);
  return sym::make(ir::op::logical_and, scalar_type::boolean, x.node(), y.node());
}
template <class A, class B>
requires SymOperands<A, B> sym operator||(const A& a, const B& b) {
  auto x = detail::convert(detail::to_sym(a), scalar_type::boolean);
  auto y = detail::convert(detail::to_sym(b), scalar_type::boolean);
  return sym::make(ir::op::logical_or, scalar_type::boolean, x.node(), y.node());
}
inline sym operator-(const sym& a) {
  scalar_type t = arithmetic_type(a.type());
  return sym::make(ir::op::neg, t, detail::convert(a, t).node());
}
inline sym operator+(const sym& a) { return a; }
inline sym operator!(const sym& a) {
  return sym::make(ir::op::logical_not, scalar_type::boolean,
                   detail::convert(a, scalar_type::boolean).node());
}

}  // namespace mdh
