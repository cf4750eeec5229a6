// SPDX-License-Identifier: MIT
// Compiles an atf::expr once into flat postfix code over parameter slots and evaluates it fast;
// integer-only expressions run on a plain int64 stack.
#pragma once

#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/value.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
  std::int64_t id(const std::string& s) {
    if (s.empty()) return 0;  // "" is 0 without a table entry (no allocation for int-only spaces)
    auto [it, fresh] = ids_.emplace(s, static_cast<std::int64_t>(ids_.size() + 1));
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
  konst,  // pushes the instruction's constant (int64 or double bits)
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

// An instruction of the typed code. Integer binary operations (add_i .. max_i) take each operand
// from the stack, a slot or the instruction's constant (lm, rm: kStk, kSlot, kConst; at most one
// constant), so `x * y <= 1024` is two instructions rather than five.
struct tinstr {
  tcode c;
  std::uint8_t lm = 0, rm = 0;
  std::uint8_t x = 0;      // integer binary ops: (c - add_i) * 9 + lm * 3 + rm, one dispatch
  std::uint32_t arg = 0;   // slot: index; jumps: target; binary ops: left slot
  std::uint32_t arg2 = 0;  // binary ops: right slot
  tval k{};                // konst, and a binary op's constant operand
};

class compiled_expr {
 public:
  // f is e's flat form; name_slot maps each of f's names to its slot (-1: unknown); self_slot is
  // used for atf::self; owner names the constrained parameter (null for a free constraint) and
  // must outlive this object (messages are built from it only when needed).
  compiled_expr(const expr& e, const flat_expr& f, const std::size_t* name_slot,
                std::size_t self_slot, const std::string* owner, bool int_slots_only,
                string_table& strings)
      : e_(e), owner_(owner), f_(&f), name_slot_(name_slot) {
    // Every parameter must be known (the leaves of the postfix form are in the order in which
    // code visits them, so the first unknown one is reported).
    for (const auto& n : f.nodes) {
      if (n.k == op::param) {
        if (name_slot[n.arg] == static_cast<std::size_t>(-1))
          throw error(where() + ": unknown parameter '" + std::string(f.name(n.arg)) + "' in '" +
                      text() + "'");
      } else if (n.k == op::self) {
        if (self_slot == static_cast<std::size_t>(-1))
          throw error(where() + ": atf::self used outside a parameter's constraint in '" + text() +
                      "'");
      }
    }
    // Static type and stack need of every node (kids come before their parent in postfix order).
    const std::size_t nn = f.nodes.size();
    char type_buf[128];
    int depth_buf[128];
    std::vector<char> type_vec;
    std::vector<int> depth_vec;
    char* type = type_buf;
    int* depth = depth_buf;
    if (nn > 128) {
      type_vec.resize(nn), depth_vec.resize(nn);
      type = type_vec.data(), depth = depth_vec.data();
    }
    for (std::uint32_t i = 0; i < nn; ++i) {
      const flat_node& n = f.nodes[i];
      const std::uint32_t k1 = i - 1;                                   // last kid
      const std::uint32_t k0 = n.size > 1 ? k1 - f.nodes[k1].size : 0;  // first of two kids
      switch (n.k) {
        case op::lit: {
          const value& lv = f.lits[n.arg];
          type[i] = lv.index() == 0 || lv.index() == 2 ? 'i' : lv.index() == 1 ? 'f' : 0;
          depth[i] = 1;
          break;
        }
        case op::param:
        case op::self:
          type[i] = 'i';
          depth[i] = 1;
          break;
        case op::land:
        case op::lor:
          type[i] = type[k0] && type[k1] ? 'i' : 0;
          depth[i] = std::max(depth[k0], depth[k1]);
          break;
        case op::lnot:
          type[i] = type[k1] ? 'i' : 0;
          depth[i] = depth[k1];
          break;
        case op::neg:
        case op::abs:
          type[i] = type[k1];
          depth[i] = depth[k1];
          break;
        case op::min:
        case op::max: {
          std::uint32_t ks_buf[8];
          std::vector<std::uint32_t> ks_vec;
          std::uint32_t* ks = ks_buf;
          if (n.arg > 8) ks_vec.resize(n.arg), ks = ks_vec.data();
          f.kids(i, ks, n.arg);
          char t = type[ks[0]];
          int d = depth[ks[0]];
          for (std::uint32_t j = 1; j < n.arg; ++j) {
            if (type[ks[j]] != t) t = 0;
            d = std::max(d, 1 + depth[ks[j]]);
          }
          type[i] = t;
          depth[i] = d;
          break;
        }
        case op::pow:
          type[i] = 0;
          depth[i] = std::max(depth[k0], 1 + depth[k1]);
          break;
        default: {
          const char a = type[k0], b = type[k1];
          const bool cmp = n.k == op::lt || n.k == op::le || n.k == op::gt || n.k == op::ge ||
                           n.k == op::eq || n.k == op::ne;
          type[i] = !a || !b ? 0
                    : cmp    ? 'i'
                    : n.k == op::div_real ? 'f'
                    : a == 'i' && b == 'i' ? 'i'
                                           : 'f';
          depth[i] = std::max(depth[k0], 1 + depth[k1]);
        }
      }
    }
    if (depth[f.root()] > kStack) throw error(where() + ": expression too deep: " + text());
    typed_ = int_slots_only && type[f.root()] != 0;
    if (typed_) {
      tcode_.reserve(nn + 4);
      type_ = type;
      result_f_ = emit_typed(f.root(), self_slot) == 'f';
      type_ = nullptr;
    } else {
      code_.reserve(nn + 4);
      consts_.reserve(f.lits.size());
      emit(f.root(), self_slot, strings);
    }
    f_ = nullptr;
    name_slot_ = nullptr;
    batch_ = typed_ && !result_f_ && batch_depth() <= kCols;
  }

  // Column-wise checking (integer code only, see batchable()): keeps in idx[0..n) (n <= kLanes)
  // the value indices v for which the constraint holds with slots[vary] = vals[v] and returns
  // their number. Every instruction runs once over all values, so dispatch and the loads of the
  // other (fixed) slots happen once per instruction rather than once per value. Both sides of
  // `and`/`or` are computed, so this may throw (division by zero) where test() would not: callers
  // then check the values one at a time with test().
  static constexpr std::uint32_t kLanes = 64;
  bool batchable() const { return batch_; }
  std::uint32_t filter(const num* slots, std::size_t vary, const num* vals, std::uint32_t* idx,
                       std::uint32_t n) const {
    std::int64_t col[kCols][kLanes];
    std::int64_t saved[kCols][kLanes];
    std::int64_t lane[kLanes];
    std::uint32_t pend_at[kCols];
    bool pend_and[kCols];
    for (std::uint32_t i = 0; i < n; ++i) lane[i] = vals[idx[i]].i;
    int sp = -1, np = 0;
    const tinstr* code_begin = tcode_.data();
    const auto size = static_cast<std::uint32_t>(tcode_.size());
    for (std::uint32_t pc = 0;; ++pc) {
      while (np > 0 && pend_at[np - 1] == pc) {  // the end of an `and`/`or`: combine
        --np;
        const std::int64_t* a = saved[np];
        std::int64_t* r = col[sp];
        if (pend_and[np])
          for (std::uint32_t i = 0; i < n; ++i) r[i] = a[i] != 0 ? r[i] : 0;
        else
          for (std::uint32_t i = 0; i < n; ++i) r[i] = a[i] != 0 ? 1 : r[i];
      }
      if (pc == size) break;
      const tinstr& in = code_begin[pc];
      switch (in.c) {
        case tcode::konst: {
          std::int64_t* r = col[++sp];
          for (std::uint32_t i = 0; i < n; ++i) r[i] = in.k.i;
          continue;
        }
        case tcode::slot: {
          std::int64_t* r = col[++sp];
          if (in.arg == vary) {
            std::copy(lane, lane + n, r);
          } else {
            const std::int64_t x = slots[in.arg].i;
            for (std::uint32_t i = 0; i < n; ++i) r[i] = x;
          }
          continue;
        }
        case tcode::lnot_i:
          for (std::uint32_t i = 0; i < n; ++i) col[sp][i] = col[sp][i] == 0;
          continue;
        case tcode::tobool_i:
          for (std::uint32_t i = 0; i < n; ++i) col[sp][i] = col[sp][i] != 0;
          continue;
        case tcode::neg_i:
          for (std::uint32_t i = 0; i < n; ++i)
            col[sp][i] = wrap(0ull - static_cast<std::uint64_t>(col[sp][i]));
          continue;
        case tcode::abs_i:
          for (std::uint32_t i = 0; i < n; ++i)
            if (col[sp][i] < 0) col[sp][i] = wrap(0ull - static_cast<std::uint64_t>(col[sp][i]));
          continue;
        case tcode::and_jump_i:
        case tcode::or_jump_i:
          std::copy(col[sp], col[sp] + n, saved[np]);
          pend_at[np] = in.arg;
          pend_and[np] = in.c == tcode::and_jump_i;
          ++np, --sp;
          continue;
        case tcode::nop:
          continue;
        default:
          break;
      }
      // An integer binary operation: each operand a column (stride 1) or one value (stride 0).
      std::int64_t yk = 0, xk = 0;
      const std::int64_t* y = &yk;
      const std::int64_t* x = &xk;
      std::uint32_t ys = 0, xs = 0;
      if (in.rm == kStk) {
        y = col[sp--], ys = 1;
      } else if (in.rm == kSlot) {
        if (in.arg2 == vary)
          y = lane, ys = 1;
        else
          yk = slots[in.arg2].i;
      } else {
        yk = in.k.i;
      }
      if (in.lm == kStk) {
        x = col[sp--], xs = 1;
      } else if (in.lm == kSlot) {
        if (in.arg == vary)
          x = lane, xs = 1;
        else
          xk = slots[in.arg].i;
      } else {
        xk = in.k.i;
      }
      std::int64_t* r = col[++sp];
      switch (in.c) {
#define ATF_DETAIL_L(OP) lanes<OP>(r, x, xs, y, ys, n); break;
        case tcode::add_i: ATF_DETAIL_L(0)
        case tcode::sub_i: ATF_DETAIL_L(1)
        case tcode::mul_i: ATF_DETAIL_L(2)
        case tcode::divc_i: ATF_DETAIL_L(3)
        case tcode::floordiv_i: ATF_DETAIL_L(4)
        case tcode::modpy_i: ATF_DETAIL_L(5)
        case tcode::modc_i: ATF_DETAIL_L(6)
        case tcode::lt_i: ATF_DETAIL_L(7)
        case tcode::le_i: ATF_DETAIL_L(8)
        case tcode::gt_i: ATF_DETAIL_L(9)
        case tcode::ge_i: ATF_DETAIL_L(10)
        case tcode::eq_i: ATF_DETAIL_L(11)
        case tcode::ne_i: ATF_DETAIL_L(12)
        case tcode::min_i: ATF_DETAIL_L(13)
        default: ATF_DETAIL_L(14)
#undef ATF_DETAIL_L
      }
    }
    std::uint32_t out = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (col[0][i] != 0) idx[out++] = idx[i];
    return out;
  }

  // Built on demand: only error messages need it.
  std::string text() const { return owner_ ? e_.text(*owner_) : e_.text(); }
  std::string where() const {
    return owner_ ? "constraint of '" + *owner_ + "'" : std::string("constraint");
  }

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
      const tcode c = p->c;
      if (c >= tcode::add_i && c <= tcode::max_i) {
        // One case per operation and operand kinds.
#define ATF_DETAIL_C(OP, L, R) \
  case OP * 9 + L * 3 + R:     \
    int_binop<OP, L, R>(st, sp, p, slots); \
    continue;
#define ATF_DETAIL_M(OP)                                                                        \
  ATF_DETAIL_C(OP, 0, 0) ATF_DETAIL_C(OP, 0, 1) ATF_DETAIL_C(OP, 0, 2) ATF_DETAIL_C(OP, 1, 0)    \
  ATF_DETAIL_C(OP, 1, 1) ATF_DETAIL_C(OP, 1, 2) ATF_DETAIL_C(OP, 2, 0) ATF_DETAIL_C(OP, 2, 1)    \
  ATF_DETAIL_C(OP, 2, 2)
        switch (p->x) {
          ATF_DETAIL_M(0) ATF_DETAIL_M(1) ATF_DETAIL_M(2) ATF_DETAIL_M(3) ATF_DETAIL_M(4)
          ATF_DETAIL_M(5) ATF_DETAIL_M(6) ATF_DETAIL_M(7) ATF_DETAIL_M(8) ATF_DETAIL_M(9)
          ATF_DETAIL_M(10) ATF_DETAIL_M(11) ATF_DETAIL_M(12) ATF_DETAIL_M(13) ATF_DETAIL_M(14)
          default:
            continue;
        }
#undef ATF_DETAIL_M
#undef ATF_DETAIL_C
      }
      switch (c) {
        case tcode::konst:
          st[++sp] = p->k;
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
      switch (c) {
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
  static constexpr int kCols = 8;  // column-wise checking: stack depth and nesting of and/or

  // Stack depth of the typed code, or more than kCols when it has an instruction that filter()
  // does not run (floating point).
  int batch_depth() const {
    int sp = 0, most = 0;
    for (const auto& in : tcode_) {
      switch (in.c) {
        case tcode::konst:
        case tcode::slot:
          ++sp;
          break;
        case tcode::and_jump_i:
        case tcode::or_jump_i:
          --sp;
          break;
        case tcode::lnot_i:
        case tcode::tobool_i:
        case tcode::neg_i:
        case tcode::abs_i:
        case tcode::nop:
          break;
        default:
          if (in.c < tcode::add_i || in.c > tcode::max_i) return kCols + 1;
          sp += 1 - (in.lm == kStk) - (in.rm == kStk);
      }
      most = std::max(most, sp);
    }
    return most;
  }

  template <int OP>
  void lanes(std::int64_t* r, const std::int64_t* x, std::uint32_t xs, const std::int64_t* y,
             std::uint32_t ys, std::uint32_t n) const {
    if (xs && ys)
      lanes<OP, 1, 1>(r, x, y, n);
    else if (xs)
      lanes<OP, 1, 0>(r, x, y, n);
    else if (ys)
      lanes<OP, 0, 1>(r, x, y, n);
    else
      lanes<OP, 0, 0>(r, x, y, n);
  }
  template <int OP, int XS, int YS>
  void lanes(std::int64_t* r, const std::int64_t* x, const std::int64_t* y,
             std::uint32_t n) const {
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::int64_t a = x[XS ? i : 0], b = y[YS ? i : 0];
      if constexpr (OP >= 3 && OP <= 6) {  // a lane test() might never reach must not trap
        if (b == -1 && a == std::numeric_limits<std::int64_t>::min()) throw div_zero();
      }
      r[i] = int_apply<OP>(a, b);
    }
  }

  // Integer operation OP (the order of add_i .. max_i) on operands of kinds L and R.
  template <int OP>
  std::int64_t int_apply(std::int64_t x, std::int64_t y) const {
    if constexpr (OP == 0) return wrap(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y));
    if constexpr (OP == 1) return wrap(static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y));
    if constexpr (OP == 2) return wrap(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y));
    if constexpr (OP >= 3 && OP <= 6) {
      if (y == 0) throw div_zero();
      if constexpr (OP == 3) return x / y;
      if constexpr (OP == 4) return floor_div(x, y);
      if constexpr (OP == 5) return x - floor_div(x, y) * y;
      if constexpr (OP == 6) return x % y;
    }
    if constexpr (OP == 7) return x < y;
    if constexpr (OP == 8) return x <= y;
    if constexpr (OP == 9) return x > y;
    if constexpr (OP == 10) return x >= y;
    if constexpr (OP == 11) return x == y;
    if constexpr (OP == 12) return x != y;
    if constexpr (OP == 13) return x < y ? x : y;
    if constexpr (OP == 14) return x > y ? x : y;
  }
  template <int OP, int L, int R>
  void int_binop(tval* st, int& sp, const tinstr* p, const num* slots) const {
    // Right operand first: with both on the stack it is the top.
    const std::int64_t y = R == kStk ? st[sp--].i : R == kSlot ? slots[p->arg2].i : p->k.i;
    const std::int64_t x = L == kStk ? st[sp--].i : L == kSlot ? slots[p->arg].i : p->k.i;
    st[++sp].i = int_apply<OP>(x, y);
  }

  error div_zero() const { return error(where() + ": division by zero in '" + text() + "'"); }

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
      throw error(where() + ": strings only support == and != in '" + text() + "'");
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
          s = name_slot_[n.arg];
          if (s == static_cast<std::size_t>(-1))
            throw error(where() + ": unknown parameter '" + std::string(f_->name(n.arg)) + "' in '" +
                        text() + "'");
        } else if (self_slot == static_cast<std::size_t>(-1)) {
          throw error(where() + ": atf::self used outside a parameter's constraint in '" + text() +
                      "'");
        }
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
        throw error(where() + ": unsupported operation in '" + text() + "'");
    }
    push({c, 0}, -1);
  }

  static std::int64_t wrap(std::uint64_t x) { return static_cast<std::int64_t>(x); }

  void tpush(tcode c, std::uint32_t arg = 0) {
    const bool binop = c >= tcode::add_i && c <= tcode::max_i;  // min_i/max_i: stack operands
    tcode_.push_back({c, 0, 0,
                      static_cast<std::uint8_t>(binop ? 9 * (static_cast<int>(c) - static_cast<int>(tcode::add_i)) : 0),
                      arg, 0, {}});
  }

  static constexpr std::uint8_t kStk = 0, kSlot = 1, kConst = 2;

  // Whether node i always yields 0 or 1 (no to-bool needed after it).
  bool is_bool(std::uint32_t i) const {
    const flat_node& n = f_->nodes[i];
    switch (n.k) {
      case op::lt:
      case op::le:
      case op::gt:
      case op::ge:
      case op::eq:
      case op::ne:
      case op::land:
      case op::lor:
      case op::lnot:
        return true;
      case op::lit:
        return f_->lits[n.arg].index() == 2;
      default:
        return false;
    }
  }

  // Operand of an integer binary operation: a slot or constant read in place, or code whose
  // result is on the stack.
  void int_operand(std::uint32_t i, std::size_t self_slot, bool const_ok, tinstr& in,
                   std::uint8_t& mode, std::uint32_t& arg) {
    const flat_node& n = f_->nodes[i];
    if (n.k == op::param || n.k == op::self) {
      mode = kSlot;
      arg = static_cast<std::uint32_t>(n.k == op::param ? name_slot_[n.arg] : self_slot);
    } else if (n.k == op::lit && const_ok) {
      const value& lv = f_->lits[n.arg];
      in.k.i = lv.index() == 0 ? std::get<0>(lv) : std::get<2>(lv) ? 1 : 0;
      mode = kConst;
      arg = 0;
    } else {
      emit_typed(i, self_slot);
      mode = kStk;
      arg = 0;
    }
  }

  // Emits typed code for node i (whose static type, type_[i], is known to be 'i' or 'f') and
  // returns that type.
  char emit_typed(std::uint32_t i, std::size_t self_slot) {
    const flat_node& n = f_->nodes[i];
    std::uint32_t kid[2] = {0, 0};
    if (n.k != op::min && n.k != op::max && n.k != op::abs) f_->kids(i, kid, 2);
    switch (n.k) {
      case op::lit: {
        tval v{};
        const value& lv = f_->lits[n.arg];
        if (const auto* x = std::get_if<std::int64_t>(&lv))
          v.i = *x;
        else if (const auto* b = std::get_if<bool>(&lv))
          v.i = *b ? 1 : 0;
        else
          v.d = std::get<double>(lv);
        tcode_.push_back({tcode::konst, 0, 0, 0, 0, 0, v});
        return type_[i];
      }
      case op::param:
      case op::self: {
        std::size_t sl = self_slot;
        if (n.k == op::param) sl = name_slot_[n.arg];  // checked in the constructor
        tpush(tcode::slot, static_cast<std::uint32_t>(sl));
        return 'i';
      }
      case op::land:
      case op::lor: {
        const char a = emit_typed(kid[0], self_slot);
        const std::size_t at = tcode_.size();
        tpush(n.k == op::land ? (a == 'i' ? tcode::and_jump_i : tcode::and_jump_f)
                              : (a == 'i' ? tcode::or_jump_i : tcode::or_jump_f));
        const char b = emit_typed(kid[1], self_slot);
        if (!is_bool(kid[1])) tpush(b == 'f' ? tcode::tobool_f : tcode::tobool_i);
        tcode_[at].arg = static_cast<std::uint32_t>(tcode_.size());
        return 'i';
      }
      case op::lnot:
      case op::neg:
      case op::abs: {
        const char a = emit_typed(i - 1, self_slot);
        const bool f = a == 'f';
        if (n.k == op::lnot) return tpush(f ? tcode::lnot_f : tcode::lnot_i), 'i';
        tpush(n.k == op::neg ? (f ? tcode::neg_f : tcode::neg_i)
                             : (f ? tcode::abs_f : tcode::abs_i));
        return a;
      }
      case op::min:
      case op::max: {
        std::uint32_t ks_buf[8];
        std::vector<std::uint32_t> ks_vec;
        std::uint32_t* ks = ks_buf;
        if (n.arg > 8) ks_vec.resize(n.arg), ks = ks_vec.data();
        f_->kids(i, ks, n.arg);
        const char a = emit_typed(ks[0], self_slot);
        const bool f = a == 'f';
        for (std::size_t j = 1; j < n.arg; ++j) {
          emit_typed(ks[j], self_slot);
          tpush(n.k == op::min ? (f ? tcode::min_f : tcode::min_i)
                               : (f ? tcode::max_f : tcode::max_i));
        }
        return a;
      }
      default:
        break;
    }
    const bool ints = type_[kid[0]] == 'i' && type_[kid[1]] == 'i' && n.k != op::div_real;
    if (ints) {
      tinstr in{};
      switch (n.k) {
        case op::add:
          in.c = tcode::add_i;
          break;
        case op::sub:
          in.c = tcode::sub_i;
          break;
        case op::mul:
          in.c = tcode::mul_i;
          break;
        case op::div_c:
          in.c = tcode::divc_i;
          break;
        case op::floordiv:
          in.c = tcode::floordiv_i;
          break;
        case op::mod_py:
          in.c = tcode::modpy_i;
          break;
        case op::mod_c:
          in.c = tcode::modc_i;
          break;
        case op::lt:
          in.c = tcode::lt_i;
          break;
        case op::le:
          in.c = tcode::le_i;
          break;
        case op::gt:
          in.c = tcode::gt_i;
          break;
        case op::ge:
          in.c = tcode::ge_i;
          break;
        case op::eq:
          in.c = tcode::eq_i;
          break;
        default:  // ne (pow and div_real are never typed as integers)
          in.c = tcode::ne_i;
          break;
      }
      // One constant per instruction: a constant left operand of a constant goes on the stack.
      const bool lit1 = f_->nodes[kid[1]].k == op::lit;
      int_operand(kid[0], self_slot, !lit1, in, in.lm, in.arg);
      int_operand(kid[1], self_slot, true, in, in.rm, in.arg2);
      in.x = static_cast<std::uint8_t>(
          9 * (static_cast<int>(in.c) - static_cast<int>(tcode::add_i)) + 3 * in.lm + in.rm);
      tcode_.push_back(in);
      return type_[i];
    }
    const char a = emit_typed(kid[0], self_slot);
    const char b = emit_typed(kid[1], self_slot);
    if (a == 'i') tpush(tcode::i2f_second);
    if (b == 'i') tpush(tcode::i2f_top);
    switch (n.k) {
      case op::add:
        tpush(tcode::add_f);
        break;
      case op::sub:
        tpush(tcode::sub_f);
        break;
      case op::mul:
        tpush(tcode::mul_f);
        break;
      case op::div_real:
      case op::div_c:
        tpush(tcode::div_f);
        break;
      case op::floordiv:
        tpush(tcode::floordiv_f);
        break;
      case op::mod_py:
        tpush(tcode::modpy_f);
        break;
      case op::mod_c:
        tpush(tcode::modc_f);
        break;
      case op::lt:
        tpush(tcode::lt_f);
        break;
      case op::le:
        tpush(tcode::le_f);
        break;
      case op::gt:
        tpush(tcode::gt_f);
        break;
      case op::ge:
        tpush(tcode::ge_f);
        break;
      case op::eq:
        tpush(tcode::eq_f);
        break;
      default:  // ne
        tpush(tcode::ne_f);
        break;
    }
    return type_[i];
  }

  expr e_;
  const std::string* owner_;
  const flat_expr* f_ = nullptr;               // only while compiling
  const std::size_t* name_slot_ = nullptr;     // only while compiling
  const char* type_ = nullptr;                       // only while compiling: each node's type
  std::vector<tinstr> tcode_;
  bool typed_ = false, result_f_ = false, batch_ = false;
  std::vector<instr> code_;  // untyped code, only when the typed one cannot be made
  std::vector<num> consts_;
  int depth_ = 0, max_depth_ = 0;
};

}  // namespace atf::detail
