// SPDX-License-Identifier: MIT
// An epilogue: a point-wise computation (every dimension ++) applied to a computation's results
// after its last combine, while they are still in registers, writing its own outputs instead of
// the computation's (GEMM + bias + GELU: the sum over k, then gelu(C + bias) per element). Its
// dimensions are the computation's ++ and ps dimensions, in order; its index functions are stored
// over all of the computation's dimensions (zero coefficients on the pw ones), so every backend
// and kernel path reads its inputs and writes its outputs at the element coordinates e<d> it
// already has. Built and checked by ir::with_epilogue (mdh/ir/with_epilogue.hpp).
#pragma once

#include <string>
#include <vector>

#include <mdh/ir/buffer.hpp>
#include <mdh/ir/scalar_expr.hpp>

namespace mdh::ir {

struct pointwise_epilogue {
  std::string name;  // the point-wise computation's name ("bias_gelu")
  // Its inputs, in its order. An input with result_of[b] = r is the computation's output r,
  // read once through the index function r is written with: the kernel passes result r's value
  // (converted to the output's element type, as a store and a load would) instead of loading
  // it. Every other input is a buffer of its own, a parameter of the kernel after the
  // computation's inputs.
  std::vector<buffer> inputs;
  std::vector<int> result_of;  // per input: the computation's output index, or -1
  std::vector<buffer> outputs;
  // The point-wise scalar function: args = the inputs' accesses, buffer by buffer (as
  // computation::f); one result per output.
  scalar_function f;
  friend bool operator==(const pointwise_epilogue&, const pointwise_epilogue&) = default;
};

}  // namespace mdh::ir
