// SPDX-License-Identifier: MIT
// The tensor-core path's pass, mma_tiles: from a configuration with mma = 1 (rules.hpp checked
// it: a contraction of bf16, f16 or TF32-read f32 factors on a CUDA device), the plan of one
// kernel in which every warp computes a warp_m x warp_n tile of the product with mma.sync:
//
//   block (bx, by, bz): rows [by*block_m, +block_m) of M, columns [bx*block_n, +block_n) of N,
//                       one point of the other ++ dimensions (grid_dims, folded into bz)
//   (M, N and K are each one dimension or several fused row-major, mma_fuse_*: an index along a
//   fused axis decodes into one per dimension wherever it is used)
//   acc[frags_m][frags_n][4] = 0                                    f32, in registers
//   stages-1 steps: copy A and B tiles of step s -> buffer s; commit    (cp.async groups)
//   for step s (the K tiles, and around them the other pw dimensions):
//     wait until step s has landed; barrier
//     copy the tiles of step s + stages - 1 into the buffer step s - 1 used; commit
//     for each instruction K slice: fragments of A and B (ldmatrix[.trans] or 32-bit loads),
//                                   frags_m x frags_n mma.sync
//   epilogue: acc -> output type, written through the out_view where (m, n) is in range
//
// Tile edges read zeros (cp.async's src-size < 16 zero-fills the rest), so any size works.
//
// Split-K (mma_split = S > 1): S blocks per tile (grid.z), each a share of the steps; all but the
// tile's last to finish write f32 partial sums, the last adds them in block order and runs the
// epilogue (mma_plan::split, mma_printer's print_split_combine).
//
// Staged epilogue (mma_stage_out = 1): the results go to a shared tile per output (rows shifted
// to the output's 16-byte phase) and are copied out in 16-byte chunks (mma_stage_tiles below,
// mma_plan::staged, mma_printer's print_stage_copy); refused where an output is not contiguous
// along N.
//
// mma = 2 (sm_90a): the same plan with warpgroups instead of warps, wgmma.mma_async m64nNk16 /
// m64nNk8 reading both tiles through matrix descriptors (wgmma_operand_layout gives the tiles
// wgmma's canonical swizzled layouts; mma_printer.hpp's print_wgmma, docs/lowering.md 7.1).
//
// Split TF32 (precision tf32x3, mma_plan::split_tf32): three instructions per K slice on the
// split parts of each factor; wgmma reads the low parts from tiles of their own. TF32 wgmma tiles
// of an M/N-contiguous operand land so by cp.async and are transposed by the rounding pass
// (mma_plan::land_a/_b; docs/lowering.md 7.4).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/lower/affine.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/mma_support.hpp>

