// SPDX-License-Identifier: MIT
// Without a GPU: the CUDA source of every sample under edge and random valid configurations (all
// with MDH_TEST_FULL=1, else a subset covering every value class of them: sweep_sample.hpp)
// compiles with NVRTC for sm_90 (in parallel threads); the module cache and error paths work.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <thread>

#include <backends/cuda/compile_all.hpp>
#include <backends/cuda/l2_read.hpp>
#include <backends/cuda/program.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

#include "ir_samples.hpp"
#include "sweep_sample.hpp"
#if __has_include(<expressions/all.hpp>)
#include <expressions/bert_layer.hpp>
#include <mdh/lower/mma.hpp>
#include <mdh/lower/mma_support.hpp>
#include <mdh/lower/producer_passes.hpp>

#include "expression_cases.hpp"
#define MDH_TEST_EXPRESSIONS 1
#endif

using namespace mdh;

TEST_CASE("NVRTC compiles the CUDA source of every sample for sm_90") {
  auto lim = lower::h200_limits();
  std::vector<lower::kernel_plan> plans;
  std::map<std::string, int> per_comp;
  std::mt19937_64 rng(99);
  std::size_t drawn = 0;
  for (auto& s : test::all_samples()) {
    auto cfgs = lower::edge_configs(s.comp, s.sizes, lim);
    const std::size_t edges = cfgs.size();
    for (int k = 0; k < 20; ++k) cfgs.push_back(lower::random_config(s.comp, s.sizes, lim, rng));
    drawn += cfgs.size();
    for (auto& c : test::sweep_sample(cfgs, s.comp, s.sizes, edges))
      plans.push_back(lower::lower(s.comp, s.sizes, c, lim)), ++per_comp[s.comp.name];
  }
#ifdef MDH_TEST_EXPRESSIONS
  test::for_each_expression_case([&](std::string_view name, const auto& op, const auto& sizes) {
    const ir::computation& c = mdh::describe(op);
    auto cfgs = lower::edge_configs(c, sizes, lim);
    const std::size_t edges = cfgs.size();
    for (int k = 0; k < 20; ++k) cfgs.push_back(lower::random_config(c, sizes, lim, rng));
    drawn += cfgs.size();
    for (auto& cfg : test::sweep_sample(cfgs, c, sizes, edges))
      plans.push_back(lower::lower(c, sizes, cfg, lim)),
          ++per_comp["expressions/" + std::string(name)];
  });
#endif
  cuda::module_cache cache("");  // memory only: every plan really goes through NVRTC
  const auto report =
      cuda::compile_all(plans, "sm_90", std::max(2u, std::thread::hardware_concurrency()), cache);
  for (std::size_t k = 0; k < plans.size(); ++k)
    CHECK_MESSAGE(report.errors[k].empty(), plans[k].name, ": ", report.errors[k]);
  for (auto& [n, c] : per_comp) MESSAGE(n, ": ", c, " configurations compiled by NVRTC");
  MESSAGE(plans.size(), " of ", drawn, " configurations drawn compiled by NVRTC");
  CHECK(cache.compiles() <= plans.size());
}

namespace {
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every kernel of the CUDA source opens with the programmatic-dependent-launch wait; for sm_90
// the PTX of each entry has griddepcontrol.wait and .launch_dependents, for sm_80 neither.
void check_grid_dependency(const lower::kernel_plan& plan) {
  INFO(plan.name);
  const std::string src = cuda::emit(plan);
  const std::size_t kernels = count(src, "__global__ ");
  CHECK(kernels >= 1);
  CHECK(kernels == count(src, "  mdh_grid_dependency();\n"));
  for (auto at = src.find("__global__ "); at != std::string::npos;
       at = src.find("__global__ ", at + 1)) {
    const auto open = src.find("{\n", at);
    CHECK(src.compare(open + 2, 25, "  mdh_grid_dependency();\n") == 0);
  }
  const std::string arch = plan.mma.wgmma ? "sm_90a" : "compute_90";
  const auto sm90 = cuda::compile_uncached(src, plan.name, arch);
  if (!sm90.ptx.empty()) {
    CHECK(count(sm90.ptx, "griddepcontrol.wait;") == count(sm90.ptx, ".entry "));
    CHECK(count(sm90.ptx, "griddepcontrol.launch_dependents;") == count(sm90.ptx, ".entry "));
  }
  if (plan.mma.wgmma || plan.mma.tma) return;  // sm_90 only
  const auto sm80 = cuda::compile_uncached(src, plan.name, "compute_80");
  CHECK(count(sm80.ptx, "griddepcontrol") == 0);
}
}  // namespace

