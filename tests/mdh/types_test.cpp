// SPDX-License-Identifier: MIT
// Element types bf16 and f16 and the TF32 precision on the CPU: rounding against known bit
// patterns, promotion in the DSL and the IR, the accumulation type, the CPU reference against
// loops written out, hashes, host tensors and parameter files.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <expressions/all.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <mdh/tuning/verify.hpp>

using namespace mdh;

namespace {
float from_bits(std::uint32_t u) { return detail::bits_float(u); }
}  // namespace

TEST_CASE("bf16 rounds to nearest even from float and from double") {
  CHECK(bf16_bits_from(1.0) == 0x3f80);
  CHECK(bf16_bits_from(-2.0) == 0xc000);
  CHECK(bf16_bits_from(from_bits(0x3f808000)) == 0x3f80);  // tie, down to even
  CHECK(bf16_bits_from(from_bits(0x3f818000)) == 0x3f82);  // tie, up to even
  CHECK(bf16_bits_from(from_bits(0x3f808001)) == 0x3f81);  // above the tie
  CHECK(bf16_bits_from(from_bits(0x3f807fff)) == 0x3f80);  // below the tie
  CHECK(bf16_bits_from(from_bits(0x7f7fffff)) == 0x7f80);  // FLT_MAX rounds to infinity
  CHECK(bf16_bits_from(from_bits(0x7f7f7fff)) == 0x7f7f);  // largest bf16 stays
  CHECK(bf16_bits_from(-std::numeric_limits<double>::infinity()) == 0xff80);
  CHECK(bf16_bits_from(std::nan("")) == 0x7fc0);
  CHECK(bf16_bits_from(-0.0) == 0x8000);
  CHECK(bf16_bits_from(from_bits(0x00008000)) == 0x0000);  // subnormal tie, to even (0)
  CHECK(bf16_bits_from(from_bits(0x00018000)) == 0x0002);  // subnormal tie, to even (2)
  CHECK(bf16_bits_from(from_bits(0x00010001)) == 0x0001);
  // From double in one rounding: 1 + 2^-8 + 2^-40 is above the tie; through float (which
  // drops 2^-40) it would be a tie and round down to 0x3f80.
  CHECK(bf16_bits_from(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81);
  CHECK(bf16_bits_from(double(float(1.0 + 0x1p-8 + 0x1p-40))) == 0x3f80);
  // Every bf16 value converts to float exactly and back to its own bits.
  for (std::uint32_t b = 0; b < 65536; ++b) {
    float f = bf16_bits_to_float(std::uint16_t(b));
    if (std::isnan(f)) continue;
    REQUIRE(bf16_bits_from(f) == b);
    REQUIRE(detail::float_bits(f) == b << 16);
  }
}

TEST_CASE("f16 rounds to nearest even with subnormals, overflow, NaN and signed zeros") {
  CHECK(f16_bits_from(1.0) == 0x3c00);
  CHECK(f16_bits_from(-2.0) == 0xc000);
  CHECK(f16_bits_from(0.1) == 0x2e66);
  CHECK(f16_bits_from(1.0 / 3.0) == 0x3555);
  CHECK(f16_bits_from(65504.0) == 0x7bff);   // largest finite
  CHECK(f16_bits_from(65519.99) == 0x7bff);  // below the tie to 65536
  CHECK(f16_bits_from(65520.0) == 0x7c00);   // the tie rounds to even: infinity
  CHECK(f16_bits_from(-1e6) == 0xfc00);
  CHECK(f16_bits_from(0x1p-14) == 0x0400);    // smallest normal
  CHECK(f16_bits_from(0x1p-24) == 0x0001);    // smallest subnormal
  CHECK(f16_bits_from(0x1p-25) == 0x0000);    // tie to even: zero
  CHECK(f16_bits_from(0x1.8p-24) == 0x0002);  // tie to even: 2
  CHECK(f16_bits_from(0x1.0000001p-25) == 0x0001);
  CHECK(f16_bits_from(0x1.ff8p-15) == 0x03ff);    // largest subnormal
  CHECK(f16_bits_from(0x1.ffcp-15) == 0x0400);    // and half a step more: a tie, to the normal
  CHECK(f16_bits_from(1.0 + 0x1p-11) == 0x3c00);  // tie, to even
  CHECK(f16_bits_from(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);  // above it, from double
  CHECK(f16_bits_from(-0.0) == 0x8000);
  CHECK(f16_bits_from(std::nan("")) == 0x7e00);
  CHECK(f16_bits_from(std::numeric_limits<double>::infinity()) == 0x7c00);
  CHECK(f16_bits_to_float(0x0001) == 0x1p-24f);
  CHECK(f16_bits_to_float(0x03ff) == 0x1.ff8p-15f);
  CHECK(f16_bits_to_float(0xfbff) == -65504.0f);
  CHECK(std::signbit(f16_bits_to_float(0x8000)));
  CHECK(std::isinf(f16_bits_to_float(0x7c00)));
  CHECK(std::isnan(f16_bits_to_float(0x7e00)));
  CHECK(std::isnan(f16_bits_to_float(0xfc01)));
  for (std::uint32_t b = 0; b < 65536; ++b) {
    float f = f16_bits_to_float(std::uint16_t(b));
    if (std::isnan(f)) continue;
    REQUIRE(f16_bits_from(f) == b);
  }
}

TEST_CASE("TF32 rounds to nearest with ties away from zero (cvt.rna.tf32.f32)") {
  CHECK(round_tf32(1.0f) == 1.0f);
  CHECK(round_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);  // tie: away from zero
  CHECK(round_tf32(-1.0f - 0x1p-11f) == -1.0f - 0x1p-10f);
  CHECK(round_tf32(1.0f + 0x1p-11f - 0x1p-23f) == 1.0f);            // below the tie
  CHECK(round_tf32(1.0f + 0x1p-10f + 0x1p-11f) == 1.0f + 0x1p-9f);  // away, not to even
  CHECK(std::isinf(round_tf32(INFINITY)));
  CHECK(std::isnan(round_tf32(from_bits(0x7f800001))));  // a NaN stays NaN
  CHECK((detail::float_bits(round_tf32(0.1f)) & 0x1fffu) == 0);
}

TEST_CASE("bf16 and f16 host values compute in float; the DSL records the same promotions") {
  bf16 a(1.5), b(2.0);
  f16 h(0.25);
  static_assert(std::is_same_v<decltype(a * b), float>);
  static_assert(std::is_same_v<decltype(a + h), float>);
  static_assert(std::is_same_v<decltype(a * 2.0), double>);
  static_assert(std::is_same_v<decltype(-a), float>);
  static_assert(std::is_same_v<decltype(mdh::exp(a)), float>);
  static_assert(std::is_same_v<decltype(mdh::max(a, b)), float>);
  CHECK(a * b == 3.0f);
  CHECK(float(bf16(0.1)) == bf16_bits_to_float(bf16_bits_from(0.1)));
  ir::scalar_function f;
  f.arg_types = {scalar_type::bf16, scalar_type::f16};
  {
    recording_scope scope(f);
    sym x = sym::arg(0, scalar_type::bf16), y = sym::arg(1, scalar_type::f16);
    CHECK((x * x).type() == scalar_type::f32);
    CHECK((x + y).type() == scalar_type::f32);
    CHECK((x * 2.0).type() == scalar_type::f64);
    CHECK((x * 2).type() == scalar_type::f32);
    CHECK((-x).type() == scalar_type::f32);
    CHECK(mdh::exp(x).type() == scalar_type::f32);
    CHECK(mdh::abs(y).type() == scalar_type::f32);
    CHECK((x < y).type() == scalar_type::boolean);
    CHECK(select(x < y, x, x).type() == scalar_type::bf16);  // as `c ? bf16 : bf16` in C++
    CHECK((x * bf16(3)).type() == scalar_type::f32);         // a bf16 constant is a float
  }
}

TEST_CASE("bf16/f16 outputs accumulate in f32 by default, or in the stated accumulate<T>") {
  auto mm = ops::matmul<bf16>();
  const auto& c = mm.ir();
  CHECK(c.inputs[0].type == scalar_type::bf16);
  CHECK(c.outputs[0].type == scalar_type::bf16);
  CHECK(c.f.result_type(0) == scalar_type::f32);
  CHECK(mm.str().find("computed in (f32)") != std::string::npos);
  static_assert(std::is_same_v<decltype(mm)::result_tuple, std::tuple<float>>);
  static_assert(std::is_same_v<decltype(mm)::output_tuple, std::tuple<bf16>>);

  auto [i, k] = indices<2>();
  auto sum64 = computation("sum64", out_view(out<bf16, "y">(i)),
                           md_hom([](auto x) { return x; }, cc, pw(add, accumulate<double>)),
                           inp_view(in<bf16, "X">(i, k)));
  CHECK(sum64.ir().f.result_type(0) == scalar_type::f64);
  auto sum32 =
      computation("sum32", out_view(out<bf16, "y">(i)),
                  md_hom([](auto x) { return x; }, cc, pw(add)), inp_view(in<bf16, "X">(i, k)));
  CHECK(sum32.hash() != sum64.hash());
  // f32 outputs may accumulate in double too
  auto f64acc = computation("s", out_view(out<float, "y">(i)),
                            md_hom([](auto x) { return x; }, cc, pw(add, accumulate<double>)),
                            inp_view(in<float, "X">(i, k)));
  CHECK(f64acc.ir().f.result_type(0) == scalar_type::f64);
  // a result computed in 16 bits is refused by the IR's rules
  ir::computation bad = sum32.ir();
  bad.f.nodes[std::size_t(bad.f.results[0])].type = scalar_type::bf16;
  CHECK_THROWS_WITH(ir::validate(bad), doctest::Contains("computed in bf16"));
}

TEST_CASE("fp32 computations keep their IR and hash; types and TF32 change the hash") {
  auto f32 = ops::matmul<float>(), again = ops::matmul<float>();
  CHECK(f32.hash() == again.hash());
  CHECK(f32.hash() != ops::matmul<bf16>().hash());
  CHECK(ops::matmul<f16>().hash() != ops::matmul<bf16>().hash());
  auto tf32 = f32.with_precision(ir::precision::tf32);
  CHECK(tf32.hash() != f32.hash());
  CHECK(tf32.str().find("precision tf32") != std::string::npos);
  CHECK(f32.str().find("precision") == std::string::npos);
  CHECK(tf32.with_precision(ir::precision::ieee).hash() == f32.hash());
  // TF32 is for contractions: a map or a max reduction refuses it, with the reason
  CHECK_THROWS_WITH(ops::multiply<float>().with_precision(ir::precision::tf32),
                    doctest::Contains("pw(add) reduction over f32 inputs"));
  CHECK_THROWS_WITH((ops::reduce<float, max_t>().with_precision(ir::precision::tf32)),
                    doctest::Contains("precision tf32 applies to fp32 contractions"));
  CHECK_THROWS_WITH(ops::matmul<bf16>().with_precision(ir::precision::tf32),
                    doctest::Contains("no input is f32"));
}

TEST_CASE("the reference rounds bf16/f16 outputs once, after an f32 accumulation") {
  auto check = [](auto tag) {
    using T = decltype(tag);
    auto mm = ops::matmul<T>();
    auto n = mm.sizes(5, 7, 33);
    host_tensor<T> A(mm.shape("A", n)), B(mm.shape("B", n)), C(mm.shape("C", n));
    A.randomize(1), B.randomize(2);
    for (std::int64_t e = 0; e < A.size(); ++e) REQUIRE(float(A[e]) != 0.0f);
    reference(mm, n, {A, B}, {C});
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) {
        float acc = float(A.at({i, 0})) * float(B.at({0, j}));
        for (int k = 1; k < 33; ++k) acc += float(A.at({i, k})) * float(B.at({k, j}));
        REQUIRE(C.at({i, j}).bits == T(acc).bits);
      }
  };
  check(bf16{});
  check(f16{});
}

TEST_CASE("the reference of a TF32 matmul rounds every f32 input to TF32") {
  auto mm = ops::matmul<float>().with_precision(ir::precision::tf32);
  auto n = mm.sizes(4, 6, 50);
  host_tensor<float> A(mm.shape("A", n)), B(mm.shape("B", n)), C(mm.shape("C", n)),
      C32(mm.shape("C", n));
  A.randomize(3), B.randomize(4);
  reference(mm, n, {A, B}, {C}, 1);
  reference(ops::matmul<float>(), n, {A, B}, {C32}, 1);
  double diff = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      float acc = round_tf32(A.at({i, 0})) * round_tf32(B.at({0, j}));
      for (int k = 1; k < 50; ++k) acc += round_tf32(A.at({i, k})) * round_tf32(B.at({k, j}));
      REQUIRE(C.at({i, j}) == acc);
      diff = std::max(diff, double(std::fabs(C.at({i, j}) - C32.at({i, j}))));
    }
  CHECK(diff > 1e-5);  // TF32 is a different result, not fp32 relabelled
}

