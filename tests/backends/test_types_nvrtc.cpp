// SPDX-License-Identifier: MIT
// Without a GPU: the CUDA source of the bf16, f16 and TF32 cases (types_cases.hpp) under random
// valid configurations compiles with NVRTC for sm_90 (PTX cvt conversions), and for sm_75,
// where the bf16 and TF32 roundings are written out (cvt.bf16/tf32 need sm_80).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <backends/cuda/program.hpp>
#include <backends/opencl/emit.hpp>

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

// A fused kernel prints one prelude for its stages: where only one stage has a width-8 group
// (the GPU sweep found a bf16 softmax whose statistics stage read with vec_pw 8 and whose
// normalisation did not), each helper is defined once and the source compiles.
TEST_CASE("CUDA source of a fused pair whose stages need different helpers defines each once") {
  auto lim = lower::h200_limits();
  const std::string common =
      "blk_0=4 blk_1=1 blk_combine=1 blk_map_0=1 blk_map_1=1 strided_0=0 strided_1=0 t_rm_0=2 "
      "t_rm_1=16 t_sm_0=14 t_sm_1=7168 thr_0=7 thr_1=32 thr_map_0=0 thr_map_1=0 vec=1 ";
  auto f = fuse("softmax", ops::softmax_stats<bf16>(), ops::softmax_normalize<bf16>());
  const std::vector<std::int64_t> s{5, 37};
  const lower::fused_config cfg{
      lower::config_from_string(
          common + "cache_0=1 pad_0=1 prefetch=1 thr_combine=1 transpose_0=0 vec_pw=8",
          f.ir().first),
      lower::config_from_string(common + "cache_0=0 cache_1=1 cache_2=0 pad_0=0 pad_1=0 pad_2=0 "
                                         "prefetch=0 thr_combine=0 transpose_0=0 transpose_1=0 "
                                         "transpose_2=0",
                                f.ir().second)};
  auto plan = lower::lower(f.ir(), s, cfg, lim);
  const std::string src = cuda::emit(plan);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("struct __align__(16) mdh_ushort8") == 1);  // the first stage's 8-groups
  CHECK(count("float mdh_bf16_to_float(") == 1);
  CHECK(count("unsigned short mdh_float_to_bf16(") == 1);
  CHECK(count("// CUDA C++ for NVRTC") == 1);
  cuda::module_cache cache("");
  CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
}

// kernel_plan::approx_math: where every output is 16-bit, float exp and division take
// ex2.approx and div.full.f32 (their errors lie far below the results' rounding); a computation
// with a float output keeps the IEEE functions, and the OpenCL dialect has no approximations.
TEST_CASE("CUDA source approximates float exp and division only where every output is 16-bit") {
  auto lim = lower::h200_limits();
  const std::vector<std::int64_t> s{64, 100};
  auto bf = fuse("softmax", ops::softmax_stats<bf16>(), ops::softmax_normalize<bf16>());
  auto bf_plan = lower::lower(bf.ir(), s, lower::default_config(bf.ir(), s), lim);
  REQUIRE(bf_plan.stages.size() == 2);
  // M and S are float, but feed only the bf16 Y (fuse.hpp, approximate_statistics)
  CHECK(bf_plan.stages[0].approx_math);
  CHECK(bf_plan.stages[1].approx_math);
  CHECK(lower::to_string(bf_plan).find("math: float exp and division approximate") !=
        std::string::npos);
  const std::string bf_src = cuda::emit(bf_plan);
  CHECK(bf_src.find("= (float)(mdh_exp_approx(") != std::string::npos);
  CHECK(bf_src.find("= (float)(mdh_div_approx(") != std::string::npos);
  CHECK(bf_src.find("expf(") == std::string::npos);
  CHECK(bf_src.find("(float)(v5 / v7)") == std::string::npos);  // the IEEE division
  CHECK(opencl::emit(bf_plan).find("mdh_exp_approx") == std::string::npos);

  auto f32 = fuse("softmax", ops::softmax_stats<float>(), ops::softmax_normalize<float>());
  auto f32_plan = lower::lower(f32.ir(), s, lower::default_config(f32.ir(), s), lim);
  CHECK_FALSE(f32_plan.stages[0].approx_math);
  const std::string f32_src = cuda::emit(f32_plan);
  CHECK(f32_src.find("expf(") != std::string::npos);
  CHECK(f32_src.find("mdh_exp_approx") == std::string::npos);
  CHECK(f32_src.find("mdh_div_approx") == std::string::npos);

  cuda::module_cache cache("");
  for (const auto* p : {&bf_plan, &f32_plan}) {
    CHECK(!cuda::compile(*p, "sm_90", cache)->cubin.empty());
    CHECK(!cuda::compile(*p, "sm_75", cache)->cubin.empty());
  }
}
