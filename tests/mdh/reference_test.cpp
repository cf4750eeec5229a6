// SPDX-License-Identifier: MIT
// The CPU reference against hand-written loops, and its checks of the buffers it is given.
#include <doctest/doctest.h>

#include <cmath>

#include <mdh/mdh.hpp>

using namespace mdh;

TEST_CASE("reference: matmul on sizes that are not powers of two") {
  auto [i, j, k] = indices<3>();
  auto mm = computation("matmul", out_view(out<float, "C">(i, j)),
                        md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                        inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  for (auto [m, n, kk] : {std::array<int, 3>{1, 1, 1}, {7, 33, 100}, {65, 3, 17}}) {
    auto s = mm.sizes(m, n, kk);
    host_tensor<float> A(mm.shape("A", s)), B(mm.shape("B", s)), C(mm.shape("C", s), NAN);
    A.randomize(11 + m), B.randomize(12 + n);
    reference(mm, s, {A, B}, {C});
    for (int x = 0; x < m; ++x)
      for (int y = 0; y < n; ++y) {
        double acc = 0;
        for (int z = 0; z < kk; ++z) acc += double(A.at({x, z})) * B.at({z, y});
        CHECK(C.at({x, y}) == doctest::Approx(acc).epsilon(1e-5));
      }
  }
}

TEST_CASE("reference: the thread count does not change the result") {
  auto [b, i, k] = indices<3>();
  auto mv = computation("bmv", out_view(out<double, "w">(b, i)),
                        md_hom([](auto a, auto v) { return a * v; }, cc, cc, pw(add)),
                        inp_view(in<double, "M">(b, i, k), in<double, "v">(k)));
  auto s = mv.sizes(5, 301, 257);
  host_tensor<double> M(mv.shape("M", s)), v(mv.shape("v", s)), w1(mv.shape("w", s)),
      w2(mv.shape("w", s));
  M.randomize(1), v.randomize(2);
  reference(mv, s, {M, v}, {w1}, 1);
  reference(mv, s, {M, v}, {w2}, 7);
  CHECK(w1.vector() == w2.vector());
}

TEST_CASE("reference: prefix sum, reduction to a scalar, stencil, several outputs") {
  auto [i, j] = indices<2>();
  // MBBS-like: (ps(add), pw(add)) over a matrix: y(i) = sum_{i' <= i} sum_j x(i', j)
  auto mbbs = computation("mbbs", out_view(out<std::int64_t, "y">(i)),
                          md_hom([](auto x) { return x; }, ps(add), pw(add)),
                          inp_view(in<std::int64_t, "x">(i, j)));
  auto s = mbbs.sizes(37, 11);
  host_tensor<std::int64_t> X(mbbs.shape("x", s)), Y(mbbs.shape("y", s));
  X.randomize(5, -100, 100);
  reference(mbbs, s, {X}, {Y});
  std::int64_t acc = 0;
  for (int x = 0; x < 37; ++x) {
    for (int y = 0; y < 11; ++y) acc += X.at({x, y});
    CHECK(Y[x] == acc);
  }

  // 2-D 5-point stencil on the interior
  auto jac = computation(
      "jacobi2d", out_view(out<float, "y">(i, j)),
      md_hom([](auto c, auto n, auto s2, auto w, auto e) { return 0.2f * (c + n + s2 + w + e); },
             cc, cc),
      inp_view(in<float, "x">(i + 1, j + 1), in<float, "x">(i, j + 1), in<float, "x">(i + 2, j + 1),
               in<float, "x">(i + 1, j), in<float, "x">(i + 1, j + 2)));
  auto t = jac.sizes(19, 23);
  host_tensor<float> xin(jac.shape("x", t)), yout(jac.shape("y", t));
  CHECK(xin.shape() == shape_t{21, 25});
  xin.randomize(9);
  reference(jac, t, {xin}, {yout});
  for (int a = 0; a < 19; ++a)
    for (int b = 0; b < 23; ++b) {
      float want = 0.2f * (xin.at({a + 1, b + 1}) + xin.at({a, b + 1}) + xin.at({a + 2, b + 1}) +
                           xin.at({a + 1, b}) + xin.at({a + 1, b + 2}));
      CHECK(yout.at({a, b}) == doctest::Approx(want).epsilon(1e-6));
    }

  // two outputs under one custom operator: (min, argmin) of every row
  auto argmin = custom(
      "argmin",
      [](auto l, auto r) {
        auto [lv, li] = l;
        auto [rv, ri] = r;
        auto take_l = lv < rv || (lv == rv && li < ri);
        return std::make_tuple(select(take_l, lv, rv), select(take_l, li, ri));
      },
      std::numeric_limits<double>::infinity(), 2147483647);
  auto am =
      computation("argmin", out_view(out<float, "v">(i), out<std::int32_t, "at">(i)),
                  md_hom([](auto x, auto id) { return std::make_tuple(x, id); }, cc, pw(argmin)),
                  inp_view(in<float, "x">(i, j), in<std::int32_t, "ids">(j)));
  auto u = am.sizes(13, 29);
  host_tensor<float> xs(am.shape("x", u)), vs(am.shape("v", u));
  host_tensor<std::int32_t> ids(am.shape("ids", u)), at(am.shape("at", u));
  xs.randomize(4, -3, 3);
  for (int q = 0; q < 29; ++q) ids[q] = 100 + q;
  reference(am, u, {xs, ids}, {vs, at});
  for (int a = 0; a < 13; ++a) {
    int best = 0;
    for (int b = 1; b < 29; ++b)
      if (xs.at({a, b}) < xs.at({a, best})) best = b;
    CHECK(vs[a] == xs.at({a, best}));
    CHECK(at[a] == 100 + best);
  }
}

TEST_CASE("reference: mismatched buffers are errors that name buffer and dimension") {
  auto [i, j, k] = indices<3>();
  auto mm = computation("matmul", out_view(out<float, "C">(i, j)),
                        md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                        inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  auto s = mm.sizes(4, 5, 6);
  host_tensor<float> A({4, 6}), B({6, 5}), C({4, 5}, -1.0f), wrong({6, 4});
  host_tensor<double> Ad({4, 6});
  host_tensor<float> flat({24});
  CHECK_THROWS_WITH_AS(reference(mm, s, {A}, {C}),
                       doctest::Contains("1 input buffers given, expected 2 (A, B)"), mdh::error);
  CHECK_THROWS_WITH_AS(reference(mm, s, {A, wrong}, {C}),
                       doctest::Contains("input 'B' dimension 1 has extent 4, expected 5"),
                       mdh::error);
  CHECK_THROWS_WITH_AS(reference(mm, s, {Ad, B}, {C}),
                       doctest::Contains("input 'A' has element type f64, expected f32"),
                       mdh::error);
  CHECK_THROWS_WITH_AS(reference(mm, s, {flat, B}, {C}),
                       doctest::Contains("input 'A' has rank 1, expected 2"), mdh::error);
  CHECK_THROWS_WITH_AS(reference(mm, s, {A, B}, {}),
                       doctest::Contains("0 output buffers given, expected 1 (C)"), mdh::error);
  // nothing was written by the failed calls
  for (float x : C.vector()) CHECK(x == -1.0f);
}
