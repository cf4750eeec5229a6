// SPDX-License-Identifier: MIT
// The search space of an expression: from (computation, sizes, device limits) the atf tuning
// parameters of the MDH low-level model (mdh/lower/config.hpp), constrained by the validity
// rules of mdh/lower/rules.hpp (the rules check() applies, stated there once), and the way
// between an atf configuration and a lower::config.
//
// The coordinates are the configuration's own parameters, by their names (lower::to_map):
//   thr_d      threads along d (powers of two)
//   t_rm_d     register tile (elements per thread per step)
//   blk_d      blocks along d: powers of two and ceil(n / 2^q), so odd sizes (384) split evenly
//   strided_d  thread t takes t, t+thr, ... (1) or a consecutive run (0)
//   thr_map_d  CUDA thread axis of d (0 = x, 1 = y); dims on one axis fold, the last fastest
//   cache_b, transpose_b, pad_b   shared-memory caching of input b and its tile layout
//   thr_combine, blk_combine, vec, vec_pw, prefetch
//   edge_split 0 off, 1 whole-tile chunks + an unguarded interior path, 2 = 1 + shifted vector
//              loads (mdh/lower/edge_tiles.hpp); single computations only, and by default only
//              where some dimension's size is odd and >= 32 (has_edge_split_parameter), so the
//              spaces of other shapes (the benchmark cases) are those of before it existed
//   mma, mma_m, mma_n, mma_k, mma_warps_m, mma_warps_n, mma_tile_m, mma_tile_n, mma_tile_k,
//              mma_stages, mma_swizzle, mma_split, mma_tma, mma_persistent, mma_cluster_m,
//              mma_cluster_n: the tensor-core path,
//              only on a CUDA device for a contraction with a tensor-core type
//              (has_mma_parameters); with mma = 1 (and mma = 2, wgmma, on sm_90 devices only) the
//              parameters above are not read (each MMA point repeats over them), with mma = 0 the
//              mma_* sit at their defaults (rules.hpp), so spaces without it are unchanged
//   mma_stage_out  the staged epilogue (0/1), in the same spaces as the tensor-core parameters
//   mma_shift      shifted 16-byte tile copies (0/1), only where an operand's tile rows may
//                  start off the 16-byte grid (lower::mma_shift_applies)
// with two exceptions:
//   t_sm_steps_d  instead of t_sm_d: the shared-memory tile in steps of thr_d * t_rm_d (1, 2, 4),
//              0 = the whole per-block chunk rounded up to whole steps. t_sm_d depends on thr_d,
//              t_rm_d, blk_d and the size; as a coordinate, the rule tying it to them would join
//              the threads group, the register-tile group and every blk_d into one tree the size
//              of their product, where as steps it is a coordinate of its own. tile_from_steps
//              and tile_steps below are the one translation, both ways.
//   blk_map_d  not tuned: 0, every block index folds into grid.x (2^31 - 1 blocks).
// A fused pair's second stage names its input and kernel parameters s2_...; both stages share
// the dimension parameters.
// Which values the space tries is its own design (below, per parameter): e.g. powers of two for
// threads, no atomics where the operator has none, no warp shuffles without a CUDA device.
// Which of those are valid is the rules' business: every rule whose parameters are all
// coordinates becomes an atf constraint, so the tuner never sees those violations. The rules
// over t_sm_d and blk_map_d hold by construction; those over the finished plan (shared memory
// of all tiles, launch limits, prefetched registers) are checked by lower::check before
// compiling, and a configuration that fails one is reported to the tuner as invalid.
#pragma once

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <atf/atf.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/lower/rules.hpp>

namespace mdh::tuning {

// The names of a fused pair's second-stage parameters start with this.
inline constexpr const char* fused_second_prefix = "s2_";

struct space_options {
  std::int64_t max_threads = 1024;  // on top of the device's limit
  std::int64_t max_t_rm = 8;        // largest register tile per dimension
  bool allow_strided = true;
  // Whether the space has edge_split: -1 where has_edge_split_parameter's default says so (some
  // dimension's size odd and >= 32: 997, 4093, 2^23+5), 0 never, 1 always.
  int edge_split = -1;
};

namespace detail {
inline std::string name(const char* stem, std::size_t k) { return lower::param_name(stem, k); }

// Both stop at 2^62: doubling past it overflows (sizes near INT64_MAX used to loop forever).
inline constexpr std::int64_t largest_power_of_two = std::int64_t(1) << 62;
inline std::vector<std::int64_t> powers_of_two_upto(std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t p = 1; p <= hi; p *= 2) {
    v.push_back(p);
    if (p == largest_power_of_two) break;
  }
  return v;
}
inline std::int64_t pow2_ceil(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n && p < largest_power_of_two) p *= 2;
  return p;
}

