// SPDX-License-Identifier: MIT
// Prints a kernel plan as C-like GPU source; the CUDA and OpenCL dialects supply the spellings.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/evaluate.hpp>
#include <mdh/lower/affine.hpp>
#include <mdh/lower/conversions.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower {

// What differs between CUDA C++ and OpenCL C. Everything else is printed once, here.
class c_dialect {
 public:
  virtual ~c_dialect() = default;
  // Includes, pragmas and helpers, once for the plans of one source (a fused kernel's stages):
  // each helper where any plan needs it, so two stages never define one twice.
  virtual std::string prelude(const std::vector<const kernel_plan*>& plans) const = 0;
  std::string prelude(const kernel_plan& p) const { return prelude({&p}); }
  virtual std::string kernel_head(const kernel_plan& p, const kernel& k) const = 0;  // up to name
  // The statement every kernel runs first ("" for none): on CUDA, the wait for the grid it may
  // overlap under programmatic dependent launch.
  virtual std::string kernel_entry() const { return {}; }
  // The lines that open kernel k: its head, name and parameters, then kernel_entry().
  std::vector<std::string> kernel_open(const kernel_plan& p, const kernel& k,
                                       const std::string& params) const {
    std::vector<std::string> lines{kernel_head(p, k) + k.name + "(" + params + ") {"};
    if (std::string e = kernel_entry(); !e.empty()) lines.push_back(std::move(e));
    return lines;
  }
  virtual std::string func_qualifier() const = 0;  // helper functions
  virtual std::string type(scalar_type t) const = 0;
  // Pointer type of a kernel parameter. `no_alias` false for a buffer that other threads write
  // and this one reads in the same kernel (a fused plan's intermediate): with restrict the
  // compiler may hoist its loads above the block barrier.
  virtual std::string global_param(scalar_type t, bool is_const, bool no_alias) const = 0;
  virtual std::string local_ptr(scalar_type t) const = 0;         // pointer into shared memory
  virtual std::string shared_pool(std::int64_t bytes) const = 0;  // declares `mdh_smem`
  virtual std::string thread_id(int axis) const = 0;
  virtual std::string block_id(int axis) const = 0;
  virtual std::string global_linear_id() const = 0;  // for grid-stride aux kernels
  virtual std::string global_thread_count() const = 0;
  virtual std::string barrier() const = 0;
  // A block barrier after which the block's global-memory writes are visible to its threads
  // (between the stages of a fused kernel).
  virtual std::string barrier_with_global() const = 0;
  virtual std::string math(ir::op o, scalar_type t) const = 0;  // e.g. "expf"
  // The function computing float `o` (exp, div) approximately for a plan with approx_math, or ""
  // where the dialect keeps the exact one. Its definition is in prelude() for such plans.
  virtual std::string approx_math(ir::op) const { return {}; }
  virtual std::string infinity(scalar_type t) const = 0;
  virtual std::string nan(scalar_type t) const = 0;
  virtual std::string int64_suffix() const = 0;
  // The pragma that fully unrolls register loops ("" for none).
  virtual std::string unroll() const { return "#pragma unroll"; }
  // The pragma on tile loops, which hold barriers ("" to leave unrolling to the compiler).
  virtual std::string no_unroll() const { return ""; }
  virtual bool has_shuffle() const = 0;
  virtual std::string shuffle_xor(const std::string& mask, const std::string& v,
                                  const std::string& offset) const = 0;
  // Vectors of `n` elements of a 4-byte type t (float4, int2, ...): type, zero, load from an
  // lvalue address `&x`, store of `values` to an address.
  virtual std::string vector_type(scalar_type t, int n) const = 0;
  virtual std::string vector_zero(scalar_type t, int n) const = 0;
  // Pointer to such a vector in shared (local) memory.
  virtual std::string local_vector_ptr(scalar_type t, int n) const = 0;
  virtual std::string vector_load(scalar_type t, int n, const std::string& addr) const = 0;
  virtual std::string vector_store(scalar_type t, int n, const std::string& addr,
                                   const std::vector<std::string>& values) const = 0;
  // A function `void name(ptr, value)` combining value into *ptr atomically with operator kind.
  virtual std::string atomic_helper(const std::string& name, scalar_type t, ir::builtin kind,
                                    const std::string& combine_expr) const = 0;
  // For the last-block combine: a statement making this thread's global writes visible to the
  // other blocks; a block-shared int; atomic increment of an int (the old value); a read of a
  // global lvalue that sees other blocks' writes (no stale cache line).
  virtual std::string global_fence() const = 0;
  virtual std::string shared_int(const std::string& name) const = 0;
  virtual std::string atomic_inc(const std::string& addr) const = 0;
  virtual std::string coherent_load(scalar_type t, const std::string& lvalue) const = 0;
};

namespace detail {

class source {
 public:
  void line(const std::string& s) {
    if (!s.empty() && s[0] == '}') --indent_;
    os_ << std::string(2 * std::max(indent_, 0), ' ') << s << "\n";
    std::string code = s.substr(0, s.find("//"));
    while (!code.empty() && code.back() == ' ') code.pop_back();
    if (!code.empty() && code.back() == '{') ++indent_;
  }
  void blank() { os_ << "\n"; }
  void raw(const std::string& s) { os_ << s; }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
  int indent_ = 0;
};

inline std::string num(std::int64_t v) { return std::to_string(v); }

// The last-block protocol of `blocks` blocks that share a tile's results (split-K of the
// tensor-core products, split keys of the attention; `tile` and `tid` in scope, cnt[tile]:
// blocks finished in the low 16 bits, partials written in the high 16). Every block counts
// itself; all but the last print `store` (their partials), count them as written and exit; the
// last waits until the others' partials are written, resets the counter for the next launch
// and goes on to read them.
inline void print_last_block(source& out, const c_dialect& d, std::int64_t blocks,
                             const std::function<void()>& store) {
  out.line("int arrived = 0;");
  out.line("if (tid == 0) arrived = atomicAdd(&cnt[tile], 1);");
  out.line("if (!__syncthreads_or(tid == 0 && (arrived & 0xFFFF) == " + num(blocks - 1) + ")) {");
  store();
  out.line("__threadfence();  // the partial is visible before it is counted");
  out.line(d.barrier());
  out.line("if (tid == 0) atomicAdd(&cnt[tile], 0x10000);");
  out.line("return;");
  out.line("}");
  out.line("if (tid == 0) {  // the others have finished: wait until their partials are written");
  out.line("while ((atomicOr(&cnt[tile], 0) >> 16) != " + num(blocks - 1) + ") __nanosleep(64);");
  out.line("cnt[tile] = 0;  // ready for the next launch");
  out.line("}");
  out.line(d.barrier());
  out.line("__threadfence();  // the partials are read after the count");
}

}  // namespace detail

// The main kernel of a tensor-core plan (mdh/lower/mma_printer.hpp, included at the end).
inline std::string print_mma_kernel(const kernel_plan& p, const c_dialect& d, const kernel& k);
// The source of a with_producer plan (mdh/lower/producer_printer.hpp and, on tensor cores,
// producer_mma_printer.hpp, included at the end).
inline std::string print_producer_source(const kernel_plan& p, const c_dialect& d);

// The printer: one kernel plan -> one translation unit holding all its kernels.
class c_printer {
 public:
  c_printer(const kernel_plan& p, const c_dialect& d) : p_(p), d_(d) {}

  // A stage of a fused plan: its functions carry `prefix` (mdh_s0_f, ...), and its main kernel
  // is printed as a block of statements for the fused kernel, which declares the shared pool.
  c_printer(const kernel_plan& p, const c_dialect& d, const std::string& prefix)
      : p_(p),
        d_(d),
        f_name_(prefix + "f"),
        combine_name_(prefix + "combine"),
        epilogue_name_(prefix + "epilogue"),
        stage_(true) {}

  // The scalar function, the epilogue's function and the combine operator of p's computation
  // with the prefix (a with_producer kernel prints its producer's and consumer's so).
  std::string functions() {
    print_scalar_function();
    print_epilogue_function();
    print_combine();
    return out_.str();
  }
  // f32 divisions call `f` (a function of two floats) instead of `/`.
  c_printer& with_f32_division(std::string f) {
    f32_division_ = std::move(f);
    return *this;
  }

  std::string print() {
    if (p_.producer.on) return print_producer_source(p_, d_);
    if (!p_.stages.empty()) return print_fused();
    out_.raw("// Generated by mdh from the kernel plan " + p_.name + ". Do not edit.\n");
    out_.raw("// " + replace_newlines(ir::to_string(p_.comp)) + "\n");
    out_.raw("// sizes:");
    for (auto s : p_.sizes) out_.raw(" " + detail::num(s));
    out_.raw("\n// config: " + to_string(p_.cfg) + "\n");
    out_.raw(d_.prelude(p_));
    out_.raw(std::string("typedef ") + (p_.index64 ? d_.type(scalar_type::i64) : "int") +
             " idx_t;\n\n");
    print_scalar_function();
    print_epilogue_function();
    print_combine();
    for (auto& k : p_.kernels) {
      out_.blank();
      if (k.kind == kernel_kind::main && p_.mma.on)
        out_.raw(print_mma_kernel(p_, d_, k));
      else if (k.kind == kernel_kind::main)
        print_main(k);
      else
        print_aux(k);
    }
    return out_.str();
  }

 private:
  using op = ir::op;
  const kernel_plan& p_;
  const c_dialect& d_;
  detail::source out_;
  std::string f_name_ = "mdh_f", combine_name_ = "mdh_combine", epilogue_name_ = "mdh_epilogue";
  bool stage_ = false;
  std::string f32_division_;  // see with_f32_division
  // Printing the interior path (edge_split): the guards of the dims marked interior are dropped.
  bool interior_path_ = false;
  // Printing the register loops: the dims marked slots_unguarded need no guard there.
  bool register_loops_ = false;

  // The scalar function and combine operator of a stage (names carry the stage prefix).
  std::string stage_functions() {
    print_scalar_function();
    print_combine();
    return out_.str();
  }
  // A stage's main kernel as one block of statements.
  std::string stage_body() {
    print_main(main_kernel(p_));
    return out_.str();
  }

