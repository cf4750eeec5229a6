// SPDX-License-Identifier: MIT
// atf::expr: small expressions over tuning parameters (C++ operators on parameter handles, or
// parsed from T1 strings). Dependencies are read off the tree; atf::self is the constrained
// parameter's own value.
#pragma once

#include <atf/error.hpp>
#include <atf/value.hpp>

#include <charconv>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace atf {

namespace detail {

enum class op : std::uint8_t {
  lit,
  param,
  self,
  add,
  sub,
  mul,
  div_real,
  div_c,
  floordiv,
  mod_py,
  mod_c,
  pow,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  land,
  lor,
  lnot,
  neg,
  min,
  max,
  abs,
};

struct node {
  op k;
  value lit;         // op::lit
  std::string name;  // op::param
  std::vector<std::shared_ptr<const node>> kids;
};
using node_ptr = std::shared_ptr<const node>;

inline node_ptr make_node(op k, std::vector<node_ptr> kids, value lit = {}, std::string name = {}) {
  return std::make_shared<const node>(node{k, std::move(lit), std::move(name), std::move(kids)});
}

inline const char* op_symbol(op k) {
  switch (k) {
    case op::add:
      return "+";
    case op::sub:
      return "-";
    case op::mul:
      return "*";
    case op::div_real:
      return "/";
    case op::div_c:
      return "/";
    case op::floordiv:
      return "//";
    case op::mod_py:
      return "%";
    case op::mod_c:
      return "%";
    case op::pow:
      return "**";
    case op::lt:
      return "<";
    case op::le:
      return "<=";
    case op::gt:
      return ">";
    case op::ge:
      return ">=";
    case op::eq:
      return "==";
    case op::ne:
      return "!=";
    case op::land:
      return "and";
    case op::lor:
      return "or";
    default:
      return "?";
  }
}

inline std::string node_text(const node& n, const std::string& self_name) {
  switch (n.k) {
    case op::lit:
      return to_string(n.lit);
    case op::param:
      return n.name;
    case op::self:
      return self_name.empty() ? std::string("self") : self_name;
    case op::lnot:
      return "not " + node_text(*n.kids[0], self_name);
    case op::neg:
      return "-" + node_text(*n.kids[0], self_name);
    case op::min:
    case op::max:
    case op::abs: {
      std::string s = n.k == op::min ? "min(" : n.k == op::max ? "max(" : "abs(";
      for (std::size_t i = 0; i < n.kids.size(); ++i)
        s += (i ? ", " : "") + node_text(*n.kids[i], self_name);
      return s + ")";
    }
    default: {
      auto side = [&](const node& c) {
        std::string t = node_text(c, self_name);
        return c.kids.empty() || c.k == op::min || c.k == op::max || c.k == op::abs ? t
                                                                                    : "(" + t + ")";
      };
      return side(*n.kids[0]) + " " + op_symbol(n.k) + " " + side(*n.kids[1]);
    }
  }
}

// FNV-1a over node_text(n, self_name) without building the string (same value, no allocation).
struct text_hasher {
  std::uint64_t h;
  void put(char c) { h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull; }
  void put(std::string_view s) {
    for (char c : s) put(c);
  }
  void put_value(const value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, *i);
      put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    } else {
      put(to_string(v));
    }
  }
  void text(const node& n, const std::string& self_name) {
    switch (n.k) {
      case op::lit:
        return put_value(n.lit);
      case op::param:
        return put(n.name);
      case op::self:
        return put(self_name.empty() ? std::string_view("self") : std::string_view(self_name));
      case op::lnot:
        put("not ");
        return text(*n.kids[0], self_name);
      case op::neg:
        put('-');
        return text(*n.kids[0], self_name);
      case op::min:
      case op::max:
      case op::abs:
        put(n.k == op::min ? "min(" : n.k == op::max ? "max(" : "abs(");
        for (std::size_t i = 0; i < n.kids.size(); ++i) {
          if (i) put(", ");
          text(*n.kids[i], self_name);
        }
        return put(')');
      default: {
        auto side = [&](const node& c) {
          const bool paren =
              !(c.kids.empty() || c.k == op::min || c.k == op::max || c.k == op::abs);
          if (paren) put('(');
          text(c, self_name);
          if (paren) put(')');
        };
        side(*n.kids[0]);
        put(' ');
        put(op_symbol(n.k));
        put(' ');
        side(*n.kids[1]);
      }
    }
  }
};

inline void collect_params(const node& n, std::set<std::string>& out, bool& uses_self) {
  if (n.k == op::param) out.insert(n.name);
  if (n.k == op::self) uses_self = true;
  for (const auto& k : n.kids) collect_params(*k, out, uses_self);
}

}  // namespace detail

