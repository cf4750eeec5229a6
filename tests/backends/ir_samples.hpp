// SPDX-License-Identifier: MIT
// Hand-built IR for the backend tests (until expressions/ covers them): one sample per feature.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>

namespace mdh::test {

using ir::affine;
using ir::combine_kind;
using ir::op;

// Builds a scalar_function node by node.
struct fn {
  ir::scalar_function f;
  explicit fn(std::vector<scalar_type> args) { f.arg_types = std::move(args); }
  int arg(int i) { return f.add({op::arg, f.arg_types.at(i), -1, -1, -1, i, 0}); }
  int c(double v, scalar_type t = scalar_type::f32) {
    return f.add({op::constant, t, -1, -1, -1, -1, v});
  }
  int un(op o, int a) { return f.add({o, f.nodes.at(a).type, a}); }
  int bin(op o, int a, int b, scalar_type t) { return f.add({o, t, a, b}); }
  int bin(op o, int a, int b) { return bin(o, a, b, f.nodes.at(a).type); }
  int sel(int c, int a, int b) { return f.add({op::select, f.nodes.at(a).type, c, a, b}); }
  ir::scalar_function done(std::vector<int> results) {
    f.results = std::move(results);
    return f;
  }
};

inline affine af(std::vector<std::int64_t> coeff, std::int64_t off = 0) {
  return {std::move(coeff), off};
}
inline ir::access acc(std::vector<affine> idx) { return {std::move(idx)}; }
inline ir::buffer buf(std::string name, scalar_type t, std::vector<ir::access> a) {
  std::size_t rank = a.at(0).index.size();
  return {std::move(name), t, rank, std::move(a)};
}
inline ir::dimension dim(std::string n, combine_kind k) { return {std::move(n), k}; }
inline ir::reduction_operator builtin_op(ir::builtin k, std::string name) {
  return {k, std::move(name), {}, {}};
}

constexpr auto f32 = scalar_type::f32;

// C[i,j] = +_k A[i,k] * B[k,j]
inline ir::computation matmul() {
  ir::computation c;
  c.name = "matmul";
  c.dims = {dim("i", combine_kind::concat), dim("j", combine_kind::concat),
            dim("k", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::add, "add");
  c.inputs = {buf("A", f32, {acc({af({1, 0, 0}), af({0, 0, 1})})}),
              buf("B", f32, {acc({af({0, 0, 1}), af({0, 1, 0})})})};
  c.outputs = {buf("C", f32, {acc({af({1, 0, 0}), af({0, 1, 0})})})};
  fn f({f32, f32});
  c.f = f.done({f.bin(op::mul, f.arg(0), f.arg(1))});
  return c;
}

// (m[i], n[i]) = max_count_k x[i,k]: the maximum and how often it occurs (custom operator,
// two results of different types).
inline ir::computation max_count() {
  ir::computation c;
  c.name = "max_count";
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::pointwise)};
  fn g({f32, scalar_type::i32, f32, scalar_type::i32});
  int m1 = g.arg(0), c1 = g.arg(1), m2 = g.arg(2), c2 = g.arg(3);
  int gt = g.bin(op::gt, m1, m2, scalar_type::boolean),
      lt = g.bin(op::lt, m1, m2, scalar_type::boolean);
  int cnt = g.sel(gt, c1, g.sel(lt, c2, g.bin(op::add, c1, c2)));
  c.reduction = {ir::builtin::custom,
                 "max_count",
                 g.done({g.bin(op::max, m1, m2), cnt}),
                 {-std::numeric_limits<double>::infinity(), 0.0}};
  c.inputs = {buf("x", f32, {acc({af({1, 0}), af({0, 1})})})};
  c.outputs = {buf("m", f32, {acc({af({1, 0})})}), buf("n", scalar_type::i32, {acc({af({1, 0})})})};
  fn f({f32});
  c.f = f.done({f.arg(0), f.c(1, scalar_type::i32)});
  return c;
}