  // A fused plan: the stages' functions, then one kernel holding the stages' bodies in order,
  // a barrier between them. Every stage reads its buffers through the fused kernel's parameters
  // (lower named them so) and shares the one shared-memory pool, which the barrier frees.
  std::string print_fused() {
    out_.raw("// Generated by mdh from the fused plan " + p_.name + ". Do not edit.\n");
    for (std::size_t k = 0; k < p_.stages.size(); ++k) {
      const auto& s = p_.stages[k];
      out_.raw("// stage " + std::to_string(k) + ": " + replace_newlines(ir::to_string(s.comp)) +
               "\n// stage " + std::to_string(k) + " config: " + to_string(s.cfg) + "\n");
    }
    out_.raw("// sizes:");
    for (auto s : p_.sizes) out_.raw(" " + detail::num(s));
    out_.raw("\n");
    std::vector<const kernel_plan*> stages;
    for (auto& s : p_.stages) stages.push_back(&s);
    out_.raw(d_.prelude(stages));
    out_.raw(std::string("typedef ") + (p_.index64 ? d_.type(scalar_type::i64) : "int") +
             " idx_t;\n\n");
    for (std::size_t k = 0; k < p_.stages.size(); ++k)
      out_.raw(c_printer(p_.stages[k], d_, stage_prefix(k)).stage_functions());
    const kernel& k = main_kernel(p_);
    out_.blank();
    out_.line("// Fused kernel: " + detail::num(p_.blocks) + " blocks of " +
              detail::num(p_.threads) + " threads, " + detail::num(p_.stages.size()) +
              " stages; each block reads only what its own earlier stages wrote.");
    for (auto& l : d_.kernel_open(p_, k, params())) out_.line(l);
    if (p_.shared_bytes > 0) out_.line(d_.shared_pool(p_.shared_bytes));
    const kernel_plan& first = p_.stages[0];
    auto kept_type = [&](const register_keep& k) {
      return d_.type(k.result ? first.outputs[k.input].type : first.inputs[k.input].type);
    };
    for (const register_keep& k : first.keeps)
      out_.line(
          kept_type(k) + " " + k.array + "[" + detail::num(first.keep_slots) + "];  // " +
          (k.result ? ir::kernel_outputs(first.comp)[k.input].name + " as the first stage stores it"
                    : first.comp.inputs[k.input].name + " as the first stage reads it") +
          ", for the second (keep_in_registers)");
    if (!first.keeps.empty()) {  // defined everywhere (PoCL, see print_main)
      pragma_unroll();
      out_.line("for (int a = 0; a < " + detail::num(first.keep_slots) + "; ++a) {");
      for (const register_keep& k : first.keeps)
        out_.line(k.array + "[a] = (" + kept_type(k) + ")0;");
      out_.line("}");
    }
    for (std::size_t s = 0; s < p_.stages.size(); ++s) {
      if (s > 0 && !p_.stages[s].barrier_before) {
        out_.line("// no barrier: stage " + std::to_string(s) + " reads stage " +
                  std::to_string(s - 1) +
                  "'s results from this thread's registers and uses no shared memory");
      } else if (s > 0) {
        out_.line("// stage " + std::to_string(s - 1) +
                  "'s writes (and its use of shared memory) are done for the whole block");
        out_.line(d_.barrier_with_global());
      }
      std::istringstream body(c_printer(p_.stages[s], d_, stage_prefix(s)).stage_body());
      for (std::string line; std::getline(body, line);)
        out_.raw((line.empty() ? "" : "  ") + line + "\n");
    }
    out_.line("}");
    return out_.str();
  }

  static std::string stage_prefix(std::size_t k) { return "mdh_s" + std::to_string(k) + "_"; }

  static std::string replace_newlines(std::string s) {
    for (std::size_t k = 0; (k = s.find('\n', k)) != std::string::npos; k += 4)
      s.replace(k, 1, "\n// ");
    return s;
  }

  std::string literal(double v, scalar_type t) const {
    char buf[64];
    switch (t) {
      case scalar_type::boolean:
        return v != 0 ? "true" : "false";
      case scalar_type::i32:
        if (v <= double(std::numeric_limits<std::int32_t>::lowest())) return "(-2147483647 - 1)";
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
        return v < 0 ? std::string("(") + buf + ")" : buf;
      case scalar_type::i64: {
        if (v <= double(std::numeric_limits<std::int64_t>::lowest()))
          return "(-9223372036854775807" + d_.int64_suffix() + " - 1)";
        if (v >= double(std::numeric_limits<std::int64_t>::max()))
          return "9223372036854775807" + d_.int64_suffix();
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
        return std::string("(") + buf + d_.int64_suffix() + ")";
      }
      case scalar_type::f32:
      case scalar_type::f64: {
        if (std::isnan(v)) return d_.nan(t);
        if (std::isinf(v)) return v > 0 ? d_.infinity(t) : "(-" + d_.infinity(t) + ")";
        std::snprintf(buf, sizeof buf, t == scalar_type::f32 ? "%.9g" : "%.17g", v);
        std::string s = buf;
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        if (t == scalar_type::f32) s += "f";
        return v < 0 ? "(" + s + ")" : s;
      }
      case scalar_type::bf16:
      case scalar_type::f16:  // raw bits: the float literal, converted
        return convert_expr(literal(v, scalar_type::f32), scalar_type::f32, t, d_.type(t));
    }
    return "0";
  }

  // The dialect's approximation of float node x where the plan allows one, else "".
  std::string approx(const ir::node& x) const {
    return p_.approx_math && x.type == scalar_type::f32 ? d_.approx_math(x.kind) : std::string();
  }

  // Prints the nodes of f as `const T vN = ...;` lines; args are named by `arg`.
  void print_nodes(const ir::scalar_function& f, const std::vector<std::string>& arg) {
    for (std::size_t n = 0; n < f.nodes.size(); ++n) {
      const ir::node& x = f.nodes[n];
      auto v = [&](int k) { return "v" + std::to_string(k); };
      auto bin = [&](const char* o) { return v(x.a) + " " + o + " " + v(x.b); };
      std::string e;
      switch (x.kind) {
        case op::arg:
          e = "(" + d_.type(x.type) + ")" + arg.at(x.index);
          break;
        case op::constant:
          e = literal(ir::to_type(x.value, x.type), x.type);
          break;
        case op::neg:
          e = "-" + v(x.a);
          break;
        case op::logical_not:
          e = "!" + v(x.a);
          break;
        case op::abs:
          if (is_floating(x.type))
            e = d_.math(x.kind, x.type) + "(" + v(x.a) + ")";
          else
            e = "(" + v(x.a) + " < 0 ? -" + v(x.a) + " : " + v(x.a) + ")";
          break;
        case op::exp:
          if (std::string a = approx(x); !a.empty()) {
            e = a + "(" + v(x.a) + ")";
            break;
          }
          [[fallthrough]];
        case op::log:
        case op::sqrt:
        case op::tanh:
        case op::erf:
          e = d_.math(x.kind, x.type) + "(" + v(x.a) + ")";
          break;
        case op::cast:
          e = convert_expr(v(x.a), f.nodes[x.a].type, x.type, d_.type(x.type));
          break;
        case op::add:
          e = bin("+");
          break;
        case op::sub:
          e = bin("-");
          break;
        case op::mul:
          e = bin("*");
          break;
        case op::div:
          if (x.type == scalar_type::f32 && !f32_division_.empty())
            e = f32_division_ + "(" + v(x.a) + ", " + v(x.b) + ")";
          else if (std::string a = approx(x); !a.empty())
            e = a + "(" + v(x.a) + ", " + v(x.b) + ")";
          else
            e = bin("/");
          break;
        case op::min:
          e = v(x.b) + " < " + v(x.a) + " ? " + v(x.b) + " : " + v(x.a);
          break;
        case op::max:
          e = v(x.a) + " < " + v(x.b) + " ? " + v(x.b) + " : " + v(x.a);
          break;
        case op::lt:
          e = bin("<");
          break;
        case op::le:
          e = bin("<=");
          break;
        case op::gt:
          e = bin(">");
          break;
        case op::ge:
          e = bin(">=");
          break;
        case op::eq:
          e = bin("==");
          break;
        case op::ne:
          e = bin("!=");
          break;
        case op::logical_and:
          e = bin("&&");
          break;
        case op::logical_or:
          e = bin("||");
          break;
        case op::select:
          e = v(x.a) + " ? " + v(x.b) + " : " + v(x.c);
          break;
      }
      // Operands are converted to the node's type, as the interpreter does.
      out_.line("const " + d_.type(x.type) + " v" + std::to_string(n) + " = (" + d_.type(x.type) +
                ")(" + e + ");");
    }
  }

  // mdh_f(args..., results*): the md_hom's scalar function.
  void print_scalar_function() {
    const auto& f = p_.comp.f;
    std::string sig = d_.func_qualifier() + " void " + f_name_ + "(";
    std::vector<std::string> args;
    for (std::size_t a = 0; a < f.arg_types.size(); ++a) {
      args.push_back(read_input_expr(p_.comp, "a" + std::to_string(a), f.arg_types[a]));
      sig += d_.type(f.arg_types[a]) + " a" + std::to_string(a) + ", ";
    }
    for (std::size_t r = 0; r < f.results.size(); ++r)
      sig += d_.type(p_.acc_type(r)) + "* res" + std::to_string(r) +
             (r + 1 < f.results.size() ? ", " : ") {");
    out_.line("// The scalar function f of the md_hom.");
    out_.line(sig);
    print_nodes(f, args);
    for (std::size_t r = 0; r < f.results.size(); ++r)
      out_.line("*res" + std::to_string(r) + " = v" + std::to_string(f.results[r]) + ";");
    out_.line("}");
    out_.blank();
  }

  std::string builtin_expr(ir::builtin k, const std::string& a, const std::string& b) const {
    switch (k) {
      case ir::builtin::add:
        return a + " + " + b;
      case ir::builtin::mul:
        return a + " * " + b;
      case ir::builtin::max:
        return a + " < " + b + " ? " + b + " : " + a;
      case ir::builtin::min:
        return b + " < " + a + " ? " + b + " : " + a;
      default:
        break;
    }
    throw internal_error("builtin_expr: not a builtin operator");
  }

