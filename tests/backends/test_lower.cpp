// SPDX-License-Identifier: MIT
// Tests of the low-level model (config, check, JSON/map) and property tests of the lowering.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/lower/simulate.hpp>

#include "ir_samples.hpp"

using namespace mdh;
using namespace mdh::lower;

TEST_CASE("default configuration is valid for every sample, size and named device") {
  for (auto& s : test::all_samples())
    for (auto dev : {"h200", "h100", "pocl-cpu"})
      for (std::vector<std::int64_t> sizes : {s.sizes, std::vector<std::int64_t>(s.sizes.size(), 1),
                                              std::vector<std::int64_t>(s.sizes.size(), 384),
                                              std::vector<std::int64_t>(s.sizes.size(), 997)}) {
        if (sizes.size() > 2 && sizes[0] == 997) continue;  // keep the simulation small
        INFO(s.comp.name, " on ", dev);
        auto cfg = default_config(s.comp, sizes);
        CHECK_NOTHROW(check(cfg, s.comp, sizes, named_limits(dev)));
        auto plan = lower::lower(s.comp, sizes, cfg, named_limits(dev));
        auto sim = simulate(plan);
        CHECK_MESSAGE(sim.ok(), (sim.failures.empty() ? std::string() : sim.failures[0]));
      }
}

