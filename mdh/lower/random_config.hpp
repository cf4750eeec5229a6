// SPDX-License-Identifier: MIT
// A seeded generator of random valid configurations (for tests; the atf search space is the
// tuner's), and edge configurations that stress guards and limits.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/fuse.hpp>

namespace mdh::lower {

struct random_options {
  std::int64_t max_threads = 256;  // per block (on top of the device limit)
  int max_attempts = 2000;
  // edge_split of the configurations drawn: 0 off (the default: the draws, and so the sweeps'
  // configurations and sources, are those of before the parameter existed); 1 or 2 that value
  // (2 falls back to 1 without a vector group); -1 drawn from {0, 1, 2}. Single computations
  // only (fused stages have none).
  std::int64_t edge_split = 0;
};

namespace detail {
template <class Rng>
std::int64_t pick(Rng& rng, std::initializer_list<std::int64_t> v) {
  std::uniform_int_distribution<std::size_t> u(0, v.size() - 1);
  return *(v.begin() + u(rng));
}
template <class Rng>
std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, std::max(lo, hi))(rng);
}
}  // namespace detail

namespace detail {
// `c` with edge_split = `want` where that passes check(), else 1 (2 needs a vector group), else
// `c` unchanged (edge tiles can enlarge a tile past the shared memory or prefetch limits).
inline config with_edge_split(config c, std::int64_t want, const ir::computation& comp,
                              const std::vector<std::int64_t>& sizes, const device_limits& lim) {
  for (std::int64_t e = want; e >= 1; --e) {
    config x = c;
    x.edge_split = e;
    try {
      check(x, comp, sizes, lim);
      return x;
    } catch (const error&) {
    }
  }
  return c;
}
}  // namespace detail

// Draws configurations until one passes check(); falls back to the default configuration.
template <class Rng>
config random_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                     const device_limits& limits, Rng& rng, random_options opt = {}) {
  using detail::pick;
  using detail::uniform;
  device_limits lim = limits;
  lim.max_threads_per_block = std::min(lim.max_threads_per_block, opt.max_threads);
  for (int attempt = 0; attempt < opt.max_attempts; ++attempt) {
    config c;
    c.dims.resize(comp.rank());
    c.inputs.resize(comp.inputs.size());
    c.vec = pick(rng, {1, 1, 2, 4});
    c.vec_pw = pick(rng, {1, 1, 2, 4});
    if (detail::widest_vector(comp) == 8) {  // 16-bit buffers: 16-byte vectors too
      if (c.vec == 4) c.vec = pick(rng, {4, 8});
      if (c.vec_pw == 4) c.vec_pw = pick(rng, {4, 8});
    }
    std::size_t last_concat = comp.rank(), last_pw = comp.rank();
    for (std::size_t d = 0; d < comp.rank(); ++d) {
      if (comp.dims[d].combine == ir::combine_kind::concat) last_concat = d;
      if (comp.dims[d].combine == ir::combine_kind::pointwise) last_pw = d;
    }
    if (last_pw == comp.rank()) c.vec_pw = 1;
    for (std::size_t d = 0; d < comp.rank(); ++d) {
      auto& x = c.dims[d];
      std::int64_t n = sizes[d];
      bool scan = comp.dims[d].combine == ir::combine_kind::prefix_sum;
      x.thr = scan ? 1 : std::min(n + 2, pick(rng, {1, 1, 2, 3, 4, 5, 8, 16, 32, 64}));
      x.blk = scan ? 1 : (uniform(rng, 0, 2) == 0 ? 1 : uniform(rng, 1, n));
      // the vector dimensions: blocked, whole groups of vec (vec_pw) slots
      const std::int64_t width = d == last_concat ? c.vec : d == last_pw ? c.vec_pw : 1;
      x.t_rm = width > 1 ? width * pick(rng, {1, 1, 2}) : pick(rng, {1, 1, 2, 3, 4});
      std::int64_t step = x.thr * x.t_rm;
      x.t_sm =
          uniform(rng, 0, 5) == 0 ? step * uniform(rng, 1, n + 2) : step * pick(rng, {1, 1, 2, 3});
      x.strided = width == 1 && uniform(rng, 0, 1) == 1;
      x.thr_map = int(uniform(rng, 0, 2));
      x.blk_map = int(uniform(rng, 0, 2));
    }
    for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
      auto& ic = c.inputs[b];
      bool ok = detail::accesses_share_coefficients(comp.inputs[b]);
      ic.cache = ok && uniform(rng, 0, 1) ? cache_kind::shared : cache_kind::global;
      if (ic.cache == cache_kind::shared) {
        const auto rank = comp.inputs[b].rank;
        ic.transpose = rank >= 3   ? int(uniform(rng, 0, 2))
                       : rank == 2 ? int(uniform(rng, 0, 1))
                                   : 0;
        ic.pad = pick(rng, {0, 0, 1, 4});
      }
    }
    c.thr_combine = limits.cuda && uniform(rng, 0, 1) ? thread_combine::warp_shuffle
                                                      : thread_combine::shared_tree;
    c.blk_combine = block_combine(uniform(rng, 0, 2));
    c.prefetch = uniform(rng, 0, 2);
    try {
      check(c, comp, sizes, lim);
    } catch (const error&) {
      // Retry with the repairable choices switched to the always-valid ones.
      c.thr_combine = thread_combine::shared_tree;
      if (c.blk_combine == block_combine::atomic) c.blk_combine = block_combine::second_kernel;
      c.vec = 1;
      c.vec_pw = 1;
      c.prefetch = 0;
      try {
        check(c, comp, sizes, lim);
      } catch (const error&) {
        continue;
      }
    }
    if (opt.edge_split != 0)  // drawn last: without it the draws above are those of before
      c = detail::with_edge_split(c, opt.edge_split < 0 ? uniform(rng, 0, 2) : opt.edge_split, comp,
                                  sizes, lim);
    return c;
  }
  return default_config(comp, sizes);
}