TEST_CASE("every CUDA kernel first waits for the grid it may overlap (dependent launch)") {
  auto lim = lower::h200_limits();
  std::mt19937_64 rng(11);
  int plans = 0;
  for (auto& s : test::all_samples()) {
    if (plans == 6) break;
    check_grid_dependency(
        lower::lower(s.comp, s.sizes, lower::random_config(s.comp, s.sizes, lim, rng), lim));
    ++plans;
  }
#ifdef MDH_TEST_EXPRESSIONS
  // every kind of plan: fused pairs, the one-kernel attention, epilogues, tensor-core products
  const ops::bert_shape small{2, 13, 64, 4, 128};
  ops::for_each_bert_stage<bf16>(small, [&](const ops::bert_stage& st, const auto& comp) {
    const auto& c = comp.ir();
    check_grid_dependency(lower::lower(c, st.sizes, lower::default_config(c, st.sizes), lim));
    ++plans;
    if constexpr (!is_fused_v<std::decay_t<decltype(comp)>> &&
                  !is_produced_v<std::decay_t<decltype(comp)>>)
      if (lower::mma_supported(c)) {
        check_grid_dependency(
            lower::lower(c, st.sizes, lower::random_mma_config(c, st.sizes, lim, rng), lim));
        ++plans;
      }
  });
#endif
  MESSAGE(plans, " plans checked");
}

TEST_CASE("the generated CUDA uses the performance features when configured") {
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{128, 128, 64};
  lower::config cfg = lower::default_config(c, sizes);
  cfg.dims[0] = {16, 16, 64, 4, false, 1, 1};  // i: 16 blocks, 16 threads x 4 registers
  cfg.dims[1] = {8, 16, 64, 4, false, 0, 0};   // j
  cfg.dims[2] = {1, 1, 16, 1, false, 2, 2};    // k: 16-wide shared tiles
  cfg.inputs[0] = {lower::cache_kind::shared, true, 1};
  cfg.inputs[1] = {lower::cache_kind::shared, false, 0};
  auto plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  auto src = cuda::emit(plan);
  CHECK(src.find("#pragma unroll") != std::string::npos);
  CHECK(src.find("float acc0[16];") != std::string::npos);
  CHECK(src.find("__syncthreads();") != std::string::npos);
  CHECK(src.find("extern \"C\" __global__ void __launch_bounds__(256) " + plan.name) !=
        std::string::npos);
  cuda::module_cache cache("");
  auto m = cuda::compile(plan, "sm_90", cache);
  CHECK(!m->cubin.empty());
  // warp shuffles for a split reduction
  cfg = lower::default_config(c, sizes);
  cfg.dims[2] = {2, 8, 32, 1, true, 0, 0};
  cfg.dims[1].thr = 16, cfg.dims[1].thr_map = 0;
  cfg.thr_combine = lower::thread_combine::warp_shuffle;
  cfg.blk_combine = lower::block_combine::atomic;
  plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  src = cuda::emit(plan);
  CHECK(src.find("__shfl_xor_sync") != std::string::npos);
  CHECK(src.find("atomicAdd") != std::string::npos);
  CHECK(plan.kernels.size() == 2);  // init + main
  CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
  // the same split combined by the group's last block: one kernel
  cfg.blk_combine = lower::block_combine::last_block;
  plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  src = cuda::emit(plan);
  CHECK(plan.kernels.size() == 1);
  CHECK(src.find("__shared__ int mdh_last;") != std::string::npos);
  CHECK(src.find("mdh_last = atomicAdd(&cnt[grp], 1) == 1;") != std::string::npos);
  CHECK(src.find("__threadfence();") != std::string::npos);
  CHECK(src.find("__ldcg(&part0[") != std::string::npos);
  CHECK(src.find("cnt[grp] = 0;") != std::string::npos);
  CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
  // float4 loads along k (A) and j (B) at once, float4 stores of C
  cfg = lower::default_config(c, sizes);
  cfg.dims[0] = {16, 8, 8, 1, false, 1, 0};
  cfg.dims[1] = {8, 4, 16, 4, false, 0, 0};
  cfg.dims[2] = {1, 4, 64, 4, false, 0, 0};  // k: 4 threads of 4 registers, 4 rm steps
  cfg.vec = 4, cfg.vec_pw = 4;
  cfg.thr_combine = lower::thread_combine::warp_shuffle;
  plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  src = cuda::emit(plan);
  CHECK(src.find("const float4 wp0 = (pvg && v0) ? *(const float4*)(&in0[64 * e0 + peg])") !=
        std::string::npos);
  CHECK(src.find("*(const float4*)(&in1[eg + 128 * e2])") != std::string::npos);
  CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
}

