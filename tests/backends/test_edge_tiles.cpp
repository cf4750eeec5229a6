// SPDX-License-Identifier: MIT
// Edge tiles (issue 19, items 1 and 3) as the configuration parameter edge_split: 0 leaves the
// lowering as it was; 1 rounds chunks up to whole tiles and prints an interior path without the
// guards (the plan and the source say so); 2 adds shifted 16-byte loads along rows whose start is
// not provably aligned. Rules, parameter files, the search space and its starts; under NVRTC
// (sm_90) the interior path of 997x1009x769 loads its shared tiles as vectors and the row sum of
// 3001 x 4093 its rows with 16-byte loads; the development cases at odd sizes on OpenCL (PoCL)
// against mdh::reference (tuning::compare) with edge_split on.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <backends/cuda/emit.hpp>
#include <backends/opencl/emit.hpp>
#include <expressions/layernorm.hpp>
#include <mdh/fused.hpp>
#include <mdh/lower/edge_tiles.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>

#include "edge_cases.hpp"
#include "expression_cases.hpp"
#include "naive_reference.hpp"
#ifdef MDH_WITH_CUDA
#include <backends/cuda/nvrtc.hpp>
#endif
#ifdef MDH_WITH_OPENCL
#include <unistd.h>

#include <filesystem>

#include <backends/opencl/runtime.hpp>
#include <tuning/opencl_target.hpp>
#include <tuning/tune.hpp>
#endif

using namespace mdh;