TEST_CASE("host tensors and buffers of bf16/f16: random non-zero values, typed views") {
  host_tensor<bf16> t({1000});
  t.randomize(9);
  for (std::int64_t k = 0; k < t.size(); ++k) {
    REQUIRE(float(t[k]) != 0.0f);
    REQUIRE(std::fabs(float(t[k])) <= 1.0f);
  }
  buffer_ref r = t;
  CHECK(r.type == scalar_type::bf16);
  CHECK(r.as<bf16>() == t.data());
  CHECK_THROWS_WITH(r.as<f16>(), doctest::Contains("element type is bf16, not f16"));
  host_buffer b(scalar_type::f16, {64});
  b.randomize(2);
  CHECK(b.bytes() == 128);
  auto* h = static_cast<const f16*>(b.data());
  for (int k = 0; k < 64; ++k) REQUIRE(float(h[k]) != 0.0f);
}

TEST_CASE("tolerances follow the type's epsilon and the reduction length") {
  using tuning::tolerance;
  CHECK(tuning::machine_epsilon(scalar_type::bf16) == 0x1p-7);
  CHECK(tuning::machine_epsilon(scalar_type::f16) == 0x1p-10);
  CHECK(tolerance(scalar_type::f32, 1) == doctest::Approx(1.1e-5).epsilon(0.01));
  CHECK(tolerance(scalar_type::bf16, 1) > 2 * 0x1p-7);
  CHECK(tolerance(scalar_type::f16, 1) < tolerance(scalar_type::bf16, 1));
  CHECK(tolerance(scalar_type::bf16, 10000) > tolerance(scalar_type::bf16, 100));
  // one unit in the last place of every bf16 element passes; four do not
  host_tensor<bf16> want({100}), got({100}), got2({100});
  want.randomize(1);
  for (int k = 0; k < 100; ++k) {
    got[k] = bf16::from_bits(std::uint16_t(want[k].bits + 1));
    got2[k] = bf16::from_bits(std::uint16_t(want[k].bits + 4));
  }
  CHECK(tuning::compare(got, want, 1).empty());
  CHECK(!tuning::compare(got2, want, 1).empty());
}

