// SPDX-License-Identifier: MIT
// The copy_schedule pass: how the shared tiles are filled - each tile's vector width, whether its
// vectors are stored in one piece, the registers that stage it - and the staging of the
// reduction steps with its barriers (see tile_staging).
#pragma once

#include <cstdint>
#include <vector>

#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower::passes {

namespace detail {
// 4 or 2 elements of a 4-byte type when every vector lies whole inside one row of the global
// buffer and starts 16 (8) bytes aligned, else 1. The box start along the last buffer dimension
// is an affine function of the S_d (see smem_tile): every term that can vary must be a multiple
// of the width.
inline std::int64_t copy_width(const kernel_plan& p, const smem_tile& t) {
  const global_buffer& g = p.inputs[t.input];
  if (t.box.rank() == 0 || size_of(g.type) != 4) return 1;  // a rank-0 box is one element
  const std::size_t last = t.box.rank() - 1;
  for (std::int64_t V : {4, 2}) {
    bool ok = t.box.shape[last] % V == 0 && g.shape[last] % V == 0 && t.base_const[last] % V == 0;
    for (std::size_t d = 0; d < p.dims.size() && ok; ++d) {
      const std::int64_t cf = t.base_coeff[last][d];
      if (cf == 0) continue;
      const dim_plan& dp = p.dims[d];
      ok = (dp.blk == 1 || (cf * dp.chunk) % V == 0) && (dp.n_sm == 1 || (cf * dp.t_sm) % V == 0) &&
           (dp.role == dim_role::reduce || dp.n_rm == 1 || (cf * dp.rm_step) % V == 0);
    }
    if (ok) return V;
  }
  return 1;
}

// The tile stores a vector in one piece when its rows keep the buffer's last dimension innermost
// and stay aligned.
inline bool copy_store_vector(const smem_tile& t, std::int64_t V, std::int64_t element_bytes) {
  const std::size_t last = t.box.rank() - 1;
  if (V == 1 || t.order[last] != last) return false;
  for (std::size_t k = 0; k < last; ++k)
    if (t.box.stride[k] % V != 0) return false;
  return t.offset_bytes % (element_bytes * V) == 0;
}

// The order in which a block's threads take the vectors of a box (vector f -> box coordinates):
// the row (the buffer's last dimension) fastest, so that consecutive threads read a row's
// consecutive vectors (coalesced), then the other box dimensions in the tile's stored order,
// innermost first, so that consecutive threads store to consecutive tile words. For a tile kept
// in the buffer's order, or with its last two dimensions swapped (transpose 1), that is the
// buffer's row-major order. A tile with the buffer's first dimension innermost (transpose 2, rank
// >= 3: B(d, f, c, e) stored (f, c, e, d)) filled in the buffer's order had a warp store one
// vector lane per row of d-extent words: with rows of one vector (e 4 wide) all 32 threads into
// one bank; in this order the threads of a warp walk d, consecutive words.
inline layout copy_order(const std::vector<std::int64_t>& vectors,
                         const std::vector<std::size_t>& order) {
  const std::size_t rank = vectors.size();
  if (rank == 0) return row_major(vectors);
  std::vector<std::size_t> fast{rank - 1};  // modes, fastest first
  for (std::size_t j = order.size(); j-- > 0;)
    if (order[j] != rank - 1) fast.push_back(order[j]);
  layout l{vectors, std::vector<std::int64_t>(rank, 1)};
  std::int64_t w = 1;
  for (std::size_t k : fast) l.stride[k] = w, w *= vectors[k];
  return l;
}
}  // namespace detail

inline void copy_schedule(kernel_plan& p) {
  for (auto& t : p.tiles) {
    t.copy_width = detail::copy_width(p, t);
    t.copy_store_vector =
        detail::copy_store_vector(t, t.copy_width, std::int64_t(size_of(p.inputs[t.input].type)));
    t.copy_slots = ceil_div(t.box_elements / t.copy_width, p.threads);
    std::vector<std::int64_t> vectors = t.box.shape;
    if (!vectors.empty()) vectors.back() /= t.copy_width;
    t.copy_vectors = detail::copy_order(vectors, t.order);
  }
  auto& c = p.copies;
  c = {};
  for (auto j : p.reduce_dims) c.steps *= p.dims[j].n_sm;
  if (p.tiles.empty()) return;
  const bool staged = p.prefetch && !p.reduce_dims.empty();
  c.staging = !staged           ? tile_staging::direct
              : p.prefetch == 2 ? tile_staging::two_buffers
                                : tile_staging::registers;
  c.barrier_before_fill = c.staging == tile_staging::two_buffers && p.thread_combine_needed;
}

}  // namespace mdh::lower::passes
