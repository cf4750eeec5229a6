// SPDX-License-Identifier: MIT
// The correctness sweep over the operator library on OpenCL (PoCL in CI): for every operator,
// edge and 20 random valid configurations (all with MDH_TEST_FULL=1, else a subset covering every
// value class of them: sweep_sample.hpp), output poisoned, compared with mdh::reference; and
// the last-block cross-block combine on explicit split reductions, each launched twice.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <backends/opencl/runtime.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

#include "expression_cases.hpp"
#include "naive_reference.hpp"
#include "opencl_check.hpp"
#include "sweep_sample.hpp"

using namespace mdh;

namespace {
opencl::context& shared_context() {
  static opencl::context ctx;
  return ctx;
}
}  // namespace

TEST_CASE("OpenCL sweep over expressions/ matches mdh::reference") {
  opencl::context& ctx = shared_context();
  auto lim = ctx.limits();
  lim.name = "pocl-cpu";
  int total = 0, vec_pw = 0;
  test::for_each_expression_case([&](std::string_view name, const auto& op, const auto& sizes) {
    const ir::computation& c = mdh::describe(op);
    INFO(name);
    std::mt19937_64 rng(std::hash<std::string_view>{}(name));
    auto in = test::make_inputs(c, sizes, 11);
    auto want = test::make_outputs(c, sizes);
    std::vector<buffer_ref> in_refs, want_refs;
    for (auto& b : in) in_refs.push_back(b);
    for (auto& b : want) want_refs.push_back(b);
    test::call_reference(op, sizes, in_refs, want_refs);
    auto drawn = lower::edge_configs(c, sizes, lim);
    const std::size_t edges = drawn.size();
    for (int k = 0; k < 20; ++k)
      drawn.push_back(lower::random_config(c, sizes, lim, rng, {64, 2000}));
    const auto cfgs = test::sweep_sample(drawn, c, sizes, edges);
    std::int64_t L = test::reduction_length(c, sizes);
    int retried = 0;
    for (auto& cfg : cfgs) {
      INFO("config: ", lower::to_string(cfg));
      auto plan = lower::lower(c, sizes, cfg, lim);
      // twice with the last-block combine: its counters must be reset for the next launch
      const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
      auto o = test::check_opencl(ctx, plan, in, want, L, launches);
      REQUIRE_MESSAGE(o.mismatch.empty(), o.mismatch, "\n", lower::to_string(plan));
      retried += o.pocl_retry;
      vec_pw += cfg.vec_pw > 1;
    }
    if (retried)
      MESSAGE(name, ": ", retried, " kernels miscompiled by PoCL loopvec, correct under repl");
    MESSAGE(name, ": ", cfgs.size(), " of ", drawn.size(), " configurations checked on OpenCL");
    total += int(cfgs.size());
  });
  MESSAGE(total, " configurations in all, ", vec_pw, " with vec_pw > 1");
  CHECK(vec_pw > 20);
}