// The block counts the space offers along a dimension of size n (blk_d): powers of two and the
// chunks of power-of-two (and 3 x power-of-two, for the 6-element register tiles) widths.
inline std::set<std::int64_t> block_counts(std::int64_t n) {
  std::set<std::int64_t> blk;
  for (std::int64_t p = 1; p <= n; p *= 2) {
    blk.insert(p);
    blk.insert((n + p - 1) / p);
    if (3 * p <= n) blk.insert((n + 3 * p - 1) / (3 * p));
    if (p == largest_power_of_two) break;
  }
  return blk;
}

// The dimension and stage parameters of lower::config, by stem (lower::to_map's names).
inline constexpr const char* dim_stems[] = {"blk",     "thr",     "t_sm",   "t_rm",
                                            "strided", "thr_map", "blk_map"};
inline constexpr const char* input_stems[] = {"cache", "transpose", "pad"};
inline constexpr const char* kernel_names[] = {"thr_combine", "blk_combine", "vec", "vec_pw",
                                               "prefetch"};
// The values of mma_split (split-K) the space offers; the starts pick among them too.
inline constexpr std::int64_t mma_split_values[] = {1, 2, 3, 4, 8, 16};
inline constexpr const char* mma_names[] = {
    "mma",        "mma_m",      "mma_n",      "mma_k",      "mma_warps_m", "mma_warps_n",
    "mma_tile_m", "mma_tile_n", "mma_tile_k", "mma_stages", "mma_swizzle"};

// The fusion masks (mma_fuse_m/n/k) the space of `comp` has: one per role of the contraction
// with two or more dimensions (a matmul's space has none, and stays as it was).
inline std::vector<std::pair<std::string, ir::contraction_role>> mma_fuse_parameters(
    const ir::computation& comp) {
  std::vector<std::pair<std::string, ir::contraction_role>> v;
  const lower::mma_support s = lower::mma_supported(comp);
  if (!s) return v;
  for (auto [name, role] : {std::pair{"mma_fuse_m", ir::contraction_role::m},
                            std::pair{"mma_fuse_n", ir::contraction_role::n},
                            std::pair{"mma_fuse_k", ir::contraction_role::k}})
    if (s.contraction->dims_of(role).size() >= 2) v.emplace_back(name, role);
  return v;
}

// The optional tensor-core parameters of the space of `comp`, beyond mma_names: the fusion masks
// and, with them, the tiles' contiguous axes (mma_flip_a/b). Absent (a matmul): the space, its
// points and kernel keys are those of before these existed.
inline std::vector<std::string> mma_optional_names(const ir::computation& comp) {
  std::vector<std::string> v;
  for (auto& [name, role] : mma_fuse_parameters(comp)) v.push_back(name);
  if (!v.empty()) v.insert(v.end(), {"mma_flip_a", "mma_flip_b"});
  return v;
}

// Adds `r` to the parameters of `ps` as atf constraints: on its last parameter, reading the
// others; a product bound also on each earlier one, reading those before it (the rest at 1).
// A rule that reads a parameter the space does not have is left out (see the header comment).
inline void constrain(std::vector<atf::tp>& ps, const lower::rule& r) {
  auto find = [&](const std::string& n) -> atf::tp* {
    for (auto& p : ps)
      if (p.name() == n) return &p;
    return nullptr;
  };
  std::vector<atf::tp*> at;
  for (auto& n : r.reads) {
    at.push_back(find(n));
    if (!at.back()) return;
  }
  auto test = r.test;
  const std::vector<std::string> reads = r.reads;
  for (std::size_t k = r.product_bound ? 0 : reads.size() - 1; k < reads.size(); ++k) {
    std::vector<std::string> before(reads.begin(), reads.begin() + std::ptrdiff_t(k));
    at[k]->constrain(atf::constraint(
        before, [k, test, n = reads.size()](std::int64_t v, const atf::partial_config& c) {
          thread_local std::vector<std::int64_t> vals;  // spaces are built on several threads
          vals.assign(n, 1);
          for (std::size_t j = 0; j < k; ++j) vals[j] = c.get_read<std::int64_t>(j);
          vals[k] = v;
          return !test(vals);
        }));
  }
}
}  // namespace detail

