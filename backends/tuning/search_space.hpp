// SPDX-License-Identifier: MIT
// The search space of an expression: from (computation, sizes, device limits) the atf tuning
// parameters and constraints of the MDH low-level model (mdh/lower/config.hpp), and the way back
// from an atf configuration to a lower::config.
//
// Parameters (d = dimension, b = input buffer):
//   thr_d      threads along d (powers of two); all thr_d together: threads per block <= limit
//   t_rm_d     register tile (elements per thread per step); products bounded (registers, unroll)
//   blk_d      blocks along d: powers of two and ceil(n / 2^q), so odd sizes (384) split evenly
//   sm_mult_d  shared-memory tile = thr_d * t_rm_d * sm_mult_d; 0 = the whole per-block chunk
//   strided_d  thread t takes t, t+thr, ... (1) or a consecutive run (0)
//   thr_map_d  CUDA thread axis of d (0 = x, 1 = y); dims on one axis fold, the last fastest
//   cache_b, transpose_b, pad_b   shared-memory caching of input b and its tile layout
//   thr_combine, blk_combine, vec
//   vec_pw     vector loads along the innermost pw dimension (1, 2, 4)
//   prefetch   tiles of the next reduction step loaded into registers during this one (1), and
//              into a second shared-memory buffer, one barrier per step (2)
// Every constraint that involves a few parameters is part of the space (so the tuner never sees
// those violations), and so is the warp-shuffle lane layout (thr_combine over every thr_d and
// thr_map_d: it was the most common violation of uniform samples, 14-29 % of reduction spaces).
// Whole-configuration resources - shared memory of all cached tiles together, prefetched
// registers - are checked by lower::check before compiling; a configuration that fails it is
// reported to the tuner as invalid with the violated rule.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <atf/atf.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/fuse.hpp>

namespace mdh::tuning {

// The names of a fused pair's second-stage parameters start with this.
inline constexpr const char* fused_second_prefix = "s2_";

struct space_options {
  std::int64_t max_threads = 1024;  // on top of the device's limit
  std::int64_t max_t_rm = 8;        // largest register tile per dimension
  bool allow_strided = true;
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
}  // namespace detail

inline void append_stage_parameters(std::vector<atf::tp>& ps, const ir::computation& comp,
                                    const lower::device_limits& limits, const std::string& prefix,
                                    bool with_blk_combine);

// The dimension parameters (thr_d, t_rm_d, blk_d, sm_mult_d, strided_d, thr_map_d) of `comp`;
// `one_block[d]`: dimension d is not split over blocks (blk_d = 1); `one_thread[d]`: nor over
// threads (thr_d = 1; a scan of either stage of a fused pair).
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
  const int64_t max_threads = std::min(opt.max_threads, limits.max_threads_per_block);
  std::vector<atf::tp> ps;

  // threads: one group, bounded by the threads-per-block limit
  std::vector<std::string> thr_names;
  for (std::size_t d = 0; d < D; ++d) {
    bool scan = comp.dims[d].combine == ir::combine_kind::prefix_sum || one_thread.at(d);
    auto vals =
        scan ? std::vector<int64_t>{1}
             : detail::powers_of_two_upto(std::min(max_threads, detail::pow2_ceil(sizes[d])));
    auto earlier = thr_names;
    ps.emplace_back(
        name("thr", d), atf::set(vals),
        atf::constraint(earlier, [earlier, max_threads](int64_t v, const atf::partial_config& c) {
          int64_t t = v;
          for (auto& n : earlier) t *= c.get<int64_t>(n);
          return t <= max_threads;
        }));
    thr_names.push_back(name("thr", d));
  }