  // mdh_combine(l*..., r...): *l = *l (+) r, for all result components together.
  void print_combine() {
    if (!p_.comp.has_reduction()) return;
    const std::size_t m = p_.results();
    std::string sig = d_.func_qualifier() + " void " + combine_name_ + "(";
    for (std::size_t r = 0; r < m; ++r)
      sig += d_.type(p_.acc_type(r)) + "* l" + std::to_string(r) + ", ";
    for (std::size_t r = 0; r < m; ++r)
      sig += d_.type(p_.acc_type(r)) + " r" + std::to_string(r) + (r + 1 < m ? ", " : ") {");
    out_.line("// The combine operator (+) of the reduction and scan dimensions: " +
              p_.comp.reduction.name + ".");
    out_.line(sig);
    if (p_.comp.reduction.kind == ir::builtin::custom) {
      std::vector<std::string> args;
      for (std::size_t r = 0; r < m; ++r) args.push_back("(*l" + std::to_string(r) + ")");
      for (std::size_t r = 0; r < m; ++r) args.push_back("r" + std::to_string(r));
      print_nodes(p_.comp.reduction.custom, args);
      for (std::size_t r = 0; r < m; ++r)
        out_.line("*l" + std::to_string(r) + " = v" +
                  std::to_string(p_.comp.reduction.custom.results[r]) + ";");
    } else {
      for (std::size_t r = 0; r < m; ++r) {
        std::string l = "(*l" + std::to_string(r) + ")", rr = "r" + std::to_string(r);
        out_.line("*l" + std::to_string(r) + " = " + builtin_expr(p_.comp.reduction.kind, l, rr) +
                  ";");
      }
    }
    out_.line("}");
    if (std::any_of(p_.kernels.begin(), p_.kernels.end(),
                    [](auto& k) { return k.kind == kernel_kind::init; })) {
      for (std::size_t r = 0; r < m; ++r) {
        out_.blank();
        out_.raw(d_.atomic_helper("mdh_atomic_combine" + std::to_string(r), p_.acc_type(r),
                                  p_.comp.reduction.kind,
                                  builtin_expr(p_.comp.reduction.kind, "cur", "v")));
      }
    }
  }

  std::string params() const {
    std::string s;
    // a fused plan's outputs that a later stage reads back
    std::set<std::string> read_back;
    for (auto& st : p_.stages)
      for (auto& g : st.inputs) read_back.insert(g.name);
    auto add = [&](const global_buffer& g, bool c) {
      s += (s.empty() ? "" : ", ") + d_.global_param(g.type, c, c || !read_back.count(g.name)) +
           " " + g.name;
    };
    for (auto& g : p_.inputs) add(g, true);
    for (auto& g : p_.outputs) add(g, false);
    for (auto& g : p_.partials) add(g, false);
    for (auto& g : p_.counters) add(g, false);
    return s;
  }

  std::string identity(std::size_t r) const {
    auto t = p_.acc_type(r);
    return literal(ir::to_type(ir::identity_of(p_.comp.reduction, r, t), t), t);
  }

  // sum_d coeff[d] * var(d) + constant, leaving out zero terms.
  static std::string affine_expr(const std::vector<std::int64_t>& coeff, std::int64_t constant,
                                 const std::function<std::string(std::size_t)>& var) {
    std::string s;
    for (std::size_t d = 0; d < coeff.size(); ++d) {
      if (coeff[d] == 0) continue;
      if (!s.empty()) s += " + ";
      s += coeff[d] == 1 ? var(d) : detail::num(coeff[d]) + " * " + var(d);
    }
    if (constant != 0 || s.empty()) s += (s.empty() ? "" : " + ") + detail::num(constant);
    return s;
  }

  static std::string ev(std::size_t d) { return "e" + std::to_string(d); }

  // The variables of a vector group (vectorize pass): rg, eg, vg, rl, vectors w<arg> for the ++
  // group; the same names with a prefix p for the pw group.
  static std::string prefix(const vector_group& G) { return G.role == dim_role::reduce ? "p" : ""; }
  std::string flat_index_vec(const ir::access& a, const global_buffer& g,
                             const vector_group& G) const {
    const flat_access f = flatten(a, g, p_.dims.size());
    const std::string P = prefix(G);
    return affine_expr(f.coeff, f.constant,
                       [&](std::size_t d) { return d == G.dim ? P + "eg" : ev(d); });
  }
  // Opens the group loop of G: `<p>eg` (first element), `<p>vg` (all valid).
  void open_vec_group(const vector_group& G) {
    const dim_plan& d = p_.dims[G.dim];
    const std::string rg = prefix(G) + "rg";
    out_.line("// groups of " + detail::num(G.width) + " consecutive elements of " + d.name);
    pragma_unroll();
    out_.line("for (int " + rg + " = 0; " + rg + " < " + detail::num(d.t_rm) + "; " + rg +
              " += " + detail::num(G.width) + ") {");
    auto [e0, v0] = element_expr(G.dim, rg);
    auto [e1, v1] = element_expr(G.dim, rg + " + " + detail::num(G.width - 1));
    out_.line("const idx_t " + prefix(G) + "eg = " + e0 + ";");
    out_.line("const bool " + prefix(G) + "vg = " + v1 +
              ";  // valid elements are a prefix: the last decides");
  }

  // Inside a group: the loop over its lanes, r<dim> being the lane's register slot.
  void open_vec_lanes(const vector_group& G) {
    const std::string rl = prefix(G) + "rl";
    pragma_unroll();
    out_.line("for (int " + rl + " = 0; " + rl + " < " + detail::num(G.width) + "; ++" + rl +
              ") {");
    out_.line("const int r" + std::to_string(G.dim) + " = " + prefix(G) + "rg + " + rl + ";");
  }

  // Register slot `r` of dimension k within its thread's rm step, in two parts: the thread's
  // (blocked: t * t_rm; strided: t) and the slot's (blocked: r; strided: r * thr); "" where a
  // part is zero. The one place the printer spells the thread-to-element mapping.
  std::pair<std::string, std::string> slot_parts(std::size_t k, const std::string& r) const {
    auto terms = symbolic_terms(p_.dims[k].elements.modes(3, 5),
                                {{"t" + std::to_string(k), true}, {r, false}});
    return {terms[0], terms[1]};
  }
  static std::string join_sum(const std::string& a, const std::string& b) {
    if (a.empty()) return b.empty() ? "0" : b;
    return b.empty() ? a : a + " + " + b;
  }

  // e<k> - S<k> for register slot r<k>: the element's offset in the box that the block step
  // copies (++/ps dims: the rm step; pw dims: the sm tile), without the block and tile terms that
  // cancel, the thread's part widened to 64 bits before the slot's constant is added. Written so,
  // NVRTC sees consecutive slots at consecutive shared-memory words and merges their loads into
  // vector loads; through e<k> - S<k>, or with the sum widened after it, it loads words one by one.
  std::string box_offset_expr(std::size_t k) const {
    const dim_plan& d = p_.dims[k];
    const std::string K = std::to_string(k);
    auto [thread, slot] = slot_parts(k, "r" + K);
    if (d.role == dim_role::reduce && d.n_rm > 1)
      slot = join_sum(slot, "q" + K + " * " + detail::num(d.rm_step));
    if (!thread.empty()) thread = "(" + d_.type(scalar_type::i64) + ")(" + thread + ")";
    return join_sum(thread, slot);
  }

  // The element index and validity expressions of dimension k for register slot `r`.
  std::pair<std::string, std::string> element_expr(std::size_t k, const std::string& r) const {
    const dim_plan& d = p_.dims[k];
    std::string K = std::to_string(k);
    auto [thread, slot] = slot_parts(k, r);
    std::string within = join_sum(thread, slot);
    auto outer = symbolic_terms(d.elements.modes(0, 3), {{"b" + K}, {"s" + K}, {"q" + K}}, true);
    std::string in_tile = outer[2] + " + " + within;
    std::string local = outer[1] + " + " + in_tile;
    std::string e = outer[0] + " + " + local;
    if (interior_path_ && d.interior) return {e, "true"};          // the step is whole along d
    if (register_loops_ && d.slots_unguarded) return {e, "true"};  // the stores guard d
    std::vector<std::string> conds;
    if (d.t_sm % d.rm_step != 0) conds.push_back(in_tile + " < " + detail::num(d.t_sm));
    if (d.chunk % d.t_sm != 0) conds.push_back(local + " < " + detail::num(d.chunk));
    if (d.blk * d.chunk != d.size) conds.push_back(e + " < " + detail::num(d.size));
    std::string v;
    for (auto& c : conds) v += (v.empty() ? "" : " && ") + ("(" + c + ")");
    return {e, v.empty() ? "true" : v};
  }

  // `const idx_t eD = ...; const bool vD = ...;` for dimension d inside its register loop.
  void print_element(std::size_t k) {
    std::string K = std::to_string(k);
    auto [e, v] = element_expr(k, "r" + K);
    out_.line("const idx_t e" + K + " = " + e + ";");
    out_.line("const bool v" + K + " = " + v + ";");
  }

  void pragma_unroll() {
    if (!d_.unroll().empty()) out_.line(d_.unroll());
  }

  void open_loop(const std::string& var, std::int64_t n, bool unroll, const std::string& what) {
    if (!what.empty()) out_.line("// " + what);
    if (unroll)
      pragma_unroll();
    else if (!d_.no_unroll().empty())
      out_.line(d_.no_unroll());
    out_.line("for (int " + var + " = 0; " + var + " < " + detail::num(n) + "; ++" + var + ") {");
  }

  std::string acc_index(const std::vector<std::size_t>& dims) const {
    std::string s;
    std::int64_t w = 1;
    for (std::size_t j = dims.size(); j-- > 0;) {
      std::string term = "r" + std::to_string(dims[j]) + (w == 1 ? "" : " * " + detail::num(w));
      s = s.empty() ? term : term + " + " + s;
      w *= p_.dims[dims[j]].t_rm;
    }
    return s.empty() ? "0" : s;
  }

  std::string mixed_radix(const std::vector<std::size_t>& dims, const char* var,
                          bool by_blk) const {
    std::string s;
    std::int64_t w = 1;
    for (std::size_t j = dims.size(); j-- > 0;) {
      const auto& d = p_.dims[dims[j]];
      std::string term = var + std::to_string(dims[j]) + (w == 1 ? "" : " * " + detail::num(w));
      s = s.empty() ? term : term + " + " + s;
      w *= by_blk ? d.blk : d.thr;
    }
    return s.empty() ? "0" : s;
  }

  // idx into the point space P of the non-reduce dims (row-major over dims in order).
  std::string point_index() const {
    std::string s;
    std::int64_t w = 1;
    for (std::size_t k = p_.dims.size(); k-- > 0;) {
      if (p_.dims[k].role == dim_role::reduce) continue;
      std::string term = ev(k) + (w == 1 ? "" : " * " + detail::num(w));
      s = s.empty() ? term : term + " + " + s;
      w *= p_.dims[k].size;
    }
    return s.empty() ? "0" : s;
  }

  // Value expression v of result r (its accumulation type) as output r stores it.
  std::string stored(std::size_t r, const std::string& v) const {
    return convert_expr(v, p_.acc_type(r), p_.outputs[r].type, d_.type(p_.outputs[r].type));
  }