// The shared-memory tile t_sm of a dimension with `x`'s thr, t_rm and blk (size `n`) at
// t_sm_steps = `steps`, and back: the space's one translation of t_sm (see the header comment).
inline std::int64_t tile_from_steps(std::int64_t steps, const lower::dim_config& x,
                                    std::int64_t n) {
  const std::int64_t step = x.thr * x.t_rm, chunk = lower::ceil_div(n, x.blk);
  return steps == 0 ? lower::ceil_div(chunk, step) * step : step * steps;
}
inline std::int64_t tile_steps(const lower::dim_config& x, std::int64_t n) {
  const std::int64_t step = x.thr * x.t_rm;
  return x.t_sm == tile_from_steps(0, x, n) ? 0 : x.t_sm / step;
}

inline void append_stage_parameters(std::vector<atf::tp>& ps, const ir::computation& comp,
                                    const std::vector<std::int64_t>& sizes,
                                    const lower::device_limits& limits, const std::string& prefix,
                                    bool with_blk_combine);

// The device limits the space's rules are stated for: at most `opt.max_threads` threads.
inline lower::device_limits space_limits(const lower::device_limits& limits,
                                         const space_options& opt) {
  lower::device_limits l = limits;
  l.max_threads_per_block = std::min(opt.max_threads, limits.max_threads_per_block);
  return l;
}

// The dimension parameters (thr_d, t_rm_d, blk_d, t_sm_steps_d, strided_d, thr_map_d) of `comp`
// and the rules over them alone; `one_block[d]`: dimension d is not split over blocks
// (blk_d = 1); `one_thread[d]`: nor over threads (thr_d = 1; a scan of either stage of a fused
// pair).
inline std::vector<atf::tp> make_dim_parameters(const ir::computation& comp,
                                                const std::vector<std::int64_t>& sizes,
                                                const lower::device_limits& limits,
                                                const space_options& opt,
                                                const std::vector<bool>& one_block,
                                                const std::vector<bool>& one_thread) {
  using detail::name;
  using std::int64_t;
  const std::size_t D = comp.rank();
  if (sizes.size() != D)
    throw error("search space of '" + comp.name + "': " + std::to_string(sizes.size()) +
                " sizes for " + std::to_string(D) + " dimensions");
  const lower::device_limits lim = space_limits(limits, opt);
  std::vector<atf::tp> ps;
  for (std::size_t d = 0; d < D; ++d)
    ps.emplace_back(
        name("thr", d),
        atf::set(one_thread.at(d) ? std::vector<int64_t>{1}
                                  : detail::powers_of_two_upto(std::min(
                                        lim.max_threads_per_block, detail::pow2_ceil(sizes[d])))));
  for (std::size_t d = 0; d < D; ++d) {
    std::vector<int64_t> vals;
    for (int64_t t : {1, 2, 3, 4, 6, 8})
      if (t <= opt.max_t_rm && (t == 1 || t <= sizes[d])) vals.push_back(t);
    ps.emplace_back(name("t_rm", d), atf::set(vals));
  }
  for (std::size_t d = 0; d < D; ++d) {
    const int64_t n = sizes[d];
    const std::set<int64_t> blk = one_block.at(d) ? std::set<int64_t>{1} : detail::block_counts(n);
    ps.emplace_back(name("blk", d), atf::set(std::vector<int64_t>(blk.begin(), blk.end())));
    ps.emplace_back(name("t_sm_steps", d),
                    atf::set({int64_t{0}, int64_t{1}, int64_t{2}, int64_t{4}}));
    ps.emplace_back(name("strided", d), opt.allow_strided && n > 1
                                            ? atf::set({int64_t{0}, int64_t{1}})
                                            : atf::set({int64_t{0}}));
    ps.emplace_back(name("thr_map", d),
                    D >= 2 ? atf::set({int64_t{0}, int64_t{1}}) : atf::set({int64_t{0}}));
  }
  for (const lower::rule& r : lower::config_rules(comp, sizes, lim)) detail::constrain(ps, r);
  return ps;
}

