// SPDX-License-Identifier: MIT
// Edge tiles (issue 19, item 1): chunks rounded up to whole tiles, the guards each dimension
// needs, and the interior path printed without them, as the plan states them; the development
// cases at odd sizes on OpenCL (PoCL) against mdh::reference with configurations that take both
// paths; the interior path of 997x1009x769 under NVRTC (sm_90) loads its shared tiles as vectors.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <backends/cuda/emit.hpp>
#include <mdh/lower/edge_tiles.hpp>
#include <mdh/lower/lower.hpp>

#include "edge_cases.hpp"
#ifdef MDH_WITH_CUDA
#include <backends/cuda/program.hpp>
#endif
#ifdef MDH_WITH_OPENCL
#include <backends/opencl/runtime.hpp>

#include "opencl_check.hpp"
#endif

using namespace mdh;

namespace {

// The tuned H200 configuration of matmul 1024^3 (params/h200/matmul_127c1d4b_1024_1024_1024.json).
lower::config tuned_matmul(const ir::computation& c) {
  return lower::config_from_string(
      "blk_0=16 blk_1=8 blk_2=1 blk_combine=2 blk_map_0=0 blk_map_1=0 blk_map_2=0 cache_0=1 "
      "cache_1=1 pad_0=1 pad_1=0 prefetch=2 strided_0=0 strided_1=0 strided_2=1 t_rm_0=8 "
      "t_rm_1=4 t_rm_2=8 t_sm_0=64 t_sm_1=128 t_sm_2=32 thr_0=8 thr_1=32 thr_2=1 thr_combine=1 "
      "thr_map_0=1 thr_map_1=1 thr_map_2=1 transpose_0=1 transpose_1=0 vec=4",
      c);
}

// The text between `from` and `to` in s (both must occur, in this order).
std::string between(const std::string& s, const std::string& from, const std::string& to) {
  const auto a = s.find(from);
  REQUIRE(a != std::string::npos);
  const auto b = s.find(to, a);
  REQUIRE(b != std::string::npos);
  return s.substr(a, b - a);
}

}  // namespace

TEST_CASE("chunk_in_whole_tiles: whole steps or tiles where every block keeps elements") {
  // 997 over 16 blocks: 63 -> one whole step of 64; the last block has 37
  CHECK(lower::chunk_in_whole_tiles(997, 16, 64, 64).chunk == 64);
  CHECK(lower::chunk_in_whole_tiles(997, 16, 64, 64).t_sm == 64);
  // several sm tiles: whole tiles of 32 (769 -> 800, the K remainder in the last tile)
  CHECK(lower::chunk_in_whole_tiles(769, 1, 32, 8).chunk == 800);
  CHECK(lower::chunk_in_whole_tiles(769, 1, 32, 8).t_sm == 32);
  // whole steps of 2048 would leave half the blocks idle: whole vectors of 4 (2049 -> 2052,
  // 4089 of 4096 blocks with elements)
  CHECK(lower::chunk_in_whole_tiles((1 << 23) + 5, 4096, 4096, 2048).chunk == 2052);
  // neither: 100 over 16 blocks keeps its chunk of 7 (8 would leave the last block idle)
  CHECK(lower::chunk_in_whole_tiles(100, 16, 64, 64).chunk == 7);
  CHECK(lower::chunk_in_whole_tiles(100, 16, 64, 64).t_sm == 7);
  // 1009 over 64 blocks: whole steps of 64 would leave 48 blocks idle; 16 is whole vectors
  CHECK(lower::chunk_in_whole_tiles(1009, 64, 64, 64).chunk == 16);
  // sizes the tiles divide: unchanged
  CHECK(lower::chunk_in_whole_tiles(1024, 16, 64, 64).chunk == 64);
  CHECK(lower::chunk_in_whole_tiles(1024, 1, 32, 8).chunk == 1024);
}