namespace {

// The tuned H200 configuration of matmul 1024^3 (params/h200/matmul_127c1d4b_1024_1024_1024.json).
const char* tuned_matmul_text =
    "blk_0=16 blk_1=8 blk_2=1 blk_combine=2 blk_map_0=0 blk_map_1=0 blk_map_2=0 cache_0=1 "
    "cache_1=1 pad_0=1 pad_1=0 prefetch=2 strided_0=0 strided_1=0 strided_2=1 t_rm_0=8 "
    "t_rm_1=4 t_rm_2=8 t_sm_0=64 t_sm_1=128 t_sm_2=32 thr_0=8 thr_1=32 thr_2=1 thr_combine=1 "
    "thr_map_0=1 thr_map_1=1 thr_map_2=1 transpose_0=1 transpose_1=0 vec=4";

lower::config tuned_matmul(const ir::computation& c, std::int64_t edge_split) {
  auto cfg = lower::config_from_string(tuned_matmul_text, c);
  cfg.edge_split = edge_split;
  return cfg;
}

// Row sums of 3001 x 4093, 256 threads x 8 registers along a row, vec_pw = 4.
lower::config row_sum_config(const ir::computation& c, std::int64_t edge_split) {
  auto cfg = lower::config_from_string(
      "blk_0=3001 blk_1=1 blk_combine=1 blk_map_0=0 blk_map_1=0 cache_0=0 pad_0=0 prefetch=0 "
      "strided_0=0 strided_1=0 t_rm_0=1 t_rm_1=8 t_sm_0=1 t_sm_1=2048 thr_0=1 thr_1=256 "
      "thr_combine=1 thr_map_0=0 thr_map_1=0 transpose_0=0 vec=1 vec_pw=4",
      c);
  cfg.edge_split = edge_split;
  return cfg;
}

// The text between `from` and `to` in s (both must occur, in this order).
std::string between(const std::string& s, const std::string& from, const std::string& to) {
  const auto a = s.find(from);
  REQUIRE(a != std::string::npos);
  const auto b = s.find(to, a);
  REQUIRE(b != std::string::npos);
  return s.substr(a, b - a);
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string check_error(const lower::config& cfg, const ir::computation& c,
                        const std::vector<std::int64_t>& sizes, const lower::device_limits& lim) {
  try {
    lower::check(cfg, c, sizes, lim);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("edge_split = 0: the configuration, its file and its plan as before the parameter") {
  auto c = mdh::describe(ops::matmul());
  const std::vector<std::int64_t> sizes{997, 1009, 769};
  const auto off = tuned_matmul(c, 0);
  CHECK(lower::to_map(off).count("edge_split") == 0);  // not written: old files, old names
  CHECK(nlohmann::json(off).dump().find("edge_split") == std::string::npos);
  CHECK(lower::to_full_map(off).at("edge_split") == 0);  // but every rule can read it
  auto plan = lower::lower(c, sizes, off, lower::h200_limits());
  CHECK(plan.dims[0].chunk == 63);  // ceil(997 / 16): not rounded
  CHECK(plan.dims[2].chunk == 769);
  CHECK_FALSE(plan.interior_split);
  for (auto& d : plan.dims) CHECK_FALSE(bool(d.partial_blocks || d.interior));
  CHECK(cuda::emit(plan).find("interior path") == std::string::npos);
  // written when on, read back
  const auto on = tuned_matmul(c, 2);
  CHECK(lower::to_map(on).at("edge_split") == 2);
  CHECK(lower::config_from_json(nlohmann::json(on), c) == on);
  CHECK(lower::config_from_string(lower::to_string(on), c) == on);
  CHECK(lower::config_from_json(nlohmann::json(off), c) == off);
  CHECK(lower::lower(c, sizes, on, lower::h200_limits()).name != plan.name);
}

TEST_CASE("edge_split rules: values, shifted loads need a vector group, no fused stage") {
  auto c = mdh::describe(ops::matmul());
  const std::vector<std::int64_t> sizes{97, 101, 69};
  const auto lim = lower::h200_limits();
  auto cfg = lower::default_config(c, sizes);
  cfg.edge_split = 3;
  CHECK(check_error(cfg, c, sizes, lim)
            .find("'edge_split in {0 = off, 1 = whole-tile chunks "
                  "+ interior path, 2 = 1 + shifted vector loads}' "
                  "(parameter edge_split): edge_split=3") != std::string::npos);
  cfg.edge_split = -1;
  CHECK_FALSE(check_error(cfg, c, sizes, lim).empty());
  cfg.edge_split = 2;  // vec = vec_pw = 1: nothing to shift
  CHECK(check_error(cfg, c, sizes, lim)
            .find("'edge_split = 2 (shifted vector loads) needs vec > "
                  "1 or vec_pw > 1' (parameter edge_split)") != std::string::npos);
  cfg.edge_split = 1;
  CHECK(check_error(cfg, c, sizes, lim).empty());
  // a fused pair's stages cut their dimensions into the same chunks: no edge split
  auto f = mdh::fuse("layernorm", ops::layernorm_stats(), ops::layernorm_normalize(768));
  const std::vector<std::int64_t> fs{33, 768};
  auto fc = lower::default_config(f.ir(), fs);
  fc.second.edge_split = 1;
  std::string msg;
  try {
    lower::check(fc, f.ir(), fs, lim);
  } catch (const error& e) {
    msg = e.what();
  }
  CHECK(msg.find("'a fused stage has no edge split' (parameter edge_split)") != std::string::npos);
}

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
  auto plan = lower::lower(c, sizes, tuned_matmul(c, 1), lower::h200_limits());
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
  // the edge path keeps the reduction's guard; i and j, read only from shared tiles, compute
  // their out-of-range slots too and are guarded where they are stored
  const std::string edge = between(src, "} else {  // edge path", "mdh_combine(&acc0");
  CHECK(edge.find("< 769") != std::string::npos);
  CHECK(edge.find("< 997") == std::string::npos);
  CHECK(edge.find("< 1009") == std::string::npos);
  CHECK(i.slots_unguarded);
  CHECK(j.slots_unguarded);
  CHECK_FALSE(k.slots_unguarded);
  const std::string write = src.substr(src.find("// ---- write"));
  CHECK(write.find("< 997") != std::string::npos);
  CHECK(write.find("< 1009") != std::string::npos);
}

TEST_CASE("register loops: a ++ dim read only from shared tiles is guarded at its stores only") {
  // With guards the register loops load every shared-memory element on its own (a predicated
  // scalar load per product); without, consecutive slots load as vectors.
  auto c = mdh::describe(ops::matmul());
  const std::vector<std::int64_t> sizes{997, 1009, 769};
  auto cfg = tuned_matmul(c, 0);  // chunks of 63 x 127 in tiles of 64 x 128: every block partial
  auto plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  CHECK(plan.dims[0].slots_unguarded);
  CHECK(plan.dims[1].slots_unguarded);
  CHECK_FALSE(plan.dims[2].slots_unguarded);  // a reduction: its guard stays
  CHECK(lower::to_string(plan).find("slots unguarded (stores guarded)") != std::string::npos);
  std::string src = cuda::emit(plan);
  const std::string loops = between(src, "// rm steps of k", "// ---- write");
  CHECK(loops.find("const bool v0 = true;") != std::string::npos);
  CHECK(loops.find("const bool v1 = true;") != std::string::npos);
  CHECK(loops.find("< 769") != std::string::npos);
  const std::string write = src.substr(src.find("// ---- write"));
  CHECK(write.find("< 997") != std::string::npos);
  CHECK(write.find("< 63") != std::string::npos);  // the block's chunk: the next block's rows
  CHECK(write.find("< 1009") != std::string::npos);
  // A read from global memory (A uncached) keeps i's guard (an out-of-range row is outside A);
  // j, which A does not index, stays unguarded.
  cfg.inputs[0] = {};  // global, no layout
  cfg.prefetch = 0;
  plan = lower::lower(c, sizes, cfg, lower::h200_limits());
  CHECK_FALSE(plan.dims[0].slots_unguarded);
  CHECK(plan.dims[1].slots_unguarded);
  // Sizes the tiles divide need no guard anywhere: nothing to mark.
  plan = lower::lower(c, {1024, 1024, 768}, tuned_matmul(c, 0), lower::h200_limits());
  for (auto& d : plan.dims) CHECK_FALSE(d.slots_unguarded);
}

TEST_CASE("OpenCL: reduction dims keep their guards where the tile loop holds barriers") {
  // PoCL 3.1 asserts ("Incoming edges to non-entry block") on a barrier tile loop whose body
  // branches on its counter: with a cached input the K dimension keeps its guards there
  auto c = mdh::describe(ops::matmul());
  const std::vector<std::int64_t> sizes{97, 101, 69};
  auto lim = lower::pocl_cpu_limits();
  auto cfg = lower::default_config(c, sizes);
  cfg.dims[2].t_sm = 16, cfg.dims[2].t_rm = 2;
  cfg.edge_split = 1;
  CHECK(lower::reduction_tiles_split(cfg, lim));
  auto plan = lower::lower(c, sizes, cfg, lim);
  CHECK(plan.dims[2].chunk == 80);  // 5 tiles of 16, the last with 5 elements
  CHECK(plan.dims[2].partial_blocks);
  CHECK(plan.dims[2].interior);  // no barrier: the K tile is split as on CUDA
  CHECK(opencl::emit(plan).find("const bool mdh_whole_tile = (S2 <= 53);") != std::string::npos);
  cfg.inputs[1].cache = lower::cache_kind::shared;
  CHECK_FALSE(lower::reduction_tiles_split(cfg, lim));
  plan = lower::lower(c, sizes, cfg, lim);
  CHECK(plan.dims[2].partial_blocks);
  CHECK_FALSE(plan.dims[2].interior);
  CHECK(plan.interior_split);  // the ++ dims still are
  CHECK(opencl::emit(plan).find("const bool mdh_whole_tile = true;") != std::string::npos);
  CHECK(lower::reduction_tiles_split(cfg, lower::h200_limits()));
}

TEST_CASE("sizes the tiles divide: no guards, no interior split, the source as with edge_split 0") {
  auto c = mdh::describe(ops::matmul());
  auto plan = lower::lower(c, {1024, 1024, 1024}, tuned_matmul(c, 1), lower::h200_limits());
  for (auto& d : plan.dims) {
    CHECK_FALSE(bool(d.partial_steps || d.partial_tiles || d.partial_blocks));
    CHECK_FALSE(d.interior);
  }
  CHECK_FALSE(plan.interior_split);
  auto off = lower::lower(c, {1024, 1024, 1024}, tuned_matmul(c, 0), lower::h200_limits());
  // the same kernel but for its name and the configuration comment
  auto normal = [](std::string src, const std::string& name) {
    for (auto at = src.find(name); at != std::string::npos; at = src.find(name, at))
      src.replace(at, name.size(), "KERNEL");
    const auto cfg = src.find("// config:");
    REQUIRE(cfg != std::string::npos);
    return src.erase(cfg, src.find('\n', cfg) - cfg);
  };
  const std::string a = cuda::emit(plan);
  CHECK(a.find("interior path") == std::string::npos);
  CHECK(normal(a, plan.name) == normal(cuda::emit(off), off.name));
}

TEST_CASE("dot 2^23+5: chunks in whole vectors, 16-byte loads along the reduction") {
  auto c = mdh::describe(ops::dot());
  auto cfg = lower::config_from_string(
      "blk_0=4096 blk_combine=0 blk_map_0=0 cache_0=0 cache_1=0 pad_0=0 pad_1=0 prefetch=0 "
      "strided_0=0 t_rm_0=4 t_sm_0=4096 thr_0=512 thr_combine=1 thr_map_0=0 transpose_0=0 "
      "transpose_1=0 vec=1 vec_pw=4",
      c);
  auto off = lower::lower(c, {(1 << 23) + 5}, cfg, lower::h200_limits());
  CHECK(off.dims[0].chunk == 2049);
  CHECK(off.vector_groups.empty());  // 2049: group starts not aligned, scalar loads
  cfg.edge_split = 1;
  auto plan = lower::lower(c, {(1 << 23) + 5}, cfg, lower::h200_limits());
  CHECK(plan.dims[0].chunk == 2052);  // ceil(8388613 / 4096) = 2049 -> 2052
  REQUIRE(plan.vector_groups.size() == 1);
  CHECK(plan.reads[0].vector_groups.size() == 1);
  CHECK(plan.reads[1].vector_groups.size() == 1);
  CHECK(lower::to_string(plan).find("16-byte vector loads along k") != std::string::npos);
  // bf16 with vec_pw = 8 (16-byte vectors of 16-bit elements): chunks in whole 8-element vectors
  // (2049 -> 2056, 4081 of 4096 blocks with elements), the groups aligned, 16-byte loads
  auto b = mdh::describe(ops::dot<bf16>());
  auto bcfg = lower::config_from_string(
      "blk_0=4096 blk_combine=1 blk_map_0=0 cache_0=0 cache_1=0 pad_0=0 pad_1=0 prefetch=0 "
      "strided_0=0 t_rm_0=8 t_sm_0=4096 thr_0=256 thr_combine=1 thr_map_0=0 transpose_0=0 "
      "transpose_1=0 vec=1 vec_pw=8 edge_split=1",
      b);
  CHECK(lower::chunk_in_whole_tiles((1 << 23) + 5, 4096, 4096, 2048, 8).chunk == 2056);
  auto bplan = lower::lower(b, {(1 << 23) + 5}, bcfg, lower::h200_limits());
  CHECK(bplan.dims[0].chunk == 2056);
  REQUIRE(bplan.vector_groups.size() == 1);
  CHECK(bplan.vector_groups[0].width == 8);
  CHECK(bplan.reads[0].vector_groups.size() == 1);
  CHECK(bplan.reads[1].vector_groups.size() == 1);
  CHECK(cuda::emit(bplan).find("*(const mdh_ushort8*)(") != std::string::npos);
}

TEST_CASE("row sums of 3001 x 4093: edge_split 2 loads 16-byte vectors along unaligned rows") {
  auto c = mdh::describe(ops::row_sum());
  const std::vector<std::int64_t> sizes{3001, 4093};
  auto plan = lower::lower(c, sizes, row_sum_config(c, 2), lower::h200_limits());
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
  // edge_split 1: the same tiles, scalar loads along the row
  auto one = lower::lower(c, sizes, row_sum_config(c, 1), lower::h200_limits());
  CHECK(one.dims[1].chunk == 4096);
  REQUIRE(one.reads.size() == 1);
  CHECK(one.reads[0].vector_groups.empty());
  CHECK(one.reads[0].shifted_groups.empty());
  // a row length the width divides: one aligned vector per group, as before
  auto aligned = lower::lower(c, {3001, 4096}, row_sum_config(c, 2), lower::h200_limits());
  REQUIRE(aligned.reads.size() == 1);
  CHECK(aligned.reads[0].vector_groups == std::vector<std::size_t>{0});
  CHECK(aligned.reads[0].shifted_groups.empty());
}

TEST_CASE("the search space offers edge_split at odd sizes, and a product start has it on") {
  auto c = mdh::describe(ops::matmul());
  const auto lim = lower::h200_limits();
  const std::vector<std::int64_t> odd{997, 1009, 769}, even{1024, 1024, 1024};
  CHECK(tuning::has_edge_split_parameter(c, odd));
  CHECK_FALSE(tuning::has_edge_split_parameter(c, even));  // the space of before
  CHECK(tuning::has_edge_split_parameter(c, even, {.edge_split = 1}));
  CHECK_FALSE(tuning::has_edge_split_parameter(c, odd, {.edge_split = 0}));
  auto has = [](const std::vector<atf::tp>& ps) {
    for (auto& p : ps)
      if (p.name() == "edge_split") return true;
    return false;
  };
  CHECK(has(tuning::make_parameters(c, odd, lim)));
  CHECK_FALSE(has(tuning::make_parameters(c, even, lim)));
  auto space = tuning::make_search_space(c, odd, lim);
  const auto starts = tuning::start_configurations(c, odd, lim);
  int with_edges = 0;
  for (auto& s : starts) {
    INFO(lower::to_string(s));
    with_edges += s.edge_split != 0;
    auto a = tuning::to_space_configuration(s, c, odd, lim);
    CHECK(space.find(a).has_value());
    CHECK(tuning::to_config(a, c, odd) == s);
  }
  MESSAGE(with_edges, " of ", starts.size(), " product starts at 997x1009x769 with edge_split");
  CHECK(with_edges >= 8);  // every edge-tile start is kept when the 64 are thinned
  // random points: every edge_split value, each passing the rules (2 only with a vector group)
  std::mt19937_64 rng(5);
  std::set<std::int64_t> seen;
  for (int k = 0; k < 200; ++k) {
    auto cfg = tuning::to_config(space.to_configuration(space.random_point(rng)), c, odd);
    seen.insert(cfg.edge_split);
    CHECK_FALSE(bool(cfg.edge_split == 2 && cfg.vec == 1 && cfg.vec_pw == 1));
  }
  CHECK(seen == std::set<std::int64_t>{0, 1, 2});
  // even sizes: no start has it
  for (auto& s : tuning::start_configurations(c, even, lim)) CHECK(s.edge_split == 0);
}

#ifdef MDH_WITH_CUDA
TEST_CASE("NVRTC: the interior path of 997x1009x769 reads its shared tiles as vectors") {
  auto c = mdh::describe(ops::matmul());
  std::size_t v4[2] = {0, 0};
  for (std::int64_t e : {0, 1}) {
    auto plan = lower::lower(c, {997, 1009, 769}, tuned_matmul(c, e), lower::h200_limits());
    auto m = cuda::compile_uncached(cuda::emit(plan), plan.name, "sm_90");  // no cached PTX
    v4[e] = count(m.ptx, "ld.shared.v4.f32");
  }
  // edge_split 0: every register-loop read is a guarded scalar load
  MESSAGE(v4[0], " ld.shared.v4.f32 with edge_split 0, ", v4[1], " with edge_split 1");
  CHECK(v4[1] >= 32);
  CHECK(v4[1] > v4[0]);
}

TEST_CASE("NVRTC: the row sum of 3001 x 4093 loads its rows with 16-byte global loads") {
  auto c = mdh::describe(ops::row_sum());
  std::size_t v4[3] = {0, 0, 0};
  for (std::int64_t e : {0, 2}) {
    auto plan = lower::lower(c, {3001, 4093}, row_sum_config(c, e), lower::h200_limits());
    auto m = cuda::compile_uncached(cuda::emit(plan), plan.name, "sm_90");
    v4[e] = count(m.ptx, "ld.global.nc.v4.f32") + count(m.ptx, "ld.global.v4.f32");
  }
  MESSAGE(v4[0], " 16-byte global loads with edge_split 0, ", v4[2], " with edge_split 2");
  CHECK(v4[0] == 0);
  CHECK(v4[2] >= 8);
}
#endif

#ifdef MDH_WITH_OPENCL
namespace {
// The OpenCL device the tests run on; null, said as a skip, where there is none.
std::unique_ptr<opencl::context> opencl_or_skip() {
  try {
    return std::make_unique<opencl::context>();
  } catch (const std::exception& e) {
    MESSAGE("SKIPPED: no OpenCL device: ", e.what());
    return nullptr;
  }
}

// Random non-zero inputs of op at `sizes` (from `seed`) and mdh::reference's outputs for them.
template <class Op>
std::pair<std::vector<test::host_buffer>, std::vector<test::host_buffer>> reference_case(
    const Op& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
  const ir::computation& c = mdh::describe(op);
  auto in = test::make_inputs(c, sizes, seed);
  auto want = test::make_outputs(c, sizes);
  std::vector<buffer_ref> ir, orf;
  for (auto& b : in) ir.push_back(b);
  for (auto& b : want) orf.push_back(b);
  test::call_reference(op, sizes, ir, orf);
  return {std::move(in), std::move(want)};
}

// One plan on OpenCL against `want` (tuning::compare), each launch on fresh poisoned outputs;
// a mismatch is re-run once under POCL_WORK_GROUP_METHOD=repl (PoCL 3.1's loop vectoriser
// miscompiles a few kernels; see opencl_check.hpp), which must match.
std::string run_on_opencl(opencl::context& ctx, const lower::kernel_plan& plan,
                          std::vector<test::host_buffer>& in, std::vector<test::host_buffer>& want,
                          std::int64_t L) {
  auto once = [&](const std::string& tag) -> std::string {
    opencl::program prog(ctx, plan, tag);
    const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
    for (int launch = 0; launch < launches; ++launch) {
      std::vector<test::host_buffer> got;
      for (auto& w : want) {
        got.emplace_back(w.type, w.shape);
        got.back().poison();
      }
      std::vector<buffer_ref> ir, orf;
      for (auto& b : in) ir.push_back(b);
      for (auto& b : got) orf.push_back(b);
      prog.run(ir, orf);
      for (std::size_t r = 0; r < got.size(); ++r)
        if (auto msg = tuning::compare(got[r], want[r], L); !msg.empty())
          return "launch " + std::to_string(launch + 1) + ", output " + std::to_string(r) + ": " +
                 msg;
    }
    return "";
  };
  std::string first = once("");
  if (first.empty()) return "";
  setenv("POCL_WORK_GROUP_METHOD", "repl", 1);
  std::string again = once("pocl work-item replication");
  unsetenv("POCL_WORK_GROUP_METHOD");
  if (again.empty()) {
    MESSAGE("PoCL loopvec mismatch, correct under repl: ", first);
    return "";
  }
  return first + " (and under repl: " + again + ")";
}
}  // namespace
#endif

TEST_CASE("OpenCL: the development cases at odd sizes with edge_split on, vs mdh::reference") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  auto ctx = opencl_or_skip();
  if (!ctx) return;
  auto lim = ctx->limits();
  lim.name = "pocl-cpu";
  int total = 0, split = 0, shifted = 0, cases = 0;
  test::for_each_edge_case(
      true, [&](std::string_view name, const auto& op, const test::edge_sizes& sizes) {
        INFO(name, " at ", mdh::to_string(sizes));
        const ir::computation& c = mdh::describe(op);
        auto cfgs = test::edge_split_configs(c, sizes, lim, 5, 1900 + std::uint64_t(cases));
        CHECK_MESSAGE(cfgs.size() == 5, "few configurations with edge_split");
        for (auto& e : lower::edge_configs(c, sizes, lim, 2)) cfgs.push_back(e);
        // fresh random non-zero inputs per case, the reference once
        auto [in, want] = reference_case(op, sizes, 23 + std::uint64_t(cases));
        const std::int64_t L = tuning::reduction_length(c, sizes);
        for (auto& cfg : cfgs) {
          INFO(lower::to_string(cfg));
          auto plan = lower::lower(c, sizes, cfg, lim);
          split += plan.interior_split;
          for (auto& r : plan.reads) shifted += !r.shifted_groups.empty();
          const std::string msg = run_on_opencl(*ctx, plan, in, want, L);
          CHECK_MESSAGE(msg.empty(), msg, "\n", lower::to_string(plan));
          ++total;
        }
        ++cases;
      });
  CHECK(cases == 7);
  CHECK(split >= 30);
  CHECK(shifted >= 1);
  MESSAGE(total, " configurations of ", cases, " edge cases checked on ", lim.name, " (", split,
          " with an interior path, ", shifted, " shifted vector reads)");
#endif
}

TEST_CASE("OpenCL: a log of the space without edge_split starts the search in the space with it") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  auto ctx = opencl_or_skip();
  if (!ctx) return;
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("mdh_edge_log_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::int64_t> sizes{33, 35, 37};
  tuning::opencl_target target(*ctx);
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 6;
  opt.progress = atf::progress_mode::off;
  opt.log = dir / "mm.log.jsonl";
  opt.parameter_file = dir / "mm.json";
  opt.space.edge_split = 0;  // as the logs written before edge_split existed
  auto before = tuning::tune(ops::matmul(), sizes, target, opt);
  CHECK(before.best.edge_split == 0);
  opt.space.edge_split = -1;  // 33 x 35 x 37: the space has edge_split now
  opt.evaluations = 12;
  auto after = tuning::tune(ops::matmul(), sizes, target, opt);
  // the old log was set aside; its best points and the generic starts are points of the new
  // space (edge_split = 0 where they lack it): no start is skipped for edge_split (the default
  // configuration, kept in the file when it was the fastest, has thr_0 = 7, which the space's
  // powers of two do not hold: that one is skipped, as it was before edge_split)
  for (auto& s : after.run.skipped_starts) {
    INFO(s);
    CHECK(s.substr(s.find("}: ")).find("edge_split") == std::string::npos);
  }
  CHECK(after.run.starts_skipped <= 1);
  // the first of the earned starts (the set-aside log's best points) also ran with edge tiles:
  // the new log holds two points that differ only in edge_split (0 and 1)
  std::vector<nlohmann::json> points;
  for (const auto& j : atf::log_records(opt.log)) points.push_back(j["configuration"]);
  bool pair = false;
  for (auto& a : points)
    for (auto& b : points) {
      if (a.value("edge_split", 0) != 0 || b.value("edge_split", 0) != 1) continue;
      auto a1 = a;
      a1["edge_split"] = 1;
      pair |= a1 == b;
    }
  CHECK(pair);
  bool aside = false;
  for (auto& e : fs::directory_iterator(dir))
    aside |= e.path().filename().string().find(".space-") != std::string::npos;
  CHECK(aside);
  fs::remove_all(dir);
#endif
}