// Draws tensor-core configurations (mma = 1, draw_mma_config in mma.hpp) until one passes
// check(); throws mdh::error with the reason when `comp` has no tensor-core path, or when none of
// opt.max_attempts passes (shared memory, grid limits).
template <class Rng>
config random_mma_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                         const device_limits& limits, Rng& rng, random_options opt = {}) {
  std::string last;
  for (int attempt = 0; attempt < opt.max_attempts; ++attempt) {
    config c = draw_mma_config(comp, sizes, rng);
    try {
      check(c, comp, sizes, limits);
      return c;
    } catch (const error& e) {
      last = e.what();
    }
  }
  throw error("random_mma_config: no valid tensor-core configuration of '" + comp.name +
              "' drawn; the last: " + last);
}

// The same for mma = 2 (wgmma, draw_wgmma_config in mma.hpp): `limits` must be an sm_90 device
// and `comp` a contraction of bf16 or f16 factors.
template <class Rng>
config random_wgmma_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                           const device_limits& limits, Rng& rng, random_options opt = {}) {
  std::string last;
  for (int attempt = 0; attempt < opt.max_attempts; ++attempt) {
    config c = draw_wgmma_config(comp, sizes, rng);
    try {
      check(c, comp, sizes, limits);
      return c;
    } catch (const error& e) {
      last = e.what();
    }
  }
  throw error("random_wgmma_config: no valid wgmma configuration of '" + comp.name +
              "' drawn; the last: " + last);
}