TEST_CASE("997x1009x769: guards only in the last block and the last K tile; interior unguarded") {
  auto c = mdh::describe(ops::matmul());
  const std::vector<std::int64_t> sizes{997, 1009, 769};
  auto plan = lower::lower(c, sizes, tuned_matmul(c), lower::h200_limits());
  const auto &i = plan.dims[0], &j = plan.dims[1], &k = plan.dims[2];
  CHECK(i.chunk == 64);  // 63 rounded up to the block's whole step: blocks 0..14 whole
  CHECK(j.chunk == 128);
  CHECK(k.chunk == 800);  // 25 K tiles of 32, the last with 1 element
  for (auto* d : {&i, &j, &k}) {
    INFO(d->name);
    CHECK_FALSE(d->partial_steps);
    CHECK_FALSE(d->partial_tiles);
    CHECK(d->partial_blocks);
    CHECK(d->interior);
  }
  CHECK(plan.interior_split);
  CHECK(lower::to_string(plan).find("partial: blocks (unguarded on the interior path)") !=
        std::string::npos);
  const std::string src = cuda::emit(plan);
  CHECK(src.find("const bool mdh_whole_step = (S0 <= 933) && (S1 <= 881);") != std::string::npos);
  CHECK(src.find("const bool mdh_whole_tile = (S2 <= 737);") != std::string::npos);
  // the interior path: every validity is `true` (NVRTC folds the guards away), no size compare
  const std::string interior = between(src, "// interior path", "} else {  // edge path");
  CHECK(interior.find("const bool v0 = true;") != std::string::npos);
  CHECK(interior.find("const bool v1 = true;") != std::string::npos);
  CHECK(interior.find("const bool v2 = true;") != std::string::npos);
  CHECK(interior.find("const bool vg = true;") != std::string::npos);
  for (const char* bound : {"< 997", "< 1009", "< 769"}) {
    INFO(bound);
    CHECK(interior.find(bound) == std::string::npos);
  }
  // the edge path keeps them
  const std::string edge = between(src, "} else {  // edge path", "mdh_combine(&acc0");
  CHECK(edge.find("< 769") != std::string::npos);
  CHECK(edge.find("< 997") != std::string::npos);
  CHECK(edge.find("< 1009") != std::string::npos);
}

TEST_CASE("sizes the tiles divide: no guards, no interior split, the source as before") {
  auto c = mdh::describe(ops::matmul());
  auto plan = lower::lower(c, {1024, 1024, 1024}, tuned_matmul(c), lower::h200_limits());
  for (auto& d : plan.dims) {
    CHECK_FALSE(bool(d.partial_steps || d.partial_tiles || d.partial_blocks));
    CHECK_FALSE(d.interior);
  }
  CHECK_FALSE(plan.interior_split);
  CHECK(cuda::emit(plan).find("interior path") == std::string::npos);
}

TEST_CASE("dot 2^23+5: chunks in whole vectors, 16-byte loads along the reduction") {
  auto c = mdh::describe(ops::dot());
  // the tuned H200 dot configuration of 2^24 (params/h200/dot_5087e0ed_16777216.json), vec_pw 4
  auto cfg = lower::config_from_string(
      "blk_0=4096 blk_combine=0 blk_map_0=0 cache_0=0 cache_1=0 pad_0=0 pad_1=0 prefetch=0 "
      "strided_0=0 t_rm_0=4 t_sm_0=4096 thr_0=512 thr_combine=1 thr_map_0=0 transpose_0=0 "
      "transpose_1=0 vec=1 vec_pw=4",
      c);
  auto plan = lower::lower(c, {(1 << 23) + 5}, cfg, lower::h200_limits());
  CHECK(plan.dims[0].chunk == 2052);  // ceil(8388613 / 4096) = 2049 -> 2052
  REQUIRE(plan.vector_groups.size() == 1);
  CHECK(plan.reads[0].vector_groups.size() == 1);
  CHECK(plan.reads[1].vector_groups.size() == 1);
  CHECK(lower::to_string(plan).find("16-byte vector loads along k") != std::string::npos);
}

// Row sums of 3001 x 4093, 256 threads x 8 registers along a row, vec_pw = 4.
lower::config row_sum_config(const ir::computation& c) {
  return lower::config_from_string(
      "blk_0=3001 blk_1=1 blk_combine=1 blk_map_0=0 blk_map_1=0 cache_0=0 pad_0=0 prefetch=0 "
      "strided_0=0 strided_1=0 t_rm_0=1 t_rm_1=8 t_sm_0=1 t_sm_1=2048 thr_0=1 thr_1=256 "
      "thr_combine=1 thr_map_0=0 thr_map_1=0 transpose_0=0 vec=1 vec_pw=4",
      c);
}

