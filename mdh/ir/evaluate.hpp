// SPDX-License-Identifier: MIT
// A type-faithful interpreter of a scalar_function: each node is computed in its own type
// (float arithmetic rounds to float, integer division truncates), as generated code would.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include <mdh/ir/scalar_expr.hpp>

namespace mdh::ir {

// Rounds/truncates a double to what a value of type t can hold.
inline double to_type(double v, scalar_type t) {
  switch (t) {
    case scalar_type::f32:
      return double(float(v));
    case scalar_type::f64:
      return v;
    case scalar_type::i32:
      return double(std::int32_t(v));
    case scalar_type::i64:
      return double(std::int64_t(v));
    case scalar_type::boolean:
      return v != 0 ? 1.0 : 0.0;
    case scalar_type::bf16:
      return bf16_bits_to_float(bf16_bits_from(v));
    case scalar_type::f16:
      return f16_bits_to_float(f16_bits_from(v));
  }
  return v;
}

inline std::vector<double> evaluate(const scalar_function& f, std::span<const double> args) {
  if (args.size() != f.arg_types.size())
    throw error("evaluate: scalar function takes " + std::to_string(f.arg_types.size()) +
                " arguments, got " + std::to_string(args.size()));
  std::vector<double> v(f.nodes.size());
  for (std::size_t n = 0; n < f.nodes.size(); ++n) {
    const node& x = f.nodes[n];
    double a = x.a >= 0 ? v[x.a] : 0, b = x.b >= 0 ? v[x.b] : 0, c = x.c >= 0 ? v[x.c] : 0;
    bool integral = !is_floating(x.type);
    double r = 0;
    switch (x.kind) {
      case op::arg:
        r = args[x.index];
        break;
      case op::constant:
        r = x.value;
        break;
      case op::neg:
        r = -a;
        break;
      case op::logical_not:
        r = a == 0;
        break;
      case op::exp:
        r = std::exp(a);
        break;
      case op::log:
        r = std::log(a);
        break;
      case op::sqrt:
        r = std::sqrt(a);
        break;
      case op::tanh:
        r = std::tanh(a);
        break;
      case op::erf:
        r = std::erf(a);
        break;
      case op::abs:
        r = std::fabs(a);
        break;
      case op::cast:
        r = a;
        break;
      case op::add:
        r = a + b;
        break;
      case op::sub:
        r = a - b;
        break;
      case op::mul:
        r = a * b;
        break;
      case op::div:
        if (integral) {
          if (b == 0) throw error("evaluate: integer division by zero");
          r = double(std::int64_t(a) / std::int64_t(b));
        } else {
          r = a / b;
        }
        break;
      case op::min:
        r = b < a ? b : a;
        break;
      case op::max:
        r = a < b ? b : a;
        break;
      case op::lt:
        r = a < b;
        break;
      case op::le:
        r = a <= b;
        break;
      case op::gt:
        r = a > b;
        break;
      case op::ge:
        r = a >= b;
        break;
      case op::eq:
        r = a == b;
        break;
      case op::ne:
        r = a != b;
        break;
      case op::logical_and:
        r = (a != 0) && (b != 0);
        break;
      case op::logical_or:
        r = (a != 0) || (b != 0);
        break;
      case op::select:
        r = a != 0 ? b : c;
        break;
    }
    v[n] = to_type(r, x.type);
  }
  std::vector<double> out;
  for (int r : f.results) out.push_back(v[r]);
  return out;
}

}  // namespace mdh::ir