  // ---- the epilogue (ir::pointwise_epilogue): printed where the final values are written, so
  // that it runs once per output point after the last combine, on every write path.

  // mdh_epilogue(args..., results*): the epilogue's point-wise function.
  void print_epilogue_function() {
    if (!p_.comp.epilogue) return;
    const ir::scalar_function& g = p_.comp.epilogue->f;
    std::string sig = d_.func_qualifier() + " void " + epilogue_name_ + "(";
    std::vector<std::string> args;
    for (std::size_t a = 0; a < g.arg_types.size(); ++a) {
      args.push_back("a" + std::to_string(a));
      sig += d_.type(g.arg_types[a]) + " a" + std::to_string(a) + ", ";
    }
    for (std::size_t q = 0; q < g.results.size(); ++q)
      sig += d_.type(g.result_type(q)) + "* res" + std::to_string(q) +
             (q + 1 < g.results.size() ? ", " : ") {");
    out_.line("// The epilogue " + p_.comp.epilogue->name + ", applied to the final results.");
    out_.line(sig);
    print_nodes(g, args);
    for (std::size_t q = 0; q < g.results.size(); ++q)
      out_.line("*res" + std::to_string(q) + " = v" + std::to_string(g.results[q]) + ";");
    out_.line("}");
    out_.blank();
  }

  // Applies the epilogue to the results vals[r] (their accumulation types) of the point whose
  // coordinates are var(d): result r as output r would store it, the epilogue's own buffers
  // loaded there. Declares y<q><tag> and returns those names, one per epilogue output.
  std::vector<std::string> print_epilogue(const std::vector<std::string>& vals,
                                          const std::function<std::string(std::size_t)>& var,
                                          const std::string& tag) {
    const ir::pointwise_epilogue& e = *p_.comp.epilogue;
    std::string call = epilogue_name_ + "(";
    std::size_t own = p_.comp.inputs.size();  // its own buffers follow the computation's inputs
    for (std::size_t b = 0; b < e.inputs.size(); ++b) {
      if (e.result_of[b] >= 0) {
        const auto r = std::size_t(e.result_of[b]);
        const scalar_type t = p_.comp.outputs[r].type;
        call += convert_expr(vals.at(r), p_.acc_type(r), t, d_.type(t)) + ", ";
        continue;
      }
      const global_buffer& g = p_.inputs.at(own++);
      for (auto& a : e.inputs[b].accesses) {
        const flat_access f = flatten(a, g, p_.dims.size());
        call += g.name + "[" + affine_expr(f.coeff, f.constant, var) + "], ";
      }
    }
    std::vector<std::string> ys;
    for (std::size_t q = 0; q < e.f.results.size(); ++q) {
      ys.push_back("y" + std::to_string(q) + tag);
      out_.line(d_.type(e.f.result_type(q)) + " " + ys.back() + ";");
      call += "&" + ys.back() + (q + 1 < e.f.results.size() ? ", " : ");");
    }
    out_.line(call);
    return ys;
  }

  // Epilogue value y of output q as output q stores it.
  std::string epilogue_stored(std::size_t q, const std::string& y) const {
    return convert_expr(y, p_.comp.epilogue->f.result_type(q), p_.outputs[q].type,
                        d_.type(p_.outputs[q].type));
  }

  // Writes value expressions vals[r] to every access of every output (with an epilogue: its
  // values at the point e<d> to its outputs; atomics are ruled out then).
  void print_output_writes(const std::vector<std::string>& vals, bool atomic) {
    if (p_.comp.epilogue && !atomic) {
      const std::vector<std::string> ys = print_epilogue(vals, ev, "");
      for (std::size_t q = 0; q < p_.outputs.size(); ++q)
        for (auto& a : p_.comp.epilogue->outputs[q].accesses) {
          const flat_access f = flatten(a, p_.outputs[q], p_.dims.size());
          out_.line(p_.outputs[q].name + "[" + affine_expr(f.coeff, f.constant, ev) +
                    "] = " + epilogue_stored(q, ys[q]) + ";");
        }
      return;
    }
    for (std::size_t r = 0; r < p_.outputs.size(); ++r)
      for (auto& a : p_.comp.outputs[r].accesses) {
        const flat_access f = flatten(a, p_.outputs[r], p_.dims.size());
        std::string idx = affine_expr(f.coeff, f.constant, ev);
        if (atomic)
          out_.line("mdh_atomic_combine" + std::to_string(r) + "(&" + p_.outputs[r].name + "[" +
                    idx + "], " + vals[r] + ");");
        else
          out_.line(p_.outputs[r].name + "[" + idx + "] = " + stored(r, vals[r]) + ";");
      }
  }

  // The mode of a copy's vector layout whose coordinate needs no modulo (f / stride < extent for
  // every vector f of the box): the first whose stride times extent is the whole box; the first
  // mode of a row-major layout.
  static std::size_t slowest_mode(const layout& l) {
    for (std::size_t k = 0; k < l.rank(); ++k)
      if (l.stride[k] * l.shape[k] == l.size()) return k;
    return l.rank();
  }

  // Emits the coordinates of vector `f` of tile t (u_k in the tile, g_k in the buffer) and
  // returns {guard, global index, tile index}; `tb` names the box start variables.
  std::array<std::string, 3> copy_element(const smem_tile& t, int V, const std::string& f) {
    const global_buffer& g = p_.inputs[t.input];
    const std::size_t rank = t.box.rank();
    const std::vector<std::int64_t>&ext = t.copy_vectors.shape, &W = t.copy_vectors.stride;
    std::string guard, gidx, sidx;
    const std::size_t slowest = slowest_mode(t.copy_vectors);
    for (std::size_t k = 0; k < rank; ++k) {
      std::string K = std::to_string(k), u = "u" + K, gg = "g" + K;
      std::string e = W[k] == 1 ? f : "(" + f + ") / " + detail::num(W[k]);
      if (k != slowest) e = "(" + e + ") % " + detail::num(ext[k]);
      if (k + 1 == rank && V > 1) e = "(" + e + ") * " + detail::num(V);
      out_.line("const int " + u + " = " + e + ";");
      out_.line("const idx_t " + gg + " = tb" + K + " + " + u + ";");
      guard +=
          (guard.empty() ? "" : " && ") + (gg + " >= 0 && " + gg + " < " + detail::num(g.shape[k]));
      gidx += (gidx.empty() ? "" : " + ") + (gg + " * " + detail::num(g.stride[k]));
      sidx += (sidx.empty() ? "" : " + ") + (u + " * " + detail::num(t.box.stride[k]));
    }
    return {guard, gidx, sidx};
  }

  void print_box_start(const smem_tile& t) {
    for (std::size_t k = 0; k < t.box.rank(); ++k)
      out_.line("const idx_t tb" + std::to_string(k) + " = " +
                affine_expr(t.base_coeff[k], t.base_const[k],
                            [](std::size_t d) { return "S" + std::to_string(d); }) +
                ";");
  }

  // `value` (a vector of V elements, or a scalar) into tile t's buffer `name` at `sidx`.
  void print_tile_store(const smem_tile& t, const std::string& name, int V, const std::string& sidx,
                        const std::string& value) {
    if (V == 1) {
      out_.line(name + "[" + sidx + "] = " + value + ";");
    } else if (t.copy_store_vector) {
      out_.line("*(" + d_.local_vector_ptr(p_.inputs[t.input].type, V) + ")&" + name + "[" + sidx +
                "] = " + value + ";");
    } else {
      const std::string step = detail::num(t.box.stride.back());
      for (int l = 0; l < V; ++l)
        out_.line(name + "[" + sidx + " + " + std::to_string(l) + " * " + step + "] = " + value +
                  "." + "xyzw"[l] + ";");
    }
  }

  std::string copy_load(const smem_tile& t, int V, const std::array<std::string, 3>& x) const {
    const global_buffer& g = p_.inputs[t.input];
    if (V == 1) return "(" + x[0] + ") ? " + g.name + "[" + x[1] + "] : (" + d_.type(g.type) + ")0";
    return "(" + x[0] + ") ? " + d_.vector_load(g.type, V, "&" + g.name + "[" + x[1] + "]") +
           " : " + d_.vector_zero(g.type, V);
  }

  // The whole copy of tile t, straight from global to shared memory.
  void print_copy(const smem_tile& t) {
    const int V = int(t.copy_width);
    out_.line("{  // copy the block's part of " + p_.comp.inputs[t.input].name + " into " + t.name +
              " (all threads, coalesced" +
              (V > 1 ? ", " + detail::num(V) + "-element vectors" : "") + ")");
    print_box_start(t);
    out_.line("for (int f = tid; f < " + detail::num(t.box_elements / V) +
              "; f += " + detail::num(p_.threads) + ") {");
    auto x = copy_element(t, V, "f");
    std::string T =
        V == 1 ? d_.type(p_.inputs[t.input].type) : d_.vector_type(p_.inputs[t.input].type, V);
    out_.line("const " + T + " w = " + copy_load(t, V, x) + ";");
    print_tile_store(t, t.name, V, x[2], "w");
    out_.line("}");
    out_.line("}");
  }

  // Prefetch, first half: this thread's slots of tile t into registers pf<input>[].
  void print_copy_to_registers(const smem_tile& t) {
    const int V = int(t.copy_width);
    const std::int64_t n = t.box_elements / V, slots = t.copy_slots;
    const std::string P = "pf" + std::to_string(t.input);
    out_.line("{  // " + p_.comp.inputs[t.input].name + ": the next tile into registers");
    print_box_start(t);
    pragma_unroll();
    out_.line("for (int c = 0; c < " + detail::num(slots) + "; ++c) {");
    out_.line("const int f = tid + c * " + detail::num(p_.threads) + ";");
    auto x = copy_element(t, V, "f");
    std::string load = copy_load(t, V, x);
    if (slots * p_.threads > n) load = "f < " + detail::num(n) + " ? (" + load + ") : " + P + "[c]";
    out_.line(P + "[c] = " + load + ";");
    out_.line("}");
    out_.line("}");
  }