// Whether the space of a single computation `comp` at `sizes` has edge_split (see space_options):
// by default where some dimension's size is odd and at least 32 - the shapes that no tile
// divides, where the interior path pays; even sizes keep the space they had before.
inline bool has_edge_split_parameter(const ir::computation& comp,
                                     const std::vector<std::int64_t>& sizes,
                                     const space_options& opt = {}) {
  if (opt.edge_split >= 0) return opt.edge_split == 1;
  for (std::size_t d = 0; d < comp.rank() && d < sizes.size(); ++d)
    if (sizes[d] >= 32 && sizes[d] % 2 == 1) return true;
  return false;
}

// Whether the space of `comp` on a device with `limits` has the tensor-core parameters.
inline bool has_mma_parameters(const ir::computation& comp, const lower::device_limits& limits) {
  return limits.cuda && lower::mma_supported(comp);
}

// The tensor-core parameters (see the header comment) and the rules over them.
inline void append_mma_parameters(std::vector<atf::tp>& ps, const ir::computation& comp,
                                  const std::vector<std::int64_t>& sizes,
                                  const lower::device_limits& limits) {
  using std::int64_t;
  const lower::mma_support s = lower::mma_supported(comp);
  auto dims = [&](ir::contraction_role r) {
    std::set<int64_t> v{0};  // 0: the default, with mma = 0
    for (auto d : s.contraction->dims_of(r)) v.insert(int64_t(d));
    return atf::set(std::vector<int64_t>(v.begin(), v.end()));
  };
  const bool tf32 = *s.instruction == lower::mma_instruction::m16n8k8_tf32;
  const std::size_t first = ps.size();
  // mma = 2 (wgmma) on sm_90 devices only, with warpgroup tiles up to 64 x 256: elsewhere the
  // space is that of before it
  const bool wgmma = limits.cuda && limits.cc_major == 9;
  ps.emplace_back("mma", wgmma ? atf::set({int64_t{0}, int64_t{1}, int64_t{2}})
                               : atf::set({int64_t{0}, int64_t{1}}));
  ps.emplace_back("mma_m", dims(ir::contraction_role::m));
  ps.emplace_back("mma_n", dims(ir::contraction_role::n));
  ps.emplace_back("mma_k", dims(ir::contraction_role::k));
  ps.emplace_back("mma_warps_m", atf::set({int64_t{1}, int64_t{2}, int64_t{4}}));
  ps.emplace_back("mma_warps_n", atf::set({int64_t{1}, int64_t{2}, int64_t{4}}));
  // warpgroup tiles of 192 and 256 rows on sm_90 (mma = 1 keeps to 128: the rules)
  ps.emplace_back("mma_tile_m",
                  wgmma ? atf::set({int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128},
                                    int64_t{192}, int64_t{256}})
                        : atf::set({int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}}));
  // N: on sm_90 also 96 columns (a 64-byte swizzle where N is contiguous), whose blocks fit
  // N = 768 or 2304 onto the SMs in fuller waves than 64 or 128 do
  ps.emplace_back("mma_tile_n",
                  wgmma ? atf::set({int64_t{16}, int64_t{32}, int64_t{64}, int64_t{96},
                                    int64_t{128}, int64_t{192}, int64_t{256}})
                        : atf::set({int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}}));
  ps.emplace_back("mma_tile_k", tf32 ? atf::set({int64_t{8}, int64_t{16}, int64_t{32}})
                                     : atf::set({int64_t{16}, int64_t{32}, int64_t{64}}));
  ps.emplace_back("mma_stages", atf::set({int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}}));
  ps.emplace_back("mma_swizzle", atf::set({int64_t{0}, int64_t{1}}));
  // split-K: blocks per output tile (shapes with fewer tiles than SMs; check() keeps each
  // block's share of the K steps non-empty)
  ps.emplace_back("mma_split", atf::set(std::vector<int64_t>(std::begin(detail::mma_split_values),
                                                             std::end(detail::mma_split_values))));
  // TMA feeding wgmma (sm_90 only; check() refuses operands that are no box of their buffer)
  ps.emplace_back("mma_tma", wgmma ? atf::set({int64_t{0}, int64_t{1}}) : atf::set({int64_t{0}}));
  // the persistent warp-specialised kernel (with TMA, unsplit)
  ps.emplace_back("mma_persistent",
                  wgmma ? atf::set({int64_t{0}, int64_t{1}}) : atf::set({int64_t{0}}));
  // clusters of two persistent blocks sharing one operand by TMA multicast (along M or N)
  ps.emplace_back("mma_cluster_m",
                  wgmma ? atf::set({int64_t{1}, int64_t{2}}) : atf::set({int64_t{1}}));
  ps.emplace_back("mma_cluster_n",
                  wgmma ? atf::set({int64_t{1}, int64_t{2}}) : atf::set({int64_t{1}}));
  for (auto& [name, role] : detail::mma_fuse_parameters(comp)) {
    // every subset of the role's dimensions as a mask (the rules drop those with the innermost)
    const std::vector<std::size_t> ds = s.contraction->dims_of(role);
    std::vector<int64_t> masks;
    for (std::size_t sub = 0; sub < (std::size_t(1) << ds.size()); ++sub) {
      int64_t mask = 0;
      for (std::size_t j = 0; j < ds.size(); ++j)
        if ((sub >> j) & 1) mask |= int64_t{1} << ds[j];
      masks.push_back(mask);
    }
    ps.emplace_back(name, atf::set(masks));
  }
  if (!detail::mma_fuse_parameters(comp).empty()) {
    ps.emplace_back("mma_flip_a", atf::set({int64_t{0}, int64_t{1}}));
    ps.emplace_back("mma_flip_b", atf::set({int64_t{0}, int64_t{1}}));
  }
  // ---- the staged epilogue: results through shared memory, 16-byte stores (check() refuses it
  // where the outputs' views do not allow it) ----
  ps.emplace_back("mma_stage_out", atf::set({int64_t{0}, int64_t{1}}));
  // ---- shifted 16-byte tile copies, only where some tile row may start off the 16-byte grid
  // (elsewhere the space is that of before the parameter) ----
  if (lower::mma_shift_applies(comp, sizes))
    ps.emplace_back("mma_shift", atf::set({int64_t{0}, int64_t{1}}));
  std::vector<atf::tp> added(ps.begin() + std::ptrdiff_t(first), ps.end());
  auto is_mma = [&](const std::string& n) { return n.rfind("mma", 0) == 0; };
  for (const lower::rule& r :
       lower::config_rules(comp, std::vector<std::int64_t>(comp.rank(), 1), limits))
    if (std::all_of(r.reads.begin(), r.reads.end(), is_mma)) detail::constrain(ps, r);
}

