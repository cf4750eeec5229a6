// SPDX-License-Identifier: MIT
// Compiles an atf::expr once into flat postfix code over parameter slots and evaluates it fast;
// integer-only expressions run on a plain int64 stack.
#pragma once

#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/value.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace atf::detail {

// A parameter value as the evaluator sees it; strings are interned to ids (0 is "").
struct num {
  enum kind : std::uint8_t { i64, f64, str };
  std::int64_t i = 0;
  double d = 0;
  kind t = i64;
  static num of_int(std::int64_t x) { return {x, 0.0, i64}; }
  static num of_double(double x) { return {0, x, f64}; }
  double as_double() const { return t == f64 ? d : static_cast<double>(i); }
  bool truthy() const { return t == f64 ? d != 0 : i != 0; }
};

class string_table {
 public:
  string_table() { ids_.emplace("", 0); }
  std::int64_t id(const std::string& s) {
    auto [it, fresh] = ids_.emplace(s, static_cast<std::int64_t>(ids_.size()));
    return it->second;
  }

 private:
  std::unordered_map<std::string, std::int64_t> ids_;
};

inline num to_num(const value& v, string_table& strings) {
  switch (v.index()) {
    case 0:
      return num::of_int(std::get<0>(v));
    case 1:
      return num::of_double(std::get<1>(v));
    case 2:
      return num::of_int(std::get<2>(v) ? 1 : 0);
    default:
      return {strings.id(std::get<3>(v)), 0.0, num::str};
  }
}

enum class code : std::uint8_t {
  konst,
  slot,
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
  lnot,
  neg,
  abs,
  min2,
  max2,
  and_jump,
  or_jump,
  to_bool,
};

struct instr {
  code c;
  std::uint32_t arg;
};

// Statically typed code: with integer parameter slots the type (int64 or double) of every
// sub-expression is known at compile time, so evaluation needs no type tags or checks.
enum class tcode : std::uint8_t {
  konst,  // arg: index into tconsts_ (int64 or double bits)
  slot,   // int64 slot
  i2f_top,
  i2f_second,
  add_i,
  sub_i,
  mul_i,
  divc_i,
  floordiv_i,
  modpy_i,
  modc_i,
  lt_i,
  le_i,
  gt_i,
  ge_i,
  eq_i,
  ne_i,
  min_i,
  max_i,
  add_f,
  sub_f,
  mul_f,
  div_f,
  floordiv_f,
  modpy_f,
  modc_f,
  lt_f,
  le_f,
  gt_f,
  ge_f,
  eq_f,
  ne_f,
  min_f,
  max_f,
  lnot_i,
  lnot_f,
  tobool_i,
  tobool_f,
  neg_i,
  neg_f,
  abs_i,
  abs_f,
  and_jump_i,
  and_jump_f,
  or_jump_i,
  or_jump_f,
  nop,
};

union tval {
  std::int64_t i;
  double d;
};

struct tinstr {
  tcode c;
  std::uint32_t arg;
};

class compiled_expr {
 public:
  // f is e's flat form; name_slot maps each of f's names to its slot (-1: unknown); self_slot is
  // used for atf::self.
  compiled_expr(const expr& e, const flat_expr& f, const std::vector<std::size_t>& name_slot,
                std::size_t self_slot, const std::string& self_name, bool int_slots_only,
                string_table& strings, std::string where)
      : e_(e), self_name_(self_name), where_(std::move(where)), f_(&f), name_slot_(&name_slot) {
    code_.reserve(f.nodes.size() + 4);
    consts_.reserve(f.lits.size());
    slots_.reserve(f.names.size() + 1);
    emit(f.root(), self_slot, strings);
    if (max_depth_ > kStack) throw error(where_ + ": expression too deep: " + text());
    if (int_slots_only) {
      typed_ = true;
      tcode_.reserve(f.nodes.size() + 8);
      tconsts_.reserve(f.lits.size());
      char t = emit_typed(f.root(), self_slot);
      typed_ = typed_ && t != 0;
      result_f_ = t == 'f';
      if (!typed_) tcode_.clear(), tconsts_.clear();
    }
    f_ = nullptr;
    name_slot_ = nullptr;
  }

