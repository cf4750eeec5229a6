// SPDX-License-Identifier: MIT
// The scalar function as data: a flat pool of typed nodes (children by index), shared by
// the md_hom's scalar function and custom combine operators.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/scalar_type.hpp>

namespace mdh::ir {

enum class op : std::uint8_t {
  // leaves
  arg,       // the value of argument `index` (an input access, or a combine operand)
  constant,  // `value` converted to `type`
  // unary
  neg,
  logical_not,
  exp,
  log,
  sqrt,
  tanh,
  erf,
  abs,
  cast,
  // binary
  add,
  sub,
  mul,
  div,
  min,
  max,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  logical_and,
  logical_or,
  // ternary
  select,
};

constexpr int arity(op o) {
  if (o == op::arg || o == op::constant) return 0;
  if (o <= op::cast) return 1;
  if (o <= op::logical_or) return 2;
  return 3;
}

constexpr std::string_view name(op o) {
  constexpr std::string_view names[] = {"arg",  "const", "neg", "not",  "exp",   "log", "sqrt",
                                        "tanh", "erf",   "abs", "cast", "add",   "sub", "mul",
                                        "div",  "min",   "max", "lt",   "le",    "gt",  "ge",
                                        "eq",   "ne",    "and", "or",   "select"};
  return names[static_cast<int>(o)];
}

struct node {
  op kind = op::constant;
  scalar_type type = scalar_type::f32;
  int a = -1, b = -1, c = -1;  // children (indices into the pool), by arity
  int index = -1;              // for op::arg
  double value = 0;            // for op::constant (exact for all i32 and for |i64| < 2^53)
  friend bool operator==(const node&, const node&) = default;
};

// A function (arg_0..arg_{n-1}) -> (result_0..result_{m-1}) as a node pool.
struct scalar_function {
  std::vector<scalar_type> arg_types;
  std::vector<node> nodes;
  std::vector<int> results;  // node index of each result

  int add(node n) {
    int k = arity(n.kind);
    if ((k > 0 && (n.a < 0 || n.a >= int(nodes.size()))) ||
        (k > 1 && (n.b < 0 || n.b >= int(nodes.size()))) ||
        (k > 2 && (n.c < 0 || n.c >= int(nodes.size()))))
      throw internal_error("scalar_function::add: child index out of range");
    nodes.push_back(n);
    return int(nodes.size()) - 1;
  }
  scalar_type result_type(std::size_t r) const { return nodes.at(results.at(r)).type; }
  friend bool operator==(const scalar_function&, const scalar_function&) = default;
};

// Reads a node's children in evaluation order (used by printers and interpreters).
inline std::vector<int> children(const node& n) {
  switch (arity(n.kind)) {
    case 1:
      return {n.a};
    case 2:
      return {n.a, n.b};
    case 3:
      return {n.a, n.b, n.c};
    default:
      return {};
  }
}

}  // namespace mdh::ir