  // Prefetch, second half: the registers pf<input>[] into tile t.
  void print_registers_to_tile(const smem_tile& t, const std::string& name) {
    const int V = int(t.copy_width);
    const std::int64_t n = t.box_elements / V, slots = t.copy_slots;
    out_.line("{  // " + p_.comp.inputs[t.input].name + ": registers into " + name);
    pragma_unroll();
    out_.line("for (int c = 0; c < " + detail::num(slots) + "; ++c) {");
    out_.line("const int f = tid + c * " + detail::num(p_.threads) + ";");
    const std::vector<std::int64_t>&ext = t.copy_vectors.shape, &W = t.copy_vectors.stride;
    std::string sidx;
    const std::size_t slowest = slowest_mode(t.copy_vectors);
    for (std::size_t k = ext.size(); k-- > 0;) {
      std::string u = W[k] == 1 ? "f" : "(f / " + detail::num(W[k]) + ")";
      if (k != slowest) u += " % " + detail::num(ext[k]);
      if (k + 1 == ext.size() && V > 1) u = "(" + u + ") * " + detail::num(V);
      sidx = "(" + u + ") * " + detail::num(t.box.stride[k]) + (sidx.empty() ? "" : " + " + sidx);
    }
    if (slots * p_.threads > n) out_.line("if (f < " + detail::num(n) + ") {");
    print_tile_store(t, name, V, sidx, "pf" + std::to_string(t.input) + "[c]");
    if (slots * p_.threads > n) out_.line("}");
    out_.line("}");
    out_.line("}");
  }

  // The expression reading access `a` of input b at the current point.
  std::string load(std::size_t b, const ir::access& a) const {
    const global_buffer& g = p_.inputs[b];
    const smem_tile* tile = tile_of(p_, b);
    if (!tile) {
      const flat_access f = flatten(a, g, p_.dims.size());
      return g.name + "[" + affine_expr(f.coeff, f.constant, ev) + "]";
    }
    // tile index: sum_k (g_k - tb_k) * stride_k, with g_k - tb_k = sum_d c (e_d - S_d) + off - base
    std::vector<std::int64_t> coeff(p_.dims.size(), 0);
    std::int64_t c0 = 0;
    for (std::size_t k = 0; k < a.index.size(); ++k) {
      for (std::size_t d = 0; d < p_.dims.size(); ++d)
        coeff[d] += a.index[k].coeff[d] * tile->box.stride[k];
      c0 += (a.index[k].offset - tile->base_const[k]) * tile->box.stride[k];
    }
    return tile->name + "[" +
           affine_expr(coeff, c0,
                       [this](std::size_t d) { return "(" + box_offset_expr(d) + ")"; }) +
           "]";
  }

  void print_main(const kernel& k) {
    const std::size_t m = p_.results();
    const bool red = p_.comp.has_reduction();
    std::vector<std::size_t> outer = p_.concat_dims;
    outer.insert(outer.end(), p_.scan_dims.begin(), p_.scan_dims.end());
    out_.line("// Main kernel: " + detail::num(p_.blocks) + " blocks of " +
              detail::num(p_.threads) + " threads.");
    if (stage_)
      out_.line("{  // ---- stage " + p_.comp.name + ": the body of its kernel " + k.name);
    else
      for (auto& l : d_.kernel_open(p_, k, params())) out_.line(l);
    out_.line("// ---- thread and block coordinates per dimension");
    out_.line("const int tid = " + d_.thread_id(0) + " + " + detail::num(k.launch.block[0]) +
              " * (" + d_.thread_id(1) + " + " + detail::num(k.launch.block[1]) + " * " +
              d_.thread_id(2) + ");");
    for (std::size_t j = 0; j < p_.dims.size(); ++j) {
      const auto& d = p_.dims[j];
      std::string J = std::to_string(j);
      auto coord = [&](const std::string& id, std::int64_t stride, std::int64_t n,
                       std::int64_t axis_total) {
        if (n == 1) return std::string("0");
        std::string s = stride == 1 ? id : "(" + id + " / " + detail::num(stride) + ")";
        return stride * n == axis_total ? s : s + " % " + detail::num(n);
      };
      out_.line("const int t" + J + " = " +
                coord(d_.thread_id(d.thr_axis), d.thr_stride, d.thr, k.launch.block[d.thr_axis]) +
                ";  // " + d.name + " (" + to_string(d.role) + ")");
      out_.line("const int b" + J + " = " +
                coord(d_.block_id(d.blk_axis), d.blk_stride, d.blk, k.launch.grid[d.blk_axis]) +
                ";");
    }
    if (p_.thread_combine_needed) {
      std::vector<std::size_t> nonred = outer;
      out_.line("const int r_tid = " + mixed_radix(p_.reduce_dims, "t", false) +
                ";  // among the threads sharing output points");
      out_.line("const int c_tid = " + mixed_radix(nonred, "t", false) + ";");
    } else {
      out_.line("const int r_tid = 0;");
    }
    if (p_.shared_bytes > 0) {
      out_.line("// ---- shared memory: input tiles, reused as combine scratch");
      if (!stage_) out_.line(d_.shared_pool(p_.shared_bytes));
      // with two buffers, <tile>_b is the first; <tile> names the step's current one
      for (auto& t : p_.tiles)
        out_.line(d_.local_ptr(p_.inputs[t.input].type) + " " + t.name +
                  (t.buffers > 1 ? "_b" : "") + " = (" + d_.local_ptr(p_.inputs[t.input].type) +
                  ")(mdh_smem + " + detail::num(t.offset_bytes) + ");");
    }
    if (p_.blk_combine == block_combine_kind::last_block)
      out_.line(d_.shared_int("mdh_last") + "  // is this block the last of its group?");
    const std::string acc_n = detail::num(p_.acc_count);
    // ---- loops over the ++ dims (sm tiles, then rm steps)
    for (auto j : p_.concat_dims)
      open_loop("s" + std::to_string(j), p_.dims[j].n_sm, false, "sm tiles of " + p_.dims[j].name);
    for (auto j : p_.concat_dims) {
      open_loop("q" + std::to_string(j), p_.dims[j].n_rm, p_.unroll_concat_steps,
                "rm steps of " + p_.dims[j].name);
    }
    for (auto j : p_.concat_dims) {
      const auto& d = p_.dims[j];
      std::string J = std::to_string(j);
      out_.line("const idx_t S" + J + " = b" + J + " * " + detail::num(d.chunk) + " + s" + J +
                " * " + detail::num(d.t_sm) + " + q" + J + " * " + detail::num(d.rm_step) + ";");
    }
    if (p_.interior_split) print_whole_condition(p_.concat_dims, "mdh_whole_step");
    std::int64_t carry_n = 1;
    for (auto j : p_.concat_dims) carry_n *= p_.dims[j].t_rm;
    if (!p_.scan_dims.empty()) {
      out_.line("// running prefix (+) of the scan dimension, per register slot");
      for (std::size_t r = 0; r < m; ++r)
        out_.line(d_.type(p_.acc_type(r)) + " carry" + std::to_string(r) + "[" +
                  detail::num(carry_n) + "];");
      pragma_unroll();
      out_.line("for (int a = 0; a < " + detail::num(carry_n) + "; ++a) {");
      for (std::size_t r = 0; r < m; ++r)
        out_.line("carry" + std::to_string(r) + "[a] = " + identity(r) + ";");
      out_.line("}");
      for (auto j : p_.scan_dims)
        open_loop("s" + std::to_string(j), p_.dims[j].n_sm, false,
                  "sm tiles of the scan dimension " + p_.dims[j].name);
      for (auto j : p_.scan_dims)
        open_loop("q" + std::to_string(j), p_.dims[j].n_rm, false, "rm steps");
      for (auto j : p_.scan_dims) {
        const auto& d = p_.dims[j];
        std::string J = std::to_string(j);
        out_.line("const idx_t S" + J + " = b" + J + " * " + detail::num(d.chunk) + " + s" + J +
                  " * " + detail::num(d.t_sm) + " + q" + J + " * " + detail::num(d.rm_step) + ";");
      }
    }
    out_.line("// ---- register accumulators: " + acc_n + " per thread and result");
    for (std::size_t r = 0; r < m; ++r)
      out_.line(d_.type(p_.acc_type(r)) + " acc" + std::to_string(r) + "[" + acc_n + "];");
    // Initialised even without a reduction: PoCL 3.1 miscompiles private arrays left
    // undefined across a barrier (the GPU compilers drop these stores).
    pragma_unroll();
    out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
    for (std::size_t r = 0; r < m; ++r)
      out_.line("acc" + std::to_string(r) +
                "[a] = " + (red ? identity(r) : "(" + d_.type(p_.acc_type(r)) + ")0") + ";");
    out_.line("}");
    // The sm tiles of all reduction dimensions as one loop (row-major over them), so that a
    // prefetch can name "the next tile".
    const std::int64_t n_tiles = p_.copies.steps;
    auto print_tile_coords = [&](const std::string& st, const char* s_name) {
      std::int64_t w = 1;
      for (std::size_t i = p_.reduce_dims.size(); i-- > 0;) {
        const std::size_t j = p_.reduce_dims[i];
        const auto& d = p_.dims[j];
        std::string J = std::to_string(j), sv = w == 1 ? st : "(" + st + ") / " + detail::num(w);
        if (w * d.n_sm != n_tiles) sv = "(" + sv + ") % " + detail::num(d.n_sm);
        if (d.n_sm == 1) sv = "0";
        out_.line("const int " + std::string(s_name) + J + " = " + sv + ";");
        out_.line("const idx_t S" + J + " = b" + J + " * " + detail::num(d.chunk) + " + " + s_name +
                  J + " * " + detail::num(d.t_sm) + ";");
        w *= d.n_sm;
      }
    };
    const bool double_buffer = p_.copies.staging == tile_staging::two_buffers;
    const bool prefetch = double_buffer || p_.copies.staging == tile_staging::registers;
    if (prefetch) {
      out_.line("// ---- prefetch: each tile is loaded into registers one tile ahead");
      for (auto& t : p_.tiles) {
        const int V = int(t.copy_width);
        const auto T = p_.inputs[t.input].type;
        out_.line((V == 1 ? d_.type(T) : d_.vector_type(T, V)) + " pf" + std::to_string(t.input) +
                  "[" + detail::num(t.copy_slots) + "];");
      }
      out_.line("{");
      print_tile_coords("0", "sn");
      for (auto& t : p_.tiles) print_copy_to_registers(t);
      out_.line("}");
    }
    if (double_buffer) {
      out_.line("// ---- two buffers: step st computes on buffer st % 2 while the registers of");
      out_.line("// step st + 1 go into the other one; one barrier per step");
      // The thread combine of the previous ++ step read its results from scratch that shares
      // these bytes: wait for every thread before overwriting them.
      if (p_.copies.barrier_before_fill) out_.line(d_.barrier());
      for (auto& t : p_.tiles) print_registers_to_tile(t, t.name + "_b");
      out_.line(d_.barrier());
      out_.line("if (1 < " + detail::num(n_tiles) + ") {");
      print_tile_coords("1", "sn");
      for (auto& t : p_.tiles) print_copy_to_registers(t);
      out_.line("}");
    }
    if (!p_.reduce_dims.empty()) {
      if (!d_.no_unroll().empty()) out_.line(d_.no_unroll());
      out_.line("for (int st = 0; st < " + detail::num(n_tiles) +
                "; ++st) {  // sm tiles of the reduction dimensions");
      print_tile_coords("st", "s");
    }
    if (double_buffer) {
      for (auto& t : p_.tiles) {
        const std::string T = d_.local_ptr(p_.inputs[t.input].type);
        out_.line(T + " " + t.name + " = " + t.name + "_b + (st & 1) * " +
                  detail::num(t.buffer_stride) + ";");
      }
    } else if (p_.copies.staging != tile_staging::none) {
      out_.line("// ---- cooperative copies into shared memory");
      out_.line(d_.barrier());
      for (auto& t : p_.tiles) prefetch ? print_registers_to_tile(t, t.name) : print_copy(t);
      out_.line(d_.barrier());
      if (prefetch) {
        out_.line("if (st + 1 < " + detail::num(n_tiles) +
                  ") {  // the next tile's loads, in flight during the computation");
        print_tile_coords("st + 1", "sn");
        for (auto& t : p_.tiles) print_copy_to_registers(t);
        out_.line("}");
      }
    }
    if (p_.interior_split) {
      print_whole_condition(p_.reduce_dims, "mdh_whole_tile");
      out_.line("if (mdh_whole_step && mdh_whole_tile) {  // interior path: no guards along " +
                interior_dims());
      interior_path_ = true;
      print_register_loops(outer);
      interior_path_ = false;
      out_.line("} else {  // edge path");
      print_register_loops(outer);
      out_.line("}");
    } else {
      print_register_loops(outer);
    }
    if (double_buffer) {
      out_.line("if (st + 1 < " + detail::num(n_tiles) + ") {  // the next step's tiles");
      for (auto& t : p_.tiles)
        out_.line(d_.local_ptr(p_.inputs[t.input].type) + " " + t.name + "_n = " + t.name +
                  "_b + ((st + 1) & 1) * " + detail::num(t.buffer_stride) + ";");
      for (auto& t : p_.tiles) print_registers_to_tile(t, t.name + "_n");
      out_.line("if (st + 2 < " + detail::num(n_tiles) +
                ") {  // loads in flight during step st + 1");
      print_tile_coords("st + 2", "sn");
      for (auto& t : p_.tiles) print_copy_to_registers(t);
      out_.line("}");
      out_.line("}");
      out_.line(d_.barrier());
    }
    if (!p_.reduce_dims.empty()) out_.line("}");  // sm tiles
    if (p_.thread_combine_needed) print_thread_combine();
    if (!p_.scan_dims.empty()) print_scan(outer, carry_n);
    print_write(outer);
    print_kept_results(outer);
    for (std::size_t j = 0; j < 2 * p_.scan_dims.size(); ++j) out_.line("}");
    for (std::size_t j = 0; j < 2 * p_.concat_dims.size(); ++j) out_.line("}");
    if (p_.blk_combine == block_combine_kind::last_block) print_last_block();
    out_.line("}");
  }