  // Built on demand: only error messages need it.
  std::string text() const { return e_.text(self_name_); }
  const std::vector<std::size_t>& slots() const { return slots_; }

  bool test(const num* slots) const {
    if (!typed_) return eval(slots).truthy();
    const tval r = eval_typed(slots);
    return result_f_ ? r.d != 0 : r.i != 0;
  }

  num eval(const num* slots) const {
    num st[kStack];
    int sp = -1;
    const instr* code_begin = code_.data();
    for (const instr* p = code_begin; p != code_begin + code_.size(); ++p) {
      switch (p->c) {
        case code::konst:
          st[++sp] = consts_[p->arg];
          break;
        case code::slot:
          st[++sp] = slots[p->arg];
          break;
        case code::lnot:
          st[sp] = num::of_int(!st[sp].truthy());
          break;
        case code::to_bool:
          st[sp] = num::of_int(st[sp].truthy());
          break;
        case code::neg:
          st[sp] = st[sp].t == num::f64 ? num::of_double(-st[sp].d) : num::of_int(-st[sp].i);
          break;
        case code::abs:
          st[sp] = st[sp].t == num::f64 ? num::of_double(std::fabs(st[sp].d))
                                        : num::of_int(st[sp].i < 0 ? -st[sp].i : st[sp].i);
          break;
        case code::and_jump:
          if (!st[sp].truthy()) {
            st[sp] = num::of_int(0);
            p = code_begin + p->arg - 1;
          } else {
            --sp;
          }
          break;
        case code::or_jump:
          if (st[sp].truthy()) {
            st[sp] = num::of_int(1);
            p = code_begin + p->arg - 1;
          } else {
            --sp;
          }
          break;
        default:
          st[sp - 1] = binary(p->c, st[sp - 1], st[sp]);
          --sp;
      }
    }
    return st[0];
  }

