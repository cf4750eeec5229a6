// SPDX-License-Identifier: MIT
// Tests of the low-level model (config, check, JSON/map) and property tests of the lowering.
#include <doctest/doctest.h>

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
  CHECK(t.stride[0] == 1);
  CHECK(t.stride[3] == t.extent[0]);
  CHECK(t.stride[2] == t.extent[0] * t.extent[3]);
  CHECK(t.stride[1] == t.extent[0] * t.extent[3] * t.extent[2]);
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