// The tuning parameters of `comp` at `sizes` on a device with `limits`.
inline std::vector<atf::tp> make_parameters(const ir::computation& comp,
                                            const std::vector<std::int64_t>& sizes,
                                            const lower::device_limits& limits,
                                            const space_options& opt = {}) {
  const std::vector<bool> none(comp.rank(), false);
  auto ps = make_dim_parameters(comp, sizes, limits, opt, none, none);
  append_stage_parameters(ps, comp, sizes, space_limits(limits, opt), "", true);
  if (has_edge_split_parameter(comp, sizes, opt)) {
    ps.emplace_back("edge_split", atf::set({int64_t{0}, int64_t{1}, int64_t{2}}));
    for (const lower::rule& r : lower::config_rules(comp, sizes, space_limits(limits, opt)))
      if (std::find(r.reads.begin(), r.reads.end(), "edge_split") != r.reads.end())
        detail::constrain(ps, r);
  }
  if (has_mma_parameters(comp, limits))
    append_mma_parameters(ps, comp, sizes, space_limits(limits, opt));
  return ps;
}

// The parameters of a stage's inputs and kernel (cache_b, transpose_b, pad_b, thr_combine,
// blk_combine, vec, vec_pw, prefetch), named `prefix` + name, and the rules that read them; the
// dimension parameters those rules also read (t_rm_d, strided_d, ...) are unprefixed: a fused
// pair's stages share them.
inline void append_stage_parameters(std::vector<atf::tp>& ps, const ir::computation& comp,
                                    const std::vector<std::int64_t>& sizes,
                                    const lower::device_limits& limits, const std::string& prefix,
                                    bool with_blk_combine) {
  using std::int64_t;
  const std::size_t first_stage_parameter = ps.size();
  auto name = [&](const char* stem, std::size_t k) { return prefix + detail::name(stem, k); };
  for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
    ps.emplace_back(name("cache", b), atf::set({int64_t{0}, int64_t{1}}));
    ps.emplace_back(name("transpose", b), atf::set({int64_t{0}, int64_t{1}, int64_t{2}}));
    // pad 4 keeps float4-aligned rows while breaking the bank pattern of transposed stores
    ps.emplace_back(name("pad", b), atf::set({int64_t{0}, int64_t{1}, int64_t{4}}));
  }
  const bool reduces = comp.has_reduction();
  // Warp shuffles only where threads can combine and the device has warps: elsewhere the choice
  // changes nothing or is invalid.
  ps.emplace_back(prefix + "thr_combine", reduces && limits.cuda
                                              ? atf::set({int64_t{0}, int64_t{1}})
                                              : atf::set({int64_t{0}}));
  // 0 atomics (where the operator and types have them: elsewhere they are valid only when no
  // reduction is split, the second kernel's kernel), 1 second kernel, 2 last block
  if (with_blk_combine)
    ps.emplace_back(prefix + "blk_combine", !reduces ? atf::set({int64_t{1}})
                                            : lower::detail::atomic_supported(comp, limits)
                                                ? atf::set({int64_t{0}, int64_t{1}, int64_t{2}})
                                                : atf::set({int64_t{1}, int64_t{2}}));
  // vectors of up to 16 bytes: 8 elements where a buffer is 16-bit
  const std::vector<int64_t> widths = lower::detail::widest_vector(comp) == 8
                                          ? std::vector<int64_t>{1, 2, 4, 8}
                                          : std::vector<int64_t>{1, 2, 4};
  ps.emplace_back(prefix + "vec", atf::set(widths));
  ps.emplace_back(prefix + "vec_pw", atf::set(widths));
  ps.emplace_back(prefix + "prefetch", atf::set({int64_t{0}, int64_t{1}, int64_t{2}}));
  // the rules that read this stage's parameters (those over dimensions alone came with them)
  std::vector<atf::tp> stage(ps.begin() + std::ptrdiff_t(first_stage_parameter), ps.end());
  auto is_stage = [&](const std::string& n) {
    for (auto& p : stage)
      if (p.name() == n) return true;
    return false;
  };
  for (const lower::rule& r : lower::config_rules(comp, sizes, limits, prefix))
    if (std::any_of(r.reads.begin(), r.reads.end(), is_stage)) detail::constrain(ps, r);
}