// (m[i], s[i]) = online-softmax statistics: max and sum of exp(x - max) (custom, guarded).
inline ir::computation softmax_stats() {
  ir::computation c;
  c.name = "softmax_stats";
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::pointwise)};
  fn g({f32, f32, f32, f32});
  int m1 = g.arg(0), s1 = g.arg(1), m2 = g.arg(2), s2 = g.arg(3);
  int M = g.bin(op::max, m1, m2);
  int ninf = g.c(-std::numeric_limits<double>::infinity());
  int zero = g.c(0);
  int t1 = g.sel(g.bin(op::eq, m1, ninf, scalar_type::boolean), zero,
                 g.bin(op::mul, s1, g.un(op::exp, g.bin(op::sub, m1, M))));
  int t2 = g.sel(g.bin(op::eq, m2, ninf, scalar_type::boolean), zero,
                 g.bin(op::mul, s2, g.un(op::exp, g.bin(op::sub, m2, M))));
  c.reduction = {ir::builtin::custom,
                 "softmax_ms",
                 g.done({M, g.bin(op::add, t1, t2)}),
                 {-std::numeric_limits<double>::infinity(), 0.0}};
  c.inputs = {buf("x", f32, {acc({af({1, 0}), af({0, 1})})})};
  c.outputs = {buf("m", f32, {acc({af({1, 0})})}), buf("s", f32, {acc({af({1, 0})})})};
  fn f({f32});
  c.f = f.done({f.arg(0), f.c(1)});
  return c;
}

// y[i,j] = 0.2 * (x[i,j+1] + x[i+1,j] + x[i+1,j+1] + x[i+1,j+2] + x[i+2,j+1]): 2-D Jacobi.
inline ir::computation jacobi2d() {
  ir::computation c;
  c.name = "jacobi2d";
  c.dims = {dim("i", combine_kind::concat), dim("j", combine_kind::concat)};
  auto at = [](int di, int dj) { return acc({af({1, 0}, di), af({0, 1}, dj)}); };
  c.inputs = {buf("x", f32, {at(0, 1), at(1, 0), at(1, 1), at(1, 2), at(2, 1)})};
  c.outputs = {buf("y", f32, {at(0, 0)})};
  fn f({f32, f32, f32, f32, f32});
  int s = f.bin(op::add, f.arg(0), f.arg(1));
  for (int a = 2; a < 5; ++a) s = f.bin(op::add, s, f.arg(a));
  c.f = f.done({f.bin(op::mul, f.c(0.2), s)});
  return c;
}

// y[i,k] = +_{k' <= k} x[i,k']: a row-wise inclusive scan.
inline ir::computation scan_rows() {
  ir::computation c;
  c.name = "scan_rows";
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::prefix_sum)};
  c.reduction = builtin_op(ir::builtin::add, "add");
  c.inputs = {buf("x", f32, {acc({af({1, 0}), af({0, 1})})})};
  c.outputs = {buf("y", f32, {acc({af({1, 0}), af({0, 1})})})};
  fn f({f32});
  c.f = f.done({f.arg(0)});
  return c;
}

// y[i,k] = max_{k' <= k} max_l x[i,k',l]: scan and reduction together.
inline ir::computation scan_reduce() {
  ir::computation c;
  c.name = "scan_reduce";
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::prefix_sum),
            dim("l", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::max, "max");
  c.inputs = {buf("x", f32, {acc({af({1, 0, 0}), af({0, 1, 0}), af({0, 0, 1})})})};
  c.outputs = {buf("y", f32, {acc({af({1, 0, 0}), af({0, 1, 0})})})};
  fn f({f32});
  c.f = f.done({f.arg(0)});
  return c;
}