  // The rm steps of the reduction dims and the register loops inside them: acc (+)= f(loads).
  void print_register_loops(const std::vector<std::size_t>& outer) {
    register_loops_ = true;
    const std::size_t m = p_.results();
    const bool red = p_.comp.has_reduction();
    for (auto j : p_.reduce_dims)
      open_loop("q" + std::to_string(j), p_.dims[j].n_rm, p_.unroll_reduce_steps,
                "rm steps of " + p_.dims[j].name);
    // ---- register loops: reduce dims outermost, then the outer product over ++/ps dims (the
    // innermost reduce dim moves inside with vec_pw, see register_order)
    const std::vector<std::size_t>& reg = p_.register_order;
    const std::vector<vector_group>& groups = p_.vector_groups;
    std::string opened;  // validity of the dimensions whose loops are open
    for (auto j : reg) {
      auto G = std::find_if(groups.begin(), groups.end(), [j](auto& g) { return g.dim == j; });
      if (G != groups.end()) {
        open_vec_group(*G);
        const std::size_t gi = std::size_t(G - groups.begin());
        const std::string P = prefix(*G);
        const int W = int(G->width);
        for (std::size_t arg = 0; arg < p_.reads.size(); ++arg) {
          const input_read& rd = p_.reads[arg];
          if (std::find(rd.vector_groups.begin(), rd.vector_groups.end(), gi) ==
              rd.vector_groups.end())
            continue;
          if (const register_keep* kp = keep_of(p_, rd.input); kp && !kp->store) continue;
          const auto& a = p_.comp.inputs[rd.input].accesses[rd.access];
          const global_buffer& g = p_.inputs[rd.input];
          if (shifted(rd, gi)) {
            // the group lies in the two aligned vectors from its start rounded down; the second
            // must end inside the buffer (else the lanes read scalars)
            const std::string w = "w" + P + std::to_string(arg), VT = d_.vector_type(g.type, W);
            out_.line("const idx_t " + w + "a = " + flat_index_vec(a, g, *G) + ";");
            out_.line("const int " + w + "m = (int)(" + w + "a & " + detail::num(W - 1) +
                      ");  // the start's offset in its aligned vector");
            out_.line("const bool " + w + "s = (" + P + "vg" + opened + ") && " + w + "a - " + w +
                      "m + " + detail::num(2 * W) + " <= " + detail::num(g.elements) + ";");
            for (int h = 0; h < 2; ++h)
              out_.line("const " + VT + " " + w + (h ? "h" : "") + " = " + w + "s ? " +
                        d_.vector_load(g.type, W,
                                       "&" + g.name + "[" + w + "a - " + w + "m" +
                                           (h ? " + " + detail::num(W) : "") + "]") +
                        " : " + d_.vector_zero(g.type, W) + ";");
            continue;
          }
          out_.line("const " + d_.vector_type(g.type, W) + " w" + P + std::to_string(arg) + " = (" +
                    P + "vg" + opened + ") ? " +
                    d_.vector_load(g.type, W, "&" + g.name + "[" + flat_index_vec(a, g, *G) + "]") +
                    " : " + d_.vector_zero(g.type, W) + ";");
        }
        open_vec_lanes(*G);
      } else {
        open_loop("r" + std::to_string(j), p_.dims[j].t_rm, true, "");
      }
      print_element(j);
      opened += " && v" + std::to_string(j);
    }
    std::string valid;
    for (auto j : reg) valid += (valid.empty() ? "" : " && ") + ("v" + std::to_string(j));
    out_.line("if (" + valid + ") {");
    std::string call = f_name_ + "(";
    for (std::size_t arg = 0; arg < p_.reads.size(); ++arg) {
      const input_read& rd = p_.reads[arg];
      const std::string A = std::to_string(arg);
      const std::string T = d_.type(p_.inputs[rd.input].type);
      const register_keep* keep = keep_of(p_, rd.input);
      if (keep && !keep->store) {  // the first stage read (or stored) it in this thread's registers
        out_.line("const " + T + " x" + A + " = " + keep->array + "[" + keep_slot(keep) + "];");
        call += "x" + A + ", ";
        continue;
      }
      std::string value = load(rd.input, p_.comp.inputs[rd.input].accesses[rd.access]);
      for (auto gi : rd.vector_groups) {  // the lane of the group's vector, else a scalar load
        const std::string P = prefix(groups[gi]);
        if (shifted(rd, gi)) {
          // lane rl is element m + rl of the two vectors: a select over the offset m (rl is a
          // constant once the lane loop is unrolled)
          const std::int64_t W = groups[gi].width;
          const std::string w = "w" + P + A;
          std::string pick;
          for (std::int64_t j = W; j-- > 0;) {
            const std::string k = "(" + P + "rl + " + detail::num(j) + ")";
            const std::string lane = "(" + k + " < " + detail::num(W) + " ? (const " + T + "*)&" +
                                     w + " : (const " + T + "*)&" + w + "h)[" + k + " & " +
                                     detail::num(W - 1) + "]";
            pick = pick.empty() ? lane : w + "m == " + detail::num(j) + " ? " + lane + " : " + pick;
          }
          value = w + "s ? (" + pick + ") : " + value;
          continue;
        }
        value = P + "vg ? ((const " + T + "*)&w" + P + A + ")[" + P + "rl] : " + value;
      }
      out_.line("const " + T + " x" + A + " = " + value + ";");
      if (keep)
        out_.line(keep->array + "[" + keep_slot() + "] = x" + A + ";  // for the next stage");
      call += "x" + A + ", ";
    }
    for (std::size_t r = 0; r < m; ++r) {
      out_.line(d_.type(p_.acc_type(r)) + " f" + std::to_string(r) + " = (" +
                d_.type(p_.acc_type(r)) + ")0;");
      call += "&f" + std::to_string(r) + (r + 1 < m ? ", " : ");");
    }
    out_.line(call);
    std::string ai = acc_index(outer);
    if (red) {
      std::string c = combine_name_ + "(";
      for (std::size_t r = 0; r < m; ++r) c += "&acc" + std::to_string(r) + "[" + ai + "], ";
      for (std::size_t r = 0; r < m; ++r) c += "f" + std::to_string(r) + (r + 1 < m ? ", " : ");");
      out_.line(c);
    } else {
      for (std::size_t r = 0; r < m; ++r)
        out_.line("acc" + std::to_string(r) + "[" + ai + "] = f" + std::to_string(r) + ";");
    }
    out_.line("}");
    for (std::size_t j = 0; j < reg.size() + groups.size(); ++j) out_.line("}");
    for (std::size_t j = 0; j < p_.reduce_dims.size(); ++j) out_.line("}");  // rm steps
    register_loops_ = false;
  }

  // Every thread stores the first stage's kept results (register_keep::result) as the outputs
  // hold them, at the slots of its ++ dims: after the combine each thread of a group holds the
  // total, not only the one that writes it.
  void print_kept_results(const std::vector<std::size_t>& outer) {
    bool any = false;
    for (auto& k : p_.keeps) any = any || (k.store && k.result);
    if (!any) return;
    out_.line("// ---- keep: the results as stored, for the next stage (keep_in_registers)");
    for (auto j : outer) open_loop("r" + std::to_string(j), p_.dims[j].t_rm, true, "");
    const std::string ai = acc_index(outer);
    for (auto& k : p_.keeps)
      if (k.store && k.result)
        out_.line(k.array + "[" + keep_slot(&k) +
                  "] = " + stored(k.input, "acc" + std::to_string(k.input) + "[" + ai + "]") + ";");
    for (std::size_t j = 0; j < outer.size(); ++j) out_.line("}");
  }