// Configurations at the corners: one thread for everything; as many threads as allowed on the
// innermost dimension; tiles larger than the sizes; every input cached with transpose and pad (and
// rank >= 3 tiles rotated); every dimension split over blocks (cross-block reductions, all three
// ways); vector groups along the innermost ++ and pw dimensions. `edge_split` 1 or 2: each of
// them with that edge_split where it passes check() (2 falls back to 1 without a vector group);
// 0, the default: without (the configurations of before the parameter existed).
inline std::vector<config> edge_configs(const ir::computation& comp,
                                        const std::vector<std::int64_t>& sizes,
                                        const device_limits& limits, std::int64_t edge_split = 0) {
  std::vector<config> out;
  auto keep = [&](const config& c0) {
    const config c = edge_split ? detail::with_edge_split(c0, edge_split, comp, sizes, limits) : c0;
    try {
      check(c, comp, sizes, limits);
      if (std::find(out.begin(), out.end(), c) == out.end() || !edge_split) out.push_back(c);
    } catch (const error&) {
    }
  };
  config one;
  one.dims.resize(comp.rank());
  one.inputs.resize(comp.inputs.size());
  for (std::size_t d = 0; d < comp.rank(); ++d) one.dims[d].t_sm = sizes[d];
  keep(one);
  config big = one;  // tiles larger than the size
  for (std::size_t d = 0; d < comp.rank(); ++d) big.dims[d].t_sm = 2 * sizes[d] + 3;
  keep(big);
  config maxthr = default_config(comp, sizes);  // maximum threads on the last non-scan dim
  for (std::size_t d = comp.rank(); d-- > 0;) {
    if (comp.dims[d].combine == ir::combine_kind::prefix_sum) continue;
    for (auto& x : maxthr.dims) x.thr = 1, x.t_sm = std::max<std::int64_t>(x.t_sm, 1);
    maxthr.dims[d].thr = std::min<std::int64_t>(limits.max_threads_per_block, 1024);
    maxthr.dims[d].thr_map = 0;
    maxthr.dims[d].t_sm = maxthr.dims[d].thr * maxthr.dims[d].t_rm;
    for (std::size_t e = 0; e < comp.rank(); ++e)
      if (e != d) maxthr.dims[e].thr_map = 1;
    break;
  }
  keep(maxthr);
  config cached = default_config(comp, sizes);
  for (std::size_t b = 0; b < comp.inputs.size(); ++b)
    if (detail::accesses_share_coefficients(comp.inputs[b]))
      cached.inputs[b] = {cache_kind::shared, comp.inputs[b].rank >= 2, 1};
  keep(cached);
  config rotated = cached;  // rank >= 3 tiles with their first dimension innermost
  for (std::size_t b = 0; b < comp.inputs.size(); ++b)
    if (rotated.inputs[b].cache == cache_kind::shared && comp.inputs[b].rank >= 3)
      rotated.inputs[b].transpose = 2, rotated.inputs[b].pad = 0;
  if (!(rotated == cached)) keep(rotated);
  config staged = cached;  // the same tiles, prefetched one reduction step ahead
  staged.prefetch = 1;
  for (auto& x : staged.dims) x.t_sm = std::max<std::int64_t>(1, x.t_sm / 3);
  keep(staged);
  staged.prefetch = 2;  // and in two shared-memory buffers
  keep(staged);
  config vec4 = default_config(comp, sizes);  // float4 groups along the innermost ++ dim
  for (std::size_t d = comp.rank(); d-- > 0;) {
    if (comp.dims[d].combine != ir::combine_kind::concat) continue;
    auto& x = vec4.dims[d];
    x.thr = std::min<std::int64_t>(x.thr, 64), x.t_rm = 4, x.t_sm = x.thr * 4;
    x.blk = std::max<std::int64_t>(1, ceil_div(sizes[d], x.t_sm));
    x.strided = false;
    vec4.vec = 4;
    break;
  }
  keep(vec4);
  config pw4 = default_config(comp, sizes);  // float4 groups along the innermost pw dim
  for (std::size_t d = comp.rank(); d-- > 0;) {
    if (comp.dims[d].combine != ir::combine_kind::pointwise) continue;
    auto& x = pw4.dims[d];
    x.blk = 1, x.t_rm = 4, x.t_sm = ceil_div(sizes[d], x.thr * 4) * x.thr * 4;
    x.strided = false;
    pw4.vec_pw = 4;
    break;
  }
  if (pw4.vec_pw == 4) keep(pw4);
  for (auto how :
       {block_combine::atomic, block_combine::second_kernel, block_combine::last_block}) {
    config split = default_config(comp, sizes);  // every dimension over 2-3 blocks, sizes odd
    for (std::size_t d = 0; d < comp.rank(); ++d) {
      if (comp.dims[d].combine == ir::combine_kind::prefix_sum) continue;
      auto& x = split.dims[d];
      x.thr = std::min<std::int64_t>(sizes[d], 3), x.t_rm = 2;
      x.blk = std::min<std::int64_t>(sizes[d], 3);
      x.t_sm = x.thr * x.t_rm;
      x.strided = d % 2 == 1;
    }
    split.blk_combine = how;
    keep(split);
  }
  return out;
}

// A random valid configuration of a fused pair: a random first stage with its reductions (and
// the second's) kept inside blocks, the second stage on the same tiling with its own input
// caching, vector width and combine; falls back to default_config.
template <class Rng>
fused_config random_config(const ir::fused& f, const std::vector<std::int64_t>& sizes,
                           const device_limits& limits, Rng& rng, random_options opt = {}) {
  device_limits lim = limits;
  lim.max_threads_per_block = std::min(lim.max_threads_per_block, opt.max_threads);
  opt.edge_split = 0;  // a fused stage has none
  for (int attempt = 0; attempt < 50; ++attempt) {
    fused_config c;
    c.first = random_config(f.first, sizes, limits, rng, opt);
    for (std::size_t d = 0; d < f.first.rank(); ++d) {
      if (f.first.is_reduction(d) || f.second.is_reduction(d)) c.first.dims[d].blk = 1;
      if (fused_scans(f, d)) c.first.dims[d].thr = 1;
    }
    c.second = random_config(f.second, sizes, limits, rng, opt);
    c.second.dims = c.first.dims;
    for (auto* s : {&c.first, &c.second}) {
      if (s->blk_combine == block_combine::atomic) s->blk_combine = block_combine::second_kernel;
    }
    for (int repair = 0; repair < 2; ++repair) {
      try {
        check(c, f, sizes, lim);
        return c;
      } catch (const error&) {
        for (auto* s : {&c.first, &c.second}) {
          s->vec = s->vec_pw = 1;
          s->prefetch = 0;
          s->thr_combine = thread_combine::shared_tree;
        }
      }
    }
  }
  return default_config(f, sizes);
}

}  // namespace mdh::lower
