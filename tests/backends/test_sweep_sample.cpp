// SPDX-License-Identifier: MIT
// The default (quick) correctness sweeps run a subset of the configurations the full sweep runs:
// it must take every value class the full list takes, keep the hand-made edge configurations, keep
// the drawing order, and be smaller; MDH_TEST_FULL=1 runs the whole list.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include <mdh/lower/random_config.hpp>

#include "ir_samples.hpp"
#include "sweep_sample.hpp"

using namespace mdh;

namespace {
// Restores MDH_TEST_FULL when a test case ends.
struct full_env {
  std::string saved;
  bool had = false;
  full_env() {
    if (const char* v = std::getenv("MDH_TEST_FULL")) had = true, saved = v;
  }
  ~full_env() {
    if (had)
      setenv("MDH_TEST_FULL", saved.c_str(), 1);
    else
      unsetenv("MDH_TEST_FULL");
  }
};
}  // namespace

TEST_CASE("the quick sweep covers every value class of the full sweep with fewer kernels") {
  full_env restore;
  unsetenv("MDH_TEST_FULL");
  std::size_t full = 0, quick = 0;
  for (auto lim : {lower::pocl_cpu_limits(), lower::h200_limits()}) {
    std::mt19937_64 rng(1234);
    for (auto& s : test::all_samples()) {
      INFO(s.comp.name, " on ", lim.name);
      auto drawn = lower::edge_configs(s.comp, s.sizes, lim);
      const std::size_t edges = drawn.size();
      for (int k = 0; k < 20; ++k)
        drawn.push_back(lower::random_config(s.comp, s.sizes, lim, rng, {64, 2000}));
      const auto run = test::sweep_sample(drawn, s.comp, s.sizes, edges);
      CHECK(test::value_classes(run, s.comp, s.sizes) ==
            test::value_classes(drawn, s.comp, s.sizes));
      REQUIRE(run.size() >= edges);
      CHECK(std::equal(drawn.begin(), drawn.begin() + std::ptrdiff_t(edges), run.begin()));
      // a subsequence of the drawn list: same order, nothing new
      auto at = drawn.begin();
      for (auto& c : run) {
        at = std::find(at, drawn.end(), c);
        REQUIRE(at != drawn.end());
        ++at;
      }
      CHECK(run.size() < drawn.size());
      CHECK(test::covering_subset(drawn, s.comp, s.sizes, edges) == run);  // deterministic
      full += drawn.size(), quick += run.size();
    }
  }
  MESSAGE("quick sweep: ", quick, " of ", full, " configurations");
  CHECK(quick * 10 < full * 6);
}

TEST_CASE("MDH_TEST_FULL=1 runs every configuration drawn") {
  full_env restore;
  auto c = test::matmul();
  const std::vector<std::int64_t> sizes{13, 17, 19};
  auto lim = lower::pocl_cpu_limits();
  std::mt19937_64 rng(7);
  std::vector<lower::config> drawn;
  for (int k = 0; k < 20; ++k) drawn.push_back(lower::random_config(c, sizes, lim, rng));
  setenv("MDH_TEST_FULL", "1", 1);
  CHECK(test::full_sweep());
  CHECK(test::sweep_sample(drawn, c, sizes, 0) == drawn);
  setenv("MDH_TEST_FULL", "0", 1);
  CHECK_FALSE(test::full_sweep());
  CHECK(test::sweep_sample(drawn, c, sizes, 0).size() < drawn.size());
}

TEST_CASE("value classes: the combines count only where a reduction is split") {
  auto c = test::matmul();  // i, j concatenation; k point-wise
  const std::vector<std::int64_t> sizes{13, 17, 19};
  auto cfg = lower::default_config(c, sizes);
  cfg.blk_combine = lower::block_combine::last_block;
  cfg.thr_combine = lower::thread_combine::warp_shuffle;
  auto cls = test::value_classes(cfg, c, sizes);
  CHECK_FALSE(cls.count("blk_combine=2"));  // k not over blocks: no block combine generated
  CHECK_FALSE(cls.count("thr_combine=1"));
  cfg.dims[2].blk = 3;
  cfg.dims[2].thr = 2;
  cfg.dims[2].thr_map = 2;
  cls = test::value_classes(cfg, c, sizes);
  CHECK(cls.count("blk_combine=2"));
  CHECK(cls.count("thr_combine=1"));
  CHECK(cls.count("pw-inner.thr_map=2"));
  CHECK(cls.count("pw-inner.blk>1"));
  CHECK(cls.count("cc-inner.blk>1") + cls.count("cc-inner.blk=1") == 1);
  CHECK(test::dimension_role(c, 0) == "cc-outer");
  CHECK(test::dimension_role(c, 1) == "cc-inner");
}