// y[n,c,h,w] = x[n,c,h,w] * m[n,0,0,w] + b[c]: 4-D broadcast (coefficient 0 broadcasts).
inline ir::computation broadcast4d() {
  ir::computation c;
  c.name = "broadcast4d";
  c.dims = {dim("n", combine_kind::concat), dim("c", combine_kind::concat),
            dim("h", combine_kind::concat), dim("w", combine_kind::concat)};
  c.inputs = {buf("x", f32,
                  {acc({af({1, 0, 0, 0}), af({0, 1, 0, 0}), af({0, 0, 1, 0}), af({0, 0, 0, 1})})}),
              buf("m", f32,
                  {acc({af({1, 0, 0, 0}), af({0, 0, 0, 0}), af({0, 0, 0, 0}), af({0, 0, 0, 1})})}),
              buf("b", f32, {acc({af({0, 1, 0, 0})})})};
  c.outputs = {buf(
      "y", f32, {acc({af({1, 0, 0, 0}), af({0, 1, 0, 0}), af({0, 0, 1, 0}), af({0, 0, 0, 1})})})};
  fn f({f32, f32, f32});
  c.f = f.done({f.bin(op::add, f.bin(op::mul, f.arg(0), f.arg(1)), f.arg(2))});
  return c;
}

// (s[i], q[i]) = +_k (x[i,k], x[i,k]^2): two outputs of one builtin reduction.
inline ir::computation sum_sumsq() {
  ir::computation c;
  c.name = "sum_sumsq";
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::add, "add");
  c.inputs = {buf("x", f32, {acc({af({1, 0}), af({0, 1})})})};
  c.outputs = {buf("s", f32, {acc({af({1, 0})})}), buf("q", f32, {acc({af({1, 0})})})};
  fn f({f32});
  int x = f.arg(0);
  c.f = f.done({x, f.bin(op::mul, x, x)});
  return c;
}

// y[i] = +_r x[2i + r] * w[r]: a strided 1-D convolution (coefficient 2 in a tile).
inline ir::computation conv1d_s2() {
  ir::computation c;
  c.name = "conv1d_s2";
  c.dims = {dim("i", combine_kind::concat), dim("r", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::add, "add");
  c.inputs = {buf("x", f32, {acc({af({2, 1})})}), buf("w", f32, {acc({af({0, 1})})})};
  c.outputs = {buf("y", f32, {acc({af({1, 0})})})};
  fn f({f32, f32});
  c.f = f.done({f.bin(op::mul, f.arg(0), f.arg(1))});
  return c;
}

// y[i] = max_k (a[i,k] * 3 - b[k]) on int32.
inline ir::computation imax() {
  ir::computation c;
  c.name = "imax";
  auto i32 = scalar_type::i32;
  c.dims = {dim("i", combine_kind::concat), dim("k", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::max, "max");
  c.inputs = {buf("a", i32, {acc({af({1, 0}), af({0, 1})})}), buf("b", i32, {acc({af({0, 1})})})};
  c.outputs = {buf("y", i32, {acc({af({1, 0})})})};
  fn f({i32, i32});
  c.f = f.done({f.bin(op::sub, f.bin(op::mul, f.arg(0), f.c(3, i32)), f.arg(1))});
  return c;
}

// d[0] = +_k x[k] * y[k] in double: no concatenation dimension at all.
inline ir::computation ddot() {
  ir::computation c;
  c.name = "ddot";
  auto f64 = scalar_type::f64;
  c.dims = {dim("k", combine_kind::pointwise)};
  c.reduction = builtin_op(ir::builtin::add, "add");
  c.inputs = {buf("x", f64, {acc({af({1})})}), buf("y", f64, {acc({af({1})})})};
  c.outputs = {buf("d", f64, {acc({af({0})})})};
  fn f({f64, f64});
  c.f = f.done({f.bin(op::mul, f.arg(0), f.arg(1))});
  return c;
}

struct sample {
  ir::computation comp;
  std::vector<std::int64_t> sizes;
};

// Small sizes, mostly primes (nothing divides), so the sweep stays fast on PoCL.
inline std::vector<sample> all_samples() {
  return {{matmul(), {13, 17, 19}},
          {max_count(), {7, 23}},
          {softmax_stats(), {5, 37}},
          {jacobi2d(), {11, 29}},
          {scan_rows(), {6, 19}},
          {scan_reduce(), {5, 7, 9}},
          {broadcast4d(), {2, 3, 5, 7}},
          {sum_sumsq(), {9, 31}},
          {conv1d_s2(), {23, 5}},
          {imax(), {7, 13}},
          {ddot(), {101}},
          {broadcast4d(), {2, 3, 5, 16}},
          {matmul(), {6, 20, 7}}};
}

}  // namespace mdh::test