// From a configuration of the space above to the kernel template's configuration: its
// parameters by name, t_sm_d from t_sm_steps_d, blk_map_d = 0, read by lower::from_map (as a
// parameter file is). `prefix`: that of the stage parameters (a fused pair's second stage:
// "s2_"); a space without blk_combine (fused stages: no reduction is split over blocks) gives
// the second kernel.
inline lower::config to_config(const atf::configuration& a, const ir::computation& comp,
                               const std::vector<std::int64_t>& sizes,
                               const std::string& prefix = "") {
  using detail::name;
  std::map<std::string, std::int64_t> m;
  for (std::size_t d = 0; d < comp.rank(); ++d) {
    for (const char* stem : detail::dim_stems)
      if (std::string_view(stem) != "t_sm" && std::string_view(stem) != "blk_map")
        m[name(stem, d)] = a.get<std::int64_t>(name(stem, d));
    m[name("blk_map", d)] = 0;
    lower::dim_config x;
    x.thr = m[name("thr", d)], x.t_rm = m[name("t_rm", d)], x.blk = m[name("blk", d)];
    m[name("t_sm", d)] = tile_from_steps(a.get<std::int64_t>(name("t_sm_steps", d)), x, sizes[d]);
  }
  for (std::size_t b = 0; b < comp.inputs.size(); ++b)
    for (const char* stem : detail::input_stems)
      m[name(stem, b)] = a.get<std::int64_t>(prefix + name(stem, b));
  for (const char* n : detail::kernel_names)
    m[n] = a.contains(prefix + n) ? a.get<std::int64_t>(prefix + n)
                                  : std::int64_t(lower::block_combine::second_kernel);
  if (prefix.empty() && a.contains("edge_split") && a.get<std::int64_t>("edge_split") != 0)
    m["edge_split"] = a.get<std::int64_t>("edge_split");
  if (prefix.empty() && a.contains("mma") && a.get<std::int64_t>("mma") != 0) {
    for (const char* n : detail::mma_names) m[n] = a.get<std::int64_t>(n);
    for (auto& n : detail::mma_optional_names(comp))
      if (a.contains(n)) m[n] = a.get<std::int64_t>(n);
    if (a.contains("mma_split")) m["mma_split"] = a.get<std::int64_t>("mma_split");
    if (a.contains("mma_tma")) m["mma_tma"] = a.get<std::int64_t>("mma_tma");
    if (a.contains("mma_persistent")) m["mma_persistent"] = a.get<std::int64_t>("mma_persistent");
    for (const char* n : {"mma_cluster_m", "mma_cluster_n"})
      if (a.contains(n)) m[n] = a.get<std::int64_t>(n);
    if (a.contains("mma_stage_out")) m["mma_stage_out"] = a.get<std::int64_t>("mma_stage_out");
    if (a.contains("mma_shift")) m["mma_shift"] = a.get<std::int64_t>("mma_shift");
  }
  return lower::from_map(m, comp.rank(), comp.inputs.size());
}

