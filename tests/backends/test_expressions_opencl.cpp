// SPDX-License-Identifier: MIT
// The correctness sweep over the operator library on OpenCL (PoCL in CI): for every operator,
// edge and 20 random valid configurations, output poisoned, compared with mdh::reference.
#include <doctest/doctest.h>

#include <random>

#include <backends/opencl/runtime.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

#include "expression_cases.hpp"
#include "naive_reference.hpp"
#include "opencl_check.hpp"

using namespace mdh;

TEST_CASE("OpenCL sweep over expressions/ matches mdh::reference") {
  static opencl::context ctx;
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
    auto cfgs = lower::edge_configs(c, sizes, lim);
    for (int k = 0; k < 20; ++k)
      cfgs.push_back(lower::random_config(c, sizes, lim, rng, {64, 2000}));
    std::int64_t L = test::reduction_length(c, sizes);
    int retried = 0;
    for (auto& cfg : cfgs) {
      INFO("config: ", lower::to_string(cfg));
      auto plan = lower::lower(c, sizes, cfg, lim);
      auto o = test::check_opencl(ctx, plan, in, want, L);
      REQUIRE_MESSAGE(o.mismatch.empty(), o.mismatch, "\n", lower::to_string(plan));
      retried += o.pocl_retry;
      vec_pw += cfg.vec_pw > 1;
    }
    if (retried)
      MESSAGE(name, ": ", retried, " kernels miscompiled by PoCL loopvec, correct under repl");
    MESSAGE(name, ": ", cfgs.size(), " configurations checked on OpenCL");
    total += int(cfgs.size());
  });
  MESSAGE(total, " configurations in all, ", vec_pw, " with vec_pw > 1");
  CHECK(vec_pw > 20);
}
