// SPDX-License-Identifier: MIT
// Parses constraint strings of the community T1 format (Python syntax: arithmetic, comparisons,
// and/or/not, min/max/abs) into atf::expr, once; errors point at the offending text.
#pragma once

#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/value.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace atf {

namespace detail {

class expr_parser {
 public:
  // known: parameter names allowed as identifiers (empty = any identifier is a parameter).
  expr_parser(std::string_view text, const std::set<std::string>* known)
      : s_(text), known_(known) {}

  // known_sorted: the same as a sorted list (no set needed).
  expr_parser(std::string_view text, const std::vector<std::string_view>* known_sorted)
      : s_(text), known_(nullptr), known_sorted_(known_sorted) {}

  expr parse() {
    auto f = std::make_shared<flat_expr>();
    f->nodes.reserve(s_.size() / 3 + 4);
    f->names.reserve(4);
    f->pool.reserve(s_.size());
    f_ = f.get();
    skip();
    if (at_end()) fail(pos_, "empty expression");
    parse_or();
    skip();
    if (!at_end()) fail(pos_, "unexpected '" + std::string(1, s_[pos_]) + "'");
    f_ = nullptr;
    return expr(std::shared_ptr<const flat_expr>(std::move(f)));
  }

  // A Python list literal or range(...) call, as in T1 "Values".
  std::vector<value> parse_values() {
    skip();
    std::vector<value> out;
    if (word_ahead("range")) {
      pos_ += 5;
      expect('(');
      std::vector<std::int64_t> a;
      do {
        value v = literal();
        if (v.index() != 0) fail(pos_, "range() takes integers");
        a.push_back(std::get<0>(v));
      } while (accept(','));
      expect(')');
      if (a.empty() || a.size() > 3) fail(pos_, "range() takes 1 to 3 arguments");
      std::int64_t b = a.size() == 1 ? 0 : a[0], e = a.size() == 1 ? a[0] : a[1],
                   st = a.size() == 3 ? a[2] : 1;
      if (st == 0) fail(pos_, "range() step must not be zero");
      for (std::int64_t x = b; st > 0 ? x < e : x > e; x += st) out.emplace_back(x);
    } else {
      bool paren = false;
      if (accept('('))
        paren = true;
      else
        expect('[');
      skip();
      if (!accept(paren ? ')' : ']')) {
        do {
          skip();
          if (peek() == (paren ? ')' : ']')) break;  // trailing comma
          out.push_back(literal());
        } while (accept(','));
        expect(paren ? ')' : ']');
      }
    }
    skip();
    if (!at_end()) fail(pos_, "unexpected text after the values");
    return out;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& msg) const {
    throw error("expression error at column " + std::to_string(at + 1) + ": " + msg + "\n  " +
                std::string(s_) + "\n  " + std::string(at, ' ') + "^");
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip() {
    while (!at_end() && is_space(s_[pos_])) ++pos_;
  }
  bool accept(char c) {
    skip();
    if (peek() == c) return ++pos_, true;
    return false;
  }
  bool accept(std::string_view t) {
    skip();
    if (s_.substr(pos_, t.size()) == t) return pos_ += t.size(), true;
    return false;
  }
  void expect(char c) {
    if (!accept(c))
      fail(pos_, std::string("expected '") + c + "'" + (at_end() ? " at the end" : ""));
  }
  // ASCII classes as in the "C" locale, without a library call per character.
  static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool ident_char(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  bool word_ahead(std::string_view w) {
    skip();
    return s_.substr(pos_, w.size()) == w &&
           (pos_ + w.size() >= s_.size() || !ident_char(s_[pos_ + w.size()]));
  }
  bool accept_word(std::string_view w) {
    if (word_ahead(w)) return pos_ += w.size(), true;
    return false;
  }

  // Each parse_* appends the postfix nodes of what it read to f_ and returns the index of the
  // subtree's root (the last node appended).
  using idx = std::uint32_t;
  idx last() const { return static_cast<idx>(f_->nodes.size() - 1); }
  std::uint32_t size_of(idx i) const { return f_->nodes[i].size; }
  idx bin(op k, idx a, idx b) {
    f_->push(k, 0, size_of(a) + size_of(b) + 1);
    return last();
  }
  idx unary(op k, idx a) {
    f_->push(k, 0, size_of(a) + 1);
    return last();
  }

  idx parse_or() {
    idx e = parse_and();
    while (accept_word("or") || accept("||")) e = bin(op::lor, e, parse_and());
    return e;
  }
  idx parse_and() {
    idx e = parse_not();
    while (accept_word("and") || accept("&&")) e = bin(op::land, e, parse_not());
    return e;
  }
  idx parse_not() {
    skip();
    if (accept_word("not")) return unary(op::lnot, parse_not());
    if (peek() == '!' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '=')) {
      ++pos_;
      return unary(op::lnot, parse_not());
    }
    return parse_comparison();
  }
  bool comparison_op(op& k) {
    skip();
    static const std::pair<std::string_view, op> ops[] = {{"<=", op::le}, {">=", op::ge},
                                                          {"==", op::eq}, {"!=", op::ne},
                                                          {"<", op::lt},  {">", op::gt}};
    for (const auto& [t, o] : ops)
      if (s_.substr(pos_, t.size()) == t) {
        pos_ += t.size();
        k = o;
        return true;
      }
    return false;
  }
  idx parse_comparison() {
    idx left = parse_arith();
    op k;
    bool have = false;
    idx result = 0;
    while (comparison_op(k)) {  // chained comparisons: a < b < c is a < b and b < c
      if (have) {
        // The middle operand is read twice: copy its subtree so the new comparison is contiguous.
        f_->copy_subtree(left);
        left = last();
      }
      const idx right = parse_arith();
      const idx c = bin(k, left, right);
      result = have ? bin(op::land, result, c) : c;
      have = true;
      left = right;
    }
    return have ? result : left;
  }
  idx parse_arith() {
    idx e = parse_term();
    for (;;) {
      skip();
      if (accept('+'))
        e = bin(op::add, e, parse_term());
      else if (peek() == '-')
        ++pos_, e = bin(op::sub, e, parse_term());
      else
        return e;
    }
  }
  idx parse_term() {
    idx e = parse_unary();
    for (;;) {
      skip();
      if (accept("//"))
        e = bin(op::floordiv, e, parse_unary());
      else if (peek() == '*' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '*'))
        ++pos_, e = bin(op::mul, e, parse_unary());
      else if (accept('/'))
        e = bin(op::div_real, e, parse_unary());
      else if (accept('%'))
        e = bin(op::mod_py, e, parse_unary());
      else
        return e;
    }
  }
  idx parse_unary() {
    skip();
    if (accept('-')) return unary(op::neg, parse_unary());
    if (accept('+')) return parse_unary();
    idx base = parse_atom();
    if (accept("**")) return bin(op::pow, base, parse_unary());
    return base;
  }
  idx lit(value v) {
    if (f_->lits.capacity() == 0) f_->lits.reserve(4);  // none at all for many constraints
    f_->lits.push_back(std::move(v));
    f_->push(op::lit, static_cast<std::uint32_t>(f_->lits.size() - 1), 1);
    return last();
  }
  bool known(std::string_view name) const {
    if (known_) return known_->find(std::string(name)) != known_->end();
    if (known_sorted_)
      return std::binary_search(known_sorted_->begin(), known_sorted_->end(), name);
    return true;
  }
  idx parse_atom() {
    skip();
    const std::size_t start = pos_;
    if (at_end()) fail(pos_, "expression ends too early");
    char c = peek();
    if (c == '(') {
      ++pos_;
      idx e = parse_or();
      if (!accept(')'))
        fail(pos_, "expected ')' to close the '(' at column " + std::to_string(start + 1));
      return e;
    }
    if (is_digit(c) || c == '.' || c == '"' || c == '\'')
      return lit(literal());
    if (ident_char(c)) {
      std::size_t e = pos_;
      while (e < s_.size() && ident_char(s_[e])) ++e;
      const std::string_view name = s_.substr(pos_, e - pos_);
      pos_ = e;
      if (name == "True" || name == "true") return lit(value(true));
      if (name == "False" || name == "false") return lit(value(false));
      skip();
      if (peek() == '(') {
        op k;
        if (name == "min")
          k = op::min;
        else if (name == "max")
          k = op::max;
        else if (name == "abs")
          k = op::abs;
        else
          fail(start, "unknown function '" + std::string(name) + "' (known: min, max, abs)");
        ++pos_;
        std::uint32_t nargs = 0, size = 1;
        skip();
        if (peek() != ')') {
          do size += size_of(parse_or()), ++nargs;
          while (accept(','));
        }
        if (!accept(')')) fail(pos_, "expected ')' after the arguments of " + std::string(name));
        if (k == op::abs ? nargs != 1 : nargs < 2)
          fail(start, std::string(name) + "() has the wrong number of arguments");
        f_->push(k, nargs, size);
        return last();
      }
      if (!known(name)) fail(start, "unknown parameter '" + std::string(name) + "'");
      f_->push(op::param, f_->intern(name), 1);
      return last();
    }
    fail(pos_, "unexpected '" + std::string(1, c) + "'");
  }

