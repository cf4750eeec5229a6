// SPDX-License-Identifier: MIT
// Without a GPU: the CUDA source of the bf16, f16 and TF32 cases (types_cases.hpp) under random
// valid configurations compiles with NVRTC for sm_90 (PTX cvt conversions), and for sm_75,
// where the bf16 and TF32 roundings are written out (cvt.bf16/tf32 need sm_80).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <backends/cuda/program.hpp>

#include "types_cases.hpp"

using namespace mdh;

TEST_CASE("NVRTC compiles the bf16, f16 and TF32 cases for sm_90 and sm_75") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");  // memory only: every plan really goes through NVRTC
  int total = 0;
  test::for_each_type_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    auto cfgs = test::case_configs(x, sizes, lim, rng, 4);
    for (std::size_t k = 0; k < cfgs.size(); ++k) {
      auto plan = lower::lower(x, sizes, cfgs[k], lim);
      INFO(lower::to_string(plan));
      auto m = cuda::compile(plan, "sm_90", cache);
      CHECK(!m->cubin.empty());
      if (k == 0) CHECK(!cuda::compile(plan, "sm_75", cache)->cubin.empty());
      ++total;
    }
  });
  MESSAGE(total, " bf16/f16/tf32 kernels compiled by NVRTC");
  CHECK(total > 80);
}

TEST_CASE("CUDA source of a bf16 matmul stores raw 16 bits and converts with cvt") {
  auto c = ops::matmul<bf16>();
  std::vector<std::int64_t> s{64, 64, 64};
  auto lim = lower::h200_limits();
  auto plan = lower::lower(c.ir(), s, lower::default_config(c.ir(), s), lim);
  std::string src = cuda::emit(plan);
  CHECK(src.find("cvt.rn.bf16.f32") != std::string::npos);
  CHECK(src.find("mdh_bf16_to_float(") != std::string::npos);
  CHECK(src.find("mdh_float_to_bf16(") != std::string::npos);
  // TF32: the inputs pass through cvt.rna.tf32.f32; an fp32 matmul has no helpers at all.
  auto f = ops::matmul<float>();
  auto t = f.with_precision(ir::precision::tf32);
  auto tplan = lower::lower(t.ir(), s, lower::default_config(t.ir(), s), lim);
  CHECK(cuda::emit(tplan).find("mdh_tf32(a0)") != std::string::npos);
  auto fplan = lower::lower(f.ir(), s, lower::default_config(f.ir(), s), lim);
  CHECK(cuda::emit(fplan).find("mdh_tf32") == std::string::npos);
  CHECK(cuda::emit(fplan).find("mdh_bf16") == std::string::npos);
}

TEST_CASE("CUDA source of 16-bit buffers with vec or vec_pw 8 moves 16 bytes at a time") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");
  int total = 0;
  test::for_each_vector16_case(
      [&](const std::string& name, const auto& op, const auto& sizes, const lower::config& c) {
        INFO(name);
        auto plan = lower::lower(op.ir(), sizes, c, lim);
        const std::string src = cuda::emit(plan);
        CHECK(src.find("struct __align__(16) mdh_ushort8") != std::string::npos);
        CHECK(src.find("*(const mdh_ushort8*)(") != std::string::npos);
        auto m = cuda::compile(plan, "sm_90", cache);
        REQUIRE(!m->cubin.empty());
        // the 16-byte struct is one 128-bit access in the PTX, not eight 16-bit ones
        if (!m->ptx.empty()) CHECK(m->ptx.find(".v4.") != std::string::npos);
        ++total;
      });
  CHECK(total == 6);
  // 4-byte buffers have no 8-element vectors: the rule names the widths there are
  auto f = ops::multiply<float>();
  std::vector<std::int64_t> s{4, 64};
  auto cfg = lower::default_config(f.ir(), s);
  cfg.vec = 8;
  CHECK_THROWS_WITH(lower::check(cfg, f.ir(), s, lim), doctest::Contains("vec in {1, 2, 4}"));
}