  // register tiles: one group, bounded by the accumulator and unroll limits of lower::check
  std::vector<std::string> rm_names;
  for (std::size_t d = 0; d < D; ++d) {
    std::vector<int64_t> vals;
    for (int64_t t : {1, 2, 3, 4, 6, 8})
      if (t <= opt.max_t_rm && (t == 1 || t <= sizes[d])) vals.push_back(t);
    auto earlier = rm_names;
    std::vector<bool> counts_acc;  // which earlier dims hold accumulators (++ / ps)
    for (std::size_t e = 0; e <= d; ++e)
      counts_acc.push_back(!comp.is_reduction(e) ||
                           comp.dims[e].combine == ir::combine_kind::prefix_sum);
    const int64_t results = int64_t(comp.outputs.size());
    ps.emplace_back(name("t_rm", d), atf::set(vals),
                    atf::constraint(earlier, [earlier, counts_acc, results](
                                                 int64_t v, const atf::partial_config& c) {
                      int64_t all = v, acc = counts_acc.back() ? v : 1;
                      for (std::size_t e = 0; e < earlier.size(); ++e) {
                        int64_t x = c.get<int64_t>(earlier[e]);
                        all *= x;
                        if (counts_acc[e]) acc *= x;
                      }
                      return all <= lower::max_unrolled && acc * results <= lower::max_accumulators;
                    }));
    rm_names.push_back(name("t_rm", d));
  }

  for (std::size_t d = 0; d < D; ++d) {
    const int64_t n = sizes[d];
    bool scan = comp.dims[d].combine == ir::combine_kind::prefix_sum;
    std::set<int64_t> blk;
    if (scan || one_block.at(d)) {
      blk.insert(1);
    } else {
      // powers of two and the chunks of power-of-two (and 3 x power-of-two, for the 6-element
      // register tiles) widths
      for (int64_t p = 1; p <= n; p *= 2) {
        blk.insert(p);
        blk.insert((n + p - 1) / p);
        if (3 * p <= n) blk.insert((n + 3 * p - 1) / (3 * p));
      }
    }
    ps.emplace_back(name("blk", d), atf::set(std::vector<int64_t>(blk.begin(), blk.end())));
    ps.emplace_back(name("sm_mult", d), atf::set({int64_t{0}, int64_t{1}, int64_t{2}, int64_t{4}}));
    ps.emplace_back(name("strided", d), opt.allow_strided && n > 1
                                            ? atf::set({int64_t{0}, int64_t{1}})
                                            : atf::set({int64_t{0}}));
    ps.emplace_back(name("thr_map", d),
                    D >= 2 ? atf::set({int64_t{0}, int64_t{1}}) : atf::set({int64_t{0}}));
  }

  return ps;
}

// The tuning parameters of `comp` at `sizes` on a device with `limits`.
inline std::vector<atf::tp> make_parameters(const ir::computation& comp,
                                            const std::vector<std::int64_t>& sizes,
                                            const lower::device_limits& limits,
                                            const space_options& opt = {}) {
  const std::vector<bool> none(comp.rank(), false);
  auto ps = make_dim_parameters(comp, sizes, limits, opt, none, none);
  append_stage_parameters(ps, comp, limits, "", true);
  return ps;
}