  tval eval_typed(const num* slots) const {
    tval st[kStack];
    int sp = -1;
    const tinstr* code_begin = tcode_.data();
    const tinstr* code_end = code_begin + tcode_.size();
    for (const tinstr* p = code_begin; p != code_end; ++p) {
      switch (p->c) {
        case tcode::konst:
          st[++sp] = tconsts_[p->arg];
          continue;
        case tcode::slot:
          st[++sp].i = slots[p->arg].i;
          continue;
        case tcode::i2f_top:
          st[sp].d = static_cast<double>(st[sp].i);
          continue;
        case tcode::i2f_second:
          st[sp - 1].d = static_cast<double>(st[sp - 1].i);
          continue;
        case tcode::lnot_i:
          st[sp].i = st[sp].i == 0;
          continue;
        case tcode::lnot_f:
          st[sp].i = st[sp].d == 0;
          continue;
        case tcode::tobool_i:
          st[sp].i = st[sp].i != 0;
          continue;
        case tcode::tobool_f:
          st[sp].i = st[sp].d != 0;
          continue;
        case tcode::neg_i:
          st[sp].i = static_cast<std::int64_t>(0ull - static_cast<std::uint64_t>(st[sp].i));
          continue;
        case tcode::neg_f:
          st[sp].d = -st[sp].d;
          continue;
        case tcode::abs_i:
          if (st[sp].i < 0)
            st[sp].i = static_cast<std::int64_t>(0ull - static_cast<std::uint64_t>(st[sp].i));
          continue;
        case tcode::abs_f:
          st[sp].d = std::fabs(st[sp].d);
          continue;
        case tcode::and_jump_i:
          if (st[sp].i == 0)
            p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        case tcode::and_jump_f:
          if (st[sp].d == 0)
            st[sp].i = 0, p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        case tcode::or_jump_i:
          if (st[sp].i != 0)
            st[sp].i = 1, p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        case tcode::or_jump_f:
          if (st[sp].d != 0)
            st[sp].i = 1, p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        case tcode::nop:
          continue;
        default:
          break;
      }
      const tval b = st[sp--];
      tval& a = st[sp];
      switch (p->c) {
        case tcode::add_i:
          a.i = wrap(static_cast<std::uint64_t>(a.i) + static_cast<std::uint64_t>(b.i));
          break;
        case tcode::sub_i:
          a.i = wrap(static_cast<std::uint64_t>(a.i) - static_cast<std::uint64_t>(b.i));
          break;
        case tcode::mul_i:
          a.i = wrap(static_cast<std::uint64_t>(a.i) * static_cast<std::uint64_t>(b.i));
          break;
        case tcode::divc_i:
          if (b.i == 0) throw div_zero();
          a.i = a.i / b.i;
          break;
        case tcode::floordiv_i:
          if (b.i == 0) throw div_zero();
          a.i = floor_div(a.i, b.i);
          break;
        case tcode::modpy_i:
          if (b.i == 0) throw div_zero();
          a.i = a.i - floor_div(a.i, b.i) * b.i;
          break;
        case tcode::modc_i:
          if (b.i == 0) throw div_zero();
          a.i = a.i % b.i;
          break;
        case tcode::lt_i:
          a.i = a.i < b.i;
          break;
        case tcode::le_i:
          a.i = a.i <= b.i;
          break;
        case tcode::gt_i:
          a.i = a.i > b.i;
          break;
        case tcode::ge_i:
          a.i = a.i >= b.i;
          break;
        case tcode::eq_i:
          a.i = a.i == b.i;
          break;
        case tcode::ne_i:
          a.i = a.i != b.i;
          break;
        case tcode::min_i:
          a.i = a.i < b.i ? a.i : b.i;
          break;
        case tcode::max_i:
          a.i = a.i > b.i ? a.i : b.i;
          break;
        case tcode::add_f:
          a.d += b.d;
          break;
        case tcode::sub_f:
          a.d -= b.d;
          break;
        case tcode::mul_f:
          a.d *= b.d;
          break;
        case tcode::div_f:
          if (b.d == 0) throw div_zero();
          a.d /= b.d;
          break;
        case tcode::floordiv_f:
          if (b.d == 0) throw div_zero();
          a.d = std::floor(a.d / b.d);
          break;
        case tcode::modpy_f: {
          if (b.d == 0) throw div_zero();
          double r = std::fmod(a.d, b.d);
          if (r != 0 && ((r < 0) != (b.d < 0))) r += b.d;
          a.d = r;
          break;
        }
        case tcode::modc_f:
          if (b.d == 0) throw div_zero();
          a.d = std::fmod(a.d, b.d);
          break;
        case tcode::lt_f:
          a.i = a.d < b.d;
          break;
        case tcode::le_f:
          a.i = a.d <= b.d;
          break;
        case tcode::gt_f:
          a.i = a.d > b.d;
          break;
        case tcode::ge_f:
          a.i = a.d >= b.d;
          break;
        case tcode::eq_f:
          a.i = a.d == b.d;
          break;
        case tcode::ne_f:
          a.i = a.d != b.d;
          break;
        case tcode::min_f:
          a.d = a.d <= b.d ? a.d : b.d;
          break;
        case tcode::max_f:
          a.d = a.d >= b.d ? a.d : b.d;
          break;
        default:
          break;
      }
    }
    return st[0];
  }

 private:
  static constexpr int kStack = 64;

  error div_zero() const { return error(where_ + ": division by zero in '" + text() + "'"); }

  static std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
  static std::int64_t ipow(std::int64_t a, std::int64_t b) {
    std::int64_t r = 1;
    for (; b > 0; --b) r *= a;
    return r;
  }

