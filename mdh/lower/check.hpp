// SPDX-License-Identifier: MIT
// check(): rejects a configuration that breaks a constraint, naming the parameter and the rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/passes.hpp>

namespace mdh::lower {

// Limits on generated code size that keep registers from spilling (see docs/lowering.md).
inline constexpr std::int64_t max_accumulators = 256;  // acc_count * results per thread
inline constexpr std::int64_t max_unrolled = 1024;     // product of all t_rm (unrolled body copies)
// Staged tile elements per thread, counted as ceil(box / threads) per tile; the printer holds
// whole vectors, so a tile may take up to (vector width - 1) registers more.
inline constexpr std::int64_t max_prefetch_registers = 64;

namespace detail {
[[noreturn]] inline void violated(const std::string& param, const std::string& rule,
                                  const std::string& detail) {
  throw error("configuration violates '" + rule + "' (parameter " + param + "): " + detail);
}

inline bool accesses_share_coefficients(const ir::buffer& b) {
  for (auto& a : b.accesses)
    for (std::size_t k = 0; k < b.rank; ++k)
      if (a.index[k].coeff != b.accesses[0].index[k].coeff) return false;
  return true;
}

// Warp shuffles need the reduction threads as the lowest lanes: every reduction dimension with
// threads on the x axis, and no other dimension after it with threads on x. `dim(d)` gives
// dimension d of `count` as {reduces, threads, on x}. Returns the first reduction dimension
// (innermost first) that breaks the rule. Shared by check() and the tuner's search space.
struct lane_dim {
  bool reduce = false;
  std::int64_t thr = 1;
  bool on_x = false;
};
template <class Dim>
std::optional<std::size_t> shuffle_lane_violation(std::size_t count, const Dim& dim) {
  for (std::size_t r = count; r-- > 0;) {
    const lane_dim x = dim(r);
    if (!x.reduce || x.thr == 1) continue;
    if (!x.on_x) return r;
    for (std::size_t e = r + 1; e < count; ++e) {
      const lane_dim y = dim(e);
      if (!y.reduce && y.on_x && y.thr > 1) return r;
    }
  }
  return std::nullopt;
}

inline bool atomic_supported(const ir::computation& c, const device_limits& l) {
  auto k = c.reduction.kind;
  if (k != ir::builtin::add && k != ir::builtin::mul && k != ir::builtin::max &&
      k != ir::builtin::min)
    return false;
  for (std::size_t r = 0; r < c.outputs.size(); ++r) {
    auto t = c.f.result_type(r);
    if (t != c.outputs[r].type) return false;
    if (t == scalar_type::f32 || t == scalar_type::i32) continue;
    if (l.cuda && (t == scalar_type::f64 || t == scalar_type::i64)) continue;
    return false;
  }
  return true;
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
  auto v = [](std::int64_t x) { return std::to_string(x); };
  for (std::size_t d = 0; d < comp.rank(); ++d) {
    const auto& x = cfg.dims[d];
    auto n = [&](const char* s) { return param_name(s, d); };
    if (x.blk < 1 || x.blk > sizes[d])
      violated(n("blk"), "1 <= blk_d <= size_d", "blk=" + v(x.blk) + ", size=" + v(sizes[d]));
    if (x.thr < 1) violated(n("thr"), "thr_d >= 1", "thr=" + v(x.thr));
    if (x.t_rm < 1) violated(n("t_rm"), "t_rm_d >= 1", "t_rm=" + v(x.t_rm));
    if (x.t_sm < 1 || x.t_sm > (std::int64_t(1) << 30))
      violated(n("t_sm"), "1 <= t_sm_d <= 2^30", "t_sm=" + v(x.t_sm));
    if (x.t_rm * x.thr > x.t_sm)
      violated(n("t_sm"), "t_rm_d * thr_d <= t_sm_d",
               "t_rm=" + v(x.t_rm) + " thr=" + v(x.thr) + " t_sm=" + v(x.t_sm));
    if (x.thr_map < 0 || x.thr_map > 2)
      violated(n("thr_map"), "thr_map_d in {0,1,2}", "thr_map=" + v(x.thr_map));
    if (x.blk_map < 0 || x.blk_map > 2)
      violated(n("blk_map"), "blk_map_d in {0,1,2}", "blk_map=" + v(x.blk_map));
    if (comp.dims[d].combine == ir::combine_kind::prefix_sum && (x.thr != 1 || x.blk != 1))
      violated(x.thr != 1 ? n("thr") : n("blk"), "scan dimensions run in one thread",
               "prefix-sum dimension '" + comp.dims[d].name + "' needs thr=1 and blk=1");
  }
  for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
    const auto& ic = cfg.inputs[b];
    if (ic.cache != cache_kind::global && ic.cache != cache_kind::shared)
      violated(param_name("cache", b), "cache_b in {0 = global, 1 = shared}",
               "cache=" + v(std::int64_t(ic.cache)));
    if (ic.cache == cache_kind::shared && !detail::accesses_share_coefficients(comp.inputs[b]))
      violated(param_name("cache", b), "a shared tile needs accesses differing by offsets only",
               "buffer '" + comp.inputs[b].name + "'");
    if (ic.pad < 0 || ic.pad > 32) violated(param_name("pad", b), "0 <= pad_b <= 32", v(ic.pad));
    if (ic.cache != cache_kind::shared && (ic.pad != 0 || ic.transpose))
      violated(param_name(ic.pad ? "pad" : "transpose", b), "layout only for shared tiles",
               "buffer '" + comp.inputs[b].name + "' is not cached in shared memory");
    if (ic.transpose < 0 || ic.transpose > 2)
      violated(param_name("transpose", b),
               "transpose_b in {0, 1 = last two dims swapped, 2 = first dim innermost}",
               "transpose=" + v(std::int64_t(ic.transpose)));
    if (ic.transpose && comp.inputs[b].rank < 2)
      violated(param_name("transpose", b), "transpose needs rank >= 2",
               "buffer '" + comp.inputs[b].name + "'");
    if (ic.transpose == 2 && comp.inputs[b].rank < 3)
      violated(
          param_name("transpose", b), "transpose = 2 needs rank >= 3 (rank 2: use 1)",
          "buffer '" + comp.inputs[b].name + "' has rank " + v(std::int64_t(comp.inputs[b].rank)));
  }
  if (cfg.vec != 1 && cfg.vec != 2 && cfg.vec != 4)
    violated("vec", "vec in {1, 2, 4}", "vec=" + v(cfg.vec));
  if (cfg.vec_pw != 1 && cfg.vec_pw != 2 && cfg.vec_pw != 4)
    violated("vec_pw", "vec_pw in {1, 2, 4}", "vec_pw=" + v(cfg.vec_pw));
  if (cfg.thr_combine != thread_combine::shared_tree &&
      cfg.thr_combine != thread_combine::warp_shuffle)
    violated("thr_combine", "thr_combine in {0 = shared tree, 1 = warp shuffle}",
             v(std::int64_t(cfg.thr_combine)));
  if (cfg.blk_combine != block_combine::atomic && cfg.blk_combine != block_combine::second_kernel &&
      cfg.blk_combine != block_combine::last_block)
    violated("blk_combine", "blk_combine in {0 = atomic, 1 = second kernel, 2 = last block}",
             v(std::int64_t(cfg.blk_combine)));
  (void)limits;
}

// The check pass: the rules on the finished plan (launch shape, registers, shared memory, the
// combines' and the vector paths' conditions), the last pass of lower(). Throws as check_config.
inline void check_plan(const kernel_plan& p) {
  using detail::violated;
  const config& cfg = p.cfg;
  const ir::computation& comp = p.comp;
  const device_limits& limits = p.limits;
  auto v = [](std::int64_t x) { return std::to_string(x); };
  const char* axis[] = {"x", "y", "z"};
  if (p.threads > limits.max_threads_per_block)
    violated("thr_*", "threads per block <= " + v(limits.max_threads_per_block),
             v(p.threads) + " threads");
  const auto& l = main_kernel(p).launch;
  for (int a = 0; a < 3; ++a) {
    if (l.block[a] > limits.max_block[a])
      violated("thr_map_*", std::string("block.") + axis[a] + " <= " + v(limits.max_block[a]),
               v(l.block[a]) + " threads on " + axis[a]);
    if (l.grid[a] > limits.max_grid[a])
      violated("blk_map_*", std::string("grid.") + axis[a] + " <= " + v(limits.max_grid[a]),
               v(l.grid[a]) + " blocks on " + axis[a]);
  }
  std::int64_t unrolled = 1;
  for (auto& d : p.dims) unrolled *= d.t_rm;
  if (p.acc_count * std::int64_t(p.results()) > max_accumulators)
    violated(
        "t_rm_*",
        "accumulators (product of t_rm over ++/ps dims, times results) <= " + v(max_accumulators),
        v(p.acc_count * std::int64_t(p.results())));
  if (unrolled > max_unrolled)
    violated("t_rm_*", "product of all t_rm <= " + v(max_unrolled), v(unrolled));
  // The last-block combine adds a static int (the "am I last" flag) next to the pool.
  const std::int64_t flag_bytes = p.blk_combine == block_combine_kind::last_block ? 4 : 0;
  if (p.shared_bytes + flag_bytes > limits.shared_per_block_optin)
    violated("t_sm_*/cache_*", "shared memory <= " + v(limits.shared_per_block_optin) + " bytes",
             v(p.shared_bytes + flag_bytes) + " bytes (tiles " + v(p.tiles_bytes) +
                 ", combine scratch " + v(p.scratch_bytes) + ")");
  if (p.thread_combine_needed && cfg.thr_combine == thread_combine::warp_shuffle) {
    if (!limits.cuda)
      violated("thr_combine", "warp shuffles need a CUDA device", "device " + limits.name);
    // The reduction threads must be the lowest lanes: on x, fastest.
    auto bad = detail::shuffle_lane_violation(p.dims.size(), [&](std::size_t d) {
      return detail::lane_dim{p.dims[d].role == dim_role::reduce, p.dims[d].thr,
                              p.dims[d].thr_axis == 0};
    });
    if (bad)
      violated("thr_map_" + std::to_string(*bad), "warp shuffle: reduction threads fastest on x",
               "dimension '" + p.dims[*bad].name + "' must map to x below every ++ dimension");
    // More than a warp: whole warps, their totals combined by one warp (two levels).
    if ((p.red_threads & (p.red_threads - 1)) != 0 ||
        p.red_threads > std::int64_t(limits.warp_size) * limits.warp_size)
      violated("thr_combine", "warp shuffle: reduction threads a power of two <= warp size squared",
               v(p.red_threads) + " reduction threads");
  }
  if (p.blk_combine == block_combine_kind::atomic && !detail::atomic_supported(comp, limits))
    violated("blk_combine", "atomics need add/mul/max/min on 32-bit types (64-bit on CUDA)",
             "operator '" + comp.reduction.name + "'");
  if (cfg.prefetch < 0 || cfg.prefetch > 2)
    violated("prefetch", "prefetch in {0 = off, 1 = registers, 2 = registers + two buffers}",
             v(cfg.prefetch));
  if (cfg.prefetch) {
    if (p.tiles.empty() || p.reduce_dims.empty())
      violated("prefetch", "prefetch needs a cached input and a reduction dimension",
               p.tiles.empty() ? "no input is cached in shared memory" : "no reduction dimension");
    // The staged tile elements live in registers next to the accumulators.
    std::int64_t staged = 0;
    for (auto& t : p.tiles) staged += ceil_div(t.box_elements, p.threads);
    if (staged > max_prefetch_registers)
      violated("prefetch", "prefetched elements per thread <= " + v(max_prefetch_registers),
               v(staged) + " (tile elements / threads, over all cached inputs)");
  }
  if (cfg.vec > 1) {
    // Vector stores along the innermost concatenation dimension d: blocked, t_rm a multiple.
    if (p.concat_dims.empty())
      violated("vec", "vec > 1 needs a ++ dimension", "computation has none");
    const auto& d = p.dims[p.concat_dims.back()];
    if (d.t_rm % cfg.vec != 0 || d.strided)
      violated("vec", "vec > 1: blocked innermost ++ dimension with t_rm a multiple of vec",
               "dimension '" + d.name + "' t_rm=" + v(d.t_rm));
  }
  if (cfg.vec_pw > 1) {
    // Vector loads along the innermost pw dimension: its register tile walked in whole groups.
    if (p.reduce_dims.empty())
      violated("vec_pw", "vec_pw > 1 needs a pw dimension", "computation has none");
    const auto& d = p.dims[p.reduce_dims.back()];
    if (d.strided)
      violated("vec_pw", "vec_pw > 1: blocked innermost pw dimension",
               "dimension '" + d.name + "' is strided");
    if (d.t_rm % cfg.vec_pw != 0)
      violated("vec_pw", "vec_pw > 1: t_rm of the innermost pw dimension a multiple of vec_pw",
               "dimension '" + d.name + "' t_rm=" + v(d.t_rm) + ", vec_pw=" + v(cfg.vec_pw));
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