// The parameters of a stage's inputs and kernel (cache_b, transpose_b, pad_b, thr_combine,
// blk_combine, vec, vec_pw, prefetch), named `prefix` + name; the dimension parameters they
// depend on (t_rm_d, strided_d) are unprefixed: a fused pair's stages share them.
inline void append_stage_parameters(std::vector<atf::tp>& ps, const ir::computation& comp,
                                    const lower::device_limits& limits, const std::string& prefix,
                                    bool with_blk_combine) {
  using std::int64_t;
  const std::size_t D = comp.rank();
  auto name = [&](const char* stem, std::size_t k) { return prefix + detail::name(stem, k); };
  for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
    bool can_cache = lower::detail::accesses_share_coefficients(comp.inputs[b]);
    ps.emplace_back(name("cache", b),
                    can_cache ? atf::set({int64_t{0}, int64_t{1}}) : atf::set({int64_t{0}}));
    std::string cache = name("cache", b);
    auto only_cached = [cache](int64_t v, const atf::partial_config& c) {
      return v == 0 || c.get<int64_t>(cache) == 1;
    };
    const std::size_t rank = comp.inputs[b].rank;
    ps.emplace_back(name("transpose", b),
                    !can_cache || rank < 2 ? atf::set({int64_t{0}})
                    : rank == 2            ? atf::set({int64_t{0}, int64_t{1}})
                                           : atf::set({int64_t{0}, int64_t{1}, int64_t{2}}),
                    atf::constraint({cache}, only_cached));
    // pad 4 keeps float4-aligned rows while breaking the bank pattern of transposed stores
    ps.emplace_back(
        name("pad", b),
        can_cache ? atf::set({int64_t{0}, int64_t{1}, int64_t{4}}) : atf::set({int64_t{0}}),
        atf::constraint({cache}, only_cached));
  }

  bool reduces = comp.has_reduction();
  if (reduces && limits.cuda) {
    // warp shuffles (1) need the reduction threads as the lowest lanes (the rule of lower::check)
    std::vector<std::string> deps;
    std::vector<bool> reduce;
    for (std::size_t d = 0; d < D; ++d) {
      deps.push_back(detail::name("thr", d));
      deps.push_back(detail::name("thr_map", d));
      reduce.push_back(comp.is_reduction(d) &&
                       comp.dims[d].combine != ir::combine_kind::prefix_sum);
    }
    ps.emplace_back(
        prefix + "thr_combine", atf::set({int64_t{0}, int64_t{1}}),
        atf::constraint(deps, [deps, reduce](int64_t v, const atf::partial_config& c) {
          return v == 0 ||
                 !lower::detail::shuffle_lane_violation(reduce.size(), [&](std::size_t d) {
                   return lower::detail::lane_dim{reduce[d], c.get<int64_t>(deps[2 * d]),
                                                  c.get<int64_t>(deps[2 * d + 1]) == 0};
                 });
        }));
  } else {
    ps.emplace_back(prefix + "thr_combine", atf::set({int64_t{0}}));
  }
  // 0 atomics (when the operator and types have them), 1 second kernel, 2 last block
  if (with_blk_combine)
    ps.emplace_back(prefix + "blk_combine", !reduces ? atf::set({int64_t{1}})
                                            : lower::detail::atomic_supported(comp, limits)
                                                ? atf::set({int64_t{0}, int64_t{1}, int64_t{2}})
                                                : atf::set({int64_t{1}, int64_t{2}}));

  // vector stores along the innermost ++ dimension: blocked, t_rm a multiple of vec
  int last_cc = -1;
  for (std::size_t d = 0; d < D; ++d)
    if (comp.dims[d].combine == ir::combine_kind::concat) last_cc = int(d);
  if (last_cc < 0) {
    ps.emplace_back(prefix + "vec", atf::set({int64_t{1}}));
  } else {
    std::string rm = detail::name("t_rm", std::size_t(last_cc)),
                st = detail::name("strided", std::size_t(last_cc));
    ps.emplace_back(prefix + "vec", atf::set({int64_t{1}, int64_t{2}, int64_t{4}}),
                    atf::constraint({rm, st}, [rm, st](int64_t v, const atf::partial_config& c) {
                      return v == 1 || (c.get<int64_t>(rm) % v == 0 && c.get<int64_t>(st) == 0);
                    }));
  }
  // vector loads along the innermost pw dimension: blocked, t_rm a multiple of vec_pw
  int last_pw = -1;
  for (std::size_t d = 0; d < D; ++d)
    if (comp.dims[d].combine == ir::combine_kind::pointwise) last_pw = int(d);
  if (last_pw < 0) {
    ps.emplace_back(prefix + "vec_pw", atf::set({int64_t{1}}));
  } else {
    std::string rm = detail::name("t_rm", std::size_t(last_pw)),
                st = detail::name("strided", std::size_t(last_pw));
    ps.emplace_back(prefix + "vec_pw", atf::set({int64_t{1}, int64_t{2}, int64_t{4}}),
                    atf::constraint({rm, st}, [rm, st](int64_t v, const atf::partial_config& c) {
                      return v == 1 || (c.get<int64_t>(rm) % v == 0 && c.get<int64_t>(st) == 0);
                    }));
  }
  // prefetch: only with a reduction and some input cached in shared memory
  std::vector<std::string> caches;
  for (std::size_t b = 0; b < comp.inputs.size(); ++b)
    if (lower::detail::accesses_share_coefficients(comp.inputs[b]))
      caches.push_back(name("cache", b));
  if (reduces && !caches.empty())
    ps.emplace_back(prefix + "prefetch", atf::set({int64_t{0}, int64_t{1}, int64_t{2}}),
                    atf::constraint(caches, [caches](int64_t v, const atf::partial_config& c) {
                      if (v == 0) return true;
                      for (auto& n : caches)
                        if (c.get<int64_t>(n) == 1) return true;
                      return false;
                    }));
  else
    ps.emplace_back(prefix + "prefetch", atf::set({int64_t{0}}));
}

