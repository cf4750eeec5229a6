// SPDX-License-Identifier: MIT
// Operator library: linear algebra, contractions, convolutions and stencils against hand loops.
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

// Reductions: |got - want| <= kReduceTol * sum of |terms| (double accumulation in the loops,
// float in the reference; the error of a float sum of K terms stays far below this for every K
// tested, while a missing or doubled term of a random input does not).
constexpr double kReduceTol = 1e-5;
// Element-wise float results: a few roundings of the operands' magnitudes.
constexpr double kMapTol = 1e-6;

}  // namespace

TEST_CASE("ops::dot against a loop") {
  auto c = mdh::ops::dot();
  for (std::int64_t K : {1, 7, 33, 100, 4099}) {
    auto n = c.sizes(K);
    auto A = tensor<float>(c, "A", n, 11 + K), B = tensor<float>(c, "B", n, 12 + K);
    host_tensor<float> C(c.shape("C", n));
    reference(c, n, {A, B}, {C});
    double s = 0, m = 0;
    for (std::int64_t k = 0; k < K; ++k)
      s += double(A[k]) * B[k], m += std::fabs(double(A[k]) * B[k]);
    CHECK(C.shape().empty());
    expect_close("dot K=" + std::to_string(K), C, {s}, {m}, kReduceTol);
  }
}

TEST_CASE("ops::matvec against a loop") {
  auto c = mdh::ops::matvec();
  for (auto [I, K] : std::vector<std::pair<int, int>>{{1, 1}, {7, 33}, {100, 7}, {33, 100}}) {
    auto n = c.sizes(I, K);
    auto M = tensor<float>(c, "M", n, 21), v = tensor<float>(c, "v", n, 22);
    host_tensor<float> w(c.shape("w", n));
    reference(c, n, {M, v}, {w});
    std::vector<double> want(I), mag(I);
    for (int i = 0; i < I; ++i)
      for (int k = 0; k < K; ++k) {
        double t = double(M.at({i, k})) * v.at({k});
        want[i] += t, mag[i] += std::fabs(t);
      }
    expect_close("matvec " + show(n), w, want, mag, kReduceTol);
  }
}

namespace {
// C(i,j) = sum_k a(i,k) * b(k,j) with accessors for the layouts.
template <class A, class B>
void matmul_loop(int I, int J, int K, A a, B b, std::vector<double>& want, std::vector<double>& mag,
                 bool transposed_out) {
  want.assign(std::size_t(I) * J, 0);
  mag.assign(std::size_t(I) * J, 0);
  for (int i = 0; i < I; ++i)
    for (int j = 0; j < J; ++j) {
      double s = 0, m = 0;
      for (int k = 0; k < K; ++k) {
        double t = double(a(i, k)) * b(k, j);
        s += t, m += std::fabs(t);
      }
      std::size_t o = transposed_out ? std::size_t(j) * I + i : std::size_t(i) * J + j;
      want[o] = s, mag[o] = m;
    }
}
const std::vector<std::array<int, 3>> kMatmulSizes = {{1, 1, 1},    {7, 33, 100}, {100, 7, 33},
                                                      {33, 100, 7}, {64, 64, 64}, {1, 100, 33}};
}  // namespace

