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

class compiled_expr {
 public:
  // slot_of maps a parameter name to its slot; self_slot is used for atf::self.
  compiled_expr(const expr& e, const std::unordered_map<std::string, std::size_t>& slot_of,
                std::size_t self_slot, const std::string& self_name, bool int_slots_only,
                string_table& strings, std::string where)
      : e_(e), self_name_(self_name), where_(std::move(where)) {
    int_only_ = int_slots_only;
    emit(*e.node(), slot_of, self_slot, strings);
    if (max_depth_ > kStack) throw error(where_ + ": expression too deep: " + text());
  }

  // Built on demand: only error messages need it.
  std::string text() const { return e_.text(self_name_); }
  const std::vector<std::size_t>& slots() const { return slots_; }

  bool test(const num* slots) const {
    return int_only_ ? eval_int(slots) != 0 : eval(slots).truthy();
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

  std::int64_t eval_int(const num* slots) const {
    std::int64_t st[kStack];
    int sp = -1;
    const instr* code_begin = code_.data();
    for (const instr* p = code_begin; p != code_begin + code_.size(); ++p) {
      std::int64_t b;
      switch (p->c) {
        case code::konst:
          st[++sp] = consts_[p->arg].i;
          continue;
        case code::slot:
          st[++sp] = slots[p->arg].i;
          continue;
        case code::lnot:
          st[sp] = !st[sp];
          continue;
        case code::to_bool:
          st[sp] = st[sp] != 0;
          continue;
        case code::neg:
          st[sp] = -st[sp];
          continue;
        case code::abs:
          st[sp] = st[sp] < 0 ? -st[sp] : st[sp];
          continue;
        case code::and_jump:
          if (!st[sp])
            p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        case code::or_jump:
          if (st[sp])
            st[sp] = 1, p = code_begin + p->arg - 1;
          else
            --sp;
          continue;
        default:
          break;
      }
      b = st[sp--];
      std::int64_t& a = st[sp];
      switch (p->c) {
        case code::add:
          a += b;
          break;
        case code::sub:
          a -= b;
          break;
        case code::mul:
          a *= b;
          break;
        case code::div_c:
          if (b == 0) throw div_zero();
          a /= b;
          break;
        case code::floordiv:
          if (b == 0) throw div_zero();
          a = floor_div(a, b);
          break;
        case code::mod_py:
          if (b == 0) throw div_zero();
          a = a - floor_div(a, b) * b;
          break;
        case code::mod_c:
          if (b == 0) throw div_zero();
          a %= b;
          break;
        case code::pow:
          a = ipow(a, b);
          break;
        case code::lt:
          a = a < b;
          break;
        case code::le:
          a = a <= b;
          break;
        case code::gt:
          a = a > b;
          break;
        case code::ge:
          a = a >= b;
          break;
        case code::eq:
          a = a == b;
          break;
        case code::ne:
          a = a != b;
          break;
        case code::min2:
          a = a < b ? a : b;
          break;
        case code::max2:
          a = a > b ? a : b;
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

  void emit(const node& n, const std::unordered_map<std::string, std::size_t>& slot_of,
            std::size_t self_slot, string_table& strings) {
    switch (n.k) {
      case op::lit: {
        num v = to_num(n.lit, strings);
        if (v.t != num::i64) int_only_ = false;
        consts_.push_back(v);
        push({code::konst, static_cast<std::uint32_t>(consts_.size() - 1)}, 1);
        return;
      }
      case op::param:
      case op::self: {
        std::size_t s = self_slot;
        if (n.k == op::param) {
          auto it = slot_of.find(n.name);
          if (it == slot_of.end())
            throw error(where_ + ": unknown parameter '" + n.name + "' in '" + text() + "'");
          s = it->second;
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
        emit(*n.kids[0], slot_of, self_slot, strings);
        std::size_t at = code_.size();
        push({n.k == op::land ? code::and_jump : code::or_jump, 0}, -1);
        emit(*n.kids[1], slot_of, self_slot, strings);
        push({code::to_bool, 0}, 0);
        code_[at].arg = static_cast<std::uint32_t>(code_.size());
        return;
      }
      case op::lnot:
      case op::neg:
      case op::abs:
        emit(*n.kids[0], slot_of, self_slot, strings);
        push({n.k == op::lnot ? code::lnot : n.k == op::neg ? code::neg : code::abs, 0}, 0);
        return;
      case op::min:
      case op::max:
        emit(*n.kids[0], slot_of, self_slot, strings);
        for (std::size_t i = 1; i < n.kids.size(); ++i) {
          emit(*n.kids[i], slot_of, self_slot, strings);
          push({n.k == op::min ? code::min2 : code::max2, 0}, -1);
        }
        return;
      default:
        break;
    }
    emit(*n.kids[0], slot_of, self_slot, strings);
    emit(*n.kids[1], slot_of, self_slot, strings);
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
        c = code::div_real, int_only_ = false;
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
        c = code::pow, int_only_ = false;
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

  expr e_;
  std::string self_name_, where_;
  std::vector<instr> code_;
  std::vector<num> consts_;
  std::vector<std::size_t> slots_;
  bool int_only_ = true;
  int depth_ = 0, max_depth_ = 0;
};

}  // namespace atf::detail