  value literal() {
    skip();
    const std::size_t start = pos_;
    bool neg = false;
    if (peek() == '-') neg = true, ++pos_, skip();
    char c = peek();
    if (c == '"' || c == '\'') {
      if (neg) fail(start, "a string cannot be negated");
      std::size_t e = s_.find(c, pos_ + 1);
      if (e == std::string_view::npos) fail(start, "unterminated string");
      std::string v(s_.substr(pos_ + 1, e - pos_ - 1));
      pos_ = e + 1;
      return v;
    }
    if (accept_word("True") || accept_word("true")) return true;
    if (accept_word("False") || accept_word("false")) return false;
    std::size_t e = pos_;
    bool is_float = false;
    while (e < s_.size() && (is_digit(s_[e]) || s_[e] == '.' ||
                             s_[e] == 'e' || s_[e] == 'E' || s_[e] == '_' ||
                             ((s_[e] == '+' || s_[e] == '-') && e > pos_ &&
                              (s_[e - 1] == 'e' || s_[e - 1] == 'E')))) {
      is_float |= s_[e] == '.' || s_[e] == 'e' || s_[e] == 'E';
      ++e;
    }
    if (e == pos_) fail(start, "expected a number, string or bool");
    std::string t;
    for (char ch : s_.substr(pos_, e - pos_))
      if (ch != '_') t += ch;
    char* end = nullptr;
    value v;
    if (is_float) {
      double d = std::strtod(t.c_str(), &end);
      v = neg ? -d : d;
    } else {
      long long i = std::strtoll(t.c_str(), &end, 10);
      v = static_cast<std::int64_t>(neg ? -i : i);
    }
    if (end != t.c_str() + t.size()) fail(start, "malformed number '" + t + "'");
    pos_ = e;
    return v;
  }

  std::string_view s_;
  const std::set<std::string>* known_;
  const std::vector<std::string_view>* known_sorted_ = nullptr;
  flat_expr* f_ = nullptr;
  std::size_t pos_ = 0;
};

}  // namespace detail

// Parses a constraint; with `known`, identifiers must be parameter names.
inline expr parse_expression(std::string_view text, const std::set<std::string>* known = nullptr) {
  return detail::expr_parser(text, known).parse();
}

// The same with the known names as a sorted list.
inline expr parse_expression(std::string_view text, const std::vector<std::string_view>& known_sorted) {
  return detail::expr_parser(text, &known_sorted).parse();
}

// Parses a T1 "Values" string: a Python list literal or range(...).
inline std::vector<value> parse_values(std::string_view text) {
  return detail::expr_parser(text, static_cast<const std::set<std::string>*>(nullptr)).parse_values();
}

}  // namespace atf
