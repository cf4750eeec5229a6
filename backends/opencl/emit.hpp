// SPDX-License-Identifier: MIT
// The OpenCL C 1.2 dialect of the C printer: kernel plan -> OpenCL source.
#pragma once

#include <string>

#include <mdh/lower/c_printer.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::opencl {

class dialect final : public lower::c_dialect {
 public:
  std::string prelude(const lower::kernel_plan& p) const override {
    bool f64 = false;
    auto scan = [&](scalar_type t) { f64 = f64 || t == scalar_type::f64; };
    for (auto& b : p.inputs) scan(b.type);
    for (auto& b : p.outputs) scan(b.type);
    for (auto& n : p.comp.f.nodes) scan(n.type);
    for (auto& n : p.comp.reduction.custom.nodes) scan(n.type);
    std::string s = "// OpenCL C 1.2\n";
    if (f64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    return s;
  }
  std::string kernel_head(const lower::kernel_plan&, const lower::kernel& k) const override {
    return "__kernel __attribute__((reqd_work_group_size(" + std::to_string(k.launch.block[0]) +
           ", " + std::to_string(k.launch.block[1]) + ", " + std::to_string(k.launch.block[2]) +
           "))) void ";
  }
  std::string func_qualifier() const override { return "static inline"; }
  // OpenCL C's 64-bit integer is `long`; every other name is the C one.
  std::string type(scalar_type t) const override {
    return t == scalar_type::i64 ? "long" : std::string(c_name(t));
  }
  std::string global_param(scalar_type t, bool is_const, bool no_alias) const override {
    // bool is not allowed in kernel arguments: such buffers travel as uchar.
    std::string e = t == scalar_type::boolean ? "uchar" : type(t);
    return std::string("__global ") + (is_const ? "const " : "") + e +
           (no_alias ? "* restrict" : "*");
  }
  std::string local_ptr(scalar_type t) const override { return "__local " + type(t) + "*"; }
  std::string shared_pool(std::int64_t bytes) const override {
    return "__local uchar mdh_smem[" + std::to_string(bytes) + "] __attribute__((aligned(16)));";
  }
  std::string thread_id(int axis) const override {
    return "(int)get_local_id(" + std::to_string(axis) + ")";
  }
  std::string block_id(int axis) const override {
    return "(int)get_group_id(" + std::to_string(axis) + ")";
  }
  std::string global_linear_id() const override { return "(idx_t)get_global_id(0)"; }
  std::string global_thread_count() const override { return "(idx_t)get_global_size(0)"; }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE);"; }
  std::string barrier_with_global() const override {
    return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);";
  }
  std::string math(ir::op o, scalar_type) const override {
    switch (o) {
      case ir::op::exp:
        return "exp";
      case ir::op::log:
        return "log";
      case ir::op::sqrt:
        return "sqrt";
      case ir::op::tanh:
        return "tanh";
      case ir::op::erf:
        return "erf";
      case ir::op::abs:
        return "fabs";
      default:
        break;
    }
    throw internal_error("opencl::dialect::math: not a math function");
  }
  std::string infinity(scalar_type t) const override {
    return t == scalar_type::f32 ? "INFINITY" : "((double)INFINITY)";
  }
  std::string nan(scalar_type t) const override {
    return t == scalar_type::f32 ? "NAN" : "((double)NAN)";
  }
  std::string int64_suffix() const override { return "L"; }
  bool has_shuffle() const override { return false; }
  std::string shuffle_xor(const std::string&, const std::string&,
                          const std::string&) const override {
    throw internal_error("OpenCL 1.2 has no warp shuffles");
  }
  std::string local_vector_ptr(scalar_type t, int n) const override {
    return "__local " + vector_type(t, n) + "*";
  }
  std::string vector_type(scalar_type t, int n) const override {
    return type(t) + std::to_string(n);
  }
  std::string vector_zero(scalar_type t, int n) const override {
    return "(" + vector_type(t, n) + ")(" + (t == scalar_type::f32 ? "0.0f" : "0") + ")";
  }
  std::string vector_load(scalar_type, int n, const std::string& addr) const override {
    return "vload" + std::to_string(n) + "(0, " + addr + ")";
  }
  std::string vector_store(scalar_type t, int n, const std::string& addr,
                           const std::vector<std::string>& values) const override {
    std::string s;
    for (auto& v : values) s += (s.empty() ? "" : ", ") + v;
    return "vstore" + std::to_string(n) + "((" + vector_type(t, n) + ")(" + s + "), 0, " + addr +
           ")";
  }
  // 32-bit types only (check() refuses others for non-CUDA devices): a CAS loop on uint.
  std::string atomic_helper(const std::string& name, scalar_type t, ir::builtin kind,
                            const std::string& combine_expr) const override {
    std::string T = type(t);
    std::string s = "static inline void " + name + "(__global " + T + "* p, " + T + " v) {\n";
    if (t == scalar_type::i32 && kind == ir::builtin::add) {
      s += "  atomic_add((volatile __global int*)p, v);\n";
    } else if (t == scalar_type::i32 && kind == ir::builtin::max) {
      s += "  atomic_max((volatile __global int*)p, v);\n";
    } else if (t == scalar_type::i32 && kind == ir::builtin::min) {
      s += "  atomic_min((volatile __global int*)p, v);\n";
    } else {
      std::string as = t == scalar_type::f32 ? "as_float" : "as_int";
      s += "  // no atomics on this type: compare-and-swap on its bits\n";
      s += "  volatile __global uint* a = (volatile __global uint*)p;\n";
      s += "  uint old = *a, assumed;\n";
      s += "  do {\n    assumed = old;\n    const " + T + " cur = " + as + "(assumed);\n";
      s += "    const " + T + " nv = " + combine_expr + ";\n";
      s += "    old = atomic_cmpxchg(a, assumed, as_uint(nv));\n  } while (assumed != old);\n";
    }
    return s + "}\n";
  }
  std::string global_fence() const override { return "mem_fence(CLK_GLOBAL_MEM_FENCE);"; }
  // OpenCL C 1.2 allows __local variables only at kernel function scope: printed there.
  std::string shared_int(const std::string& name) const override {
    return "__local int " + name + ";";
  }
  std::string atomic_inc(const std::string& addr) const override {
    return "atomic_inc(" + addr + ")";
  }
  std::string coherent_load(scalar_type t, const std::string& lvalue) const override {
    std::string e = t == scalar_type::boolean ? "uchar" : type(t);  // as in global_param
    return "*(volatile __global const " + e + "*)&" + lvalue;
  }
};

// The OpenCL C source of a plan (all its kernels in one program).
inline std::string emit(const lower::kernel_plan& p) { return lower::print_c(p, dialect{}); }

}  // namespace mdh::opencl