TEST_CASE("ops::matmul against a loop") {
  auto c = mdh::ops::matmul();
  for (auto [I, J, K] : kMatmulSizes) {
    auto n = c.sizes(I, J, K);
    auto A = tensor<float>(c, "A", n, 31), B = tensor<float>(c, "B", n, 32);
    host_tensor<float> C(c.shape("C", n));
    CHECK(C.shape() == mdh::shape_t{I, J});
    reference(c, n, {A, B}, {C});
    std::vector<double> want, mag;
    matmul_loop(
        I, J, K,
        [&](int i, int k) {
          return A.at({i, k});
        },
        [&](int k, int j) {
          return B.at({k, j});
        },
        want, mag, false);
    expect_close("matmul " + show(n), C, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::matmul<double> and <int32_t> against a loop") {
  auto cd = mdh::ops::matmul<double>();
  auto n = cd.sizes(7, 33, 100);
  auto A = tensor<double>(cd, "A", n, 33), B = tensor<double>(cd, "B", n, 34);
  host_tensor<double> C(cd.shape("C", n));
  reference(cd, n, {A, B}, {C});
  std::vector<double> want, mag;
  matmul_loop(
      7, 33, 100,
      [&](int i, int k) {
        return A.at({i, k});
      },
      [&](int k, int j) {
        return B.at({k, j});
      },
      want, mag, false);
  expect_close("matmul<double>", C, want, mag, 1e-13);

  auto ci = mdh::ops::matmul<std::int32_t>();
  auto Ai = tensor<std::int32_t>(ci, "A", n, 35, -50, 50);
  auto Bi = tensor<std::int32_t>(ci, "B", n, 36, -50, 50);
  host_tensor<std::int32_t> Ci(ci.shape("C", n));
  reference(ci, n, {Ai, Bi}, {Ci});
  matmul_loop(
      7, 33, 100,
      [&](int i, int k) {
        return Ai.at({i, k});
      },
      [&](int k, int j) {
        return Bi.at({k, j});
      },
      want, mag, false);
  expect_exact("matmul<int32_t>", Ci, want);
}

TEST_CASE("ops::matmul_t against a loop") {
  auto c = mdh::ops::matmul_t();
  for (auto [I, J, K] : kMatmulSizes) {
    auto n = c.sizes(I, J, K);
    auto A = tensor<float>(c, "A", n, 41), B = tensor<float>(c, "B", n, 42);
    CHECK(A.shape() == mdh::shape_t{K, I});
    CHECK(B.shape() == mdh::shape_t{J, K});
    host_tensor<float> C(c.shape("C", n));
    CHECK(C.shape() == mdh::shape_t{J, I});
    reference(c, n, {A, B}, {C});
    std::vector<double> want, mag;
    matmul_loop(
        I, J, K,
        [&](int i, int k) {
          return A.at({k, i});
        },
        [&](int k, int j) {
          return B.at({j, k});
        },
        want, mag, true);
    expect_close("matmul_t " + show(n), C, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::bmatmul against a loop") {
  auto c = mdh::ops::bmatmul();
  for (auto [Bt, I, J, K] :
       std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {3, 7, 33, 10}, {16, 10, 50, 64}}) {
    auto n = c.sizes(Bt, I, J, K);
    auto A = tensor<float>(c, "A", n, 51), B = tensor<float>(c, "B", n, 52);
    host_tensor<float> C(c.shape("C", n));
    reference(c, n, {A, B}, {C});
    std::vector<double> want, mag;
    for (int b = 0; b < Bt; ++b) {
      std::vector<double> w, m;
      matmul_loop(
          I, J, K,
          [&](int i, int k) {
            return A.at({b, i, k});
          },
          [&](int k, int j) {
            return B.at({b, k, j});
          },
          w, m, false);
      want.insert(want.end(), w.begin(), w.end());
      mag.insert(mag.end(), m.begin(), m.end());
    }
    expect_close("bmatmul " + show(n), C, want, mag, kReduceTol);
  }
}

namespace {
template <bool AdjA, bool AdjB>
void check_batch_matmul(int B1, int B2, int I, int J, int K) {
  auto c = mdh::ops::batch_matmul<float, AdjA, AdjB>();
  auto n = c.sizes(B1, B2, I, J, K);
  auto A = tensor<float>(c, "IB1", n, 61), B = tensor<float>(c, "IB2", n, 62);
  CHECK(A.shape() == (AdjA ? mdh::shape_t{B1, B2, K, I} : mdh::shape_t{B1, B2, I, K}));
  CHECK(B.shape() == (AdjB ? mdh::shape_t{B1, B2, J, K} : mdh::shape_t{B1, B2, K, J}));
  host_tensor<float> C(c.shape("OB1", n));
  CHECK(C.shape() == mdh::shape_t{B1, B2, I, J});
  reference(c, n, {A, B}, {C});
  std::vector<double> want, mag;
  for (int b1 = 0; b1 < B1; ++b1)
    for (int b2 = 0; b2 < B2; ++b2) {
      std::vector<double> w, m;
      matmul_loop(
          I, J, K,
          [&](int i, int k) {
            return AdjA ? A.at({b1, b2, k, i}) : A.at({b1, b2, i, k});
          },
          [&](int k, int j) {
            return AdjB ? B.at({b1, b2, j, k}) : B.at({b1, b2, k, j});
          },
          w, m, false);
      want.insert(want.end(), w.begin(), w.end());
      mag.insert(mag.end(), m.begin(), m.end());
    }
  expect_close("batch_matmul<" + std::to_string(AdjA) + "," + std::to_string(AdjB) + "> " + show(n),
               C, want, mag, kReduceTol);
}
}  // namespace

TEST_CASE("ops::batch_matmul (BERT, 4-D) against a loop") {
  check_batch_matmul<false, false>(1, 1, 1, 1, 1);
  check_batch_matmul<false, false>(2, 3, 7, 33, 10);
  check_batch_matmul<false, true>(2, 3, 7, 33, 10);
  check_batch_matmul<true, false>(1, 2, 33, 7, 5);
  check_batch_matmul<true, true>(3, 1, 5, 6, 7);
  check_batch_matmul<false, true>(2, 12, 128, 128, 64);  // BERT attention scores, 2 of 16 batches
}

TEST_CASE("ops::conv2d against a loop") {
  auto c = mdh::ops::conv2d();
  for (auto [P, Q, R, S] :
       std::vector<std::array<int, 4>>{{1, 1, 1, 1}, {7, 33, 3, 5}, {100, 33, 5, 5}}) {
    auto n = c.sizes(P, Q, R, S);
    auto I = tensor<float>(c, "I", n, 71), F = tensor<float>(c, "F", n, 72);
    CHECK(I.shape() == mdh::shape_t{P + R - 1, Q + S - 1});
    host_tensor<float> O(c.shape("O", n));
    reference(c, n, {I, F}, {O});
    std::vector<double> want, mag;
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q) {
        double s = 0, m = 0;
        for (int r = 0; r < R; ++r)
          for (int t = 0; t < S; ++t) {
            double x = double(I.at({p + r, q + t})) * F.at({r, t});
            s += x, m += std::fabs(x);
          }
        want.push_back(s), mag.push_back(m);
      }
    expect_close("conv2d " + show(n), O, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::mcc (NHWC/KRSC/NPQK) against a loop, with strides and dilations") {
  struct Case {
    int N, P, Q, K, R, S, C, sh, sw, dh, dw;
  };
  for (Case t : {Case{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Case{2, 7, 5, 6, 3, 3, 3, 1, 1, 1, 1},
                 Case{1, 6, 7, 4, 7, 7, 3, 2, 2, 1, 1}, Case{2, 5, 4, 3, 3, 2, 5, 2, 3, 2, 1},
                 Case{1, 4, 4, 8, 3, 3, 16, 1, 1, 2, 2}}) {
    auto c = mdh::ops::mcc(t.sh, t.sw, t.dh, t.dw);
    auto n = c.sizes(t.N, t.P, t.Q, t.K, t.R, t.S, t.C);
    auto I = tensor<float>(c, "I", n, 81), F = tensor<float>(c, "F", n, 82);
    CHECK(I.shape() == mdh::shape_t{t.N, t.sh * (t.P - 1) + t.dh * (t.R - 1) + 1,
                                    t.sw * (t.Q - 1) + t.dw * (t.S - 1) + 1, t.C});
    host_tensor<float> O(c.shape("O", n));
    reference(c, n, {I, F}, {O});
    std::vector<double> want, mag;
    for (int b = 0; b < t.N; ++b)
      for (int p = 0; p < t.P; ++p)
        for (int q = 0; q < t.Q; ++q)
          for (int k = 0; k < t.K; ++k) {
            double s = 0, m = 0;
            for (int r = 0; r < t.R; ++r)
              for (int u = 0; u < t.S; ++u)
                for (int ch = 0; ch < t.C; ++ch) {
                  double x = double(I.at({b, t.sh * p + t.dh * r, t.sw * q + t.dw * u, ch})) *
                             F.at({k, r, u, ch});
                  s += x, m += std::fabs(x);
                }
            want.push_back(s), mag.push_back(m);
          }
    expect_close("mcc " + show(n), O, want, mag, kReduceTol);
  }
  CHECK_THROWS_AS(mdh::ops::mcc(0), mdh::error);
}

TEST_CASE("ops::mcc sizes of the ResNet-50 first layer") {
  auto c = mdh::ops::mcc(2, 2);
  auto n = c.sizes(16, 112, 112, 64, 7, 7, 3);
  CHECK(c.shape("I", n) == mdh::shape_t{16, 229, 229, 3});
  CHECK(c.shape("F", n) == mdh::shape_t{64, 7, 7, 3});
  CHECK(c.shape("O", n) == mdh::shape_t{16, 112, 112, 64});
}

TEST_CASE("ops::mcc_nchw (NCHW/KCRS/NKPQ) against a loop") {
  struct Case {
    int N, K, P, Q, C, R, S, sh, sw;
  };
  for (Case t : {Case{1, 1, 1, 1, 1, 1, 1, 1, 1}, Case{2, 5, 7, 6, 4, 3, 3, 1, 1},
                 Case{1, 3, 5, 5, 3, 5, 3, 2, 1}}) {
    auto c = mdh::ops::mcc_nchw(t.sh, t.sw);
    auto n = c.sizes(t.N, t.K, t.P, t.Q, t.C, t.R, t.S);
    auto I = tensor<float>(c, "I", n, 91), F = tensor<float>(c, "F", n, 92);
    CHECK(I.shape() == mdh::shape_t{t.N, t.C, t.sh * (t.P - 1) + t.R, t.sw * (t.Q - 1) + t.S});
    host_tensor<float> O(c.shape("O", n));
    CHECK(O.shape() == mdh::shape_t{t.N, t.K, t.P, t.Q});
    reference(c, n, {I, F}, {O});
    std::vector<double> want, mag;
    for (int b = 0; b < t.N; ++b)
      for (int k = 0; k < t.K; ++k)
        for (int p = 0; p < t.P; ++p)
          for (int q = 0; q < t.Q; ++q) {
            double s = 0, m = 0;
            for (int ch = 0; ch < t.C; ++ch)
              for (int r = 0; r < t.R; ++r)
                for (int u = 0; u < t.S; ++u) {
                  double x =
                      double(I.at({b, ch, t.sh * p + r, t.sw * q + u})) * F.at({k, ch, r, u});
                  s += x, m += std::fabs(x);
                }
            want.push_back(s), mag.push_back(m);
          }
    expect_close("mcc_nchw " + show(n), O, want, mag, kReduceTol);
  }
  // benchmarks.md conv3x3_resnet: 16x16 images give 14x14 outputs.
  auto c = mdh::ops::mcc_nchw();
  auto n = c.sizes(32, 256, 14, 14, 256, 3, 3);
  CHECK(c.shape("I", n) == mdh::shape_t{32, 256, 16, 16});
}

TEST_CASE("ops::mcc_capsule against a loop") {
  auto c = mdh::ops::mcc_capsule(2, 1);
  const int N = 1, P = 3, Q = 2, K = 2, R = 3, S = 2, C = 3, MI = 4, MJ = 3, MK = 2;
  auto n = c.sizes(N, P, Q, K, R, S, C, MI, MJ, MK);
  auto I = tensor<float>(c, "I", n, 93), F = tensor<float>(c, "F", n, 94);
  CHECK(I.shape() == mdh::shape_t{N, 2 * (P - 1) + R, Q + S - 1, C, MI, MK});
  host_tensor<float> O(c.shape("O", n));
  CHECK(O.shape() == mdh::shape_t{N, P, Q, K, MI, MJ});
  reference(c, n, {I, F}, {O});
  std::vector<double> want, mag;
  for (int b = 0; b < N; ++b)
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q)
        for (int k = 0; k < K; ++k)
          for (int mi = 0; mi < MI; ++mi)
            for (int mj = 0; mj < MJ; ++mj) {
              double s = 0, m = 0;
              for (int r = 0; r < R; ++r)
                for (int u = 0; u < S; ++u)
                  for (int ch = 0; ch < C; ++ch)
                    for (int mk = 0; mk < MK; ++mk) {
                      double x = double(I.at({b, 2 * p + r, q + u, ch, mi, mk})) *
                                 F.at({k, r, u, ch, mk, mj});
                      s += x, m += std::fabs(x);
                    }
              want.push_back(s), mag.push_back(m);
            }
  expect_close("mcc_capsule " + show(n), O, want, mag, kReduceTol);
}

TEST_CASE("ops::ccsd_t (abcdef-gdab-efgc) against a loop") {
  auto c = mdh::ops::ccsd_t();
  for (auto s : std::vector<std::array<int, 7>>{
           {1, 1, 1, 1, 1, 1, 1}, {3, 4, 2, 5, 3, 2, 7}, {6, 5, 4, 3, 2, 7, 16}}) {
    auto [A_, B_, C_, D_, E_, F_, G_] = s;
    auto n = c.sizes(A_, B_, C_, D_, E_, F_, G_);
    auto A = tensor<float>(c, "A", n, 101), B = tensor<float>(c, "B", n, 102);
    CHECK(A.shape() == mdh::shape_t{G_, D_, A_, B_});
    CHECK(B.shape() == mdh::shape_t{E_, F_, G_, C_});
    host_tensor<float> C(c.shape("C", n));
    reference(c, n, {A, B}, {C});
    std::vector<double> want, mag;
    for (int a = 0; a < A_; ++a)
      for (int b = 0; b < B_; ++b)
        for (int cc = 0; cc < C_; ++cc)
          for (int d = 0; d < D_; ++d)
            for (int e = 0; e < E_; ++e)
              for (int f = 0; f < F_; ++f) {
                double sum = 0, m = 0;
                for (int g = 0; g < G_; ++g) {
                  double x = double(A.at({g, d, a, b})) * B.at({e, f, g, cc});
                  sum += x, m += std::fabs(x);
                }
                want.push_back(sum), mag.push_back(m);
              }
    expect_close("ccsd_t " + show(n), C, want, mag, kReduceTol);
  }
}

TEST_CASE("ops::jacobi1d/2d/3d against loops") {
  for (int N : {3, 4, 9, 35, 102}) {  // grid extents; the interior is N - 2
    const int M = N - 2;
    {
      auto c = mdh::ops::jacobi1d();
      auto n = c.sizes(M);
      auto x = tensor<float>(c, "x", n, 111);
      CHECK(x.shape() == mdh::shape_t{N});
      host_tensor<float> y(c.shape("y", n));
      reference(c, n, {x}, {y});
      std::vector<double> want, mag;
      for (int i = 0; i < M; ++i) {
        double s = double(x[i]) + x[i + 1] + x[i + 2];
        want.push_back(s / 3),
            mag.push_back((std::fabs(x[i]) + std::fabs(x[i + 1]) + std::fabs(x[i + 2])) / 3);
      }
      expect_close("jacobi1d N=" + std::to_string(N), y, want, mag, kMapTol);
    }
    {
      auto c = mdh::ops::jacobi2d();
      auto n = c.sizes(M, M + 1);
      auto x = tensor<float>(c, "x", n, 112);
      CHECK(x.shape() == mdh::shape_t{N, N + 1});
      host_tensor<float> y(c.shape("y", n));
      reference(c, n, {x}, {y});
      std::vector<double> want, mag;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < M + 1; ++j) {
          double v[] = {x.at({i + 1, j + 1}), x.at({i, j + 1}), x.at({i + 2, j + 1}),
                        x.at({i + 1, j}), x.at({i + 1, j + 2})};
          double s = 0, m = 0;
          for (double t : v) s += t, m += std::fabs(t);
          want.push_back(s / 5), mag.push_back(m / 5);
        }
      expect_close("jacobi2d N=" + std::to_string(N), y, want, mag, kMapTol);
    }
    if (N <= 35) {
      auto c = mdh::ops::jacobi3d();
      auto n = c.sizes(M, M, M);
      auto x = tensor<float>(c, "x", n, 113);
      CHECK(x.shape() == mdh::shape_t{N, N, N});
      host_tensor<float> y(c.shape("y", n));
      reference(c, n, {x}, {y});
      std::vector<double> want, mag;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < M; ++j)
          for (int k = 0; k < M; ++k) {
            double v[] = {x.at({i + 1, j + 1, k + 1}), x.at({i, j + 1, k + 1}),
                          x.at({i + 2, j + 1, k + 1}), x.at({i + 1, j, k + 1}),
                          x.at({i + 1, j + 2, k + 1}), x.at({i + 1, j + 1, k}),
                          x.at({i + 1, j + 1, k + 2})};
            double s = 0, m = 0;
            for (double t : v) s += t, m += std::fabs(t);
            want.push_back(s / 7), mag.push_back(m / 7);
          }
      expect_close("jacobi3d N=" + std::to_string(N), y, want, mag, kMapTol);
    }
  }
  // A custom coefficient.
  auto c = mdh::ops::jacobi1d(0.5f);
  auto n = c.sizes(5);
  auto x = tensor<float>(c, "x", n, 114);
  host_tensor<float> y(c.shape("y", n));
  reference(c, n, {x}, {y});
  std::vector<double> want;
  for (int i = 0; i < 5; ++i) want.push_back(0.5 * (double(x[i]) + x[i + 1] + x[i + 2]));
  expect_close("jacobi1d(0.5)", y, want, {}, kMapTol, 1e-7);
}
