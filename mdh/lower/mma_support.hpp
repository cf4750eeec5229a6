// SPDX-License-Identifier: MIT
// Whether the tensor-core path applies to a computation, and with which mma.sync instruction:
// a contraction (mdh/ir/contraction.hpp) whose factors are both bf16 (m16n8k16.bf16), both f16
// (m16n8k16.f16), or both f32 read at TF32 precision (m16n8k8.tf32; the user's choice,
// computation::with_precision) or computed as three TF32 products of split operands
// (precision tf32x3, m16n8k8.tf32 three times, near-fp32 accuracy). fp32 read as IEEE has no
// tensor-core path: that would be TF32 without being asked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/contraction.hpp>
#include <mdh/lower/mma_plan.hpp>

namespace mdh::lower {

struct mma_support {
  std::optional<ir::contraction> contraction;
  std::optional<mma_instruction> instruction;
  std::string why_not;  // empty when instruction is set
  explicit operator bool() const { return instruction.has_value(); }
};

inline mma_support mma_supported(const ir::computation& c) {
  mma_support s;
  ir::contraction_match m = ir::recognize_contraction(c);
  if (!m) {
    s.why_not = m.why_not;
    return s;
  }
  s.contraction = m.value;
  const scalar_type ta = m.value->a.type, tb = m.value->b.type;
  if (ta != tb) {
    s.why_not = "the factors of '" + c.name + "' are " + std::string(short_name(ta)) + " and " +
                std::string(short_name(tb)) + ": tensor cores need one type";
  } else if (ta == scalar_type::bf16) {
    s.instruction = mma_instruction::m16n8k16_bf16;
  } else if (ta == scalar_type::f16) {
    s.instruction = mma_instruction::m16n8k16_f16;
  } else if (ta == scalar_type::f32 && (ir::reads_tf32(c) || ir::splits_tf32(c))) {
    s.instruction = mma_instruction::m16n8k8_tf32;
  } else if (ta == scalar_type::f32) {
    s.why_not = "'" + c.name +
                "' reads f32 at IEEE precision: tensor cores need bf16, f16, or TF32 chosen with "
                "with_precision(mdh::ir::precision::tf32) (or tf32x3: three TF32 products, fp32 "
                "accuracy)";
  } else {
    s.why_not = "the factors of '" + c.name + "' are " + std::string(short_name(ta)) +
                ": tensor cores need bf16, f16 or TF32-read f32";
  }
  if (!s.instruction) return s;
  if (m.value->dims_of(ir::contraction_role::m).empty() ||
      m.value->dims_of(ir::contraction_role::n).empty()) {
    s.instruction.reset();
    s.why_not = "'" + c.name +
                "' needs a ++ dimension read by one factor only on each side (an M and an N "
                "dimension); it is a matrix-vector product or a batched dot product";
  }
  return s;
}

// The dimensions of one axis of the product (M, N or K) from mma_config's `innermost` (mma_m,
// mma_n, mma_k) and `fuse` mask (mma_fuse_*), outermost first: the fused dimensions in dimension
// order, then the innermost. The axis' index is row-major over them.
inline std::vector<std::size_t> mma_axis(std::int64_t innermost, std::int64_t fuse,
                                         std::size_t rank) {
  std::vector<std::size_t> v;
  for (std::size_t d = 0; d < rank && d < 63; ++d)
    if (std::int64_t(d) != innermost && ((fuse >> d) & 1) != 0) v.push_back(d);
  v.push_back(std::size_t(innermost));
  return v;
}

}  // namespace mdh::lower