  // The slot of the current element in the kept arrays (kernel_plan::keep_weight); a kept result
  // leaves out the dimensions its stage reduces.
  std::string keep_slot(const register_keep* keep = nullptr) const {
    std::string s;
    for (std::size_t d = 0; d < p_.dims.size(); ++d) {
      const dim_plan& x = p_.dims[d];
      const std::int64_t w = p_.keep_weight.at(d);
      if (x.n_rm * x.t_rm == 1) continue;
      if (keep && keep->result && keep->reduced.at(d)) continue;
      const std::string D = std::to_string(d);
      std::string slot = x.n_rm == 1   ? "r" + D
                         : x.t_rm == 1 ? "q" + D
                                       : "q" + D + " * " + detail::num(x.t_rm) + " + r" + D;
      if (w != 1)
        slot = (x.n_rm == 1 || x.t_rm == 1 ? slot : "(" + slot + ")") + " * " + detail::num(w);
      s += (s.empty() ? "" : " + ") + slot;
    }
    return s.empty() ? "0" : s;
  }

  static bool shifted(const input_read& rd, std::size_t group) {
    return std::find(rd.shifted_groups.begin(), rd.shifted_groups.end(), group) !=
           rd.shifted_groups.end();
  }

  // `const bool <name> = ...;`: the current step (++ dims: the rm step; reduction dims: the sm
  // tile) is whole along every dim of `dims` marked interior (edge_tiles.hpp).
  void print_whole_condition(const std::vector<std::size_t>& dims, const std::string& name) {
    std::string c;
    auto add = [&](const std::string& x) { c += (c.empty() ? "" : " && ") + ("(" + x + ")"); };
    for (auto j : dims) {
      const dim_plan& d = p_.dims[j];
      if (!d.interior) continue;
      const std::string J = std::to_string(j);
      const bool reduces = d.role == dim_role::reduce;
      const std::int64_t w = reduces ? d.t_sm : d.rm_step;  // elements of the step
      const std::string local = "s" + J + " * " + detail::num(d.t_sm) +
                                (reduces ? "" : " + q" + J + " * " + detail::num(w));
      if (d.partial_steps) add("q" + J + " < " + detail::num(d.n_rm - 1));
      if (d.partial_tiles) add(local + " <= " + detail::num(d.chunk - w));
      if (d.partial_blocks) add("S" + J + " <= " + detail::num(d.size - w));
    }
    out_.line("const bool " + name + " = " + (c.empty() ? "true" : c) + ";");
  }
  std::string interior_dims() const {
    std::string s;
    for (auto& d : p_.dims)
      if (d.interior) s += (s.empty() ? "" : ", ") + d.name;
    return s;
  }

  // After writing its partials, each block counts itself in its group's counter; the last one
  // to arrive combines the group's partials (all RB blocks, in block order, as the second
  // kernel does) and writes the outputs, then resets the counter for the next launch.
  void print_last_block() {
    const std::int64_t RB = p_.red_blocks;
    out_.line("{  // ---- the last of the " + detail::num(RB) +
              " blocks sharing these output points combines their partials");
    out_.line(d_.global_fence() + "  // this block's partials are visible before it is counted");
    out_.line(d_.barrier());
    // The group: the blocks that differ only along reduction dimensions.
    std::string grp;
    std::int64_t w = 1;
    for (std::size_t j = p_.dims.size(); j-- > 0;) {
      const auto& d = p_.dims[j];
      if (d.role == dim_role::reduce || d.blk == 1) continue;
      std::string term = "b" + std::to_string(j) + (w == 1 ? "" : " * " + detail::num(w));
      grp = grp.empty() ? term : term + " + " + grp;
      w *= d.blk;
    }
    out_.line("const int grp = " + (grp.empty() ? std::string("0") : grp) + ";");
    out_.line("if (tid == 0) mdh_last = " + d_.atomic_inc("&cnt[grp]") +
              " == " + detail::num(RB - 1) + ";");
    out_.line(d_.barrier());
    out_.line("if (mdh_last) {");
    out_.line(d_.global_fence() + "  // the other blocks' partials are read after the count");
    // The group's points: the block's chunk of every ++ dimension (scan dims: all of it).
    std::int64_t n = 1;
    std::vector<std::int64_t> W(p_.dims.size(), 0);
    for (std::size_t j = p_.dims.size(); j-- > 0;)
      if (p_.dims[j].role != dim_role::reduce) W[j] = n, n *= p_.dims[j].chunk;
    out_.line("for (idx_t i = tid; i < " + detail::num(n) + "; i += " + detail::num(p_.threads) +
              ") {");
    std::string past;
    for (std::size_t j = 0; j < p_.dims.size(); ++j) {
      const auto& d = p_.dims[j];
      if (d.role == dim_role::reduce) continue;
      const std::string J = std::to_string(j);
      std::string e = W[j] == 1 ? "i" : "(i / " + detail::num(W[j]) + ")";
      if (W[j] * d.chunk != n) e += " % " + detail::num(d.chunk);
      if (d.blk > 1) e = "b" + J + " * " + detail::num(d.chunk) + " + " + e;
      out_.line("const idx_t e" + J + " = " + e + ";");
      if (d.blk * d.chunk != d.size)
        past += (past.empty() ? "" : " || ") + ("e" + J + " >= " + detail::num(d.size));
    }
    if (!past.empty()) out_.line("if (" + past + ") continue;  // past the end of the dimension");
    out_.line("const idx_t p = " + point_index() + ";");
    print_combine_partials(
        [&](scalar_type t, const std::string& x) { return d_.coherent_load(t, x); },
        p_.last_block_unroll);
    out_.line("}");
    out_.line("if (tid == 0) cnt[grp] = 0;  // ready for the next launch");
    out_.line("}");
    out_.line("}");
  }

  // acc<r> := (+) over the RB blocks' partials of point p in block order, written to the
  // outputs (e<d> of the point in scope); `load` spells the read of a partials element.
  // `unroll`: the loop's unroll factor (0: none).
  void print_combine_partials(
      const std::function<std::string(scalar_type, const std::string&)>& load,
      std::int64_t unroll) {
    const std::size_t m = p_.results();
    std::vector<std::string> vals;
    for (std::size_t r = 0; r < m; ++r) {
      std::string R = std::to_string(r);
      out_.line(d_.type(p_.acc_type(r)) + " acc" + R + " = " +
                load(p_.acc_type(r), p_.partials[r].name + "[p]") + ";");
      vals.push_back("acc" + R);
    }
    if (unroll > 0 && !d_.unroll().empty()) out_.line(d_.unroll() + " " + detail::num(unroll));
    out_.line("for (int rb = 1; rb < " + detail::num(p_.red_blocks) + "; ++rb) {");
    std::string c = combine_name_ + "(";
    for (std::size_t r = 0; r < m; ++r) c += "&acc" + std::to_string(r) + ", ";
    for (std::size_t r = 0; r < m; ++r)
      c += load(p_.acc_type(r),
                p_.partials[r].name + "[(idx_t)rb * " + detail::num(p_.points) + " + p]") +
           (r + 1 < m ? ", " : ");");
    out_.line(c);
    out_.line("}");
    print_output_writes(vals, false);
  }

