// SPDX-License-Identifier: MIT
// check(): rejects a configuration that breaks a constraint, naming the parameter and the rule:
// first the rules of the configuration's parameters (mdh/lower/rules.hpp, which the tuner's
// search space shares), then those of the finished plan as a whole.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/passes.hpp>
#include <mdh/lower/rules.hpp>

namespace mdh::lower {

namespace detail {
[[noreturn]] inline void violated(const std::string& param, const std::string& rule,
                                  const std::string& detail) {
  throw error("configuration violates '" + rule + "' (parameter " + param + "): " + detail);
}
}  // namespace detail

// The rules on the configuration alone, before the passes run (they need one dim_config per
// dimension, ...). Throws mdh::error("configuration violates '<rule>' (parameter <name>): ...")
// on the first violated constraint. Also validates the computation and the sizes.
inline void check_config(const config& cfg, const ir::computation& comp,
                         const std::vector<std::int64_t>& sizes, const device_limits& limits) {
  using detail::violated;
  ir::validate(comp);
  if (sizes.size() != comp.rank())
    throw error("computation '" + comp.name + "' has " + std::to_string(comp.rank()) +
                " dimensions but " + std::to_string(sizes.size()) + " sizes were given");
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 1)
      throw error("size of dimension '" + comp.dims[d].name + "' must be >= 1, is " +
                  std::to_string(sizes[d]));
  if (cfg.dims.size() != comp.rank())
    violated("dims", "one dim_config per dimension",
             std::to_string(cfg.dims.size()) + " given for rank " + std::to_string(comp.rank()));
  if (cfg.inputs.size() != comp.inputs.size())
    violated("inputs", "one input_config per input buffer",
             std::to_string(cfg.inputs.size()) + " given for " +
                 std::to_string(comp.inputs.size()) + " inputs");
  if (auto broken = first_broken(config_rules(comp, sizes, limits), cfg))
    violated(broken->violation.param, broken->name, broken->violation.detail);
}

// The check pass: the rules on the finished plan (launch shape, registers, shared memory, the
// combines' and the vector paths' conditions), the last pass of lower(). Throws as check_config.
inline void check_plan(const kernel_plan& p) {
  using detail::violated;
  const config& cfg = p.cfg;
  const device_limits& limits = p.limits;
  auto v = [](std::int64_t x) { return std::to_string(x); };
  const char* axis[] = {"x", "y", "z"};
  const auto& l = main_kernel(p).launch;
  for (int a = 0; a < 3; ++a) {
    if (l.block[a] > limits.max_block[a])
      violated(p.mma.on ? "mma_warps_*" : "thr_map_*",
               std::string("block.") + axis[a] + " <= " + v(limits.max_block[a]),
               v(l.block[a]) + " threads on " + axis[a]);
    if (l.grid[a] > limits.max_grid[a])
      violated(p.mma.on ? "mma_tile_*" : "blk_map_*",
               std::string("grid.") + axis[a] + " <= " + v(limits.max_grid[a]),
               v(l.grid[a]) + " blocks on " + axis[a]);
  }
  // Split-K: every block of a tile gets K steps (an empty share would only add a partial).
  if (p.mma.on && p.mma.split > p.mma.steps)
    violated("mma_split", "mma_split <= K steps (" + v(p.mma.steps) + ")",
             "split=" + v(p.mma.split));
  // TMA: each operand's tile must be a box of its buffer (mma_tiles says why not).
  if (p.mma.on && cfg.mma.tma && !p.mma.tma)
    violated("mma_tma", "mma_tma = 1: each operand's tile a TMA box of its buffer",
             p.mma.tma_refused);
  // Clusters: the shared operand's boxes split evenly between the two blocks (mma_tiles says why
  // not).
  if (p.mma.on && !p.mma.cluster_refused.empty())
    violated(cfg.mma.cluster_n > 1 ? "mma_cluster_n" : "mma_cluster_m",
             "a cluster's shared tile splits into two halves of TMA boxes", p.mma.cluster_refused);
  // ---- the staged epilogue (mma_stage_out): where the pass found it cannot apply, and its tiles
  // alone past the shared memory (the pipeline's tiles are the next rule's)
  if (p.mma.on && cfg.mma.stage_out != 0 && !p.mma.stage_out)
    violated("mma_stage_out",
             "mma_stage_out = 1 needs 16-bit or f32 outputs written with coefficient 1 along N",
             p.mma.stage_out_refused);
  if (p.mma.stage_out) {
    std::int64_t staged = p.mma.wgmma ? 1024 : 0;
    for (const mma_stage& st : p.mma.staged) staged += st.bytes;
    if (staged > limits.shared_per_block_optin)
      violated(
          "mma_stage_out",
          "the staged output tiles fit shared memory (<= " + v(limits.shared_per_block_optin) +
              " bytes)",
          v(staged) + " bytes for a " + v(p.mma.block_m) + "x" + v(p.mma.block_n) + " block tile");
  }
  // ---- end the staged epilogue
  // The last-block combine adds a static int (the "am I last" flag) next to the pool.
  const std::int64_t flag_bytes = p.blk_combine == block_combine_kind::last_block ? 4 : 0;
  if (p.shared_bytes + flag_bytes > limits.shared_per_block_optin)
    violated(p.mma.on ? "mma_stages/mma_tile_*" : "t_sm_*/cache_*",
             "shared memory <= " + v(limits.shared_per_block_optin) + " bytes",
             v(p.shared_bytes + flag_bytes) + " bytes (tiles " + v(p.tiles_bytes) +
                 ", combine scratch " + v(p.scratch_bytes) + ")");
  if (cfg.prefetch) {
    // The staged tile elements live in registers next to the accumulators.
    std::int64_t staged = 0;
    for (auto& t : p.tiles) staged += ceil_div(t.box_elements, p.threads);
    if (staged > max_prefetch_registers)
      violated("prefetch", "prefetched elements per thread <= " + v(max_prefetch_registers),
               v(staged) + " (tile elements / threads, over all cached inputs)");
  }
}

// check_config, the passes, check_plan: throws on the first violated rule. lower() does the same
// and keeps the plan.
inline void check(const config& cfg, const ir::computation& comp,
                  const std::vector<std::int64_t>& sizes, const device_limits& limits) {
  check_config(cfg, comp, sizes, limits);
  check_plan(passes::run_all(comp, sizes, cfg, limits));
}

}  // namespace mdh::lower