namespace mdh::lower {

namespace detail {

// Bytes rounded up to 128: each tile (and stage) starts 128-byte aligned, where the swizzle's
// bank pattern is computed from.
inline std::int64_t round128(std::int64_t bytes) { return (bytes + 127) / 128 * 128; }

// An operand's shared tile: its layout, the copy and the fragment load (see mma_operand).
inline mma_operand mma_operand_tile(const kernel_plan& p, const ir::contraction_operand& o,
                                    const std::vector<std::size_t>& mn_dims, std::int64_t mn_tile,
                                    bool tf32, bool swizzle, bool flip) {
  const mma_plan& m = p.mma;
  mma_operand x;
  x.input = o.input, x.access = o.access, x.type = o.type;
  x.mn_dims = mn_dims, x.k_dims = m.k_dims;
  x.mn_dim = mn_dims.back(), x.k_dim = m.k_dim;
  const std::size_t mn_dim = x.mn_dim;
  const flat_access f =
      flatten(p.comp.inputs[o.input].accesses[o.access], p.inputs[o.input], p.comp.rank());
  x.coeff = f.coeff, x.constant = f.constant;
  const std::int64_t elem = std::int64_t(size_of(o.type));
  x.chunk = 16 / elem;
  const std::int64_t ck = f.coeff[m.k_dim], cmn = f.coeff[mn_dim];
  // K contiguous in the tile when it is in memory (coefficient 1 of its innermost dimension),
  // else the M/N axis when it is, else whichever walks memory in smaller steps; `flip`: the
  // other one.
  x.k_contiguous = ck == 1 ? true : cmn == 1 ? false : std::llabs(ck) <= std::llabs(cmn);
  if (flip) x.k_contiguous = !x.k_contiguous;  // mma_flip_a/b: the tuner's choice
  x.rows = x.k_contiguous ? mn_tile : m.block_k;
  x.cols = x.k_contiguous ? m.block_k : mn_tile;
  const std::int64_t chunks = x.cols / x.chunk;
  if (swizzle && !tf32 && chunks >= 2 && (chunks & (chunks - 1)) == 0) {
    // XOR the 16-byte chunk index with a function of the row such that the 8 rows one ldmatrix
    // phase reads cover all 32 banks: rows of 2, 4, 8+ chunks repeat every 4, 2, 1 rows.
    x.swizzle_chunks = std::min<std::int64_t>(chunks, 8);
    x.swizzle_rows = 8 / x.swizzle_chunks;
    x.pitch = x.cols;
  } else {
    // Padding by 16 bytes offsets consecutive rows by 4 banks (conflict-free ldmatrix). TF32
    // reads single words at (row g, col t) for K-contiguous tiles (pitch = 4 mod 32 words) or
    // (row t, col g) otherwise (pitch = 8 or 24 mod 32).
    x.pitch = x.cols + (tf32 ? (x.k_contiguous ? 4 : 8) : x.chunk);
  }
  x.tile = layout{{x.rows, x.cols}, {x.pitch, 1}};
  x.stage_bytes = round128(x.rows * x.pitch * elem);
  // cp.async needs whole aligned 16-byte runs: coefficient 1 along the contiguous index, every
  // other coefficient and the constant multiples of the chunk (the buffer is 256-byte aligned).
  // A fused contiguous axis qualifies where a chunk's elements are one run in memory: the axis
  // lies row-major in memory (each coefficient the next one's times its size, as F(k, c, r, s)
  // holds c*r*s; its outer coefficients then need no alignment of their own), or its innermost
  // size is a multiple of the chunk (NHWC's r*s*c with c = 64). Any other is gathered element by
  // element.
  const std::size_t contiguous = x.k_contiguous ? m.k_dim : mn_dim;
  const std::vector<std::size_t>& axis = x.k_contiguous ? x.k_dims : x.mn_dims;
  bool linear = true;
  for (std::size_t j = 0; j + 1 < axis.size(); ++j)
    if (f.coeff[axis[j]] != f.coeff[axis[j + 1]] * p.sizes[axis[j + 1]]) linear = false;
  const bool whole_chunks = p.sizes[contiguous] % x.chunk == 0;
  x.async_copy = (linear || whole_chunks) && f.coeff[contiguous] == 1 && f.constant % x.chunk == 0;
  for (std::size_t d = 0; d < f.coeff.size(); ++d) {
    const bool on_axis = std::find(axis.begin(), axis.end(), d) != axis.end();
    if (d != contiguous && !(linear && on_axis) && f.coeff[d] % x.chunk != 0) x.async_copy = false;
  }
  // Shifted chunks (mma_shift = 1): one dimension along the contiguous index with coefficient
  // 1, whole chunks per tile row (8 16-bit elements or 4 TF32-read floats).
  x.shifted_copy = p.cfg.mma.shift != 0 && !x.async_copy && axis.size() == 1 &&
                   f.coeff[contiguous] == 1 && x.cols % x.chunk == 0;
  x.buffer_elements = p.inputs[o.input].elements;
  const std::int64_t copies = x.rows * x.cols / (x.async_copy || x.shifted_copy ? x.chunk : 1);
  x.copies_per_thread = ceil_div(copies, p.threads);
  x.load = tf32             ? mma_fragment_load::scalar
           : x.k_contiguous ? mma_fragment_load::ldmatrix
                            : mma_fragment_load::ldmatrix_trans;
  return x;
}

}  // namespace detail

// Where mma_shift can change a kernel of `comp` at `sizes`: some operand of its contraction is
// read with coefficient 1 along a dimension while another coefficient or the constant is not a
// multiple of the 16-byte chunk (8 16-bit elements, 4 floats), so a tile row may start off the
// 16-byte grid (a 1023 x 1027 matrix's rows). Elsewhere every chunk is aligned (cp.async) or
// gathered, and the tuner's space leaves the parameter out.
inline bool mma_shift_applies(const ir::computation& comp, const std::vector<std::int64_t>& sizes) {
  const mma_support s = mma_supported(comp);
  if (!s) return false;
  for (const ir::contraction_operand* o : {&s.contraction->a, &s.contraction->b}) {
    const std::int64_t chunk = 16 / std::int64_t(size_of(o->type));
    const global_buffer g =
        dense_buffer("", o->type, ir::buffer_shape(comp, comp.inputs[o->input], sizes));
    const flat_access f = flatten(comp.inputs[o->input].accesses[o->access], g, comp.rank());
    bool unit = false, aligned = f.constant % chunk == 0;
    for (std::int64_t c : f.coeff) {
      if (c == 1 && !unit)
        unit = true;
      else if (c % chunk != 0)
        aligned = false;
    }
    if (unit && !aligned) return true;
  }
  return false;
}

namespace detail {
// wgmma (mma = 2): the tile of x (from mma_operand_tile) in wgmma's canonical layout: column
// blocks of atom_cols elements, each a 32/64/128-byte swizzled atom (mma_operand). K-major
// (k_contiguous): atom_cols = min(128 bytes, block_k) (block_k 32 to 256 bytes); MN-major (16-bit
// types only): the largest of 64, 32, 16 elements dividing `mn_step` (the M/N distance between two
// descriptors' starts, 64 for A, the warpgroup tile for B). Stages start 1024-byte aligned (the
// 128-byte swizzle repeats every 1024 bytes of address).
inline void wgmma_operand_layout(mma_operand& x, std::int64_t mn_step) {
  const std::int64_t elem = std::int64_t(size_of(x.type));
  const std::int64_t row_max = 128 / elem;  // elements in a 128-byte row
  x.atom_cols = x.k_contiguous                 ? std::min(row_max, x.cols)
                : mn_step % row_max == 0       ? row_max
                : mn_step % (row_max / 2) == 0 ? row_max / 2
                                               : row_max / 4;
  const std::int64_t bytes = x.atom_cols * elem;  // the swizzle width
  x.pitch = x.atom_cols;
  x.swizzle_chunks = bytes / 16;
  x.swizzle_rows = 8 / x.swizzle_chunks;
  x.desc_mode = bytes == 128 ? 1 : bytes == 64 ? 2 : 3;
  x.desc_sbo = 8 * bytes;                             // from one 8-row group to the next
  x.desc_lbo = x.k_contiguous ? 16 : x.rows * bytes;  // K-major: unused (1); MN: atom blocks
  x.tile = layout{{x.rows, x.cols}, {x.pitch, 1}};
  x.stage_bytes = (x.rows * x.cols * elem + 1023) / 1024 * 1024;
  x.load = mma_fragment_load::descriptor;
}

// TMA (mma_tma = 1): x's tile as boxes of a tensor map over its input buffer (mma_operand's tma
// fields), or why it cannot be: the hardware copies a box of the buffer's own coordinates, so each
// coordinate must be one dimension's index (coefficient 1, no offset; the tile's rows, its
// contiguous columns, a grid.z or an outer K dimension), the contiguous one the buffer's
// innermost, at most 5 of them, the outer strides multiples of 16 bytes; and K's coordinate must
// end at K, since the zeros past a box's end are what makes a partial K tile add nothing.
inline std::string tma_operand(const kernel_plan& p, mma_operand& x) {
  const mma_plan& m = p.mma;
  const auto& access = p.comp.inputs[x.input].accesses[x.access];
  const global_buffer& g = p.inputs[x.input];
  const std::string who = "input " + std::to_string(x.input) + " ('" + g.name + "')";
  if (x.type == scalar_type::f32) return who + " is TF32: its tile is rounded in shared memory";
  if (x.mn_dims.size() != 1 || x.k_dims.size() != 1)
    return who + ": a fused axis (mma_fuse_*) is no box of the buffer";
  const std::size_t rank = access.index.size();
  if (rank > 5) return who + " has " + std::to_string(rank) + " coordinates (TMA: at most 5)";
  const std::size_t col = x.k_contiguous ? x.k_dim : x.mn_dim,
                    row = x.k_contiguous ? x.mn_dim : x.k_dim;
  const std::int64_t elem = std::int64_t(size_of(x.type));
  // rows per box: at most 256 (the hardware's limit), dividing the tile's rows in whole
  // 8-row groups (the swizzle's period)
  std::int64_t box_rows = std::min<std::int64_t>(x.rows, 256);
  while (box_rows > 8 && (x.rows % box_rows != 0 || box_rows % 8 != 0)) --box_rows;
  if (x.rows % box_rows != 0) return who + ": " + std::to_string(x.rows) + " rows in boxes";
  x.tma_extent.clear(), x.tma_stride.clear(), x.tma_box.clear(), x.tma_dim.clear();
  std::vector<bool> seen(p.comp.rank(), false);
  for (std::size_t j = 0; j < rank; ++j) {
    const std::size_t c = rank - 1 - j;  // map dimension j: buffer coordinate c
    const auto& f = access.index[c];
    std::size_t dim = p.comp.rank();
    for (std::size_t d = 0; d < f.coeff.size(); ++d)
      if (f.coeff[d] != 0) dim = dim == p.comp.rank() && f.coeff[d] == 1 ? d : p.comp.rank() + 1;
    if (dim >= p.comp.rank() || f.offset != 0 || seen[dim])
      return who + ": coordinate " + std::to_string(c) +
             " is not one dimension's index (coefficient 1, no offset)";
    seen[dim] = true;
    const bool on_grid =
        std::find(m.grid_dims.begin(), m.grid_dims.end(), dim) != m.grid_dims.end();
    const bool outer =
        std::find(m.outer_k_dims.begin(), m.outer_k_dims.end(), dim) != m.outer_k_dims.end();
    if (dim != row && dim != col && !on_grid && !outer)
      return who + ": coordinate " + std::to_string(c) + " walks a dimension of the tile's axes";
    if (j == 0 && dim != col)
      return who + ": the tile's contiguous index is not the buffer's innermost coordinate";
    if (dim == m.k_dim && g.shape[c] != p.sizes[dim])
      return who + ": K's coordinate runs past K in the buffer";
    const std::int64_t stride = g.stride[c] * elem;
    if (j > 0 && (stride % 16 != 0 || stride >= (std::int64_t(1) << 40)))
      return who + ": coordinate " + std::to_string(c) + " has a stride of " +
             std::to_string(stride) + " bytes (TMA: a multiple of 16)";
    x.tma_extent.push_back(g.shape[c]);
    x.tma_stride.push_back(j == 0 ? elem : stride);
    x.tma_dim.push_back(dim);
    x.tma_box.push_back(dim == col ? x.atom_cols : dim == row ? box_rows : 1);
  }
  x.tma_swizzle = x.atom_cols * elem;
  x.tma_box_rows = box_rows;
  x.tma_col_boxes = x.cols / x.atom_cols;
  x.tma_row_boxes = x.rows / box_rows;
  x.tma = true;
  return "";
}
// Makes TMA operand x the multicast operand of a cluster of two blocks (mma_operand::multicast):
// an even number of boxes per stage, halving the boxes' rows where the count is odd (a half of
// at least 8 rows, the swizzle's period); returns why it cannot ("" where it can).
inline std::string tma_multicast(mma_operand& x) {
  if ((x.tma_col_boxes * x.tma_row_boxes) % 2 != 0) {
    if (x.tma_box_rows % 16 != 0)
      return "the shared operand's tile (input " + std::to_string(x.input) + ") is " +
             std::to_string(x.tma_col_boxes * x.tma_row_boxes) + " box(es) of " +
             std::to_string(x.tma_box_rows) +
             " rows: no even split between the cluster's blocks in whole 8-row boxes";
    x.tma_box_rows /= 2, x.tma_row_boxes *= 2;
    const std::size_t row = x.k_contiguous ? x.mn_dim : x.k_dim;
    for (std::size_t j = 0; j < x.tma_dim.size(); ++j)
      if (x.tma_dim[j] == row) x.tma_box[j] = x.tma_box_rows;
  }
  x.multicast = true;
  return "";
}
// ---- the staged epilogue (mma_stage_out) ----
// mma_plan::staged for mma_stage_out = 1 (see mma_stage): one shared tile per written output
// (the product's, or each of a point-wise epilogue's), from byte 0 of the pool on (the pipeline's
// tiles are dead by then), the pool grown where the tiles need more. It applies where each
// output is 16-bit or f32 and every access writing it has coefficient 1 along N's innermost
// dimension (a fused N axis row-major in memory), so a tile row is one run in memory, and an
// output's accesses share their 16-byte phase (one shift per row serves them all); elsewhere
// stage_out_refused says why, and check_plan refuses the configuration.
inline void mma_stage_tiles(kernel_plan& p) {
  mma_plan& m = p.mma;
  const std::size_t rank = p.comp.rank();
  auto refuse = [&](const std::string& why) {
    m.stage_out = false, m.staged.clear(), m.stage_out_refused = why;
  };
  // the written outputs and their flat accesses
  std::vector<std::pair<std::size_t, std::vector<lower::mma_write>>> outs;
  if (p.comp.epilogue) {
    const ir::pointwise_epilogue& e = *p.comp.epilogue;
    for (std::size_t q = 0; q < e.outputs.size(); ++q) {
      std::vector<lower::mma_write> w;
      for (std::size_t a = 0; a < e.outputs[q].accesses.size(); ++a) {
        const flat_access f = flatten(e.outputs[q].accesses[a], p.outputs[q], rank);
        w.push_back({a, f.coeff, f.constant});
      }
      outs.emplace_back(q, std::move(w));
    }
  } else {
    outs.emplace_back(0, m.writes);
  }
  auto on_n = [&](std::size_t d) {
    return std::find(m.n_dims.begin(), m.n_dims.end(), d) != m.n_dims.end();
  };
  m.stage_out = true, m.staged.clear(), m.stage_out_refused.clear();
  std::int64_t offset = 0;
  for (auto& [q, writes] : outs) {
    const scalar_type t = p.outputs[q].type;
    const std::string name =
        "output '" + (p.comp.epilogue ? p.comp.epilogue->outputs[q].name : p.comp.outputs[0].name) +
        "'";
    if (!is_float16(t) && t != scalar_type::f32)
      return refuse(name + " is " + std::string(short_name(t)) + " (16-bit or f32 only)");
    if (writes.empty()) return refuse(name + " is not written");
    mma_stage st;
    st.output = q, st.type = t, st.writes = writes;
    const std::int64_t elem = std::int64_t(size_of(t));
    st.vector = 16 / elem;
    const lower::mma_write& w0 = writes.front();
    for (const lower::mma_write& w : writes) {
      const std::string acc = name + " access " + std::to_string(w.access);
      if (w.coeff[m.n_dim] != 1)
        return refuse(acc + " steps " + std::to_string(w.coeff[m.n_dim]) +
                      " elements along N's innermost dimension '" + p.comp.dims[m.n_dim].name +
                      "' (rows are copied where it is 1)");
      for (std::size_t j = 0; j + 1 < m.n_dims.size(); ++j)
        if (w.coeff[m.n_dims[j]] != w.coeff[m.n_dims[j + 1]] * p.sizes[m.n_dims[j + 1]])
          return refuse(acc + ": the fused N axis is not row-major in memory");
      // the same shift must serve every access: offsets differing by whole 16-byte chunks
      bool same_phase = (w.constant - w0.constant) % st.vector == 0;
      for (std::size_t d = 0; d < rank; ++d)
        if (!on_n(d) && (w.coeff[d] - w0.coeff[d]) % st.vector != 0) same_phase = false;
      if (!same_phase) return refuse(acc + " is not in the 16-byte phase of access 0");
    }
    // the shift (w0's offset at column n_blk, n_blk a multiple of 16, modulo `vector`): 0 on
    // every row where every other coefficient and the constant are multiples of `vector`; even
    // where they are even
    st.shifted = w0.constant % st.vector != 0;
    st.pair = w0.constant % 2 == 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (on_n(d)) continue;
      if (w0.coeff[d] % st.vector != 0) st.shifted = true;
      if (w0.coeff[d] % 2 != 0) st.pair = false;
    }
    if (p.comp.epilogue && !m.pair_epilogue) st.pair = false;  // one value per epilogue call
    st.pitch = m.block_n + st.vector;
    st.offset_bytes = offset;
    st.bytes = round128(m.block_m * st.pitch * elem);
    offset += st.bytes;
    st.chunks_per_row = m.block_n / st.vector + (st.shifted ? 1 : 0);
    st.copies_per_thread = ceil_div(m.block_m * st.chunks_per_row, p.threads);
    m.staged.push_back(std::move(st));
  }
  // the staged tiles share the pool with the pipeline's (wgmma: after its 1024-byte alignment)
  p.shared_bytes = std::max(p.shared_bytes, offset + (m.wgmma ? 1024 : 0));
}
// ---- end the staged epilogue ----

}  // namespace detail