// NVRTC merges a thread's consecutive register slots into vector shared-memory loads only when
// the tile index is its thread part widened to 64 bits plus the slot's constant (c_printer's
// box_offset_expr); through e - S it issued one 4-byte load per slot, 192 per 16-deep k tile of
// this configuration (the tuned 2048x3072x768 matmul), and the kernel ran 8 % slower on the H200.
TEST_CASE("register tiles read from shared tiles with vector loads") {
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{2048, 3072, 768};
  lower::config cfg = lower::default_config(c, sizes);
  cfg.dims[0] = {32, 8, 64, 8, false, 1, 0};    // i: 8 threads x 8 registers
  cfg.dims[1] = {24, 32, 128, 4, false, 0, 0};  // j: 32 threads x 4 registers
  cfg.dims[2] = {1, 1, 16, 8, false, 0, 0};     // k: 16-deep shared tiles, 8 registers
  cfg.inputs[0] = {lower::cache_kind::shared, true, 0};
  cfg.inputs[1] = {lower::cache_kind::shared, false, 0};
  cfg.vec = 4;
  cfg.prefetch = 2;
  auto plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  cuda::module_cache cache("");
  auto m = cuda::compile(plan, "sm_90", cache);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = m->ptx.find(what); at != std::string::npos; at = m->ptx.find(what, at + 1)) ++n;
    return n;
  };
  const std::size_t v4 = count("ld.shared.v4.f32"), scalar = count("ld.shared.f32");
  MESSAGE("shared loads per tile: ", v4, " float4, ", scalar, " scalar");
  CHECK(v4 >= 40);  // 16 k x (2 for A's 8 rows + 1 for B's 4 columns) = 48 when all merge
  CHECK(scalar <= 16);
}

