// SPDX-License-Identifier: MIT
// A CPU simulator of a kernel plan's index mapping: the test oracle for the lowering's properties.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower {

// The element that (block b, sm tile s, rm step q, thread t, slot r) of dimension d handles,
// or -1 when that slot is guarded off (partial tiles): the layout dim_plan::elements, which the C
// printer evaluates symbolically.
inline std::int64_t element_of(const dim_plan& d, std::int64_t b, std::int64_t s, std::int64_t q,
                               std::int64_t t, std::int64_t r) {
  const std::int64_t in_tile = d.elements.modes(2, 5)({q, t, r});
  const std::int64_t local = d.elements.modes(1, 5)({s, q, t, r});
  const std::int64_t e = d.elements({b, s, q, t, r});
  return (in_tile < d.t_sm && local < d.chunk && e < d.size) ? e : -1;
}

// The first element of the box a block step copies in dimension d (see smem_tile).
inline std::int64_t box_start(const dim_plan& d, std::int64_t b, std::int64_t s, std::int64_t q) {
  return b * d.chunk + s * d.t_sm + (d.role == dim_role::reduce ? 0 : q * d.rm_step);
}

struct simulation {
  std::vector<std::vector<std::int64_t>> hits;  // [d][element]: how often it is computed
  std::int64_t terms = 0;                       // scalar-function evaluations in the whole grid
  std::int64_t writes = 0;                      // output-point writes (per block of a reduction)
  std::vector<std::string> failures;            // violated properties, human readable
  bool ok() const { return failures.empty(); }
};

// Walks every block, thread and loop iteration of every dimension. The mapping is a product
// over dimensions, so it suffices to check each dimension: every element computed exactly once;
// every computed element inside the block step's box (so shared tiles cover every read); loop
// bounds, launch shape and shared memory within the limits.
inline simulation simulate(const kernel_plan& p) {
  simulation sim;
  sim.terms = 1;
  std::int64_t writers = 1;
  for (std::size_t k = 0; k < p.dims.size(); ++k) {
    const dim_plan& d = p.dims[k];
    std::vector<std::int64_t> hits(d.size, 0);
    std::int64_t computed = 0;
    for (std::int64_t b = 0; b < d.blk; ++b)
      for (std::int64_t s = 0; s < d.n_sm; ++s)
        for (std::int64_t q = 0; q < d.n_rm; ++q)
          for (std::int64_t t = 0; t < d.thr; ++t)
            for (std::int64_t r = 0; r < d.t_rm; ++r) {
              std::int64_t e = element_of(d, b, s, q, t, r);
              if (e < 0) continue;
              ++hits[e], ++computed;
              std::int64_t start = box_start(d, b, s, q);
              std::int64_t ext = d.role == dim_role::reduce ? d.t_sm : d.rm_step;
              if (e < start || e >= start + ext)
                sim.failures.push_back("dim " + d.name + ": element " + std::to_string(e) +
                                       " outside its step's box");
            }
    for (std::int64_t e = 0; e < d.size; ++e)
      if (hits[e] != 1)
        sim.failures.push_back("dim " + d.name + ": element " + std::to_string(e) + " computed " +
                               std::to_string(hits[e]) + " times");
    sim.terms *= computed;
    // Writers: every thread for ++/ps dims; for reduce dims one thread per block.
    writers *= d.role == dim_role::reduce ? d.blk : computed;
    sim.hits.push_back(std::move(hits));
  }
  sim.writes = writers;
  if (p.threads > p.limits.max_threads_per_block)
    sim.failures.push_back("threads per block " + std::to_string(p.threads) + " over the limit");
  if (p.shared_bytes > p.limits.shared_per_block_optin)
    sim.failures.push_back("shared memory " + std::to_string(p.shared_bytes) + " over the limit");
  for (auto& t : p.tiles)
    if (t.offset_bytes + t.elements * std::int64_t(size_of(p.inputs[t.input].type)) > p.tiles_bytes)
      sim.failures.push_back("tile " + t.name + " outside the shared pool");
  return sim;
}

}  // namespace mdh::lower