TEST_CASE("row sums of 3001 x 4093: 16-byte loads along rows that are not 16-byte aligned") {
  auto c = mdh::describe(ops::row_sum());
  auto plan = lower::lower(c, {3001, 4093}, row_sum_config(c), lower::h200_limits());
  CHECK(plan.dims[1].chunk == 4096);  // two whole tiles of 2048, the second one guarded
  CHECK(plan.dims[1].interior);
  REQUIRE(plan.vector_groups.size() == 1);
  CHECK(plan.vector_groups[0] == lower::vector_group{1, 4, lower::dim_role::reduce});
  REQUIRE(plan.reads.size() == 1);
  // X(i, j) = X[4093 i + j]: the group start is not provably aligned, so two aligned vectors
  CHECK(plan.reads[0].vector_groups == std::vector<std::size_t>{0});
  CHECK(plan.reads[0].shifted_groups == std::vector<std::size_t>{0});
  CHECK(lower::to_string(plan).find("16-byte vector loads along j (two aligned per group") !=
        std::string::npos);
  const std::string src = cuda::emit(plan);
  CHECK(src.find("const int wp0m = (int)(wp0a & 3);") != std::string::npos);
  CHECK(src.find("const float4 wp0h = wp0s ? *(const float4*)(&in0[wp0a - wp0m + 4])") !=
        std::string::npos);
  // a row length the width divides: one aligned vector per group, as before
  auto aligned = lower::lower(c, {3001, 4096}, row_sum_config(c), lower::h200_limits());
  REQUIRE(aligned.reads.size() == 1);
  CHECK(aligned.reads[0].vector_groups == std::vector<std::size_t>{0});
  CHECK(aligned.reads[0].shifted_groups.empty());
}

#ifdef MDH_WITH_CUDA
TEST_CASE("NVRTC: the interior path of 997x1009x769 reads its shared tiles as vectors") {
  auto c = mdh::describe(ops::matmul());
  auto plan = lower::lower(c, {997, 1009, 769}, tuned_matmul(c), lower::h200_limits());
  auto m = cuda::compile_uncached(cuda::emit(plan), plan.name, "sm_90");  // the cache keeps no PTX
  std::size_t v4 = 0;
  for (auto at = m.ptx.find("ld.shared.v4.f32"); at != std::string::npos;
       at = m.ptx.find("ld.shared.v4.f32", at + 1))
    ++v4;
  // every register-loop read was a guarded scalar load before the split (0 vector loads)
  MESSAGE(v4, " ld.shared.v4.f32 in the PTX");
  CHECK(v4 >= 32);
}

TEST_CASE("NVRTC: the row sum of 3001 x 4093 loads its rows with 16-byte global loads") {
  auto c = mdh::describe(ops::row_sum());
  auto plan = lower::lower(c, {3001, 4093}, row_sum_config(c), lower::h200_limits());
  auto m = cuda::compile_uncached(cuda::emit(plan), plan.name, "sm_90");
  std::size_t v4 = 0;
  for (const char* what : {"ld.global.nc.v4.f32", "ld.global.v4.f32"})
    for (auto at = m.ptx.find(what); at != std::string::npos; at = m.ptx.find(what, at + 1)) ++v4;
  MESSAGE(v4, " 16-byte global loads in the PTX");  // 0 before the shifted loads
  CHECK(v4 >= 8);
}
#endif

TEST_CASE("OpenCL: the development cases at odd sizes, configurations with both paths") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  std::unique_ptr<opencl::context> ctx;
  try {
    ctx = std::make_unique<opencl::context>();
  } catch (const std::exception& e) {
    MESSAGE("SKIPPED: no OpenCL device: ", e.what());
    return;
  }
  auto lim = ctx->limits();
  lim.name = "pocl-cpu";
  int total = 0, cases = 0;
  test::for_each_edge_case(
      true, [&](std::string_view name, const auto& op, const test::edge_sizes& sizes) {
        INFO(name, " at ", to_string(sizes));
        const ir::computation& c = mdh::describe(op);
        auto cfgs = test::edge_split_configs(c, sizes, lim, 4, 1900 + std::uint64_t(cases));
        CHECK_MESSAGE(cfgs.size() == 4, "few configurations with an interior path");
        cfgs.push_back(lower::default_config(c, sizes));
        total += test::run_configs(*ctx, op, sizes, cfgs, 23 + std::uint64_t(cases));
        ++cases;
      });
  CHECK(cases == 8);
  MESSAGE(total, " configurations of ", cases, " edge cases checked on ", lim.name);
#endif
}
