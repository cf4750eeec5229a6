// SPDX-License-Identifier: MIT
// Operator library: the BERT / deep-learning operators against hand loops, at BERT sizes too.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <expressions/all.hpp>

#include "ops_test_util.hpp"

using namespace ops_test;
using mdh::host_tensor;
using mdh::reference;

namespace {
constexpr double kReduceTol = 1e-5;  // times the sum of |terms| (see ops_linalg.cpp)
constexpr double kMapTol = 1e-6;     // times the magnitudes of the operands
const std::vector<std::pair<int, int>> kSizes2d = {{1, 1}, {7, 33}, {100, 7}, {33, 100}};
}  // namespace

TEST_CASE("ops::multiply and ops::subtract against loops") {
  auto mul = mdh::ops::multiply();
  auto sub = mdh::ops::subtract();
  for (auto [I, J] : kSizes2d) {
    auto n = mul.sizes(I, J);
    auto a = tensor<float>(mul, "IB1", n, 201 + I), b = tensor<float>(mul, "IB2", n, 202 + J);
    host_tensor<float> m(mul.shape("OB1", n)), s(sub.shape("OB1", n));
    reference(mul, n, {a, b}, {m});
    reference(sub, n, {a, b}, {s});
    std::vector<double> wm, ws, ms;
    for (std::int64_t k = 0; k < a.size(); ++k) {
      wm.push_back(double(a[k]) * b[k]);
      ws.push_back(double(a[k]) - b[k]);
      ms.push_back(std::fabs(a[k]) + std::fabs(b[k]));
    }
    expect_close("mul " + show(n), m, wm, {}, kMapTol);
    expect_close("sub " + show(n), s, ws, ms, kMapTol);
  }
  // int32 variants are exact
  auto mi = mdh::ops::multiply<std::int32_t>();
  auto n = mi.sizes(7, 33);
  auto a = tensor<std::int32_t>(mi, "IB1", n, 203, -1000, 1000);
  auto b = tensor<std::int32_t>(mi, "IB2", n, 204, -1000, 1000);
  host_tensor<std::int32_t> m(mi.shape("OB1", n));
  reference(mi, n, {a, b}, {m});
  std::vector<double> want;
  for (std::int64_t k = 0; k < a.size(); ++k) want.push_back(double(a[k]) * b[k]);
  expect_exact("mul<int32_t>", m, want);
}

namespace {
template <std::size_t Axis, std::size_t D>
void check_expand_dims(std::vector<std::int64_t> n) {
  auto c = mdh::ops::expand_dims<Axis, D>();
  auto x = tensor<float>(c, "IB1", n, 211);
  CHECK(x.shape() == n);
  mdh::shape_t want_shape = n;
  want_shape.insert(want_shape.begin() + Axis, 1);
  host_tensor<float> y(c.shape("OB1", n));
  CHECK(y.shape() == want_shape);
  reference(c, n, {x}, {y});
  // The same elements in the same (row-major) order.
  std::vector<double> want(x.vector().begin(), x.vector().end());
  expect_exact("expand_dims<" + std::to_string(Axis) + "," + std::to_string(D) + ">", y, want);
}
}  // namespace

TEST_CASE("ops::expand_dims inserts an extent-1 dimension") {
  check_expand_dims<0, 1>({7});
  check_expand_dims<1, 1>({7});
  check_expand_dims<1, 3>({16, 38, 3});  // SC21: [16,384,384] -> [16,1,384,384], smaller
  check_expand_dims<0, 2>({5, 3});
  check_expand_dims<2, 2>({5, 3});
  check_expand_dims<3, 4>({2, 3, 1, 5});
  auto c = mdh::ops::expand_dims<1, 3>();
  CHECK(c.shape("OB1", c.sizes(16, 384, 384)) == mdh::shape_t{16, 1, 384, 384});
}

TEST_CASE("ops::bias_add (NHWC) against a loop") {
  auto c = mdh::ops::bias_add();
  for (auto s : std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {2, 7, 5, 33}, {1, 3, 3, 100}}) {
    auto n = c.sizes(s[0], s[1], s[2], s[3]);
    auto x = tensor<float>(c, "IB1", n, 221), b = tensor<float>(c, "IB2", n, 222);
    CHECK(b.shape() == mdh::shape_t{s[3]});
    host_tensor<float> y(c.shape("OB1", n));
    reference(c, n, {x, b}, {y});
    std::vector<double> want, mag;
    for (std::int64_t k = 0; k < x.size(); ++k) {
      double bias = b[k % s[3]];
      want.push_back(double(x[k]) + bias), mag.push_back(std::fabs(x[k]) + std::fabs(bias));
    }
    expect_close("bias_add " + show(n), y, want, mag, kMapTol);
  }
}