// Configurations with the same key configure the same kernel: the tensor-core kernel (mma = 1 or
// 2) reads only the mma_* parameters, so its key leaves the SIMT ones out.
inline std::string kernel_key(const lower::config& c) {
  if (c.mma.on == 0) return nlohmann::json(c).dump();
  std::map<std::string, std::int64_t> m;
  const auto all = lower::to_full_map(c);
  for (const char* n : detail::mma_names) m[n] = all.at(n);
  for (const char* n : {"mma_fuse_m", "mma_fuse_n", "mma_fuse_k", "mma_flip_a", "mma_flip_b"})
    if (all.at(n) != 0) m[n] = all.at(n);  // unfused keys as before fusion existed
  if (all.at("mma_split") != 1) m["mma_split"] = all.at("mma_split");  // and unsplit ones
  if (all.at("mma_tma") != 0) m["mma_tma"] = all.at("mma_tma");        // and cp.async ones
  if (all.at("mma_stage_out") != 0) m["mma_stage_out"] = all.at("mma_stage_out");  // unstaged
  if (all.at("mma_shift") != 0) m["mma_shift"] = all.at("mma_shift");  // and unshifted ones
  if (all.at("mma_persistent") != 0) m["mma_persistent"] = all.at("mma_persistent");
  for (const char* n : {"mma_cluster_m", "mma_cluster_n"})
    if (all.at(n) != 1) m[n] = all.at(n);  // and unclustered ones
  return nlohmann::json(m).dump();
}
inline std::string kernel_key(const lower::fused_config& c) { return nlohmann::json(c).dump(); }

// The configuration of make_parameters' space that to_config maps to `c` (its inverse); values
// outside the space's sets make atf's search_space::find return nothing. `prefix`, `with_dims`
// and `with_blk_combine` pick the names of one stage of a fused space; `with_mma`: the space has
// the tensor-core parameters (has_mma_parameters); `with_edge_split`: the space has edge_split
// (-1: as has_edge_split_parameter's default says, for a single computation; without it, the
// point is that of edge_split = 0).
inline atf::configuration to_space_configuration(
    const lower::config& c, const ir::computation& comp, const std::vector<std::int64_t>& sizes,
    const std::string& prefix = "", bool with_dims = true, bool with_blk_combine = true,
    bool with_mma = false, int with_edge_split = -1) {
  using detail::name;
  const std::map<std::string, std::int64_t> m = lower::to_full_map(c);
  atf::configuration a;
  for (std::size_t d = 0; with_dims && d < comp.rank(); ++d)
    for (const char* stem : detail::dim_stems) {
      const std::string_view s(stem);
      if (s == "t_sm")
        a.set(name("t_sm_steps", d), tile_steps(c.dims[d], sizes[d]));
      else if (s != "blk_map")
        a.set(name(stem, d), m.at(name(stem, d)));
    }
  for (std::size_t b = 0; b < comp.inputs.size(); ++b)
    for (const char* stem : detail::input_stems) a.set(prefix + name(stem, b), m.at(name(stem, b)));
  for (const char* n : detail::kernel_names)
    if (with_blk_combine || std::string_view(n) != "blk_combine") a.set(prefix + n, m.at(n));
  for (const char* n : detail::mma_names)
    if (with_mma) a.set(n, m.at(n));
  if (with_mma) {
    for (auto& n : detail::mma_optional_names(comp)) a.set(n, m.at(n));
    a.set("mma_split", m.at("mma_split"));
    a.set("mma_tma", m.at("mma_tma"));
    a.set("mma_persistent", m.at("mma_persistent"));
    a.set("mma_cluster_m", m.at("mma_cluster_m"));
    a.set("mma_cluster_n", m.at("mma_cluster_n"));
    a.set("mma_stage_out", m.at("mma_stage_out"));
    if (lower::mma_shift_applies(comp, sizes)) a.set("mma_shift", m.at("mma_shift"));
  }
  if (with_edge_split < 0
          ? prefix.empty() && with_dims && with_blk_combine && has_edge_split_parameter(comp, sizes)
          : with_edge_split == 1)
    a.set("edge_split", m.at("edge_split"));
  return a;
}