TEST_CASE("parameter files record element types and TF32; a TF32 record never fits fp32") {
  auto bf = ops::matmul<bf16>();
  std::vector<std::int64_t> n{64, 64, 64};
  auto w = tuning::workload::of(bf.ir(), n);
  CHECK(w.types == std::vector<std::string>{"bf16", "bf16", "bf16"});
  CHECK(w.precision == "ieee");
  auto f32 = ops::matmul<float>();
  auto t = f32.with_precision(ir::precision::tf32);
  auto wt = tuning::workload::of(t.ir(), n), wf = tuning::workload::of(f32.ir(), n);
  CHECK(wt.precision == "tf32");
  tuning::parameter_record r;
  r.library_version = "test";
  r.work = wt;
  r.device = {"cuda", "NVIDIA H200", "9.0"};
  r.configuration = nlohmann::json::object();
  auto j = tuning::to_json(r);
  CHECK(j["workload"]["precision"] == "tf32");
  auto back = tuning::record_from_json(j, "x.json");
  CHECK(back.work == wt);
  CHECK(tuning::mismatch(back, wt, r.device).empty());
  CHECK(tuning::mismatch(back, wf, r.device).find("workload.precision is tf32, expected ieee") !=
        std::string::npos);
  // an fp32 record (no precision field, as every file before TF32) does not fit the tf32 workload
  r.work = wf;
  auto jf = tuning::to_json(r);
  CHECK(!jf["workload"].contains("precision"));
  auto backf = tuning::record_from_json(jf, "f.json");
  CHECK(backf.work.precision == "ieee");
  CHECK(!tuning::mismatch(backf, wt, r.device).empty());
  // bf16 and fp32 records of the same operator differ in hash and types
  r.work = w;
  auto bb = tuning::record_from_json(tuning::to_json(r), "b.json");
  CHECK(bb.work.types == w.types);
  CHECK(!tuning::mismatch(bb, wf, r.device).empty());
  j["workload"]["precision"] = "fp8";
  CHECK_THROWS_WITH(tuning::record_from_json(j, "bad.json"),
                    doctest::Contains("'workload.precision' is 'fp8'"));
}