TEST_CASE("ops::bias_add_grad against a loop, up to BERT's 6144 x 768") {
  auto c = mdh::ops::bias_add_grad();
  auto sizes = kSizes2d;
  sizes.push_back({6144, 768});
  for (auto [I, J] : sizes) {
    auto n = c.sizes(I, J);
    auto x = tensor<float>(c, "IB1", n, 231 + I);
    host_tensor<float> y(c.shape("OB1", n));
    CHECK(y.shape() == mdh::shape_t{J});
    reference(c, n, {x}, {y});
    std::vector<double> want(J), mag(J);
    for (int i = 0; i < I; ++i)
      for (int j = 0; j < J; ++j) {
        double v = x[std::int64_t(i) * J + j];
        want[j] += v, mag[j] += std::fabs(v);
      }
    expect_close("bias_add_grad " + show(n), y, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::row_sum against a loop, up to issue 19's 3001 x 4093") {
  auto c = mdh::ops::row_sum();
  auto sizes = kSizes2d;
  sizes.push_back({3001, 4093});
  for (auto [I, J] : sizes) {
    auto n = c.sizes(I, J);
    auto x = tensor<float>(c, "X", n, 271 + J);
    host_tensor<float> y(c.shape("Y", n));
    CHECK(y.shape() == mdh::shape_t{I});
    reference(c, n, {x}, {y});
    std::vector<double> want(I), mag(I);
    for (int i = 0; i < I; ++i)
      for (int j = 0; j < J; ++j) {
        double v = x[std::int64_t(i) * J + j];
        want[i] += v, mag[i] += std::fabs(v);
      }
    expect_close("row_sum " + show(n), y, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::bert_mask (SC21 fused subgraph) against a loop, at [16,1,384,384]") {
  auto c = mdh::ops::bert_mask();
  for (auto s : std::vector<std::array<int, 4>>{
           {1, 1, 1, 1}, {2, 1, 7, 33}, {3, 2, 5, 4}, {16, 1, 384, 384}}) {
    auto n = c.sizes(s[0], s[1], s[2], s[3]);
    auto m1 = tensor<float>(c, "IB1", n, 241), m2 = tensor<float>(c, "IB2", n, 242);
    CHECK(m1.shape() == mdh::shape_t{s[0], s[2], 1});
    CHECK(m2.shape() == mdh::shape_t{s[0], 1, s[3]});
    host_tensor<float> y(c.shape("OB1", n));
    CHECK(y.shape() == mdh::shape_t{s[0], s[1], s[2], s[3]});
    reference(c, n, {m1, m2}, {y});
    std::vector<double> want, mag;
    want.reserve(std::size_t(y.size())), mag.reserve(std::size_t(y.size()));
    for (int a = 0; a < s[0]; ++a)
      for (int b = 0; b < s[1]; ++b)
        for (int i = 0; i < s[2]; ++i)
          for (int j = 0; j < s[3]; ++j) {
            double p = double(m1.at({a, i, 0})) * m2.at({a, 0, j});
            want.push_back((1.0 - p) * -10000.0), mag.push_back((1.0 + std::fabs(p)) * 10000.0);
          }
    expect_close("bert_mask " + show(n), y, want, mag, kMapTol);
  }
}

TEST_CASE("ops::attn_mask_add against a loop, at [16,12,128,128]") {
  auto c = mdh::ops::attn_mask_add();
  for (auto s : std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {2, 3, 7, 33}, {16, 12, 128, 128}}) {
    auto n = c.sizes(s[0], s[1], s[2], s[3]);
    auto S = tensor<float>(c, "S", n, 251), mask = tensor<float>(c, "mask", n, 252);
    CHECK(mask.shape() == mdh::shape_t{s[0], 1, 1, s[3]});
    host_tensor<float> y(c.shape("Y", n));
    reference(c, n, {S, mask}, {y});
    std::vector<double> want, mag;
    want.reserve(std::size_t(y.size())), mag.reserve(std::size_t(y.size()));
    std::int64_t k = 0;
    for (int a = 0; a < s[0]; ++a)
      for (int h = 0; h < s[1]; ++h)
        for (int i = 0; i < s[2]; ++i)
          for (int j = 0; j < s[3]; ++j, ++k) {
            double m = mask.at({a, 0, 0, j});
            want.push_back(S[k] + (1.0 - m) * -10000.0);
            mag.push_back(std::fabs(S[k]) + (1.0 + std::fabs(m)) * 10000.0);
          }
    expect_close("attn_mask_add " + show(n), y, want, mag, kMapTol);
  }
}

TEST_CASE("ops::bias_gelu (exact erf GELU) against a loop") {
  auto c = mdh::ops::bias_gelu();
  auto sizes = kSizes2d;
  sizes.push_back({256, 3072});
  for (auto [I, J] : sizes) {
    auto n = c.sizes(I, J);
    auto x = tensor<float>(c, "X", n, 261, -4, 4), b = tensor<float>(c, "b", n, 262, -1, 1);
    host_tensor<float> y(c.shape("Y", n));
    reference(c, n, {x, b}, {y});
    std::vector<double> want, mag;
    for (std::int64_t k = 0; k < x.size(); ++k) {
      double v = double(x[k]) + b[k % J];
      double g = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      want.push_back(g), mag.push_back(std::fabs(g) + std::fabs(x[k]) + std::fabs(b[k % J]));
    }
    expect_close("bias_gelu " + show(n), y, want, mag, kMapTol);
  }
}

TEST_CASE("ops::softmax (two computations) against a loop; rows sum to 1") {
  auto [stats, norm] = mdh::ops::softmax();
  for (auto [R, C] :
       std::vector<std::pair<int, int>>{{1, 1}, {7, 33}, {100, 7}, {33, 100}, {16 * 12 * 8, 128}}) {
    auto n = stats.sizes(R, C);
    auto x = tensor<float>(stats, "X", n, 271 + C, -8, 8);
    host_tensor<float> M(stats.shape("M", n)), S(stats.shape("S", n));
    reference(stats, n, {x}, {M, S});
    host_tensor<float> y(norm.shape("Y", n));
    reference(norm, n, {x, M, S}, {y});
    std::vector<double> wm(R), ws(R), wy;
    for (int r = 0; r < R; ++r) {
      double m = -INFINITY, s = 0;
      for (int c = 0; c < C; ++c) m = std::max(m, double(x.at({r, c})));
      for (int c = 0; c < C; ++c) s += std::exp(double(x.at({r, c})) - m);
      wm[r] = m, ws[r] = s;
      for (int c = 0; c < C; ++c) wy.push_back(std::exp(double(x.at({r, c})) - m) / s);
    }
    expect_exact("softmax max " + show(n), M, wm);
    expect_close("softmax sum " + show(n), S, ws, {}, kReduceTol);
    expect_close("softmax y " + show(n), y, wy, {}, 1e-5);
    std::vector<double> row_sum(R), ones(R, 1.0);
    host_tensor<float> sums(mdh::shape_t{R});
    for (int r = 0; r < R; ++r) {
      double t = 0;
      for (int c = 0; c < C; ++c) t += y.at({r, c});
      sums[r] = float(t);
    }
    expect_close("softmax row sums " + show(n), sums, ones, {}, 1e-5);
  }
}

TEST_CASE("ops::softmax is stable for large inputs and -inf entries") {
  auto [stats, norm] = mdh::ops::softmax();
  auto n = stats.sizes(2, 5);
  host_tensor<float> x(stats.shape("X", n));
  const float big[] = {1000.f, 999.f, 998.f, -INFINITY, 1000.f};
  const float ninf[] = {-INFINITY, -INFINITY, 3.f, -INFINITY, -INFINITY};
  for (int c = 0; c < 5; ++c) x.at({0, c}) = big[c], x.at({1, c}) = ninf[c];
  host_tensor<float> M(stats.shape("M", n)), S(stats.shape("S", n)), y(norm.shape("Y", n));
  reference(stats, n, {x}, {M, S});
  reference(norm, n, {x, M, S}, {y});
  CHECK(M[0] == 1000.f);
  CHECK(S[0] == doctest::Approx(2 + std::exp(-1.0) + std::exp(-2.0)).epsilon(1e-6));
  CHECK(M[1] == 3.f);
  CHECK(S[1] == 1.f);
  for (int c = 0; c < 5; ++c) {
    CHECK(std::isfinite(y.at({0, c})));
    CHECK(y.at({1, c}) == (c == 2 ? 1.f : 0.f));
  }
}

TEST_CASE("ops::layernorm (two computations) against a loop") {
  for (auto [R, C] :
       std::vector<std::pair<int, int>>{{1, 1}, {7, 33}, {100, 7}, {33, 100}, {256, 768}}) {
    auto [stats, norm] = mdh::ops::layernorm(C, 1e-5f);
    auto n = stats.sizes(R, C);
    auto x = tensor<float>(stats, "X", n, 281 + R, -3, 5);
    auto gamma = tensor<float>(norm, "gamma", n, 282), beta = tensor<float>(norm, "beta", n, 283);
    host_tensor<float> S(stats.shape("S", n)), Q(stats.shape("Q", n)), y(norm.shape("Y", n));
    reference(stats, n, {x}, {S, Q});
    reference(norm, n, {x, S, Q, gamma, beta}, {y});
    std::vector<double> ws(R), wq(R), ms(R), wy, my;
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        double v = x.at({r, c});
        ws[r] += v, wq[r] += v * v, ms[r] += std::fabs(v);
      }
      double mean = ws[r] / C, var = wq[r] / C - mean * mean;
      double rstd = 1 / std::sqrt(var + 1e-5);
      for (int c = 0; c < C; ++c) {
        double d = x.at({r, c}) - mean;
        wy.push_back(d * rstd * gamma[c] + beta[c]);
        // float statistics: errors relative to the row's scale, not to d
        my.push_back((std::fabs(d) + std::fabs(mean) + 1) * rstd * std::fabs(gamma[c]) +
                     std::fabs(beta[c]));
      }
    }
    expect_close("layernorm sum " + show(n), S, ws, ms, kReduceTol);
    expect_close("layernorm sum of squares " + show(n), Q, wq, wq, kReduceTol);
    expect_close("layernorm y " + show(n), y, wy, my, 2e-5);
  }
  CHECK_THROWS_AS(mdh::ops::layernorm_normalize(0), mdh::error);
}
