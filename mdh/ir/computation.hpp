// SPDX-License-Identifier: MIT
// The runtime description of a computation out_view ∘ md_hom ∘ inp_view that backends lower:
// dimensions with their combine operators, buffers with element types and affine index maps,
// and the scalar function as a node tree. Plain data: copyable, comparable, printable, hashable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/buffer.hpp>
#include <mdh/ir/epilogue.hpp>
#include <mdh/ir/scalar_expr.hpp>
#include <mdh/ir/scalar_type.hpp>

namespace mdh::ir {

enum class combine_kind : std::uint8_t {
  concat,      // ++ : parallel dimension, each part writes its own slice
  pointwise,   // pw(op): reduction dimension, output extent 1
  prefix_sum,  // ps(op): scan dimension, output keeps the extent
};

enum class builtin : std::uint8_t { none, add, mul, max, min, custom };

// The operator ⊕ of pw/ps, shared by all non-concat dimensions (Lemma 1 of the MDH papers).
struct reduction_operator {
  builtin kind = builtin::none;
  std::string name;              // "add", ..., or the custom operator's name
  scalar_function custom;        // for builtin::custom: (lhs_0..lhs_{m-1}, rhs_0..rhs_{m-1}) -> m
  std::vector<double> identity;  // one per result component (for custom; builtins derive it)
  friend bool operator==(const reduction_operator&, const reduction_operator&) = default;
};

struct dimension {
  std::string name;  // "d0", "d1", ... or the user's placeholder name
  combine_kind combine = combine_kind::concat;
  friend bool operator==(const dimension&, const dimension&) = default;
};

// How f32 input elements are read. ieee: as stored. tf32: rounded to TF32 (10 fraction bits,
// to nearest, ties away from zero: cvt.rna.tf32.f32) first, as tensor cores read fp32
// operands; arithmetic and accumulation stay fp32. tf32x3: as stored, at near-fp32 accuracy, and on
// the tensor cores each product x*y is three TF32 products of the split operands (x = hi + lo,
// hi = tf32(x), lo = x - hi truncated to TF32: hi*hi + hi*lo + lo*hi; what is left out is below
// 2^-19 |x*y|,
// docs/expressions.md). The user's choice, never implied: it is set with
// computation::with_precision and is part of the structural hash.
enum class precision : std::uint8_t { ieee, tf32, tf32x3 };

constexpr const char* to_string(precision p) {
  return p == precision::tf32 ? "tf32" : p == precision::tf32x3 ? "tf32x3" : "ieee";
}

struct computation {
  std::string name;
  std::vector<dimension> dims;
  reduction_operator reduction;  // used by every pointwise / prefix_sum dimension
  std::vector<buffer> inputs;    // scalar function args: inputs[0].accesses..., inputs[1]...
  std::vector<buffer> outputs;   // result r is written to outputs[r]
  scalar_function f;
  precision input_precision = precision::ieee;
  // A point-wise computation applied to the results after the last combine, in registers
  // (mdh/ir/epilogue.hpp); the kernel then writes its outputs instead of `outputs`.
  std::optional<pointwise_epilogue> epilogue;

  std::size_t rank() const { return dims.size(); }
  bool is_reduction(std::size_t d) const { return dims.at(d).combine != combine_kind::concat; }
  bool has_reduction() const {
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (is_reduction(d)) return true;
    return false;
  }
  std::size_t num_args() const {
    std::size_t n = 0;
    for (auto& b : inputs) n += b.accesses.size();
    return n;
  }
  friend bool operator==(const computation&, const computation&) = default;
};

// True when the f32 inputs of c are read at TF32 precision.
inline bool reads_tf32(const computation& c) { return c.input_precision == precision::tf32; }
// True when c's products are three TF32 products of split operands on the tensor cores (fp32
// accuracy; everywhere else c computes as ieee does).
inline bool splits_tf32(const computation& c) { return c.input_precision == precision::tf32x3; }

// Identity of a built-in reduction for an element type (for custom operators: stored).
double identity_of(const reduction_operator& r, std::size_t component, scalar_type t);

// The shape of a buffer for the given md_hom sizes: per buffer dimension, max index + 1.
// Throws mdh::error when an index function reaches below 0.
std::vector<std::int64_t> buffer_shape(const computation& c, const buffer& b,
                                       const std::vector<std::int64_t>& sizes);

// Checks the structural rules (arity, types, output index functions not using reduction
// dimensions, one prefix-sum dimension at most, ...); throws mdh::error naming the culprit.
void validate(const computation& c);

}  // namespace mdh::ir

#include <mdh/ir/detail/computation_impl.hpp>