  num binary(code c, const num& x, const num& y) const {
    if (x.t == num::str || y.t == num::str) {
      bool same = x.t == y.t && x.i == y.i;
      if (c == code::eq) return num::of_int(same);
      if (c == code::ne) return num::of_int(!same);
      throw error(where_ + ": strings only support == and != in '" + text() + "'");
    }
    const bool ints = x.t == num::i64 && y.t == num::i64;
    if (ints && c != code::div_real && !(c == code::pow && y.i < 0)) {
      std::int64_t st[2] = {x.i, y.i};
      // Reuse the integer path for one operation.
      std::int64_t a = st[0], b = st[1];
      switch (c) {
        case code::add:
          return num::of_int(a + b);
        case code::sub:
          return num::of_int(a - b);
        case code::mul:
          return num::of_int(a * b);
        case code::div_c:
          if (b == 0) throw div_zero();
          return num::of_int(a / b);
        case code::floordiv:
          if (b == 0) throw div_zero();
          return num::of_int(floor_div(a, b));
        case code::mod_py:
          if (b == 0) throw div_zero();
          return num::of_int(a - floor_div(a, b) * b);
        case code::mod_c:
          if (b == 0) throw div_zero();
          return num::of_int(a % b);
        case code::pow:
          return num::of_int(ipow(a, b));
        case code::lt:
          return num::of_int(a < b);
        case code::le:
          return num::of_int(a <= b);
        case code::gt:
          return num::of_int(a > b);
        case code::ge:
          return num::of_int(a >= b);
        case code::eq:
          return num::of_int(a == b);
        case code::ne:
          return num::of_int(a != b);
        case code::min2:
          return num::of_int(a < b ? a : b);
        case code::max2:
          return num::of_int(a > b ? a : b);
        default:
          break;
      }
    }
    const double a = x.as_double(), b = y.as_double();
    switch (c) {
      case code::add:
        return num::of_double(a + b);
      case code::sub:
        return num::of_double(a - b);
      case code::mul:
        return num::of_double(a * b);
      case code::div_real:
      case code::div_c:
        if (b == 0) throw div_zero();
        return num::of_double(a / b);
      case code::floordiv:
        if (b == 0) throw div_zero();
        return num::of_double(std::floor(a / b));
      case code::mod_py: {
        if (b == 0) throw div_zero();
        double r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return num::of_double(r);
      }
      case code::mod_c:
        if (b == 0) throw div_zero();
        return num::of_double(std::fmod(a, b));
      case code::pow:
        return num::of_double(std::pow(a, b));
      case code::lt:
        return num::of_int(a < b);
      case code::le:
        return num::of_int(a <= b);
      case code::gt:
        return num::of_int(a > b);
      case code::ge:
        return num::of_int(a >= b);
      case code::eq:
        return num::of_int(a == b);
      case code::ne:
        return num::of_int(a != b);
      case code::min2:
        return x.as_double() <= y.as_double() ? x : y;
      case code::max2:
        return x.as_double() >= y.as_double() ? x : y;
      default:
        break;
    }
    return num{};
  }

  void push(instr i, int delta) {
    code_.push_back(i);
    depth_ += delta;
    if (depth_ > max_depth_) max_depth_ = depth_;
  }