class expr {
 public:
  expr(detail::node_ptr n) : n_(std::move(n)) {}  // NOLINT: implicit by design
  template <class T>
  requires(std::is_arithmetic_v<T>) expr(T x)
      : n_(detail::make_node(detail::op::lit, {}, detail::make_value(x))) {}  // NOLINT
  expr(const char* s) : n_(detail::make_node(detail::op::lit, {}, value(std::string(s)))) {}
  expr(std::string s) : n_(detail::make_node(detail::op::lit, {}, value(std::move(s)))) {}

  const detail::node_ptr& node() const { return n_; }
  expr to_expr() const { return *this; }
  std::string text(const std::string& self_name = {}) const {
    return detail::node_text(*n_, self_name);
  }

  // fnv1a(h, text(self_name)) computed without building the text.
  std::uint64_t hash_text(std::uint64_t h, const std::string& self_name = {}) const {
    detail::text_hasher t{h};
    t.text(*n_, self_name);
    return (t.h ^ 0xff) * 1099511628211ull;
  }

  // Names of the parameters the expression reads (atf::self not included).
  std::set<std::string> parameters() const {
    std::set<std::string> s;
    bool self = false;
    detail::collect_params(*n_, s, self);
    return s;
  }
  bool uses_self() const {
    std::set<std::string> s;
    bool self = false;
    detail::collect_params(*n_, s, self);
    return self;
  }

 private:
  detail::node_ptr n_;
};

// A parameter by name, for expressions built without its handle.
inline expr param(std::string name) {
  return expr(detail::make_node(detail::op::param, {}, {}, std::move(name)));
}

// The constrained parameter's own value (in a tp's constraint).
inline const expr self{detail::make_node(detail::op::self, {})};

namespace detail {
template <class T>
concept exprish = requires(const T& t) {
  { t.to_expr() } -> std::same_as<expr>;
};
template <class T>
concept expr_operand =
    exprish<T> || std::is_arithmetic_v<T> || std::is_convertible_v<T, std::string>;

template <class T>
expr as_expr(const T& t) {
  if constexpr (exprish<T>)
    return t.to_expr();
  else
    return expr(t);
}
template <class A, class B>
concept binary_operands = expr_operand<A> && expr_operand<B> &&(exprish<A> || exprish<B>);

inline expr bin(op k, const expr& a, const expr& b) {
  return expr(make_node(k, {a.node(), b.node()}));
}
}  // namespace detail

#define ATF_DETAIL_BINOP(SYM, OP)                                                    \
  template <class A, class B>                                                        \
  requires detail::binary_operands<A, B> expr operator SYM(const A& a, const B& b) { \
    return detail::bin(detail::op::OP, detail::as_expr(a), detail::as_expr(b));      \
  }
ATF_DETAIL_BINOP(+, add)
ATF_DETAIL_BINOP(-, sub)
ATF_DETAIL_BINOP(*, mul)
ATF_DETAIL_BINOP(/, div_c)
ATF_DETAIL_BINOP(%, mod_c)
ATF_DETAIL_BINOP(<, lt)
ATF_DETAIL_BINOP(<=, le)
ATF_DETAIL_BINOP(>, gt)
ATF_DETAIL_BINOP(>=, ge)
ATF_DETAIL_BINOP(==, eq)
ATF_DETAIL_BINOP(!=, ne)
ATF_DETAIL_BINOP(&&, land)
ATF_DETAIL_BINOP(||, lor)
#undef ATF_DETAIL_BINOP

template <detail::exprish A>
expr operator!(const A& a) {
  return expr(detail::make_node(detail::op::lnot, {a.to_expr().node()}));
}
template <detail::exprish A>
expr operator-(const A& a) {
  return expr(detail::make_node(detail::op::neg, {a.to_expr().node()}));
}

template <class A, class B>
requires detail::binary_operands<A, B> expr min(const A& a, const B& b) {
  return expr(
      detail::make_node(detail::op::min, {detail::as_expr(a).node(), detail::as_expr(b).node()}));
}
template <class A, class B>
requires detail::binary_operands<A, B> expr max(const A& a, const B& b) {
  return expr(
      detail::make_node(detail::op::max, {detail::as_expr(a).node(), detail::as_expr(b).node()}));
}

// Predicates on the constrained parameter's own value (ATF's predefined constraints).
template <class X>
expr divides(const X& x) {
  return detail::as_expr(x) % self == 0;
}
template <class X>
expr multiple_of(const X& x) {
  return self % detail::as_expr(x) == 0;
}
template <class X>
expr less_than(const X& x) {
  return self < detail::as_expr(x);
}
template <class X>
expr greater_than(const X& x) {
  return self > detail::as_expr(x);
}
template <class X>
expr less_than_or_eq(const X& x) {
  return self <= detail::as_expr(x);
}
template <class X>
expr greater_than_or_eq(const X& x) {
  return self >= detail::as_expr(x);
}
template <class X>
expr equal(const X& x) {
  return self == detail::as_expr(x);
}
template <class X>
expr unequal(const X& x) {
  return self != detail::as_expr(x);
}

}  // namespace atf