namespace passes {

// The tensor-core pass: the whole main kernel's plan (see the header comment).
inline void mma_tiles(kernel_plan& p) {
  const mma_support s = mma_supported(p.comp);
  if (!s)
    throw internal_error("mma_tiles on a computation without a tensor-core path: " + s.why_not);
  const mma_config& c = p.cfg.mma;
  mma_plan& m = p.mma;
  m = mma_plan{};
  m.on = true;
  m.instruction = *s.instruction;
  m.inst_k = mma_instruction_k(m.instruction);
  const bool tf32 = m.instruction == mma_instruction::m16n8k8_tf32;
  m.m_dim = std::size_t(c.m), m.n_dim = std::size_t(c.n), m.k_dim = std::size_t(c.k);
  const std::size_t rank = p.comp.rank();
  m.m_dims = mma_axis(c.m, c.fuse_m, rank), m.n_dims = mma_axis(c.n, c.fuse_n, rank);
  m.k_dims = mma_axis(c.k, c.fuse_k, rank);
  auto size_of_axis = [&](const std::vector<std::size_t>& dims) {
    std::int64_t z = 1;
    for (auto d : dims) z *= p.sizes[d];
    return z;
  };
  m.size_m = size_of_axis(m.m_dims), m.size_n = size_of_axis(m.n_dims);
  m.size_k = size_of_axis(m.k_dims);
  auto on_an_axis = [&](std::size_t d) {
    for (const auto* axis : {&m.m_dims, &m.n_dims, &m.k_dims})
      if (std::find(axis->begin(), axis->end(), d) != axis->end()) return true;
    return false;
  };
  m.warps_m = c.warps_m, m.warps_n = c.warps_n, m.warp_m = c.tile_m, m.warp_n = c.tile_n;
  m.wgmma = c.on == 2;
  if (m.wgmma) {  // warpgroups of warp_m x warp_n, m64nNk16 with N = warp_n
    m.inst_m = 64, m.inst_n = m.warp_n;
    m.wgmma_depth = c.stages >= 3 ? 1 : 0;
    m.copies_ahead = c.stages - 1 - m.wgmma_depth;
  }
  m.frags_m = m.warp_m / m.inst_m, m.frags_n = m.warp_n / (m.wgmma ? 8 : m.inst_n);
  m.block_m = m.warps_m * m.warp_m, m.block_n = m.warps_n * m.warp_n, m.block_k = c.tile_k;
  m.stages = c.stages;
  std::int64_t grid_z = 1, outer_k = 1;
  for (std::size_t d = 0; d < p.comp.rank(); ++d) {
    if (on_an_axis(d)) continue;
    if (p.comp.is_reduction(d))
      m.outer_k_dims.push_back(d), outer_k *= p.sizes[d];
    else
      m.grid_dims.push_back(d), grid_z *= p.sizes[d];
  }
  m.k_tiles = ceil_div(m.size_k, m.block_k);
  m.steps = m.k_tiles * outer_k;
  m.split = c.split;

  p.threads = m.warps_m * m.warps_n * (m.wgmma ? 128 : 32);
  m.a = lower::detail::mma_operand_tile(p, s.contraction->a, m.m_dims, m.block_m, tf32,
                                        c.swizzle != 0, c.flip_a != 0);
  m.b = lower::detail::mma_operand_tile(p, s.contraction->b, m.n_dims, m.block_n, tf32,
                                        c.swizzle != 0, c.flip_b != 0);
  if (m.wgmma && tf32) {
    // wgmma reads TF32 operands K-major only: a tile that memory would make M/N-contiguous is
    // K-contiguous instead (as mma_flip_* would; the rules keep those at 0). Where that tile
    // would be copied by cp.async, it lands so (a_land / b_land) and the rounding pass
    // transposes it; else it is gathered K-contiguous element by element.
    if (!m.a.k_contiguous) {
      m.land_a = m.a.async_copy, m.a_land = m.a;
      m.a = lower::detail::mma_operand_tile(p, s.contraction->a, m.m_dims, m.block_m, tf32,
                                            c.swizzle != 0, true);
    }
    if (!m.b.k_contiguous) {
      m.land_b = m.b.async_copy, m.b_land = m.b;
      m.b = lower::detail::mma_operand_tile(p, s.contraction->b, m.n_dims, m.block_n, tf32,
                                            c.swizzle != 0, true);
    }
    if (!m.land_a) m.a_land = mma_operand{};
    if (!m.land_b) m.b_land = mma_operand{};
  }
  if (m.wgmma) {
    lower::detail::wgmma_operand_layout(m.a, 64);
    lower::detail::wgmma_operand_layout(m.b, m.warp_n);
  }
  m.a.offset_bytes = 0;
  m.b.offset_bytes = m.stages * m.a.stage_bytes;
  p.tiles_bytes = m.stages * (m.a.stage_bytes + m.b.stage_bytes);
  m.split_tf32 = ir::splits_tf32(p.comp);
  if (m.split_tf32 && m.wgmma) {  // the low tiles after the high ones, in the same layout
    m.a.lo_offset_bytes = p.tiles_bytes;
    m.b.lo_offset_bytes = p.tiles_bytes + m.b.offset_bytes;
    p.tiles_bytes *= 2;
  }
  for (auto [lands, land] : {std::pair{m.land_a, &m.a_land}, std::pair{m.land_b, &m.b_land}})
    if (lands) {  // the landing tiles last
      land->offset_bytes = p.tiles_bytes;
      p.tiles_bytes += m.stages * land->stage_bytes;
      // copied in 4x4 blocks, each by one thread, which transposes it once it has landed:
      // 16-byte loads and stores instead of one 4-byte store per element, 16 lanes of a warp on
      // one bank (TF32 K tiles are multiples of 8 rows, whole chunks per row: blocks fit)
      land->copy_rows = 4;
      land->copies_per_thread = 4 * ceil_div(landing_blocks(*land), p.threads);
    }
  p.scratch_bytes = 0;
  p.shared_bytes = p.tiles_bytes;
  if (m.wgmma) p.shared_bytes += 1024;  // the kernel aligns the pool to 1024 bytes itself
  if (m.wgmma && c.tma) {  // both tiles by TMA, or the check pass refuses the configuration
    m.tma_refused = lower::detail::tma_operand(p, m.a);
    if (m.tma_refused.empty()) m.tma_refused = lower::detail::tma_operand(p, m.b);
    m.tma = m.tma_refused.empty();
    if (!m.tma) m.a.tma = m.b.tma = false;
  }
  if (m.tma) {  // the full and empty mbarriers of every stage after the tiles
    m.tma_bytes = (m.a.rows * m.a.cols + m.b.rows * m.b.cols) * std::int64_t(size_of(m.a.type));
    m.barriers_offset = p.tiles_bytes;
    p.shared_bytes += 16 * m.stages;
  }

  m.out_type = p.comp.outputs[0].type;
  for (std::size_t a = 0; a < p.comp.outputs[0].accesses.size(); ++a) {
    const flat_access f = flatten(p.comp.outputs[0].accesses[a], p.outputs[0], p.comp.rank());
    m.writes.push_back({a, f.coeff, f.constant});
  }
  m.guard_m = m.size_m % m.block_m != 0;
  m.guard_n = m.size_n % m.block_n != 0;
  m.pair_store =
      p.sizes[m.n_dim] % 2 == 0 && (is_float16(m.out_type) || m.out_type == scalar_type::f32);
  for (const mma_write& w : m.writes) {
    if (w.coeff[m.n_dim] != 1 || w.constant % 2 != 0) m.pair_store = false;
    for (std::size_t d = 0; d < w.coeff.size(); ++d)
      if (d != m.n_dim && w.coeff[d] % 2 != 0) m.pair_store = false;
  }

  // A point-wise epilogue writes its own outputs: paired on the same conditions, per output.
  if (p.comp.epilogue) {
    const ir::pointwise_epilogue& e = *p.comp.epilogue;
    m.pair_epilogue = p.sizes[m.n_dim] % 2 == 0;
    for (std::size_t q = 0; q < e.outputs.size(); ++q) {
      const scalar_type t = p.outputs[q].type;
      if (!is_float16(t) && t != scalar_type::f32) m.pair_epilogue = false;
      for (auto& a : e.outputs[q].accesses) {
        const flat_access f = flatten(a, p.outputs[q], p.comp.rank());
        if (f.coeff[m.n_dim] != 1 || f.constant % 2 != 0) m.pair_epilogue = false;
        for (std::size_t d = 0; d < f.coeff.size(); ++d)
          if (d != m.n_dim && f.coeff[d] % 2 != 0) m.pair_epilogue = false;
      }
    }
  }

  // ---- the staged epilogue (mma_stage_out) ----
  if (c.stage_out != 0) lower::detail::mma_stage_tiles(p);
  // ---- end the staged epilogue ----

  kernel k;
  k.kind = kernel_kind::main;
  k.launch.block[0] = p.threads;
  k.launch.grid[0] = ceil_div(m.size_n, m.block_n);
  k.launch.grid[1] = ceil_div(m.size_m, m.block_m);
  k.launch.grid[2] = grid_z * m.split;
  m.tiles = k.launch.grid[0] * k.launch.grid[1] * grid_z;
  if (m.tma && c.persistent) {  // a producer warpgroup more; as many blocks as fit at once
    m.persistent = true;
    p.threads += 128;
    if (m.stage_out) {  // the staged tiles after the barriers: the producer refills the stages
      const std::int64_t base = (m.barriers_offset + 16 * m.stages + 127) / 128 * 128;
      std::int64_t end = base;
      for (mma_stage& st : m.staged) {
        st.offset_bytes += base, end = st.offset_bytes + st.bytes;
        // copied by the computing warpgroups alone
        st.copies_per_thread =
            ceil_div(m.block_m * st.chunks_per_row, computing_threads(m, p.threads));
      }
      p.shared_bytes = end + 1024;
    }
    const std::int64_t per_sm = std::max<std::int64_t>(
        1, std::min((p.limits.shared_per_block_optin + 1024) / (p.shared_bytes + 1024),
                    2048 / p.threads));
    k.launch.grid[0] = std::min(m.tiles, p.limits.sm_count * per_sm);
    k.launch.grid[1] = k.launch.grid[2] = 1;
    k.launch.block[0] = p.threads;
    if (c.cluster_m * c.cluster_n > 1) {  // pairs of blocks, units of two tiles
      m.cluster_m = c.cluster_m, m.cluster_n = c.cluster_n;
      m.cluster_refused = lower::detail::tma_multicast(c.cluster_n > 1 ? m.a : m.b);
      const std::int64_t tn = ceil_div(m.size_n, m.block_n), tm = ceil_div(m.size_m, m.block_m);
      m.cluster_units = ceil_div(tn, m.cluster_n) * ceil_div(tm, m.cluster_m) * grid_z;
      k.launch.grid[0] =
          2 * std::min(m.cluster_units, std::max<std::int64_t>(1, p.limits.sm_count * per_sm / 2));
      k.launch.cluster[0] = 2;
    }
  }
  p.partials.clear(), p.counters.clear();
  if (m.split > 1) {  // split-K: the partial sums and one counter per tile (mma_plan::split)
    const std::int64_t tiles = k.launch.grid[0] * k.launch.grid[1] * grid_z;
    add_last_block_buffers(p, tiles * m.split, m.block_m * m.block_n, tiles);
  }
  k.launch.shared_bytes = p.shared_bytes;
  p.kernels.assign(1, k);
  p.blocks = k.launch.grid[0] * k.launch.grid[1] * k.launch.grid[2];
  p.acc_count = m.frags_m * m.frags_n * 4;
  p.points = m.size_m * m.size_n * grid_z;
  if (p.points >= (std::int64_t(1) << 31)) p.index64 = true;
}

}  // namespace passes