  void emit(std::uint32_t i, std::size_t self_slot, string_table& strings) {
    const flat_node& n = f_->nodes[i];
    std::uint32_t kid[2] = {0, 0};
    if (n.k != op::min && n.k != op::max && n.k != op::abs) f_->kids(i, kid, 2);
    switch (n.k) {
      case op::lit: {
        num v = to_num(f_->lits[n.arg], strings);
        consts_.push_back(v);
        push({code::konst, static_cast<std::uint32_t>(consts_.size() - 1)}, 1);
        return;
      }
      case op::param:
      case op::self: {
        std::size_t s = self_slot;
        if (n.k == op::param) {
          s = (*name_slot_)[n.arg];
          if (s == static_cast<std::size_t>(-1))
            throw error(where_ + ": unknown parameter '" + std::string(f_->name(n.arg)) + "' in '" +
                        text() + "'");
        } else if (self_slot == static_cast<std::size_t>(-1)) {
          throw error(where_ + ": atf::self used outside a parameter's constraint in '" + text() +
                      "'");
        }
        bool seen = false;
        for (auto x : slots_) seen |= x == s;
        if (!seen) slots_.push_back(s);
        push({code::slot, static_cast<std::uint32_t>(s)}, 1);
        return;
      }
      case op::land:
      case op::lor: {
        emit(kid[0], self_slot, strings);
        std::size_t at = code_.size();
        push({n.k == op::land ? code::and_jump : code::or_jump, 0}, -1);
        emit(kid[1], self_slot, strings);
        push({code::to_bool, 0}, 0);
        code_[at].arg = static_cast<std::uint32_t>(code_.size());
        return;
      }
      case op::lnot:
      case op::neg:
      case op::abs:
        emit(i - 1, self_slot, strings);
        push({n.k == op::lnot ? code::lnot : n.k == op::neg ? code::neg : code::abs, 0}, 0);
        return;
      case op::min:
      case op::max: {
        std::vector<std::uint32_t> ks(n.arg);
        f_->kids(i, ks.data(), ks.size());
        emit(ks[0], self_slot, strings);
        for (std::size_t j = 1; j < ks.size(); ++j) {
          emit(ks[j], self_slot, strings);
          push({n.k == op::min ? code::min2 : code::max2, 0}, -1);
        }
        return;
      }
      default:
        break;
    }
    emit(kid[0], self_slot, strings);
    emit(kid[1], self_slot, strings);
    code c{};
    switch (n.k) {
      case op::add:
        c = code::add;
        break;
      case op::sub:
        c = code::sub;
        break;
      case op::mul:
        c = code::mul;
        break;
      case op::div_real:
        c = code::div_real;
        break;
      case op::div_c:
        c = code::div_c;
        break;
      case op::floordiv:
        c = code::floordiv;
        break;
      case op::mod_py:
        c = code::mod_py;
        break;
      case op::mod_c:
        c = code::mod_c;
        break;
      case op::pow:
        c = code::pow;
        break;
      case op::lt:
        c = code::lt;
        break;
      case op::le:
        c = code::le;
        break;
      case op::gt:
        c = code::gt;
        break;
      case op::ge:
        c = code::ge;
        break;
      case op::eq:
        c = code::eq;
        break;
      case op::ne:
        c = code::ne;
        break;
      default:
        throw error(where_ + ": unsupported operation in '" + text() + "'");
    }
    push({c, 0}, -1);
  }

  static std::int64_t wrap(std::uint64_t x) { return static_cast<std::int64_t>(x); }

  void tpush(tcode c, std::uint32_t arg = 0) { tcode_.push_back({c, arg}); }