TEST_CASE("module cache: memory and disk, keyed by source and arch") {
  auto dir =
      std::filesystem::temp_directory_path() / ("mdh-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto c = test::jacobi2d();
  auto plan = lower::lower(c, {9, 9}, lower::default_config(c, {9, 9}), lower::h200_limits());
  {
    cuda::module_cache cache(dir.string());
    auto a = cuda::compile(plan, "sm_90", cache);
    auto b = cuda::compile(plan, "sm_90", cache);
    CHECK(a.get() == b.get());
    CHECK(cache.compiles() == 1);
    CHECK(!a->ptx.empty());
  }
  {
    cuda::module_cache cache(dir.string());
    auto a = cuda::compile(plan, "sm_90", cache);
    CHECK(a->from_cache);
    CHECK(cache.compiles() == 0);
    cuda::compile(plan, "sm_80", cache);
    CHECK(cache.compiles() == 1);
  }
  std::filesystem::remove_all(dir);
}

// compile_all: the plans side by side into the cache, so that building their programs afterwards
// runs NVRTC no more; a plan that does not compile is reported by name without stopping the rest.
TEST_CASE("compile_all compiles plans side by side into the module cache") {
  auto lim = lower::h200_limits();
  std::vector<lower::kernel_plan> plans;
  std::mt19937_64 rng(7);
  for (auto& s : test::all_samples()) {
    if (plans.size() == 6) break;
    plans.push_back(
        lower::lower(s.comp, s.sizes, lower::random_config(s.comp, s.sizes, lim, rng), lim));
  }
  REQUIRE(plans.size() == 6);
  cuda::module_cache cache("");
  const auto report = cuda::compile_all(plans, "sm_90", 3, cache);
  CHECK(report.failed() == 0);
  CHECK(report.summary(plans).empty());
  CHECK(cache.compiles() == plans.size());
  for (auto& p : plans) CHECK(!cuda::compile(p, "sm_90", cache)->cubin.empty());
  CHECK(cache.compiles() == plans.size());  // found in memory, NVRTC not run again
  CHECK(cuda::compile_all(plans, "sm_90", 0, cache).failed() == 0);
  CHECK(cache.compiles() == plans.size());

  // an architecture NVRTC does not know: every plan fails, each named with NVRTC's message
  const auto bad = cuda::compile_all(std::span(plans).first(2), "sm_10", 2, cache);
  CHECK(bad.failed() == 2);
  const std::string text = bad.summary(std::span(plans).first(2));
  CHECK(text.find("2 of 2 plans did not compile") != std::string::npos);
  CHECK(text.find(plans[0].name) != std::string::npos);
  CHECK(text.find(plans[1].name) != std::string::npos);
  CHECK(bad.errors[0].find("NVRTC compilation of") != std::string::npos);
}

TEST_CASE("NVRTC errors carry the log and the dumped source") {
  try {
    cuda::compile_uncached("extern \"C\" __global__ void k() { this is not cuda; }", "mdh_broken_0",
                           "sm_90");
    FAIL("no error");
  } catch (const error& e) {
    std::string w = e.what();
    CHECK(w.find("NVRTC compilation of mdh_broken_0 failed") != std::string::npos);
    CHECK(w.find("error") != std::string::npos);
    auto pos = w.find("source in ");
    REQUIRE(pos != std::string::npos);
    auto path = w.substr(pos + 10, w.find(":\n", pos) - pos - 10);
    CHECK(std::filesystem::exists(path));
  }
}

// The kernel the tuner reads warm inputs back into L2 with (and mdh_bench --flush read flushes
// with): it compiles for every architecture the tensor-core kernels target, and reads in 16-byte
// loads that bypass L1 (ld.global.cg.v4) with a byte-wise tail.
TEST_CASE("the L2 read kernel compiles and loads through L2 only") {
  for (std::string arch : {"sm_80", "sm_90"}) {
    auto m = cuda::compile_uncached(cuda::l2_read::source(), "mdh_l2_read", arch);
    CHECK_FALSE(m.cubin.empty());
    REQUIRE_FALSE(m.ptx.empty());
    CHECK(m.ptx.find("ld.global.cg.v4.u32") != std::string::npos);
    CHECK(m.ptx.find("ld.global.cg.u8") != std::string::npos);
  }
}

TEST_CASE("without a GPU, device access fails with a clear mdh::error") {
  if (cuda::device_available()) return;
  CHECK_THROWS_WITH_AS(cuda::device(0), doctest::Contains("no CUDA device"), error);
}