// The point of the space of `comp` on `limits` that to_config maps to `c`.
inline atf::configuration to_space_configuration(const lower::config& c,
                                                 const ir::computation& comp,
                                                 const std::vector<std::int64_t>& sizes,
                                                 const lower::device_limits& limits,
                                                 const space_options& opt = {}) {
  return to_space_configuration(c, comp, sizes, "", true, true, has_mma_parameters(comp, limits),
                                has_edge_split_parameter(comp, sizes, opt) ? 1 : 0);
}

// The names of tuning logs of format 1 (mdh 0.1) in today's space: sm_mult_d is t_sm_steps_d.
inline std::string upgraded_parameter_name(const std::string& v1) {
  const std::string old = "sm_mult_";
  return v1.rfind(old, 0) == 0 ? "t_sm_steps_" + v1.substr(old.size()) : v1;
}

// Rewrites a format-1 tuning log of `space` (mdh 0.1: the old names, atf's old space hash) as
// today's, the original kept as <log>.v1 (atf::upgrade_log). False when there was nothing to
// upgrade or the log is another space's.
inline bool upgrade_tuning_log(const std::filesystem::path& log, const atf::search_space& space) {
  return atf::upgrade_log(log, space, upgraded_parameter_name);
}

// The space itself (chain of trees over the parameters above).
inline atf::search_space make_search_space(const ir::computation& comp,
                                           const std::vector<std::int64_t>& sizes,
                                           const lower::device_limits& limits,
                                           const space_options& opt = {}) {
  return atf::search_space(make_parameters(comp, sizes, limits, opt));
}

// ---- fused pairs (mdh::fuse) ------------------------------------------------------------------

// The parameters of a fused pair: one set of dimension parameters for both stages (a dimension
// that reduces in either stage stays in one block), the first stage's input and kernel
// parameters, and the second's named s2_... . No block combine: nothing is split over blocks.
inline std::vector<atf::tp> make_parameters(const ir::fused& f,
                                            const std::vector<std::int64_t>& sizes,
                                            const lower::device_limits& limits,
                                            const space_options& opt = {}) {
  std::vector<bool> one_block(f.first.rank()), one_thread(f.first.rank());
  for (std::size_t d = 0; d < f.first.rank(); ++d) {
    one_block[d] = f.first.is_reduction(d) || f.second.is_reduction(d);
    one_thread[d] = lower::fused_scans(f, d);
  }
  auto ps = make_dim_parameters(f.first, sizes, limits, opt, one_block, one_thread);
  const lower::device_limits lim = space_limits(limits, opt);
  append_stage_parameters(ps, f.first, sizes, lim, "", false);
  append_stage_parameters(ps, f.second, sizes, lim, fused_second_prefix, false);
  return ps;
}

inline lower::fused_config to_config(const atf::configuration& a, const ir::fused& f,
                                     const std::vector<std::int64_t>& sizes) {
  lower::fused_config c;
  c.first = to_config(a, f.first, sizes);
  c.second = to_config(a, f.second, sizes, fused_second_prefix);
  return c;
}

// The configuration of make_parameters' space that to_config maps to `c`.
inline atf::configuration to_space_configuration(const lower::fused_config& c, const ir::fused& f,
                                                 const std::vector<std::int64_t>& sizes) {
  atf::configuration a = to_space_configuration(c.first, f.first, sizes, "", true, false);
  atf::configuration b =
      to_space_configuration(c.second, f.second, sizes, fused_second_prefix, false, false);
  for (auto& [n, v] : b) a.set(n, v);
  return a;
}

// A fused space has no tensor-core parameters: as above, whatever the device.
inline atf::configuration to_space_configuration(const lower::fused_config& c, const ir::fused& f,
                                                 const std::vector<std::int64_t>& sizes,
                                                 const lower::device_limits&) {
  return to_space_configuration(c, f, sizes);
}

inline atf::search_space make_search_space(const ir::fused& f,
                                           const std::vector<std::int64_t>& sizes,
                                           const lower::device_limits& limits,
                                           const space_options& opt = {}) {
  return atf::search_space(make_parameters(f, sizes, limits, opt));
}

}  // namespace mdh::tuning