namespace {
// Dimension d over blk blocks of thr threads (thread axis thr_map), t_rm registers each, its sm
// tile the whole per-block chunk.
struct split_dim {
  std::size_t d;
  std::int64_t blk, thr, t_rm;
  int thr_map;
};

// Runs op at sizes with `splits` applied to a one-thread configuration and blk_combine = last
// block: one kernel, compared with mdh::reference on two launches of the same program.
template <class Op>
void check_last_block(const Op& op, const std::vector<std::int64_t>& sizes,
                      const std::vector<split_dim>& splits, bool cache_inputs = false) {
  const ir::computation& c = mdh::describe(op);
  INFO(c.name, " ", to_string(sizes));
  opencl::context& ctx = shared_context();
  auto lim = ctx.limits();
  lim.name = "pocl-cpu";
  lower::config cfg;
  cfg.dims.resize(c.rank());
  cfg.inputs.resize(c.inputs.size());
  for (std::size_t d = 0; d < c.rank(); ++d) cfg.dims[d].t_sm = sizes[d];
  for (auto& s : splits) {
    auto& x = cfg.dims[s.d];
    x.blk = s.blk, x.thr = s.thr, x.t_rm = s.t_rm, x.thr_map = s.thr_map;
    const std::int64_t step = s.thr * s.t_rm;
    x.t_sm = lower::ceil_div(lower::ceil_div(sizes[s.d], s.blk), step) * step;
  }
  if (cache_inputs)
    for (auto& i : cfg.inputs) i.cache = lower::cache_kind::shared;
  cfg.blk_combine = lower::block_combine::last_block;
  INFO("config: ", lower::to_string(cfg));
  auto plan = lower::lower(c, sizes, cfg, lim);
  REQUIRE(plan.blk_combine == lower::block_combine_kind::last_block);
  CHECK(plan.kernels.size() == 1);
  REQUIRE(plan.counters.size() == 1);
  CHECK(plan.counters[0].elements * plan.red_blocks == plan.blocks);
  const std::string src = opencl::emit(plan);
  CHECK(src.find("mdh_last = atomic_inc(&cnt[grp]) == " + std::to_string(plan.red_blocks - 1)) !=
        std::string::npos);
  CHECK(src.find("cnt[grp] = 0;") != std::string::npos);
  auto in = test::make_inputs(c, sizes, 3);
  auto want = test::make_outputs(c, sizes);
  std::vector<buffer_ref> in_refs, want_refs;
  for (auto& b : in) in_refs.push_back(b);
  for (auto& b : want) want_refs.push_back(b);
  test::call_reference(op, sizes, in_refs, want_refs);
  auto o = test::check_opencl(ctx, plan, in, want, test::reduction_length(c, sizes), 2);
  CHECK_MESSAGE(o.mismatch.empty(), o.mismatch, "\n", lower::to_string(plan), "\n", src);
}
}  // namespace

TEST_CASE("OpenCL: last-block combine (blk_combine = 2), launched twice on one program") {
  SUBCASE("dot") {
    check_last_block(ops::dot(), {4096}, {{0, 8, 64, 2, 0}});
    check_last_block(ops::dot(), {1000}, {{0, 7, 16, 3, 0}});
    check_last_block(ops::dot(), {257}, {{0, 100, 1, 1, 0}});  // the last 14 blocks are empty
  }
  SUBCASE("matvec, k split over blocks") {
    check_last_block(ops::matvec(), {64, 256}, {{0, 4, 4, 1, 1}, {1, 4, 32, 1, 0}});
    check_last_block(ops::matvec(), {13, 29}, {{0, 3, 2, 1, 1}, {1, 4, 4, 2, 0}});
  }
  SUBCASE("bias_add_grad, rows split over blocks") {
    check_last_block(ops::bias_add_grad(), {64, 32}, {{0, 4, 8, 1, 1}, {1, 2, 16, 1, 0}});
    check_last_block(ops::bias_add_grad(), {37, 11}, {{0, 5, 4, 2, 1}, {1, 2, 4, 1, 0}});
  }
  SUBCASE("split-K matmul") {
    check_last_block(ops::matmul(), {32, 32, 64},
                     {{0, 2, 4, 2, 1}, {1, 2, 8, 2, 0}, {2, 4, 1, 4, 2}}, true);
    check_last_block(ops::matmul(), {13, 17, 19},
                     {{0, 2, 4, 2, 1}, {1, 3, 4, 1, 0}, {2, 3, 1, 2, 2}});
  }
  SUBCASE("softmax_stats: max_sum, a custom operator without atomics") {
    check_last_block(ops::softmax_stats(), {8, 64}, {{0, 2, 4, 1, 1}, {1, 4, 16, 1, 0}});
    check_last_block(ops::softmax_stats(), {5, 37}, {{0, 2, 2, 1, 1}, {1, 3, 4, 3, 0}});
  }
}
