// SPDX-License-Identifier: MIT
// atf::expr: small expressions over tuning parameters (C++ operators on parameter handles, or
// parsed from T1 strings). Dependencies are read off the tree; atf::self is the constrained
// parameter's own value.
#pragma once

#include <atf/error.hpp>
#include <atf/value.hpp>

#include <charconv>
#include <memory>
#include <mutex>
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

// The flat form of an expression: nodes in postfix order, each with the size of its subtree, so
// the last node is the root and a node's last kid sits just before it. Parsed constraint strings
// are built straight into this form (one vector, no node per operand); the tree form is only made
// if someone asks for node().
struct flat_node {
  op k;
  std::uint32_t arg;   // lit: index into lits; param: index into names; min/max/abs: kid count
  std::uint32_t size;  // nodes in the subtree, this one included
};

struct flat_expr {
  std::vector<flat_node> nodes;
  std::vector<value> lits;
  std::string pool;                                          // parameter names, back to back
  std::vector<std::pair<std::uint32_t, std::uint32_t>> names;  // distinct names: offset, length
  mutable std::once_flag tree_once;
  mutable std::shared_ptr<const node> tree;

  std::string_view name(std::size_t i) const {
    return std::string_view(pool).substr(names[i].first, names[i].second);
  }
  std::uint32_t root() const { return static_cast<std::uint32_t>(nodes.size() - 1); }
  // Kid indices of node i, first to last (at most n of them are written to out).
  std::size_t kids(std::uint32_t i, std::uint32_t* out, std::size_t n) const {
    const std::size_t nk = kid_count(i);
    std::uint32_t at = i;
    for (std::size_t j = nk; j-- > 0;) {
      const std::uint32_t kid = at - 1;
      if (j < n) out[j] = kid;
      at = kid + 1 - nodes[kid].size;
    }
    return nk;
  }
  std::size_t kid_count(std::uint32_t i) const {
    switch (nodes[i].k) {
      case op::lit:
      case op::param:
      case op::self:
        return 0;
      case op::lnot:
      case op::neg:
        return 1;
      case op::min:
      case op::max:
      case op::abs:
        return nodes[i].arg;
      default:
        return 2;
    }
  }
  // Index of the name, adding it when new.
  std::uint32_t intern(std::string_view n) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (name(i) == n) return static_cast<std::uint32_t>(i);
    names.emplace_back(static_cast<std::uint32_t>(pool.size()), static_cast<std::uint32_t>(n.size()));
    pool.append(n);
    return static_cast<std::uint32_t>(names.size() - 1);
  }
  void push(op k, std::uint32_t arg, std::uint32_t size) { nodes.push_back({k, arg, size}); }
  // Appends a copy of the subtree ending at node i (a shared operand of a chained comparison).
  void copy_subtree(std::uint32_t i) {
    const std::uint32_t b = i + 1 - nodes[i].size;
    for (std::uint32_t j = b; j <= i; ++j) nodes.push_back(nodes[j]);
  }
};

// Appends the text of a flat subtree to a sink with put(char) and put(string_view); the same text
// as node_text of the equivalent tree.
template <class Sink>
void flat_text(const flat_expr& f, std::uint32_t i, std::string_view self_name, Sink& out) {
  const flat_node& n = f.nodes[i];
  switch (n.k) {
    case op::lit:
      return out.put_value(f.lits[n.arg]);
    case op::param:
      return out.put(f.name(n.arg));
    case op::self:
      return out.put(self_name.empty() ? std::string_view("self") : self_name);
    case op::lnot:
      out.put(std::string_view("not "));
      return flat_text(f, i - 1, self_name, out);
    case op::neg:
      out.put('-');
      return flat_text(f, i - 1, self_name, out);
    case op::min:
    case op::max:
    case op::abs: {
      out.put(std::string_view(n.k == op::min ? "min(" : n.k == op::max ? "max(" : "abs("));
      std::vector<std::uint32_t> ks(n.arg);
      f.kids(i, ks.data(), ks.size());
      for (std::size_t j = 0; j < ks.size(); ++j) {
        if (j) out.put(std::string_view(", "));
        flat_text(f, ks[j], self_name, out);
      }
      return out.put(')');
    }
    default: {
      std::uint32_t ks[2];
      f.kids(i, ks, 2);
      auto side = [&](std::uint32_t c) {
        const op ck = f.nodes[c].k;
        const bool paren = !(f.kid_count(c) == 0 || ck == op::min || ck == op::max || ck == op::abs);
        if (paren) out.put('(');
        flat_text(f, c, self_name, out);
        if (paren) out.put(')');
      };
      side(ks[0]);
      out.put(' ');
      out.put(std::string_view(op_symbol(n.k)));
      out.put(' ');
      side(ks[1]);
    }
  }
}

