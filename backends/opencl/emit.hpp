// SPDX-License-Identifier: MIT
// The OpenCL C 1.2 dialect of the C printer: kernel plan -> OpenCL source.
#pragma once

#include <string>
#include <vector>

#include <mdh/lower/c_printer.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::opencl {

class dialect final : public lower::c_dialect {
 public:
  using lower::c_dialect::prelude;
  std::string prelude(const std::vector<const lower::kernel_plan*>& plans) const override {
    bool f64 = false, helpers = false, f64_to_float16 = false;
    auto scan = [&](scalar_type t) { f64 = f64 || t == scalar_type::f64; };
    for (auto* p : plans) {
      for (auto& b : p->inputs) scan(b.type);
      for (auto& b : p->outputs) scan(b.type);
      for (auto& n : p->comp.f.nodes) scan(n.type);
      for (auto& n : p->comp.reduction.custom.nodes) scan(n.type);
      helpers = helpers || lower::needs_conversion_helpers(p->comp);
      f64_to_float16 = f64_to_float16 || lower::converts_f64_to_float16(p->comp);
    }
    std::string s = "// OpenCL C 1.2\n";
    if (f64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    if (helpers) s += conversion_helpers(f64_to_float16);
    return s;
  }
  // bf16/f16 as raw 16 bits (ushort). f16 converts through `half` where the device has
  // cl_khr_fp16 (MDH_NO_NATIVE_F16 turns that off); otherwise, and for bf16 and tf32 always,
  // the rounding is written out here, so a CPU device (PoCL) runs every type.
  static std::string conversion_helpers(bool f64_to_float16) {
    std::string s =
        "// bf16/f16 are stored as raw 16 bits and converted to and from float (round to nearest "
        "even).\n"
        "static inline float mdh_bf16_to_float(ushort b) { return as_float((uint)b << 16); }\n"
        "static inline ushort mdh_float_to_bf16(float f) {\n"
        "  uint u = as_uint(f);\n"
        "  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);\n"
        "  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
        "}\n"
        "#if defined(cl_khr_fp16) && !defined(MDH_NO_NATIVE_F16)\n"
        "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
        "static inline float mdh_f16_to_float(ushort h) { return convert_float(as_half(h)); }\n"
        "static inline ushort mdh_float_to_f16(float f) { return as_ushort(convert_half_rte(f)); "
        "}\n"
        "#else\n"
        "static inline float mdh_f16_to_float(ushort h) {\n"
        "  uint s = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
        "  if (e == 0x1fu) return as_float(s | 0x7f800000u | (m << 13));\n"
        "  if (e == 0u) return as_float(s | as_uint((float)m * 5.9604644775390625e-8f));\n"
        "  return as_float(s | ((e + 112u) << 23) | (m << 13));\n"
        "}\n"
        "static inline ushort mdh_float_to_f16(float f) {\n"
        "  uint u = as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
        "  if (a > 0x7f800000u) return (ushort)(s | 0x7e00u);\n"
        "  if (a >= 0x477ff000u) return (ushort)(s | 0x7c00u);\n"
        "  if (a >= 0x38800000u) {\n"
        "    uint r = a - 0x38000000u;\n"
        "    return (ushort)(s | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));\n"
        "  }\n"
        "  return (ushort)(s | (uint)rint(as_float(a) * 16777216.0f));\n"
        "}\n"
        "#endif\n"
        "// TF32 as the tensor cores read fp32: 10 fraction bits, to nearest, ties away from "
        "zero.\n"
        "static inline float mdh_tf32(float f) {\n"
        "  uint u = as_uint(f);\n"
        "  if ((u & 0x7f800000u) == 0x7f800000u) return f;\n"
        "  return as_float((u + 0x1000u) & 0xffffe000u);\n"
        "}\n";
    if (f64_to_float16)
      s += "// Round to odd: a second rounding to 16 bits then equals one rounding of the "
           "double.\n"
           "static inline float mdh_double_to_float_odd(double d) {\n"
           "  float f = convert_float_rtz(d);\n"
           "  return (double)f == d ? f : as_float(as_uint(f) | 1u);\n"
           "}\n";
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
    if (is_float16(t)) return "ushort";  // raw bits: see conversion_helpers
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