TEST_CASE("check names the parameter and the constraint") {
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{64, 64, 64};
  auto cfg = default_config(c, sizes);
  auto expect = [&](config bad, const std::string& needle) {
    try {
      check(bad, c, sizes, h200_limits());
      FAIL("no error for ", needle);
    } catch (const error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  auto bad = cfg;
  bad.dims[0].t_rm = 64;
  expect(bad, "t_rm_d * thr_d <= t_sm_d");
  bad = cfg;
  bad.dims[1].blk = 65;
  expect(bad, "blk_1");
  bad = cfg;
  bad.dims[0].thr = 64, bad.dims[0].t_sm = 64, bad.dims[1].thr = 64, bad.dims[1].t_sm = 64;
  expect(bad, "threads per block");
  bad = cfg;
  bad.dims[2].thr = 4, bad.dims[2].t_sm = 4, bad.dims[2].thr_map = 1;
  bad.thr_combine = thread_combine::warp_shuffle;
  expect(bad, "thr_map_2");
  bad = cfg;
  bad.inputs[0].cache = cache_kind::shared, bad.dims[2].t_sm = 64;
  bad.dims[0].thr = 1, bad.dims[0].t_rm = 32, bad.dims[0].t_sm = 32;
  bad.dims[1].t_rm = 16, bad.dims[1].thr = 16, bad.dims[1].t_sm = 256;
  expect(bad, "t_rm_*");
  bad = cfg;
  bad.vec = 3;
  expect(bad, "vec in {1, 2, 4}");
  // vec_pw: the innermost pw dimension (k) blocked, its t_rm a multiple of vec_pw
  bad = cfg;
  bad.vec_pw = 3;
  expect(bad, "vec_pw in {1, 2, 4}");
  auto pw = cfg;
  pw.dims[2].thr = 1, pw.dims[2].t_rm = 4, pw.dims[2].t_sm = 64, pw.vec_pw = 4;
  CHECK_NOTHROW(check(pw, c, sizes, h200_limits()));
  bad = pw;
  bad.dims[2].t_rm = 2;
  expect(bad,
         "configuration violates 'vec_pw > 1: t_rm of the innermost pw dimension a multiple "
         "of vec_pw' (parameter vec_pw): dimension 'k' t_rm=2, vec_pw=4");
  bad = pw;
  bad.dims[2].strided = true;
  expect(bad,
         "'vec_pw > 1: blocked innermost pw dimension' (parameter vec_pw): dimension 'k' "
         "is strided");
  auto bc = test::broadcast4d();
  std::vector<std::int64_t> bs{2, 3, 4, 8};
  auto bcfg = default_config(bc, bs);
  bcfg.vec_pw = 2;
  CHECK_THROWS_WITH_AS(check(bcfg, bc, bs, h200_limits()),
                       doctest::Contains("vec_pw > 1 needs a pw dimension"), error);
  auto mc = test::max_count();
  std::vector<std::int64_t> ms{8, 64};
  auto mcfg = default_config(mc, ms);
  mcfg.dims[1].blk = 4, mcfg.blk_combine = block_combine::atomic;
  CHECK_THROWS_WITH_AS(check(mcfg, mc, ms, h200_limits()), doctest::Contains("blk_combine"), error);
  mcfg.blk_combine = block_combine::last_block;  // a custom operator: partials, no atomics
  CHECK_NOTHROW(check(mcfg, mc, ms, h200_limits()));
  mcfg.blk_combine = block_combine(3);
  CHECK_THROWS_WITH_AS(check(mcfg, mc, ms, h200_limits()),
                       doctest::Contains("blk_combine in {0 = atomic, 1 = second kernel, 2 = "
                                         "last block}"),
                       error);
  auto pl = test::scan_rows();
  auto pcfg = default_config(pl, {4, 8});
  pcfg.dims[1].thr = 2;
  CHECK_THROWS_WITH_AS(check(pcfg, pl, {4, 8}, h200_limits()), doctest::Contains("thr_1"), error);
}

TEST_CASE("transpose = 2 stores a tile's first dimension innermost") {
  auto c = test::broadcast4d();  // x[n][c][h][w], rank 4
  std::vector<std::int64_t> sizes{2, 3, 4, 5};
  auto cfg = default_config(c, sizes);
  cfg.inputs[0] = {cache_kind::shared, 2, 0};
  check(cfg, c, sizes, h200_limits());
  auto plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  REQUIRE(plan.tiles.size() == 1);
  const auto& t = plan.tiles[0];
  CHECK(t.order == std::vector<std::size_t>{1, 2, 3, 0});
  // n innermost (stride 1), then c, h, w outward
  const auto& st = t.box.stride;
  const auto& ext = t.box.shape;
  CHECK(st[0] == 1);
  CHECK(st[3] == ext[0]);
  CHECK(st[2] == ext[0] * ext[3]);
  CHECK(st[1] == ext[0] * ext[3] * ext[2]);
  // config maps and JSON keep the value
  auto back = from_map(to_map(cfg), c.rank(), c.inputs.size());
  CHECK(back.inputs[0].transpose == 2);
  // rank 2 has no third layout (1 already puts the first dimension innermost)
  auto m = test::matmul();
  std::vector<std::int64_t> msizes{16, 16, 16};
  auto mc = default_config(m, msizes);
  mc.inputs[0] = {cache_kind::shared, 2, 0};
  CHECK_THROWS_WITH_AS(check(mc, m, msizes, h200_limits()),
                       doctest::Contains("transpose = 2 needs rank >= 3"), error);
  mc.inputs[0] = {cache_kind::shared, 3, 0};
  CHECK_THROWS_WITH_AS(check(mc, m, msizes, h200_limits()), doctest::Contains("transpose_0"),
                       error);
}

TEST_CASE("configuration round-trips through the flat map, JSON and text") {
  std::mt19937_64 rng(7);
  for (auto& s : test::all_samples()) {
    for (int k = 0; k < 5; ++k) {
      auto cfg = random_config(s.comp, s.sizes, h200_limits(), rng);
      auto m = to_map(cfg);
      CHECK(m.count("blk_0"));
      CHECK(m.count("thr_combine"));
      CHECK(from_map(m, s.comp.rank(), s.comp.inputs.size()) == cfg);
      nlohmann::json j = cfg;
      CHECK(config_from_json(nlohmann::json::parse(j.dump()), s.comp) == cfg);
      CHECK(config_from_string(to_string(cfg), s.comp) == cfg);
    }
  }
  auto c = test::matmul();
  auto m = to_map(default_config(c, {4, 4, 4}));
  m["blk_9"] = 1;
  CHECK_THROWS_WITH_AS(from_map(m, 3, 2), doctest::Contains("blk_9"), error);
  m.erase("blk_9");
  m.erase("t_sm_1");
  CHECK_THROWS_WITH_AS(from_map(m, 3, 2), doctest::Contains("t_sm_1"), error);
  // text: every word must be name=integer, and the map's rules hold
  const std::string text = to_string(default_config(c, {4, 4, 4}));
  CHECK(config_from_string("  " + text + "\n", c) == default_config(c, {4, 4, 4}));
  CHECK_THROWS_WITH_AS(config_from_string(text + " vec=4x", c), doctest::Contains("'vec=4x'"),
                       error);
  CHECK_THROWS_WITH_AS(config_from_string(text + " =3", c), doctest::Contains("'=3'"), error);
  CHECK_THROWS_WITH_AS(config_from_string(text + " blk_9", c), doctest::Contains("'blk_9'"), error);
  CHECK_THROWS_WITH_AS(config_from_string(text + " blk_9=1", c), doctest::Contains("blk_9"), error);
}

TEST_CASE("property: random valid plans compute every point exactly once, tiles cover reads") {
  std::mt19937_64 rng(42);
  int plans = 0;
  for (auto& s : test::all_samples()) {
    for (auto dev : {"h200", "pocl-cpu"}) {
      auto lim = named_limits(dev);
      std::vector<config> cfgs = edge_configs(s.comp, s.sizes, lim);
      for (int k = 0; k < 40; ++k) cfgs.push_back(random_config(s.comp, s.sizes, lim, rng));
      for (auto& cfg : cfgs) {
        INFO(s.comp.name, " ", to_string(cfg));
        auto plan = lower::lower(s.comp, s.sizes, cfg, lim);
        auto sim = simulate(plan);
        REQUIRE_MESSAGE(sim.ok(), sim.failures[0]);
        std::int64_t all = 1, outer = 1;
        for (std::size_t d = 0; d < s.sizes.size(); ++d) {
          all *= s.sizes[d];
          if (s.comp.dims[d].combine != ir::combine_kind::pointwise) outer *= s.sizes[d];
        }
        CHECK(sim.terms == all);                       // every reduction term combined exactly once
        CHECK(sim.writes == outer * plan.red_blocks);  // one write per point and reducing block
        CHECK(plan.threads <= lim.max_threads_per_block);
        CHECK(plan.shared_bytes <= lim.shared_per_block_optin);
        CHECK(plan.name.rfind("mdh_" + s.comp.name + "_", 0) == 0);
        CHECK(plan.name.size() == 4 + s.comp.name.size() + 1 + 8);
        CHECK(!to_string(plan).empty());
        ++plans;
      }
    }
  }
  MESSAGE(plans, " plans simulated");
}

TEST_CASE("blk_combine = last block: one kernel, partials and one counter per group") {
  auto c = test::matmul();
  const std::vector<std::int64_t> sizes{64, 48, 100};
  auto cfg = default_config(c, sizes);
  cfg.dims[0] = {4, 8, 16, 2, false, 1, 0};  // 4 x 3 groups of blocks sharing output points
  cfg.dims[1] = {3, 8, 16, 2, false, 0, 1};
  cfg.dims[2] = {7, 1, 15, 3, false, 2, 2};  // k over 7 blocks (chunk 15, the last one 10)
  cfg.blk_combine = block_combine::second_kernel;
  const auto second = lower::lower(c, sizes, cfg, h200_limits());
  cfg.blk_combine = block_combine::last_block;
  const auto last = lower::lower(c, sizes, cfg, h200_limits());
  CHECK(last.blk_combine == block_combine_kind::last_block);
  REQUIRE(last.kernels.size() == 1);
  CHECK(last.kernels[0].kind == kernel_kind::main);
  CHECK(second.kernels.size() == 2);
  CHECK(main_kernel(second).launch == last.kernels[0].launch);
  CHECK(last.partials == second.partials);  // the same [red_blocks][points] per result
  CHECK(second.counters.empty());
  REQUIRE(last.counters.size() == 1);
  CHECK(last.red_blocks == 7);
  CHECK(last.groups == 12);
  CHECK(last.counters[0].elements == 12);
  CHECK(last.counters[0].type == scalar_type::i32);
  CHECK(to_string(last).find("last block combines") != std::string::npos);
  const auto sim = simulate(last);
  CHECK_MESSAGE(sim.ok(), (sim.failures.empty() ? std::string() : sim.failures[0]));
  // Without a split reduction it is the plain kernel, like the other strategies.
  cfg.dims[2].blk = 1, cfg.dims[2].t_sm = 100;
  const auto unsplit = lower::lower(c, sizes, cfg, h200_limits());
  CHECK(unsplit.blk_combine == block_combine_kind::none);
  CHECK(unsplit.counters.empty());
  CHECK(unsplit.partials.empty());
  CHECK(unsplit.kernels.size() == 1);
}

TEST_CASE("named device limits") {
  CHECK(named_limits("h200").arch() == "sm_90");
  CHECK(named_limits("h200").shared_per_block_optin == 227 * 1024);
  CHECK(named_limits("pocl-cpu").cuda == false);
  CHECK_THROWS_AS(named_limits("tpu"), error);
}

TEST_CASE("mdh::layout: shape:stride, concatenation, composition, symbolic terms") {
  const mdh::layout l{{4, 8}, {8, 1}};  // row-major 4 x 8
  CHECK(l.size() == 32);
  CHECK(l.cosize() == 32);
  CHECK(l({3, 5}) == 29);
  CHECK(l.coordinate(5) == std::vector<std::int64_t>{1, 1});  // first mode fastest
  CHECK(mdh::row_major({4, 8}) == l);
  CHECK(mdh::to_string(l) == "(4,8):(8,1)");
  CHECK(mdh::concat(mdh::layout{{2}, {100}}, l) == mdh::layout{{2, 4, 8}, {100, 8, 1}});
  // l o (16):(2): every second element of l in its linear order (first mode fastest)
  const auto c = mdh::compose(l, mdh::layout{{16}, {2}});
  for (std::int64_t i = 0; i < 16; ++i) CHECK(c.at(i) == l.at(2 * i));
  CHECK_THROWS_AS(mdh::compose(l, mdh::layout{{4}, {3}}), internal_error);
  // printing: extent-1 modes vanish, stride 1 is the coordinate itself, expressions in brackets
  auto t =
      mdh::symbolic_terms(mdh::layout{{1, 4, 8}, {5, 1, 16}}, {{"a"}, {"t0"}, {"r + 1", false}});
  CHECK(t == std::vector<std::string>{"", "t0", "(r + 1) * 16"});
}

TEST_CASE("dim_plan::elements is the thread/slot -> element mapping of the kernel") {
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{13, 17, 19};
  auto cfg = default_config(c, sizes);
  cfg.dims[1] = {2, 3, 9, 2, true, 0, 0};  // j: 2 blocks of 3 strided threads x 2 slots
  auto plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  const auto& d = plan.dims[1];
  CHECK(d.elements == mdh::layout{{2, d.n_sm, d.n_rm, 3, 2}, {d.chunk, d.t_sm, 6, 1, 3}});
  // thread 1, slot 1 of block 1's first step: 9 + 1 * 3 + 1
  CHECK(element_of(d, 1, 0, 0, 1, 1) == 13);
  CHECK(simulate(plan).ok());
}

// The vectorisation as the plan states it (formerly visible only in the source or the PTX).
TEST_CASE("the plan says which accesses move 16-byte vectors") {
  auto c = test::matmul();  // C(i, j) = A(i, k) * B(k, j)
  std::vector<std::int64_t> sizes{128, 128, 64};
  auto cfg = default_config(c, sizes);
  cfg.dims[0] = {16, 8, 8, 1, false, 1, 0};
  cfg.dims[1] = {8, 4, 16, 4, false, 0, 0};
  cfg.dims[2] = {1, 4, 64, 4, false, 0, 0};  // k: 4 threads of 4 registers, 4 rm steps
  cfg.vec = 4, cfg.vec_pw = 4;
  cfg.thr_combine = thread_combine::warp_shuffle;
  auto plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  REQUIRE(plan.vector_groups.size() == 2);
  CHECK(plan.vector_groups[0] == vector_group{1, 4, dim_role::concat});  // j, vec
  CHECK(plan.vector_groups[1] == vector_group{2, 4, dim_role::reduce});  // k, vec_pw
  // k's loop just outside j's: A(i, k) loads along k and B(k, j) along j, both as vectors
  CHECK(plan.register_order == std::vector<std::size_t>{0, 2, 1});
  REQUIRE(plan.reads.size() == 2);
  CHECK(plan.reads[0].vector_groups == std::vector<std::size_t>{1});  // A along k: float4
  CHECK(plan.reads[1].vector_groups == std::vector<std::size_t>{0});  // B along j: float4
  CHECK(plan.vector_write);
  REQUIRE(plan.writes.size() == 1);
  CHECK(plan.writes[0].vector_store);  // C along j: float4 stores
  CHECK(to_string(plan).find("16-byte vector loads along k") != std::string::npos);
  // j not a multiple of the group: the groups do not apply, every access is scalar
  cfg.dims[1].t_rm = 2, cfg.vec = 2, cfg.vec_pw = 1;
  cfg.dims[1].blk = 3;  // chunk 43: group starts not aligned
  plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  CHECK(plan.vector_groups.empty());
  CHECK(plan.reads[1].vector_groups.empty());
  CHECK_FALSE(plan.vector_write);
}

TEST_CASE("the plan states the tile copies: widths, staging, registers") {
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{2048, 3072, 768};
  auto cfg = default_config(c, sizes);
  cfg.dims[0] = {32, 8, 64, 8, false, 1, 0};
  cfg.dims[1] = {24, 32, 128, 4, false, 0, 0};
  cfg.dims[2] = {1, 1, 16, 8, false, 0, 0};
  cfg.inputs[0] = {cache_kind::shared, 1, 0};  // A transposed: k innermost in the tile
  cfg.inputs[1] = {cache_kind::shared, 0, 0};
  cfg.vec = 4;
  cfg.prefetch = 2;
  auto plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  CHECK(plan.copies.staging == tile_staging::two_buffers);
  CHECK(plan.copies.steps == 768 / 16);
  REQUIRE(plan.tiles.size() == 2);
  for (auto& t : plan.tiles) {
    CHECK(t.copy_width == 4);  // 16-byte global loads
    CHECK(t.copy_slots * 4 * plan.threads >= t.box_elements);
    CHECK(t.buffers == 2);
  }
  CHECK_FALSE(plan.tiles[0].copy_store_vector);  // transposed: stored element by element
  CHECK(plan.tiles[1].copy_store_vector);
  // prefetch off: copied directly, between two barriers
  cfg.prefetch = 0;
  plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  CHECK(plan.copies.staging == tile_staging::direct);
}

TEST_CASE("MDH_DUMP_DIR: one file per pass, numbered in pipeline order, the check pass last") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mdh_pass_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("MDH_DUMP_DIR", dir.c_str(), 1);
  auto c = test::matmul();
  std::vector<std::int64_t> sizes{64, 64, 32};
  auto cfg = default_config(c, sizes);
  cfg.dims[1] = {2, 8, 32, 4, false, 0, 0};
  cfg.vec = 4;
  auto plan = mdh::lower::lower(c, sizes, cfg, h200_limits());
  ::unsetenv("MDH_DUMP_DIR");
  std::vector<std::string> want;
  int n = 0;
  for (auto& pass : passes::pipeline()) {
    char num[16];
    std::snprintf(num, sizeof num, "%02d", ++n);
    want.push_back(plan.name + "." + num + "-" + pass.name + ".plan.txt");
  }
  want.push_back(plan.name + ".11-check.plan.txt");
  std::vector<std::string> got;
  for (auto& e : fs::directory_iterator(dir)) got.push_back(e.path().filename().string());
  std::sort(got.begin(), got.end());
  CHECK(got == want);  // exactly one run of the pipeline
  auto read = [&](const std::string& f) {
    std::ifstream in(dir / f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // the plan grows pass by pass: no vector group before vector_groups, one after
  CHECK(read(want[4]).find("vector group") == std::string::npos);
  CHECK(read(want[5]).find("vector group: j in groups of 4") != std::string::npos);
  CHECK(read(want.back()) == to_string(plan));
  fs::remove_all(dir);
}
