// SPDX-License-Identifier: MIT
// The vectorize passes: which register loops walk vector groups (vector_groups), and which
// reads and writes of global memory move whole vectors (vector_accesses, after register_loops
// has fixed the loop order that a group load depends on).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <mdh/lower/affine.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower::passes {

namespace detail {
// Every term of a group's first element b*chunk + s*t_sm + q*rm_step + t*t_rm + rg is a
// multiple of V (blocked slots only).
inline bool groups_aligned(const dim_plan& d, std::int64_t V) {
  return !d.strided && (d.blk == 1 || d.chunk % V == 0) && (d.n_sm == 1 || d.t_sm % V == 0) &&
         (d.n_rm == 1 || d.rm_step % V == 0) && d.t_rm % V == 0;
}

// Whether a buffer of g's type moves as vectors of `width` elements: 4-byte elements up to 4,
// 16-bit ones (bf16, f16) up to 8; at most 16 bytes either way.
inline bool vector_type_ok(const global_buffer& g, std::int64_t width) {
  const std::int64_t size = std::int64_t(size_of(g.type));
  return (size == 4 || size == 2) && size * width <= 16;
}

// An access of a 4- or 2-byte global buffer whose elements along the group's dimension are
// consecutive and whose group start is aligned to the vector.
inline bool vector_aligned(const kernel_plan& p, const ir::access& a, const global_buffer& g,
                           const vector_group& G) {
  if (!vector_type_ok(g, G.width)) return false;
  const flat_access f = flatten(a, g, p.dims.size());
  for (std::size_t d = 0; d < f.coeff.size(); ++d)
    if (d == G.dim ? f.coeff[d] != 1 : f.coeff[d] % G.width != 0) return false;
  return f.constant % G.width == 0;
}

// An access of a 4- or 2-byte global buffer whose elements along the group's dimension are
// consecutive, the group start not provably aligned (a row of 4093 elements): the group lies in
// the two aligned vectors from its start rounded down, which it loads (edge_split = 2).
inline bool vector_consecutive(const kernel_plan& p, const ir::access& a, const global_buffer& g,
                               const vector_group& G) {
  return vector_type_ok(g, G.width) && flatten(a, g, p.dims.size()).coeff[G.dim] == 1;
}

// Whether access `a` of input b loads vectors of group G with the register loops in `order`:
// from global memory, aligned (or, with `shifted`, consecutive), and not depending on a
// dimension whose loop is inside G's (the load is issued once per group, before those loops).
inline bool group_load(const kernel_plan& p, std::size_t b, const ir::access& a,
                       const vector_group& G, const std::vector<std::size_t>& order,
                       bool shifted = false) {
  if (tile_of(p, b)) return false;
  if (!(shifted ? vector_consecutive(p, a, p.inputs[b], G) : vector_aligned(p, a, p.inputs[b], G)))
    return false;
  const flat_access f = flatten(a, p.inputs[b], p.dims.size());
  for (auto it = std::find(order.begin(), order.end(), G.dim) + 1; it != order.end(); ++it)
    if (f.coeff[*it] != 0) return false;
  return true;
}

// The number of group loads of all accesses and groups with the register loops in `order`.
inline int group_loads(const kernel_plan& p, const std::vector<std::size_t>& order) {
  int n = 0;
  for (std::size_t b = 0; b < p.comp.inputs.size(); ++b)
    for (auto& a : p.comp.inputs[b].accesses)
      for (auto& G : p.vector_groups) n += group_load(p, b, a, G, order);
  return n;
}
}  // namespace detail

// Vector groups: vec along the innermost ++ dimension (no scan dims), vec_pw along the innermost
// pw dimension, each only where every group start is aligned (else the scalar loops remain).
inline void vector_groups(kernel_plan& p) {
  p.vector_groups.clear();
  if (p.cfg.vec > 1 && p.scan_dims.empty() && !p.concat_dims.empty() &&
      detail::groups_aligned(p.dims[p.concat_dims.back()], p.cfg.vec))
    p.vector_groups.push_back({p.concat_dims.back(), p.cfg.vec, dim_role::concat});
  if (p.cfg.vec_pw > 1 && !p.reduce_dims.empty() &&
      detail::groups_aligned(p.dims[p.reduce_dims.back()], p.cfg.vec_pw))
    p.vector_groups.push_back({p.reduce_dims.back(), p.cfg.vec_pw, dim_role::reduce});
}

// Vector accesses: every argument read with the groups that load it as a vector (aligned: one
// vector; with edge_split = 2 also consecutive but not provably aligned: the two aligned vectors
// holding the group, its lanes picked by the start's offset in the first), every output write
// with whether it stores one (aligned only). The write loop walks the vec group unless the
// results go through a block combine (partials or atomics are written element by element).
inline void vector_accesses(kernel_plan& p) {
  p.reads.clear(), p.writes.clear();
  const bool shifted = p.cfg.edge_split == 2;
  for (std::size_t b = 0; b < p.comp.inputs.size(); ++b)
    for (std::size_t a = 0; a < p.comp.inputs[b].accesses.size(); ++a) {
      input_read r{b, a, {}, {}};
      const ir::access& acc = p.comp.inputs[b].accesses[a];
      for (std::size_t g = 0; g < p.vector_groups.size(); ++g)
        if (detail::group_load(p, b, acc, p.vector_groups[g], p.register_order)) {
          r.vector_groups.push_back(g);
        } else if (shifted &&
                   detail::group_load(p, b, acc, p.vector_groups[g], p.register_order, true)) {
          r.vector_groups.push_back(g);
          r.shifted_groups.push_back(g);
        }
      p.reads.push_back(std::move(r));
    }
  p.vector_write = !p.vector_groups.empty() && p.vector_groups[0].role == dim_role::concat &&
                   p.blk_combine == block_combine_kind::none;
  const std::vector<ir::buffer>& outs = ir::kernel_outputs(p.comp);  // an epilogue's, if any
  for (std::size_t o = 0; o < outs.size(); ++o)
    for (std::size_t a = 0; a < outs[o].accesses.size(); ++a)
      p.writes.push_back(
          {o, a,
           p.vector_write &&
               detail::vector_aligned(p, outs[o].accesses[a], p.outputs[o], p.vector_groups[0])});
}

}  // namespace mdh::lower::passes