  // Emits typed code for n; returns its type ('i' or 'f'), or 0 where the type is only known at
  // run time (strings, ** whose exponent may be negative, min/max over mixed types).
  char emit_typed(std::uint32_t i, std::size_t self_slot) {
    const flat_node& n = f_->nodes[i];
    std::uint32_t kid[2] = {0, 0};
    if (n.k != op::min && n.k != op::max && n.k != op::abs) f_->kids(i, kid, 2);
    switch (n.k) {
      case op::lit: {
        tval v{};
        char t;
        const value& lv = f_->lits[n.arg];
        if (const auto* x = std::get_if<std::int64_t>(&lv))
          v.i = *x, t = 'i';
        else if (const auto* b = std::get_if<bool>(&lv))
          v.i = *b ? 1 : 0, t = 'i';
        else if (const auto* d = std::get_if<double>(&lv))
          v.d = *d, t = 'f';
        else
          return 0;
        tconsts_.push_back(v);
        tpush(tcode::konst, static_cast<std::uint32_t>(tconsts_.size() - 1));
        return t;
      }
      case op::param:
      case op::self: {
        std::size_t sl = self_slot;
        if (n.k == op::param) sl = (*name_slot_)[n.arg];  // checked by emit()
        tpush(tcode::slot, static_cast<std::uint32_t>(sl));
        return 'i';
      }
      case op::land:
      case op::lor: {
        const char a = emit_typed(kid[0], self_slot);
        if (!a) return 0;
        const std::size_t at = tcode_.size();
        tpush(n.k == op::land ? (a == 'i' ? tcode::and_jump_i : tcode::and_jump_f)
                              : (a == 'i' ? tcode::or_jump_i : tcode::or_jump_f));
        const char b = emit_typed(kid[1], self_slot);
        if (!b) return 0;
        tpush(b == 'f' ? tcode::tobool_f : tcode::tobool_i);
        tcode_[at].arg = static_cast<std::uint32_t>(tcode_.size());
        return 'i';
      }
      case op::lnot:
      case op::neg:
      case op::abs: {
        const char a = emit_typed(i - 1, self_slot);
        if (!a) return 0;
        const bool f = a == 'f';
        if (n.k == op::lnot) return tpush(f ? tcode::lnot_f : tcode::lnot_i), 'i';
        tpush(n.k == op::neg ? (f ? tcode::neg_f : tcode::neg_i)
                             : (f ? tcode::abs_f : tcode::abs_i));
        return a;
      }
      case op::min:
      case op::max: {
        std::vector<std::uint32_t> ks(n.arg);
        f_->kids(i, ks.data(), ks.size());
        const char a = emit_typed(ks[0], self_slot);
        if (!a) return 0;
        for (std::size_t j = 1; j < ks.size(); ++j) {
          if (emit_typed(ks[j], self_slot) != a) return 0;
          const bool f = a == 'f';
          tpush(n.k == op::min ? (f ? tcode::min_f : tcode::min_i)
                               : (f ? tcode::max_f : tcode::max_i));
        }
        return a;
      }
      case op::pow:
        return 0;
      default:
        break;
    }
    const char a = emit_typed(kid[0], self_slot);
    if (!a) return 0;
    const char b = emit_typed(kid[1], self_slot);
    if (!b) return 0;
    const bool ints = a == 'i' && b == 'i' && n.k != op::div_real;
    if (!ints) {
      if (a == 'i') tpush(tcode::i2f_second);
      if (b == 'i') tpush(tcode::i2f_top);
    }
    auto pick = [&](tcode i, tcode f) { tpush(ints ? i : f); };
    switch (n.k) {
      case op::add:
        pick(tcode::add_i, tcode::add_f);
        return ints ? 'i' : 'f';
      case op::sub:
        pick(tcode::sub_i, tcode::sub_f);
        return ints ? 'i' : 'f';
      case op::mul:
        pick(tcode::mul_i, tcode::mul_f);
        return ints ? 'i' : 'f';
      case op::div_real:
        tpush(tcode::div_f);
        return 'f';
      case op::div_c:
        pick(tcode::divc_i, tcode::div_f);
        return ints ? 'i' : 'f';
      case op::floordiv:
        pick(tcode::floordiv_i, tcode::floordiv_f);
        return ints ? 'i' : 'f';
      case op::mod_py:
        pick(tcode::modpy_i, tcode::modpy_f);
        return ints ? 'i' : 'f';
      case op::mod_c:
        pick(tcode::modc_i, tcode::modc_f);
        return ints ? 'i' : 'f';
      case op::lt:
        pick(tcode::lt_i, tcode::lt_f);
        return 'i';
      case op::le:
        pick(tcode::le_i, tcode::le_f);
        return 'i';
      case op::gt:
        pick(tcode::gt_i, tcode::gt_f);
        return 'i';
      case op::ge:
        pick(tcode::ge_i, tcode::ge_f);
        return 'i';
      case op::eq:
        pick(tcode::eq_i, tcode::eq_f);
        return 'i';
      case op::ne:
        pick(tcode::ne_i, tcode::ne_f);
        return 'i';
      default:
        return 0;
    }
  }

  expr e_;
  std::string self_name_, where_;
  const flat_expr* f_ = nullptr;                     // only while compiling
  const std::vector<std::size_t>* name_slot_ = nullptr;  // only while compiling
  std::vector<tinstr> tcode_;
  std::vector<tval> tconsts_;
  bool typed_ = false, result_f_ = false;
  std::vector<instr> code_;
  std::vector<num> consts_;
  std::vector<std::size_t> slots_;
  int depth_ = 0, max_depth_ = 0;
};

}  // namespace atf::detail
