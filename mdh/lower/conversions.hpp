// SPDX-License-Identifier: MIT
// Element-type conversions in generated C, for both dialects. bf16 and f16 live in kernels as
// their raw 16 bits (unsigned short / ushort) and are only ever converted, never computed on:
// the dialects define the helper functions (in their prelude, when a plan needs them)
//   float mdh_bf16_to_float(bits), bits mdh_float_to_bf16(float)   round to nearest even
//   float mdh_f16_to_float(bits),  bits mdh_float_to_f16(float)    round to nearest even
//   float mdh_double_to_float_odd(double)   round to odd: a second rounding to 16 bits is exact
//   float mdh_tf32(float)                   TF32, to nearest, ties away (cvt.rna.tf32.f32)
// and the printer spells every conversion through convert_expr.
#pragma once

#include <string>

#include <mdh/ir/computation.hpp>

namespace mdh::lower {

// True when any buffer, argument or node of c has a 16-bit floating type.
inline bool uses_float16(const ir::computation& c) {
  for (auto* bufs : {&c.inputs, &c.outputs})
    for (auto& b : *bufs)
      if (is_float16(b.type)) return true;
  for (auto* f : {&c.f, &c.reduction.custom})
    for (auto& n : f->nodes)
      if (is_float16(n.type)) return true;
  return false;
}

// True when the generated source needs the helper functions above.
inline bool needs_conversion_helpers(const ir::computation& c) {
  return uses_float16(c) || ir::reads_tf32(c) || ir::splits_tf32(c);
}

// True when c converts an f64 value to bf16/f16 (needs mdh_double_to_float_odd).
inline bool converts_f64_to_float16(const ir::computation& c) {
  for (auto* f : {&c.f, &c.reduction.custom})
    for (auto& n : f->nodes)
      if (n.kind == ir::op::cast && is_float16(n.type) && f->nodes[n.a].type == scalar_type::f64)
        return true;
  for (std::size_t r = 0; r < c.outputs.size(); ++r)
    if (is_float16(c.outputs[r].type) && c.f.result_type(r) == scalar_type::f64) return true;
  return false;
}

// True when a function of c (f, the custom operator, the epilogue's f) computes a float exp or
// division: what kernel_plan::approx_math approximates.
inline bool uses_f32_exp_or_division(const ir::computation& c) {
  for (auto* f : {&c.f, &c.reduction.custom, c.epilogue ? &c.epilogue->f : nullptr})
    if (f)
      for (auto& n : f->nodes)
        if ((n.kind == ir::op::exp || n.kind == ir::op::div) && n.type == scalar_type::f32)
          return true;
  return false;
}

// The C expression converting `e` of type `from` to type `to`, spelled `to_spelling`. Between
// types other than bf16/f16 a C cast (what fp32 kernels have always printed).
inline std::string convert_expr(const std::string& e, scalar_type from, scalar_type to,
                                const std::string& to_spelling) {
  if (from == to) return e;
  if (!is_float16(from) && !is_float16(to)) return "(" + to_spelling + ")" + e;
  std::string f;  // e as a float
  if (is_float16(from))
    f = "mdh_" + std::string(short_name(from)) + "_to_float(" + e + ")";
  else if (from == scalar_type::f32)
    f = e;
  else if (from == scalar_type::f64)
    f = "mdh_double_to_float_odd(" + e + ")";  // round to odd, then once to 16 bits: exact
  else
    f = "(float)" + e;
  if (is_float16(to)) return "mdh_float_to_" + std::string(short_name(to)) + "(" + f + ")";
  return to == scalar_type::f32 ? f : "(" + to_spelling + ")" + f;
}

// An input element as f reads it: rounded to TF32 when c reads f32 inputs at that precision.
inline std::string read_input_expr(const ir::computation& c, const std::string& e, scalar_type t) {
  return ir::reads_tf32(c) && t == scalar_type::f32 ? "mdh_tf32(" + e + ")" : e;
}

}  // namespace mdh::lower
