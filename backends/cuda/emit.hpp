// SPDX-License-Identifier: MIT
// The CUDA C++ dialect of the C printer: kernel plan -> CUDA source for NVRTC.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <mdh/lower/c_printer.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::cuda {

class dialect final : public lower::c_dialect {
 public:
  using lower::c_dialect::prelude;
  std::string prelude(const std::vector<const lower::kernel_plan*>& plans) const override {
    auto any = [&](auto&& pred) { return std::any_of(plans.begin(), plans.end(), pred); };
    std::string s = "// CUDA C++ for NVRTC (no headers needed)\n";
    s += grid_dependency;
    if (any([](auto* p) { return lower::needs_conversion_helpers(p->comp); }))
      s += conversion_helpers(any([](auto* p) { return lower::converts_f64_to_float16(p->comp); }));
    if (any([](auto* p) {
          return std::any_of(p->vector_groups.begin(), p->vector_groups.end(),
                             [](const lower::vector_group& g) { return g.width == 8; });
        }))
      s += ushort8;
    if (any([](auto* p) { return p->mma.split_tf32; })) s += split_tf32_helpers;
    if (any([](auto* p) { return p->mma.on && (p->mma.a.shifted_copy || p->mma.b.shifted_copy); }))
      s += shift16;
    if (any([](auto* p) { return p->approx_math; })) s += approx_helpers;
    return s;
  }
  // Split TF32 (precision tf32x3, mdh::split_tf32_lo): hi = TF32(x) to nearest, ties away, and
  // lo = x - hi truncated to TF32, as bits. Integer arithmetic, no NaN test: sm_90 runs
  // cvt.rna.tf32.f32 as a sequence with one (four of the five instructions of a split), and a
  // NaN x reaches the sum through lo = x - hi, which stays NaN.
  static constexpr const char* split_tf32_helpers =
      "// split TF32: x = hi + lo + r, |r| < 2^-21 |x|; a NaN x leaves lo NaN\n"
      "static __device__ __forceinline__ unsigned int mdh_tf32_hi(float x) {\n"
      "  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;\n"
      "}\n"
      "static __device__ __forceinline__ unsigned int mdh_tf32_lo(float x, unsigned int hi) {\n"
      "  return __float_as_uint(x - __uint_as_float(hi)) & 0xffffe000u;\n"
      "}\n";
  // mma_operand::shifted_copy: the 16 bytes from byte s (2..14: even for 16-bit elements, a
  // multiple of 4 for floats) of the 32 bytes lo, hi, i.e. the chunk that starts s bytes into
  // lo. Selects and byte permutes, no indexing at run time (which would put the words in local
  // memory).
  static constexpr const char* shift16 =
      "// a 16-byte chunk that starts s bytes (even) into the aligned vector lo, hi its successor\n"
      "static __device__ __forceinline__ uint4 mdh_shift16(uint4 lo, uint4 hi, int s) {\n"
      "  unsigned int w0 = lo.x, w1 = lo.y, w2 = lo.z, w3 = lo.w, w4 = hi.x, w5 = hi.y, w6 = "
      "hi.z;\n"
      "  const unsigned int w7 = hi.w;\n"
      "  if (s & 8) w0 = w2, w1 = w3, w2 = w4, w3 = w5, w4 = w6, w5 = w7;\n"
      "  if (s & 4) w0 = w1, w1 = w2, w2 = w3, w3 = w4, w4 = w5;\n"
      "  if (s & 2)\n"
      "    w0 = __byte_perm(w0, w1, 0x5432), w1 = __byte_perm(w1, w2, 0x5432),\n"
      "    w2 = __byte_perm(w2, w3, 0x5432), w3 = __byte_perm(w3, w4, 0x5432);\n"
      "  return make_uint4(w0, w1, w2, w3);\n"
      "}\n";
  // Programmatic dependent launch (program::launch with `overlap`): a grid so launched may
  // start while the one before it on the stream finishes. Every kernel first waits until that
  // grid has completed and its writes are visible, so what overlaps is the launch and the
  // blocks' start, never a memory access; then it lets the next grid launch, whose blocks wait
  // the same way. Without the launch attribute both instructions do nothing.
  static constexpr const char* grid_dependency =
      "// Programmatic dependent launch: wait until the grid this one may overlap has finished\n"
      "// (its writes visible), then let the next grid start (no-ops without the launch "
      "attribute).\n"
      "static __device__ __forceinline__ void mdh_grid_dependency() {\n"
      "#if __CUDA_ARCH__ >= 900\n"
      "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
      "  asm volatile(\"griddepcontrol.launch_dependents;\");\n"
      "#endif\n"
      "}\n";
  std::string kernel_entry() const override { return "mdh_grid_dependency();"; }
  // kernel_plan::approx_math: ex2.approx of x * log2(e) (relative error below 2^-16 for
  // |x| < 88; results below 2^-126 flush to zero, as bf16's few subnormals then do) and
  // div.full.f32 (full range, 2 ulp).
  static constexpr const char* approx_helpers =
      "// float exp and division for results rounded to 16 bits: errors far below that rounding\n"
      "static __device__ __forceinline__ float mdh_exp_approx(float x) {\n"
      "  float y;\n"
      "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.44269504f));\n"
      "  return y;\n"
      "}\n"
      "static __device__ __forceinline__ float mdh_div_approx(float a, float b) {\n"
      "  float q;\n"
      "  asm(\"div.full.f32 %0, %1, %2;\" : \"=f\"(q) : \"f\"(a), \"f\"(b));\n"
      "  return q;\n"
      "}\n";
  std::string approx_math(ir::op o) const override {
    return o == ir::op::exp ? "mdh_exp_approx" : o == ir::op::div ? "mdh_div_approx" : "";
  }
  // Eight 16-bit elements as one 16-byte load or store (CUDA has no ushort8).
  static constexpr const char* ushort8 =
      "struct __align__(16) mdh_ushort8 {\n"
      "  unsigned short s[8];\n"
      "};\n"
      "static __device__ __forceinline__ mdh_ushort8 make_mdh_ushort8(\n"
      "    unsigned short a, unsigned short b, unsigned short c, unsigned short d,\n"
      "    unsigned short e, unsigned short f, unsigned short g, unsigned short h) {\n"
      "  mdh_ushort8 v = {{a, b, c, d, e, f, g, h}};\n"
      "  return v;\n"
      "}\n";
  // bf16/f16 as raw 16 bits, converted by the PTX cvt instructions (bf16 and tf32 need sm_80;
  // older architectures get the same rounding written out).
  static std::string conversion_helpers(bool f64_to_float16) {
    std::string s =
        "// bf16/f16 are stored as raw 16 bits and converted to and from float (round to nearest "
        "even).\n"
        "static __device__ __forceinline__ float mdh_bf16_to_float(unsigned short b) {\n"
        "  return __uint_as_float((unsigned int)b << 16);\n"
        "}\n"
        "static __device__ __forceinline__ unsigned short mdh_float_to_bf16(float f) {\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "  unsigned short b;\n"
        "  asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(b) : \"f\"(f));\n"
        "  return b;\n"
        "#else\n"
        "  unsigned int u = __float_as_uint(f);\n"
        "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
        "  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
        "#endif\n"
        "}\n"
        "static __device__ __forceinline__ float mdh_f16_to_float(unsigned short h) {\n"
        "  float f;\n"
        "  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
        "  return f;\n"
        "}\n"
        "static __device__ __forceinline__ unsigned short mdh_float_to_f16(float f) {\n"
        "  unsigned short h;\n"
        "  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
        "  return h;\n"
        "}\n"
        "// TF32 as the tensor cores read fp32: 10 fraction bits, to nearest, ties away from "
        "zero.\n"
        "static __device__ __forceinline__ float mdh_tf32(float f) {\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "  unsigned int t;\n"
        "  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(t) : \"f\"(f));\n"
        "  return __uint_as_float(t & 0xffffe000u);\n"
        "#else\n"
        "  unsigned int u = __float_as_uint(f);\n"
        "  if ((u & 0x7f800000u) == 0x7f800000u) return f;\n"
        "  return __uint_as_float((u + 0x1000u) & 0xffffe000u);\n"
        "#endif\n"
        "}\n";
    if (f64_to_float16)
      s += "// Round to odd: a second rounding to 16 bits then equals one rounding of the "
           "double.\n"
           "static __device__ __forceinline__ float mdh_double_to_float_odd(double d) {\n"
           "  float f = __double2float_rz(d);\n"
           "  return (double)f == d ? f : __uint_as_float(__float_as_uint(f) | 1u);\n"
           "}\n";
    return s;
  }
  std::string kernel_head(const lower::kernel_plan&, const lower::kernel& k) const override {
    std::int64_t threads = k.launch.block[0] * k.launch.block[1] * k.launch.block[2];
    std::string head =
        "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ") ";
    const std::int64_t* c = k.launch.cluster;
    if (c[0] * c[1] * c[2] > 1)  // compiled in: an ordinary launch forms the clusters
      head += "__cluster_dims__(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " +
              std::to_string(c[2]) + ") ";
    return head;
  }
  std::string func_qualifier() const override { return "static __device__ __forceinline__"; }
  std::string type(scalar_type t) const override { return std::string(c_name(t)); }
  std::string global_param(scalar_type t, bool is_const, bool no_alias) const override {
    return (is_const ? "const " : "") + type(t) + (no_alias ? "* __restrict__" : "*");
  }
  std::string local_ptr(scalar_type t) const override { return type(t) + "*"; }
  std::string shared_pool(std::int64_t) const override {
    // Dynamic: the launch passes the size (above 48 KB after cuFuncSetAttribute).
    return "extern __shared__ __align__(16) unsigned char mdh_smem[];";
  }
  std::string thread_id(int axis) const override {
    return std::string("(int)threadIdx.") + "xyz"[axis];
  }
  std::string block_id(int axis) const override {
    return std::string("(int)blockIdx.") + "xyz"[axis];
  }
  std::string global_linear_id() const override {
    return "(idx_t)blockIdx.x * blockDim.x + threadIdx.x";
  }
  std::string global_thread_count() const override { return "(idx_t)gridDim.x * blockDim.x"; }
  std::string barrier() const override { return "__syncthreads();"; }
  std::string barrier_with_global() const override { return "__syncthreads();"; }
  std::string math(ir::op o, scalar_type t) const override {
    std::string f = t == scalar_type::f32 ? "f" : "";
    switch (o) {
      case ir::op::exp:
        return "exp" + f;
      case ir::op::log:
        return "log" + f;
      case ir::op::sqrt:
        return "sqrt" + f;
      case ir::op::tanh:
        return "tanh" + f;
      case ir::op::erf:
        return "erf" + f;
      case ir::op::abs:
        return "fabs" + f;
      default:
        break;
    }
    throw internal_error("cuda::dialect::math: not a math function");
  }
  std::string infinity(scalar_type t) const override {
    return t == scalar_type::f32 ? "__int_as_float(0x7f800000)"
                                 : "__longlong_as_double(0x7ff0000000000000LL)";
  }
  std::string nan(scalar_type t) const override {
    return t == scalar_type::f32 ? "__int_as_float(0x7fffffff)"
                                 : "__longlong_as_double(0x7fffffffffffffffLL)";
  }
  std::string int64_suffix() const override { return "LL"; }
  bool has_shuffle() const override { return true; }
  std::string shuffle_xor(const std::string& mask, const std::string& v,
                          const std::string& offset) const override {
    return "__shfl_xor_sync(" + mask + ", " + v + ", " + offset + ")";
  }
  // 16-bit elements (raw bits) as ushort2/ushort4, or the prelude's 16-byte mdh_ushort8
  std::string vector_type(scalar_type t, int n) const override {
    if (size_of(t) == 2) return (n == 8 ? "mdh_ushort" : "ushort") + std::to_string(n);
    return (t == scalar_type::f32 ? "float" : "int") + std::to_string(n);
  }
  std::string local_vector_ptr(scalar_type t, int n) const override {
    return vector_type(t, n) + "*";
  }
  std::string vector_zero(scalar_type t, int n) const override {
    std::string z = t == scalar_type::f32 ? "0.0f" : "0", s;
    for (int k = 0; k < n; ++k) s += (k ? ", " : "") + z;
    return "make_" + vector_type(t, n) + "(" + s + ")";
  }
  std::string vector_load(scalar_type t, int n, const std::string& addr) const override {
    return "*(const " + vector_type(t, n) + "*)(" + addr + ")";
  }
  std::string vector_store(scalar_type t, int n, const std::string& addr,
                           const std::vector<std::string>& values) const override {
    std::string s;
    for (auto& v : values) s += (s.empty() ? "" : ", ") + v;
    return "*(" + vector_type(t, n) + "*)(" + addr + ") = make_" + vector_type(t, n) + "(" + s +
           ")";
  }
  std::string atomic_helper(const std::string& name, scalar_type t, ir::builtin kind,
                            const std::string& combine_expr) const override {
    std::string T = type(t);
    std::string s =
        "static __device__ __forceinline__ void " + name + "(" + T + "* p, " + T + " v) {\n";
    bool native_add = kind == ir::builtin::add && t != scalar_type::i64;
    bool native_minmax = (kind == ir::builtin::max || kind == ir::builtin::min) &&
                         (t == scalar_type::i32 || t == scalar_type::i64);
    if (native_add) {
      s += "  atomicAdd(p, v);\n";
    } else if (kind == ir::builtin::add) {
      s += "  atomicAdd((unsigned long long*)p, (unsigned long long)v);\n";
    } else if (native_minmax) {
      s += std::string("  ") + (kind == ir::builtin::max ? "atomicMax" : "atomicMin") + "(p, v);\n";
    } else {
      bool wide = size_of(t) == 8;
      std::string U = wide ? "unsigned long long" : "unsigned int";
      std::string to_t = t == scalar_type::f32   ? "__uint_as_float"
                         : t == scalar_type::f64 ? "__longlong_as_double"
                                                 : "(" + T + ")";
      std::string to_u = t == scalar_type::f32   ? "__float_as_uint"
                         : t == scalar_type::f64 ? "(unsigned long long)__double_as_longlong"
                                                 : "(" + U + ")";
      s += "  // no native atomic for this operator and type: compare-and-swap on its bits\n";
      s += "  " + U + "* a = (" + U + "*)p;\n  " + U + " old = *a, assumed;\n";
      s += "  do {\n    assumed = old;\n    const " + T + " cur = " + to_t + "(" +
           (t == scalar_type::f64 ? "(long long)assumed" : "assumed") + ");\n";
      s += "    const " + T + " nv = " + combine_expr + ";\n";
      s += "    old = atomicCAS(a, assumed, " + to_u + "(nv));\n  } while (assumed != old);\n";
    }
    return s + "}\n";
  }
  std::string global_fence() const override { return "__threadfence();"; }
  std::string shared_int(const std::string& name) const override {
    return "__shared__ int " + name + ";";
  }
  std::string atomic_inc(const std::string& addr) const override {
    return "atomicAdd(" + addr + ", 1)";
  }
  // ld.global.cg: cached in L2 only, so no stale L1 line (no __ldcg overload for bool).
  std::string coherent_load(scalar_type t, const std::string& lvalue) const override {
    if (t == scalar_type::boolean) return "*(const volatile bool*)&" + lvalue;
    return "__ldcg(&" + lvalue + ")";
  }
};

// The CUDA source of a plan (all its kernels in one translation unit).
inline std::string emit(const lower::kernel_plan& p) { return lower::print_c(p, dialect{}); }

}  // namespace mdh::cuda