  void print_thread_combine() {
    const std::size_t m = p_.results();
    const std::string acc_n = detail::num(p_.acc_count);
    const std::int64_t R = p_.red_threads;
    if (p_.thr_combine == thread_combine::warp_shuffle && d_.has_shuffle()) {
      // The R reduction threads are the fastest lanes (check.hpp): shuffles within a warp;
      // for R > 32 each warp's total then goes through shared memory to the group's first warp.
      const std::int64_t W = R > p_.limits.warp_size ? R / p_.limits.warp_size : 1;
      const std::int64_t in_warp = W > 1 ? p_.limits.warp_size : R;
      auto shuffle_steps = [&](std::int64_t from) {
        pragma_unroll();
        out_.line("for (int off = " + detail::num(from / 2) + "; off > 0; off >>= 1) {");
        pragma_unroll();
        out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
        std::string c = combine_name_ + "(";
        for (std::size_t r = 0; r < m; ++r) {
          std::string R_ = std::to_string(r);
          out_.line("const " + d_.type(p_.acc_type(r)) + " o" + R_ + " = " +
                    d_.shuffle_xor("mask", "acc" + R_ + "[a]", "off") + ";");
          c += "&acc" + R_ + "[a], ";
        }
        for (std::size_t r = 0; r < m; ++r)
          c += "o" + std::to_string(r) + (r + 1 < m ? ", " : ");");
        out_.line(c);
        out_.line("}");
        out_.line("}");
      };
      out_.line("{  // ---- combine the " + detail::num(R) +
                " threads sharing each output point: warp shuffles" +
                (W > 1 ? ", then the " + detail::num(W) + " warps' totals" : ""));
      out_.line("const int lanes = " + detail::num(p_.threads) + " - (tid & ~31) < 32 ? " +
                detail::num(p_.threads) + " - (tid & ~31) : 32;");
      out_.line("const unsigned mask = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);");
      shuffle_steps(in_warp);
      if (W > 1) {
        const std::int64_t NC = p_.threads / R;
        out_.line(d_.barrier());  // the scratch reuses the tiles' bytes
        std::int64_t off = 0;
        for (std::size_t r = 0; r < m; ++r) {
          off = (off + 15) / 16 * 16;
          std::string t = d_.local_ptr(p_.acc_type(r));
          out_.line(t + " scr" + std::to_string(r) + " = (" + t + ")(mdh_smem + " +
                    detail::num(off) + ");");
          off += p_.acc_count * NC * W * std::int64_t(size_of(p_.acc_type(r)));
        }
        const std::string slot = "(a * " + detail::num(NC) + " + c_tid) * " + detail::num(W);
        out_.line("if ((r_tid & 31) == 0) {");
        pragma_unroll();
        out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
        for (std::size_t r = 0; r < m; ++r)
          out_.line("scr" + std::to_string(r) + "[" + slot + " + (r_tid >> 5)] = acc" +
                    std::to_string(r) + "[a];");
        out_.line("}");
        out_.line("}");
        out_.line(d_.barrier());
        out_.line("if (r_tid < 32) {  // the group's first warp combines the warps' totals");
        pragma_unroll();
        out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
        for (std::size_t r = 0; r < m; ++r)
          out_.line("acc" + std::to_string(r) + "[a] = r_tid < " + detail::num(W) + " ? scr" +
                    std::to_string(r) + "[" + slot + " + r_tid] : " + identity(r) + ";");
        out_.line("}");
        shuffle_steps(W);
        out_.line("}");
      }
      out_.line("}");
      return;
    }
    std::int64_t p2 = 1;
    while (p2 < R) p2 *= 2;
    const std::int64_t NC = p_.threads / R;
    out_.line("{  // ---- combine the " + detail::num(R) +
              " threads sharing each output point: tree in shared memory");
    out_.line(d_.barrier());
    std::int64_t off = 0;
    for (std::size_t r = 0; r < m; ++r) {
      off = (off + 15) / 16 * 16;
      std::string t = d_.local_ptr(p_.acc_type(r));
      out_.line(t + " scr" + std::to_string(r) + " = (" + t + ")(mdh_smem + " + detail::num(off) +
                ");");
      off += p_.acc_count * p_.threads * std::int64_t(size_of(p_.acc_type(r)));
    }
    std::string slot = "(a * " + detail::num(NC) + " + c_tid) * " + detail::num(R) + " + r_tid";
    pragma_unroll();
    out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
    for (std::size_t r = 0; r < m; ++r)
      out_.line("scr" + std::to_string(r) + "[" + slot + "] = acc" + std::to_string(r) + "[a];");
    out_.line("}");
    out_.line(d_.barrier());
    // One straight-line step per halving (constant h, no barrier inside a loop: PoCL 3.1's
    // loop vectoriser asserts on that shape inside our loop nests).
    for (std::int64_t h = p2 / 2; h > 0; h /= 2) {
      const std::string H = detail::num(h);
      out_.line("if (r_tid < " + H + " && r_tid + " + H + " < " + detail::num(R) + ") {  // step " +
                H);
      out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
      std::string c = combine_name_ + "(";
      for (std::size_t r = 0; r < m; ++r) {
        std::string R_ = std::to_string(r), T = d_.type(p_.acc_type(r));
        out_.line(T + " l" + R_ + " = scr" + R_ + "[" + slot + "];");
        c += "&l" + R_ + ", ";
      }
      for (std::size_t r = 0; r < m; ++r)
        c += "scr" + std::to_string(r) + "[" + slot + " + " + H + "]" + (r + 1 < m ? ", " : ");");
      out_.line(c);
      for (std::size_t r = 0; r < m; ++r)
        out_.line("scr" + std::to_string(r) + "[" + slot + "] = l" + std::to_string(r) + ";");
      out_.line("}");
      out_.line("}");
      out_.line(d_.barrier());
    }
    pragma_unroll();
    out_.line("for (int a = 0; a < " + acc_n + "; ++a) {");
    for (std::size_t r = 0; r < m; ++r)
      out_.line("acc" + std::to_string(r) + "[a] = scr" + std::to_string(r) + "[(a * " +
                detail::num(NC) + " + c_tid) * " + detail::num(R) + "];");
    out_.line("}");
    // No barrier here: whatever writes the scratch next (a tile copy or this combine) starts
    // with one.
    out_.line("}");
  }

  void print_scan(const std::vector<std::size_t>& outer, std::int64_t) {
    const std::size_t m = p_.results();
    out_.line("// ---- inclusive scan of the register slots, continuing the carry");
    for (auto j : outer) {
      open_loop("r" + std::to_string(j), p_.dims[j].t_rm, true, "");
      print_element(j);
    }
    std::size_t sj = p_.scan_dims.at(0);
    out_.line("if (v" + std::to_string(sj) + ") {");
    std::string ci = acc_index(p_.concat_dims), ai = acc_index(outer);
    std::string c = combine_name_ + "(";
    for (std::size_t r = 0; r < m; ++r) c += "&carry" + std::to_string(r) + "[" + ci + "], ";
    for (std::size_t r = 0; r < m; ++r)
      c += "acc" + std::to_string(r) + "[" + ai + "]" + (r + 1 < m ? ", " : ");");
    out_.line(c);
    for (std::size_t r = 0; r < m; ++r)
      out_.line("acc" + std::to_string(r) + "[" + ai + "] = carry" + std::to_string(r) + "[" + ci +
                "];");
    out_.line("}");
    for (std::size_t j = 0; j < outer.size(); ++j) out_.line("}");
  }

  void print_write(const std::vector<std::size_t>& outer) {
    const std::size_t m = p_.results();
    out_.line(std::string("// ---- write: ") + (p_.blk_combine == block_combine_kind::atomic
                                                    ? "atomic combine into outputs"
                                                : !p_.partials.empty() ? "this block's partials"
                                                                       : "outputs"));
    out_.line("if (r_tid == 0) {");
    for (auto j : outer) {
      if (p_.vector_write && j == p_.vector_groups[0].dim) {
        const vector_group& G = p_.vector_groups[0];
        const int V = int(G.width);
        open_vec_group(G);
        std::string others;
        for (auto i : outer)
          if (i != j) others += " && v" + std::to_string(i);
        out_.line("if (vg" + others + ") {  // the whole group: vector stores where aligned");
        auto lane_acc = [&](std::size_t r, int l) {
          std::string ai = acc_index(outer);
          std::string rv = "r" + std::to_string(j);
          for (std::size_t pos; (pos = ai.find(rv)) != std::string::npos;)
            ai.replace(pos, rv.size(), "(rg + " + std::to_string(l) + ")");
          return "acc" + std::to_string(r) + "[" + ai + "]";
        };
        std::vector<std::vector<std::string>> lane_ys;  // the epilogue's values per lane
        if (p_.comp.epilogue)
          for (int l = 0; l < V; ++l) {
            std::vector<std::string> accs;
            for (std::size_t r = 0; r < m; ++r) accs.push_back(lane_acc(r, l));
            lane_ys.push_back(print_epilogue(
                accs,
                [&](std::size_t d) {
                  return d == G.dim ? "(eg + " + std::to_string(l) + ")" : ev(d);
                },
                "_" + std::to_string(l)));
          }
        for (const output_write& w : p_.writes) {
          const std::size_t r = w.output;
          const auto& a = ir::kernel_outputs(p_.comp)[r].accesses[w.access];
          const auto& g = p_.outputs[r];
          std::vector<std::string> vals;
          for (int l = 0; l < V; ++l)
            vals.push_back(p_.comp.epilogue ? epilogue_stored(r, lane_ys[std::size_t(l)][r])
                                            : lane_acc(r, l));
          if (w.vector_store) {
            std::vector<std::string> stores = vals;  // as the output stores them (bf16: rounded)
            if (!p_.comp.epilogue)
              for (auto& v : stores) v = stored(r, v);
            out_.line(d_.vector_store(g.type, V, "&" + g.name + "[" + flat_index_vec(a, g, G) + "]",
                                      stores) +
                      ";");
          } else {
            const flat_access f = flatten(a, g, p_.dims.size());
            for (int l = 0; l < V; ++l)
              out_.line(g.name + "[" +
                        affine_expr(f.coeff, f.constant,
                                    [&](std::size_t d) {
                                      return d == G.dim ? "(eg + " + std::to_string(l) + ")"
                                                        : ev(d);
                                    }) +
                        "] = " + (p_.comp.epilogue ? vals[l] : stored(r, vals[l])) + ";");
          }
        }
        out_.line("continue;");
        out_.line("}");
        open_vec_lanes(G);
      } else {
        open_loop("r" + std::to_string(j), p_.dims[j].t_rm, true, "");
      }
      print_element(j);
    }
    std::string valid;
    for (auto j : outer) valid += (valid.empty() ? "" : " && ") + ("v" + std::to_string(j));
    if (valid.empty()) valid = "true";
    out_.line("if (" + valid + ") {");
    std::string ai = acc_index(outer);
    std::vector<std::string> vals;
    for (std::size_t r = 0; r < m; ++r) vals.push_back("acc" + std::to_string(r) + "[" + ai + "]");
    if (!p_.partials.empty()) {
      std::string rb = mixed_radix(p_.reduce_dims, "b", true);
      for (std::size_t r = 0; r < m; ++r)
        out_.line(p_.partials[r].name + "[(idx_t)(" + rb + ") * " + detail::num(p_.points) + " + " +
                  point_index() + "] = " + vals[r] + ";");
    } else {
      print_output_writes(vals, p_.blk_combine == block_combine_kind::atomic);
    }
    out_.line("}");
    for (std::size_t j = 0; j < outer.size() + (p_.vector_write ? 1 : 0); ++j) out_.line("}");
    out_.line("}");
  }

  // init: outputs := identity (before atomics); final_combine: outputs := (+) over partials.
  void print_aux(const kernel& k) {
    const std::size_t m = p_.results();
    bool init = k.kind == kernel_kind::init;
    out_.line(init ? "// Sets every output point to the identity before the atomic combines."
                   : "// Combines the blocks' partial results in a fixed order (deterministic).");
    for (auto& l : d_.kernel_open(p_, k, params())) out_.line(l);
    out_.line("for (idx_t p = " + d_.global_linear_id() + "; p < " + detail::num(p_.points) +
              "; p += " + d_.global_thread_count() + ") {");
    std::int64_t w = 1;
    std::vector<std::int64_t> W(p_.dims.size(), 0);
    for (std::size_t j = p_.dims.size(); j-- > 0;)
      if (p_.dims[j].role != dim_role::reduce) W[j] = w, w *= p_.dims[j].size;
    for (std::size_t j = 0; j < p_.dims.size(); ++j) {
      std::string J = std::to_string(j);
      if (p_.dims[j].role == dim_role::reduce)
        continue;
      else
        out_.line("const idx_t e" + J + " = (p / " + detail::num(W[j]) + ") % " +
                  detail::num(p_.dims[j].size) + ";");
    }
    if (init) {
      std::vector<std::string> vals;
      for (std::size_t r = 0; r < m; ++r) vals.push_back(identity(r));
      print_output_writes(vals, false);
    } else {
      print_combine_partials([](scalar_type, const std::string& x) { return x; }, 0);
    }
    out_.line("}");
    out_.line("}");
  }
};

inline std::string print_c(const kernel_plan& p, const c_dialect& d) {
  return c_printer(p, d).print();
}

}  // namespace mdh::lower

#include <mdh/lower/mma_printer.hpp>
#include <mdh/lower/producer_printer.hpp>
// after the printer it derives from
#include <mdh/lower/producer_mma_printer.hpp>