// A random configuration with mma = 1 for `comp` (which must have a tensor-core path), its other
// parameters those of default_config; may break rules over the finished plan (shared memory,
// grid) - callers draw until check() passes (random_mma_config in random_config.hpp does).
namespace detail {
// draw_mma_config without mma_stage_out, which each draw takes last (so that the draws of the
// other parameters are those of before it existed, for mma = 1 and 2 alike).
template <class Rng>
config draw_mma_config_before_stage_out(const ir::computation& comp,
                                        const std::vector<std::int64_t>& sizes, Rng& rng) {
  const mma_support s = mma_supported(comp);
  if (!s) throw error("draw_mma_config: " + s.why_not);
  auto pick = [&](const std::vector<std::int64_t>& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
  };
  auto dims = [&](ir::contraction_role r) {
    std::vector<std::int64_t> v;
    for (auto d : s.contraction->dims_of(r)) v.push_back(std::int64_t(d));
    return v;
  };
  config c = default_config(comp, sizes);
  const std::int64_t k = mma_instruction_k(*s.instruction);
  c.mma.on = 1;
  c.mma.m = pick(dims(ir::contraction_role::m));
  c.mma.n = pick(dims(ir::contraction_role::n));
  c.mma.k = pick(dims(ir::contraction_role::k));
  c.mma.warps_m = pick({1, 2, 4});
  c.mma.warps_n = pick({1, 2, 4});
  if (c.mma.warps_m * c.mma.warps_n > 8) c.mma.warps_n = 8 / c.mma.warps_m;
  c.mma.tile_m = pick({16, 32, 64});
  c.mma.tile_n = pick({16, 32, 64});
  c.mma.tile_k = k * pick({1, 2, 4});
  c.mma.stages = pick({2, 3, 4, 5});
  c.mma.swizzle = *s.instruction == mma_instruction::m16n8k8_tf32 ? 0 : pick({0, 1});
  // the other dimensions of each role, each fused into the axis or not (no draw where a role
  // has one dimension: a matmul's draws are those of before fusion existed)
  auto fuse = [&](ir::contraction_role r, std::int64_t innermost) {
    std::int64_t mask = 0;
    for (auto d : dims(r))
      if (d != innermost && pick({0, 1}) == 1) mask |= std::int64_t(1) << d;
    return mask;
  };
  c.mma.fuse_m = fuse(ir::contraction_role::m, c.mma.m);
  c.mma.fuse_n = fuse(ir::contraction_role::n, c.mma.n);
  c.mma.fuse_k = fuse(ir::contraction_role::k, c.mma.k);
  // the tiles' contiguous axes, where fusion is drawn too (the same rule as the tuner's space)
  const bool several = dims(ir::contraction_role::m).size() > 1 ||
                       dims(ir::contraction_role::n).size() > 1 ||
                       dims(ir::contraction_role::k).size() > 1;
  if (several) c.mma.flip_a = pick({0, 1}), c.mma.flip_b = pick({0, 1});
  c.mma.split = pick({1, 1, 2, 3, 4});  // split-K in two draws of five
  return c;
}
}  // namespace detail

