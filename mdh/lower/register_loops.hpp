// SPDX-License-Identifier: MIT
// The register_loops pass: the order of the unrolled register loops and whether the rm steps of
// the reduction are unrolled.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/vectorize.hpp>

namespace mdh::lower::passes {

// Unrolled rm steps of the reduction at most, and unrolled bodies (steps x register tile): NVRTC's
// time grows faster than the code (a convolution's 768 unrolled channel x window steps took 19 s;
// a batched product's 8 x 6 x 8 register tile 0.9 s with 1 step, 15 s with 4 steps, 56 s at
// 8 x 8 x 8 with 4).
inline constexpr std::int64_t max_unrolled_reduce_steps = 64;
inline constexpr std::int64_t max_unrolled_reduce_bodies = 1024;

// The register loops: pw dims, then the outer product over ++/ps dims. With a pw vector group the
// innermost pw dim moves inside the others, since its vector loads need their elements:
// innermost, or just outside the vec group when more accesses load vectors that way (a matmul's
// B(k, j) along j, A(i, k) along k). The rm steps of the reduction are unrolled when the unrolled
// code stays small: the shared-memory loads of consecutive steps then overlap.
inline void register_loops(kernel_plan& p) {
  std::vector<std::size_t> reg = p.reduce_dims;
  reg.insert(reg.end(), p.concat_dims.begin(), p.concat_dims.end());
  reg.insert(reg.end(), p.scan_dims.begin(), p.scan_dims.end());
  auto pw = std::find_if(p.vector_groups.begin(), p.vector_groups.end(),
                         [](const vector_group& g) { return g.role == dim_role::reduce; });
  if (pw != p.vector_groups.end()) {
    const std::size_t k = pw->dim;
    reg.erase(std::find(reg.begin(), reg.end(), k));
    std::vector<std::size_t> inner = reg;
    inner.push_back(k);
    if (p.vector_groups.size() == 1) {
      reg = inner;
    } else {
      reg.insert(reg.end() - 1, k);  // the vec dim is the last (a vec group means no scan dims)
      if (detail::group_loads(p, reg) <= detail::group_loads(p, inner)) reg = inner;
    }
  }
  p.register_order = reg;

  std::int64_t body = 1, steps = 1;
  for (auto& d : p.dims) body *= d.t_rm;
  for (auto j : p.reduce_dims) steps *= p.dims[j].n_rm;
  p.unroll_reduce_steps =
      steps <= max_unrolled_reduce_steps && steps * body <= max_unrolled_reduce_bodies;

  // Guards in the register loops turn every shared-memory load into a predicated scalar load
  // (matmul 997x1009x769, 128x128 tiles: 545 us against 59 us at 1024^3). Along a ++ dimension
  // that only tiles read, an out-of-range slot reads inside the tile's box and its accumulator is
  // never stored: compute it, and leave the guard to the stores.
  for (auto j : p.concat_dims) {
    dim_plan& d = p.dims[j];
    if (d.partial_steps || d.chunk % d.t_sm != 0 || d.blk * d.chunk != d.size ||
        d.t_sm % d.rm_step != 0) {
      bool tiled = true;
      for (std::size_t b = 0; b < p.comp.inputs.size(); ++b) {
        const bool has_tile = tile_of(p, b) != nullptr;
        for (const ir::access& a : p.comp.inputs[b].accesses)
          for (const auto& ix : a.index)
            if (ix.coeff[j] != 0 && !has_tile) tiled = false;
      }
      d.slots_unguarded = tiled;
    }
  }
}

}  // namespace mdh::lower::passes
