// SPDX-License-Identifier: MIT
// Contraction recognition: whether a computation is out[...] = sum over the pw(add) dimensions of
// A[...] * B[...] (a matmul in any affine disguise: batched, transposed, a convolution as an
// implicit GEMM, a tensor contraction), and the role of every dimension. The tensor-core path
// (mdh/lower/mma.hpp) needs one; when a computation is not one, the answer says why.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>

namespace mdh::ir {

// The role of a dimension in a contraction, from the index functions of the two operands.
enum class contraction_role : std::uint8_t {
  m,      // ++, read by A only (rows of the product)
  n,      // ++, read by B only (columns)
  batch,  // ++, read by both (a batch, or a dimension both operands slide along)
  free,   // ++, read by neither (a broadcast of the product)
  k,      // pw(add), read by both: the contracted dimension
  k_one,  // pw(add), read by one operand only (summed along with k)
};

constexpr const char* to_string(contraction_role r) {
  switch (r) {
    case contraction_role::m:
      return "M";
    case contraction_role::n:
      return "N";
    case contraction_role::batch:
      return "batch";
    case contraction_role::free:
      return "free";
    case contraction_role::k:
      return "K";
    case contraction_role::k_one:
      return "K (one operand)";
  }
  return "?";
}

// One operand of the product: argument `arg` of f, which is access `access` of input `input`.
struct contraction_operand {
  std::size_t arg = 0, input = 0, access = 0;
  scalar_type type = scalar_type::f32;  // the stored element type
  friend bool operator==(const contraction_operand&, const contraction_operand&) = default;
};

struct contraction {
  contraction_operand a, b;             // f = a * b (through widening casts)
  std::vector<contraction_role> roles;  // per dimension
  std::vector<std::size_t> dims_of(contraction_role r) const {
    std::vector<std::size_t> v;
    for (std::size_t d = 0; d < roles.size(); ++d)
      if (roles[d] == r) v.push_back(d);
    return v;
  }
  friend bool operator==(const contraction&, const contraction&) = default;
};

// The result of recognition: the contraction, or why `c` is not one.
struct contraction_match {
  std::optional<contraction> value;
  std::string why_not;  // empty when value is set
  explicit operator bool() const { return value.has_value(); }
};

namespace detail {

inline bool uses_dim(const access& a, std::size_t d) {
  for (auto& x : a.index)
    if (x.uses(d)) return true;
  return false;
}

// The argument a node reads through casts that only widen to f32 (bf16/f16 -> f32, f32 -> f32),
// or -1 when it reads anything else.
inline int widened_arg(const scalar_function& f, int node) {
  for (;;) {
    const ir::node& n = f.nodes.at(std::size_t(node));
    if (n.kind == op::arg) return n.index;
    if (n.kind != op::cast || n.type != scalar_type::f32) return -1;
    const scalar_type from = f.nodes.at(std::size_t(n.a)).type;
    if (from != scalar_type::f32 && !is_float16(from)) return -1;
    node = n.a;
  }
}

}  // namespace detail

// Recognises `c` as a contraction (see the header comment).
inline contraction_match recognize_contraction(const computation& c) {
  auto no = [&](std::string why) {
    return contraction_match{std::nullopt, "'" + c.name + "' is not a contraction: " + why};
  };
  if (c.outputs.size() != 1 || c.f.results.size() != 1) return no("it has more than one result");
  if (!c.has_reduction()) return no("it has no pw(add) dimension");
  if (c.reduction.kind != builtin::add)
    return no("its reduction operator is '" + c.reduction.name + "', not add");
  for (auto& d : c.dims)
    if (d.combine == combine_kind::prefix_sum)
      return no("dimension '" + d.name + "' is a prefix sum");
  const node& r = c.f.nodes.at(std::size_t(c.f.results[0]));
  if (r.kind != op::mul) return no("its scalar function is not a product of two inputs");
  if (r.type != scalar_type::f32)
    return no("its product is computed in " + std::string(short_name(r.type)) +
              ", not f32 (the tensor cores accumulate in f32)");
  const int x = detail::widened_arg(c.f, r.a), y = detail::widened_arg(c.f, r.b);
  if (x < 0 || y < 0)
    return no("a factor of its product is not an input read through widening casts");
  // argument index -> (input, access), in the order the inputs list their accesses
  auto operand = [&](int arg) {
    contraction_operand o;
    o.arg = std::size_t(arg);
    std::size_t k = 0;
    for (std::size_t b = 0; b < c.inputs.size(); ++b)
      for (std::size_t a = 0; a < c.inputs[b].accesses.size(); ++a, ++k)
        if (k == o.arg) o.input = b, o.access = a, o.type = c.inputs[b].type;
    return o;
  };
  contraction ct;
  ct.a = operand(x), ct.b = operand(y);
  if (x == y) return no("both factors are the same input access");
  const access& A = c.inputs[ct.a.input].accesses[ct.a.access];
  const access& B = c.inputs[ct.b.input].accesses[ct.b.access];
  bool has_k = false;
  for (std::size_t d = 0; d < c.rank(); ++d) {
    const bool in_a = detail::uses_dim(A, d), in_b = detail::uses_dim(B, d);
    if (c.is_reduction(d)) {
      ct.roles.push_back(in_a && in_b ? contraction_role::k : contraction_role::k_one);
      has_k |= in_a && in_b;
    } else {
      ct.roles.push_back(in_a && in_b ? contraction_role::batch
                         : in_a       ? contraction_role::m
                         : in_b       ? contraction_role::n
                                      : contraction_role::free);
    }
  }
  if (!has_k) return no("no pw(add) dimension is read by both factors");
  return contraction_match{ct, ""};
}

}  // namespace mdh::ir
