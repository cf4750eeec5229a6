// SPDX-License-Identifier: MIT
// The correctness sweep on OpenCL (PoCL in CI): every sample, edge and random valid
// configurations (all with MDH_TEST_FULL=1, else a subset covering every value class of them),
// output poisoned before the run, compared with the naive reference.
#include <doctest/doctest.h>

#include <random>
#include <utility>

#include <backends/opencl/runtime.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

#include "ir_samples.hpp"
#include "naive_reference.hpp"
#include "opencl_check.hpp"
#include "sweep_sample.hpp"

using namespace mdh;

namespace {
opencl::context& ctx() {
  static opencl::context c;
  return c;
}

// The edge and `randoms` random configurations of s (the covering subset of them unless
// MDH_TEST_FULL: sweep_sample.hpp); returns how many ran and how many were drawn.
std::pair<std::size_t, std::size_t> sweep_one(const test::sample& s, int randoms,
                                              std::uint64_t seed) {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  std::mt19937_64 rng(seed);
  std::vector<lower::config> drawn = lower::edge_configs(s.comp, s.sizes, lim);
  const std::size_t edges = drawn.size();
  for (int k = 0; k < randoms; ++k)
    drawn.push_back(lower::random_config(s.comp, s.sizes, lim, rng, {64, 2000}));
  const auto cfgs = test::sweep_sample(drawn, s.comp, s.sizes, edges);
  bool ties = s.comp.name == "max_count";
  auto in = test::make_inputs(s.comp, s.sizes, seed, ties);
  auto want = test::make_outputs(s.comp, s.sizes);
  test::naive_reference(s.comp, s.sizes, in, want);
  std::int64_t L = test::reduction_length(s.comp, s.sizes);
  std::size_t n = 0;
  for (auto& cfg : cfgs) {
    INFO(s.comp.name, " config: ", lower::to_string(cfg));
    auto plan = lower::lower(s.comp, s.sizes, cfg, lim);
    // twice with the last-block combine: its counters must be reset for the next launch
    const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
    auto o = test::check_opencl(ctx(), plan, in, want, L, launches);
    REQUIRE_MESSAGE(o.mismatch.empty(), o.mismatch, "\n", lower::to_string(plan));
    if (o.pocl_retry)
      MESSAGE(s.comp.name, ": a kernel miscompiled by PoCL loopvec, correct under repl");
    ++n;
  }
  return {n, drawn.size()};
}
}  // namespace

TEST_CASE("OpenCL sweep over the IR samples matches the reference") {
  for (auto& s : test::all_samples()) {
    SUBCASE(s.comp.name.c_str()) {
      auto [n, drawn] = sweep_one(s, 20, 1234);
      MESSAGE(s.comp.name, ": ", n, " of ", drawn, " configurations checked on OpenCL");
    }
  }
}