struct text_builder {
  std::string s;
  void put(char c) { s += c; }
  void put(std::string_view t) { s.append(t); }
  void put_value(const value& v) { s += to_string(v); }
};

inline node_ptr flat_to_tree(const flat_expr& f, std::uint32_t i) {
  const flat_node& n = f.nodes[i];
  if (n.k == op::lit) return make_node(op::lit, {}, f.lits[n.arg]);
  if (n.k == op::param) return make_node(op::param, {}, {}, std::string(f.name(n.arg)));
  std::vector<std::uint32_t> ks(f.kid_count(i));
  f.kids(i, ks.data(), ks.size());
  std::vector<node_ptr> kids;
  kids.reserve(ks.size());
  for (auto k : ks) kids.push_back(flat_to_tree(f, k));
  return make_node(n.k, std::move(kids));
}

// The flat form of a tree (for expressions built with C++ operators).
inline std::uint32_t flatten_into(const node& n, flat_expr& f) {
  std::uint32_t size = 1;
  for (const auto& k : n.kids) size += flatten_into(*k, f);
  std::uint32_t arg = 0;
  if (n.k == op::lit) {
    f.lits.push_back(n.lit);
    arg = static_cast<std::uint32_t>(f.lits.size() - 1);
  } else if (n.k == op::param) {
    arg = f.intern(n.name);
  } else if (n.k == op::min || n.k == op::max || n.k == op::abs) {
    arg = static_cast<std::uint32_t>(n.kids.size());
  }
  f.push(n.k, arg, size);
  return size;
}

}  // namespace detail

class expr {
 public:
  expr(detail::node_ptr n) : n_(std::move(n)) {}  // NOLINT: implicit by design
  explicit expr(std::shared_ptr<const detail::flat_expr> f) : f_(std::move(f)) {}
  template <class T>
  requires(std::is_arithmetic_v<T>) expr(T x)
      : n_(detail::make_node(detail::op::lit, {}, detail::make_value(x))) {}  // NOLINT
  expr(const char* s) : n_(detail::make_node(detail::op::lit, {}, value(std::string(s)))) {}
  expr(std::string s) : n_(detail::make_node(detail::op::lit, {}, value(std::move(s)))) {}

  // The tree form (made on first use for an expression parsed into the flat form).
  const detail::node_ptr& node() const {
    if (n_) return n_;
    std::call_once(f_->tree_once, [&] { f_->tree = detail::flat_to_tree(*f_, f_->root()); });
    return f_->tree;
  }
  // The flat form when the expression was parsed into it, else null.
  const detail::flat_expr* flat() const { return f_.get(); }
  expr to_expr() const { return *this; }
  std::string text(const std::string& self_name = {}) const {
    if (n_) return detail::node_text(*n_, self_name);
    detail::text_builder b;
    detail::flat_text(*f_, f_->root(), self_name, b);
    return std::move(b.s);
  }

  // fnv1a(h, text(self_name)) computed without building the text.
  std::uint64_t hash_text(std::uint64_t h, const std::string& self_name = {}) const {
    detail::text_hasher t{h};
    if (n_)
      t.text(*n_, self_name);
    else
      detail::flat_text(*f_, f_->root(), self_name, t);
    return (t.h ^ 0xff) * 1099511628211ull;
  }

  // Names of the parameters the expression reads (atf::self not included).
  std::set<std::string> parameters() const {
    std::set<std::string> s;
    bool self = false;
    if (n_) {
      detail::collect_params(*n_, s, self);
    } else {
      for (const auto& n : f_->nodes)
        if (n.k == detail::op::param) s.emplace(f_->name(n.arg));
    }
    return s;
  }
  bool uses_self() const {
    if (!n_) {
      for (const auto& n : f_->nodes)
        if (n.k == detail::op::self) return true;
      return false;
    }
    std::set<std::string> s;
    bool self = false;
    detail::collect_params(*n_, s, self);
    return self;
  }

 private:
  detail::node_ptr n_;
  std::shared_ptr<const detail::flat_expr> f_;  // set instead of n_ for parsed expressions
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
