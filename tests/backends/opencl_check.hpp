// SPDX-License-Identifier: MIT
// Runs a plan on OpenCL and compares with the reference. PoCL 3.1's default work-group method
// (loop vectorisation) miscompiles a few of our kernels (deeply nested loops around barriers;
// the same kernels are correct on the GPU and under PoCL's work-item replication). A mismatch is
// therefore re-run once with POCL_WORK_GROUP_METHOD=repl: it must match there, and is counted.
// `launches` > 1 runs the same program again on fresh poisoned outputs (state the kernel keeps
// between launches, such as the last-block counters, must be left right). run_configs checks a
// list of configurations of one operator (doctest assertions).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <backends/opencl/runtime.hpp>

#include "expression_cases.hpp"
#include "naive_reference.hpp"

namespace mdh::test {

struct opencl_outcome {
  std::string mismatch;     // "" when equal (after the retry, if one was needed)
  bool pocl_retry = false;  // the default build mismatched, the replication build matched
};

inline std::string run_and_compare(opencl::context& ctx, const lower::kernel_plan& plan,
                                   std::vector<host_buffer>& in,
                                   const std::vector<host_buffer>& want, std::int64_t L,
                                   const std::string& tag, int launches) {
  opencl::program prog(ctx, plan, tag);
  for (int launch = 0; launch < launches; ++launch) {
    std::vector<host_buffer> got;
    for (auto& w : want) {
      got.emplace_back(w.type, w.shape);
      got.back().poison();
    }
    std::vector<buffer_ref> ir, orf;
    for (auto& b : in) ir.push_back(b);
    for (auto& b : got) orf.push_back(b);
    prog.run(ir, orf);
    for (std::size_t r = 0; r < got.size(); ++r) {
      auto msg = compare(got[r], want[r], L);
      if (!msg.empty())
        return "launch " + std::to_string(launch + 1) + ", output " + std::to_string(r) + ": " +
               msg;
    }
  }
  return "";
}

inline opencl_outcome check_opencl(opencl::context& ctx, const lower::kernel_plan& plan,
                                   std::vector<host_buffer>& in,
                                   const std::vector<host_buffer>& want, std::int64_t L,
                                   int launches = 1) {
  opencl_outcome o;
  o.mismatch = run_and_compare(ctx, plan, in, want, L, "", launches);
  if (o.mismatch.empty()) return o;
  const char* old = std::getenv("POCL_WORK_GROUP_METHOD");
  std::string saved = old ? old : "";
  setenv("POCL_WORK_GROUP_METHOD", "repl", 1);
  std::string again =
      run_and_compare(ctx, plan, in, want, L, "pocl work-item replication", launches);
  if (old)
    setenv("POCL_WORK_GROUP_METHOD", saved.c_str(), 1);
  else
    unsetenv("POCL_WORK_GROUP_METHOD");
  if (again.empty())
    o.pocl_retry = true, o.mismatch.clear();
  else
    o.mismatch += " (and under POCL_WORK_GROUP_METHOD=repl: " + again + ")";
  return o;
}

// Runs `cfgs` of op at `sizes` on OpenCL against mdh::reference on random non-zero inputs.
template <class Op>
int run_configs(opencl::context& ctx, const Op& op, const std::vector<std::int64_t>& sizes,
                const std::vector<lower::config>& cfgs, std::uint64_t seed) {
  const ir::computation& c = mdh::describe(op);
  auto lim = ctx.limits();
  lim.name = "pocl-cpu";  // as the other OpenCL tests: the kernel names do not depend on it
  auto in = make_inputs(c, sizes, seed);
  auto want = make_outputs(c, sizes);
  std::vector<buffer_ref> in_refs, want_refs;
  for (auto& b : in) in_refs.push_back(b);
  for (auto& b : want) want_refs.push_back(b);
  call_reference(op, sizes, in_refs, want_refs);
  const std::int64_t L = reduction_length(c, sizes);
  int retried = 0;
  for (auto& cfg : cfgs) {
    INFO(c.name, " ", to_string(sizes), " config: ", lower::to_string(cfg));
    auto plan = lower::lower(c, sizes, cfg, lim);
    // twice with the last-block combine: its counters must be reset for the next launch
    const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
    auto o = check_opencl(ctx, plan, in, want, L, launches);
    CHECK_MESSAGE(o.mismatch.empty(), o.mismatch, "\n", lower::to_string(plan));
    retried += o.pocl_retry;
  }
  if (retried)
    MESSAGE(c.name, ": ", retried, " kernels miscompiled by PoCL loopvec, correct under repl");
  return int(cfgs.size());
}

}  // namespace mdh::test