// From a configuration of the space above to the kernel template's configuration.
// `prefix`: that of the stage parameters (a fused pair's second stage: "s2_"); a space without
// blk_combine (fused stages: no reduction is split over blocks) gives the second kernel.
inline lower::config to_config(const atf::configuration& a, const ir::computation& comp,
                               const std::vector<std::int64_t>& sizes,
                               const std::string& prefix = "") {
  using detail::name;
  auto pname = [&](const char* stem, std::size_t k) { return prefix + name(stem, k); };
  lower::config c;
  c.dims.resize(comp.rank());
  c.inputs.resize(comp.inputs.size());
  for (std::size_t d = 0; d < comp.rank(); ++d) {
    auto& x = c.dims[d];
    x.thr = a.get<std::int64_t>(name("thr", d));
    x.t_rm = a.get<std::int64_t>(name("t_rm", d));
    x.blk = a.get<std::int64_t>(name("blk", d));
    std::int64_t step = x.thr * x.t_rm, mult = a.get<std::int64_t>(name("sm_mult", d));
    std::int64_t chunk = lower::ceil_div(sizes[d], x.blk);
    x.t_sm = mult == 0 ? lower::ceil_div(chunk, step) * step : step * mult;
    x.strided = a.get<std::int64_t>(name("strided", d)) != 0;
    x.thr_map = int(a.get<std::int64_t>(name("thr_map", d)));
    x.blk_map = 0;  // every block index folds into grid.x (2^31 - 1 blocks)
  }
  for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
    c.inputs[b].cache = lower::cache_kind(a.get<std::int64_t>(pname("cache", b)));
    c.inputs[b].transpose = int(a.get<std::int64_t>(pname("transpose", b)));
    c.inputs[b].pad = a.get<std::int64_t>(pname("pad", b));
  }
  c.thr_combine = lower::thread_combine(a.get<std::int64_t>(prefix + "thr_combine"));
  c.blk_combine = a.contains(prefix + "blk_combine")
                      ? lower::block_combine(a.get<std::int64_t>(prefix + "blk_combine"))
                      : lower::block_combine::second_kernel;
  c.vec = a.get<std::int64_t>(prefix + "vec");
  c.vec_pw = a.get<std::int64_t>(prefix + "vec_pw");
  c.prefetch = a.get<std::int64_t>(prefix + "prefetch");
  return c;
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
  append_stage_parameters(ps, f.first, limits, "", false);
  append_stage_parameters(ps, f.second, limits, fused_second_prefix, false);
  return ps;
}

inline lower::fused_config to_config(const atf::configuration& a, const ir::fused& f,
                                     const std::vector<std::int64_t>& sizes) {
  lower::fused_config c;
  c.first = to_config(a, f.first, sizes);
  c.second = to_config(a, f.second, sizes, fused_second_prefix);
  return c;
}

inline atf::search_space make_search_space(const ir::fused& f,
                                           const std::vector<std::int64_t>& sizes,
                                           const lower::device_limits& limits,
                                           const space_options& opt = {}) {
  return atf::search_space(make_parameters(f, sizes, limits, opt));
}

}  // namespace mdh::tuning
