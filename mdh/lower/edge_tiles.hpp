// SPDX-License-Identifier: MIT
// Edge tiles (the configuration parameter edge_split >= 1; with 0 nothing here is used): where a
// dimension's size does not divide its tiles, which steps, tiles and blocks can be partial, and
// which guards an interior path may drop (read by the partition pass).
//
// A chunk of ceil(size / blk) elements that is not a whole number of sm tiles (or, with one
// tile per chunk, of rm steps) leaves a partial tile in every block, so every block would be
// guarded. The chunk is therefore rounded up to whole tiles where (nearly) every block keeps
// some work: the blocks before the last with elements are then whole.
#pragma once

#include <algorithm>
#include <cstdint>

#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower {

struct chunking {
  std::int64_t chunk = 1, t_sm = 1;
};

// The chunk and sm tile of a dimension: the configured tile t_sm, or the whole chunk where t_sm
// covers it (the tile may then exceed ceil(size / blk) by less than the rounding unit); the
// chunk ceil(size / blk) rounded up to whole tiles (to whole rm steps when one tile walks the
// chunk), else to whole vectors of `vector` elements (4, or 8 for 16-bit vectors: so that vector
// groups stay aligned), else left as it is. A rounding is taken only if it leaves no more than
// one block in 64 without elements (a dot of 2^23+5 over 4096 blocks: chunk 2052, 7 blocks idle).
inline chunking chunk_in_whole_tiles(std::int64_t size, std::int64_t blk, std::int64_t t_sm,
                                     std::int64_t rm_step, std::int64_t vector = 4) {
  const std::int64_t chunk0 = ceil_div(size, blk);
  const bool one_tile = t_sm >= chunk0;
  for (std::int64_t unit : {one_tile ? rm_step : t_sm, vector}) {
    const std::int64_t chunk = ceil_div(chunk0, unit) * unit;
    if (ceil_div(size, chunk) >= blk - blk / 64) return {chunk, one_tile ? chunk : t_sm};
  }
  return {chunk0, std::min(t_sm, chunk0)};
}

// The guards dimension d needs (dim_plan::partial_*) and whether the interior path drops them:
// a ++ dimension's guards are decided per ++ step (block, sm tile and rm step are known there),
// a reduction dimension's per sm tile, so only when its rm steps are whole in every tile; scan
// dimensions keep theirs. A dimension without a whole step (chunk or size below one step) keeps
// its guards: the interior path would never run. `reduction_tiles` false keeps the reduction
// dims' guards too: on OpenCL devices, as PoCL 3.1's work-group generator asserts ("Incoming
// edges to non-entry block") on a tile loop with barriers whose body branches on the loop
// counter (LLVM splits that loop); the ++ dims' branch (on block and step) passes there. The
// partition pass passes false on a device that is not CUDA when an input is cached (the tile loop
// then holds barriers): reduction_tiles_split.
inline void mark_partial_tiles(dim_plan& d, bool reduction_tiles) {
  d.partial_steps = d.t_sm % d.rm_step != 0;
  d.partial_tiles = d.chunk % d.t_sm != 0;
  d.partial_blocks = d.blk * d.chunk != d.size;
  const bool guarded = d.partial_steps || d.partial_tiles || d.partial_blocks;
  d.interior = false;
  if (!guarded) return;
  if (d.role == dim_role::concat)
    d.interior = d.rm_step <= d.t_sm && d.rm_step <= d.chunk && d.rm_step <= d.size;
  else if (d.role == dim_role::reduce && reduction_tiles)
    d.interior = !d.partial_steps && d.t_sm <= d.chunk && d.t_sm <= d.size;
}

// Whether the reduction dims of a configuration may drop their guards on the interior path: on
// CUDA always; elsewhere (OpenCL: PoCL 3.1, see mark_partial_tiles) only when no input is cached,
// so that the reduction tile loop holds no barrier.
inline bool reduction_tiles_split(const config& cfg, const device_limits& limits) {
  if (limits.cuda) return true;
  for (const input_config& ic : cfg.inputs)
    if (ic.cache == cache_kind::shared) return false;
  return true;
}

// Whether the plan prints an interior path: some dimension's guards can be dropped there.
inline bool needs_interior_split(const kernel_plan& p) {
  for (const dim_plan& d : p.dims)
    if (d.interior) return true;
  return false;
}

}  // namespace mdh::lower