template <class Rng>
config draw_mma_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                       Rng& rng) {
  config c = detail::draw_mma_config_before_stage_out(comp, sizes, rng);
  c.mma.stage_out = std::uniform_int_distribution<std::int64_t>(0, 1)(rng);  // staged or not
  return c;
}

// A random configuration with mma = 2 (wgmma) for `comp`: the axes, fusion
// and flips as draw_mma_config draws them, warpgroup tiles instead of warp tiles; may break rules
// over the finished plan (shared memory) and the accumulator bound - callers draw until check()
// passes (random_wgmma_config in random_config.hpp does).
template <class Rng>
config draw_wgmma_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                         Rng& rng) {
  auto pick = [&](const std::vector<std::int64_t>& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
  };
  config c = detail::draw_mma_config_before_stage_out(comp, sizes, rng);
  c.mma.on = 2;
  c.mma.warps_m = pick({1, 2});
  c.mma.warps_n = pick({1, 2});
  c.mma.tile_m = pick({64, 64, 128});
  c.mma.tile_n = pick({16, 32, 48, 64, 96, 128, 192, 256});
  c.mma.tile_k = mma_instruction_k(*mma_supported(comp).instruction) * pick({1, 2, 4, 8});
  c.mma.swizzle = 1;
  if (*mma_supported(comp).instruction == mma_instruction::m16n8k8_tf32)
    c.mma.flip_a = c.mma.flip_b = 0;  // TF32 tiles are K-major whatever the flips
  c.mma.tma = pick({0, 1});           // check() refuses it where an operand's tile is no TMA box
  c.mma.stage_out = std::uniform_int_distribution<std::int64_t>(0, 1)(rng);  // staged or not
  if (c.mma.tma && c.mma.split == 1) c.mma.persistent = pick({0, 1});
  if (c.mma.persistent) {  // clusters of two along M or N, or none
    const std::int64_t along = pick({0, 1, 2});
    c.mma.cluster_m = along == 1 ? 2 : 1, c.mma.cluster_n = along == 2 ? 2 : 1;
  }
  return c;
}

}  // namespace mdh::lower
