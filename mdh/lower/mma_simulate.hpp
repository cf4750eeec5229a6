// SPDX-License-Identifier: MIT
// A CPU execution of a tensor-core plan (mma_plan, mdh/lower/mma.hpp) as its kernel moves data:
// per block and step, each operand's shared tile filled element by element as the copies
// decide (the axes' indices decoded into dimensions, the flat accesses, the guards; cp.async
// chunks read 16 bytes from the chunk's first element on, zero-filled past the tensor's edge),
// stored at the tile's (swizzled or padded) offsets; the block's product computed from the tiles
// (TF32 rounded as cvt.rna does); the epilogue's guarded writes through the out_view, or with
// mma_stage_out its staged tile and chunked copy (mma_stage_block). Without a
// GPU this is the oracle that a plan - fused axes, gathers, chunk alignment - computes the
// contraction; the printer (mma_printer.hpp) spells the same decisions in CUDA.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/float16.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/tensor.hpp>

namespace mdh::lower {

namespace detail {

inline float mma_read(const buffer_ref& b, std::int64_t i) {
  switch (b.type) {
    case scalar_type::bf16:
      return float(b.as<bf16>()[i]);
    case scalar_type::f16:
      return float(b.as<f16>()[i]);
    case scalar_type::f32:
      return b.as<float>()[i];
    default:
      throw error("simulate_mma: operands are bf16, f16 or f32");
  }
}

inline void mma_write(const buffer_ref& b, std::int64_t i, float v) {
  switch (b.type) {
    case scalar_type::bf16:
      b.as<bf16>()[i] = bf16(v);
      break;
    case scalar_type::f16:
      b.as<f16>()[i] = f16(v);
      break;
    case scalar_type::f32:
      b.as<float>()[i] = v;
      break;
    default:
      throw error("simulate_mma: outputs are bf16, f16 or f32");
  }
}

// e[d] for the dimensions of an axis (outermost first) from its index, row-major.
inline void mma_decode(const std::vector<std::size_t>& dims, const std::vector<std::int64_t>& sizes,
                       std::int64_t lin, std::vector<std::int64_t>& e) {
  for (std::size_t j = dims.size(); j-- > 0;) {
    const std::int64_t z = sizes[dims[j]];
    e[dims[j]] = j == 0 ? lin : lin % z;
    lin /= z;
  }
}

inline std::int64_t mma_offset(const std::vector<std::int64_t>& coeff, std::int64_t constant,
                               const std::vector<std::int64_t>& e) {
  std::int64_t o = constant;
  for (std::size_t d = 0; d < coeff.size(); ++d) o += coeff[d] * e[d];
  return o;
}

// wgmma's reading of shared memory, from the PTX ISA ("Shared Memory Matrix Layout", "Matrix
// Descriptor Format"), independent of how mdh lays tiles out: the byte address of element
// (mn, k) of an instruction's operand (A: mn = m in [0, 64); B: mn = n in [0, N); k in [0, K))
// for 64-bit descriptor `desc` (elements of `elem` bytes, swizzled modes). K-major: 8-row groups
// SBO apart, rows one swizzle width apart, K contiguous; MN-major: the MN index contiguous within a
// swizzle width, atoms along MN LBO apart, K rows one width apart in groups of 8 SBO apart. Then
// the swizzle on the address: the 16-byte chunk index (bits 4..) XOR the 128-byte line (bits 7..)
// within the width.
inline std::int64_t wgmma_address(std::uint64_t desc, bool mn_major, std::int64_t mn,
                                  std::int64_t k, std::int64_t elem) {
  const auto start = std::int64_t(desc & 0x3FFF) << 4;
  const auto lbo = std::int64_t((desc >> 16) & 0x3FFF) << 4;
  const auto sbo = std::int64_t((desc >> 32) & 0x3FFF) << 4;
  const auto mode = int(desc >> 62);
  if (mode == 0) throw error("simulate_mma: wgmma's interleaved layout is not simulated");
  const std::int64_t width = mode == 1 ? 128 : mode == 2 ? 64 : 32;
  std::int64_t a = 0;
  if (!mn_major)
    a = start + (mn / 8) * sbo + (mn % 8) * width + k * elem;
  else
    a = start + (mn / (width / elem)) * lbo + (mn % (width / elem)) * elem + (k / 8) * sbo +
        (k % 8) * width;
  return a ^ (((a >> 7) & (width / 16 - 1)) << 4);
}

// Split-K: block z's share added to the sums of blocks 0..z-1, in the kernel's order (z = 0
// sets them).
inline void add_share(std::vector<float>& sum, const std::vector<float>& share, std::int64_t z) {
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = z == 0 ? share[i] : sum[i] + share[i];
}

// ---- the staged epilogue (mma_stage_out) ----
// One block's staged epilogue as the kernel runs it (mma_printer's print_stage_copy):
// value(i, j), the block's result at tile row i and column j, into the staged tile at
// i * pitch + shift + j for every (i, j) inside the sizes (each slot once, inside the tile),
// then the copy by (row, chunk) pairs: a whole chunk must start on a 16-byte boundary of the
// output, an element must lie inside the output and be written once per access (`written`,
// one count per access and element, across the blocks). Slots never staged read as NaN.
template <class Value>
void mma_stage_block(const kernel_plan& p, const buffer_ref& out, std::int64_t m_blk,
                     std::int64_t n_blk, std::vector<std::int64_t>& e, Value value,
                     std::vector<std::vector<std::uint8_t>>& written) {
  const mma_plan& m = p.mma;
  const mma_stage& st = m.staged.at(0);
  const std::int64_t V = st.vector, rows = m.block_m * st.pitch;
  std::vector<float> tile(std::size_t(rows), std::numeric_limits<float>::quiet_NaN());
  std::vector<bool> staged(tile.size(), false);
  auto without_n = [&](const lower::mma_write& w) {
    std::int64_t o = w.constant;
    for (std::size_t d = 0; d < w.coeff.size(); ++d)
      if (std::find(m.n_dims.begin(), m.n_dims.end(), d) == m.n_dims.end()) o += w.coeff[d] * e[d];
    return o;
  };
  auto shift = [&] { return st.shifted ? without_n(st.writes.front()) % V : 0; };
  for (std::int64_t i = 0; i < m.block_m && m_blk + i < m.size_m; ++i) {
    mma_decode(m.m_dims, p.sizes, m_blk + i, e);
    const std::int64_t sh = shift();
    for (std::int64_t j = 0; j < m.block_n && n_blk + j < m.size_n; ++j) {
      const std::int64_t at = i * st.pitch + sh + j;
      if (at < 0 || at >= rows || staged[std::size_t(at)])
        throw error("simulate_mma: staged tile slot " + std::to_string(at) + " outside or twice");
      staged[std::size_t(at)] = true;
      tile[std::size_t(at)] = value(i, j);
    }
  }
  written.resize(st.writes.size(), std::vector<std::uint8_t>(std::size_t(out.size()), 0));
  const std::int64_t cols = std::min(m.block_n, m.size_n - n_blk);
  for (std::int64_t x = 0; x < st.copies_per_thread * p.threads; ++x) {
    const std::int64_t r = x / st.chunks_per_row, k = x % st.chunks_per_row;
    if (r >= m.block_m || m_blk + r >= m.size_m) continue;
    mma_decode(m.m_dims, p.sizes, m_blk + r, e);
    const std::int64_t sh = shift();
    const std::int64_t lo = std::max(k * V, sh), hi = std::min(k * V + V, sh + cols);
    for (std::size_t a = 0; a < st.writes.size(); ++a) {
      const std::int64_t base = without_n(st.writes[a]) + n_blk - sh;
      if (lo == k * V && hi == k * V + V && (base + k * V) % V != 0)
        throw error("simulate_mma: a 16-byte store of the staged epilogue at element " +
                    std::to_string(base + k * V) + " is not 16-byte aligned");
      for (std::int64_t j = lo; j < hi; ++j) {
        const std::int64_t o = base + j;
        if (o < 0 || o >= out.size() || written[a][std::size_t(o)]++ != 0)
          throw error("simulate_mma: the staged epilogue writes element " + std::to_string(o) +
                      " of access " + std::to_string(a) + " outside the output or twice");
        mma_write(out, o, tile[std::size_t(r * st.pitch + j)]);
      }
    }
  }
}
// ---- end the staged epilogue ----

}  // namespace detail

// Runs plan `p` (p.mma.on, no point-wise epilogue) on `in` (the computation's inputs) into `out`.
inline void simulate_mma(const kernel_plan& p, const std::vector<buffer_ref>& in,
                         const std::vector<buffer_ref>& out) {
  const mma_plan& m = p.mma;
  if (!m.on) throw error("simulate_mma: the plan has no tensor-core kernel");
  if (p.comp.epilogue) throw error("simulate_mma: point-wise epilogues are not simulated");
  const bool tf32 = m.instruction == mma_instruction::m16n8k8_tf32;
  const bool split = m.split_tf32;
  // split TF32's parts of an element: hi = round_tf32(x), lo = split_tf32_lo(x)
  auto lo_part = [](float v) { return split_tf32_lo(v); };
  const std::vector<std::int64_t>& sizes = p.sizes;
  std::int64_t grid_z = 1, outer = 1;
  for (auto d : m.grid_dims) grid_z *= sizes[d];
  for (auto d : m.outer_k_dims) outer *= sizes[d];
  std::vector<std::int64_t> e(sizes.size(), 0);
  // one stage of an operand's tile as the kernel fills it, in elements
  auto fill = [&](const mma_operand& o, std::int64_t mn_blk, std::int64_t mn_size,
                  std::int64_t k_blk, std::vector<float>& tile) {
    tile.assign(std::size_t(o.stage_bytes / std::int64_t(size_of(o.type))), 0.0f);
    const buffer_ref& b = in.at(o.input);
    if (o.multicast) {  // a cluster's boxes: box i from rank i % 2, both halves cover the stage
                        // once
      std::vector<int> cover(tile.size(), 0);
      std::int64_t per_rank[2] = {0, 0};
      for (std::int64_t cb = 0; cb < o.tma_col_boxes; ++cb)
        for (std::int64_t rb = 0; rb < o.tma_row_boxes; ++rb) {
          ++per_rank[(cb * o.tma_row_boxes + rb) % 2];
          for (std::int64_t r = rb * o.tma_box_rows; r < (rb + 1) * o.tma_box_rows; ++r)
            for (std::int64_t col = cb * o.atom_cols; col < (cb + 1) * o.atom_cols; ++col)
              ++cover.at(std::size_t(tile_offset(o, r, col)));
        }
      for (std::int64_t r = 0; r < o.rows; ++r)
        for (std::int64_t col = 0; col < o.cols; ++col)
          if (cover[std::size_t(tile_offset(o, r, col))] != 1 || per_rank[0] != per_rank[1])
            throw error("simulate_mma: the multicast boxes of input " + std::to_string(o.input) +
                        " do not split its tile evenly between the cluster's blocks (element " +
                        std::to_string(r) + ", " + std::to_string(col) + ")");
    }
    if (o.tma) {  // TMA boxes: an element is read where every coordinate is inside the buffer
      for (std::int64_t r = 0; r < o.rows; ++r)
        for (std::int64_t col = 0; col < o.cols; ++col) {
          e[o.k_contiguous ? o.mn_dim : o.k_dim] = (o.k_contiguous ? mn_blk : k_blk) + r;
          e[o.k_contiguous ? o.k_dim : o.mn_dim] = (o.k_contiguous ? k_blk : mn_blk) + col;
          bool inside = true;
          for (std::size_t j = 0; j < o.tma_dim.size(); ++j)
            inside = inside && e[o.tma_dim[j]] >= 0 && e[o.tma_dim[j]] < o.tma_extent[j];
          tile[std::size_t(tile_offset(o, r, col))] =
              inside ? detail::mma_read(b, detail::mma_offset(o.coeff, o.constant, e)) : 0.0f;
        }
      return;
    }
    const std::int64_t V = o.async_copy || o.shifted_copy ? o.chunk : 1;
    for (std::int64_t r = 0; r < o.rows; ++r)
      for (std::int64_t col = 0; col < o.cols; col += V) {
        const std::int64_t row_lin = (o.k_contiguous ? mn_blk : k_blk) + r;
        const std::int64_t col_lin = (o.k_contiguous ? k_blk : mn_blk) + col;
        const std::int64_t row_size = o.k_contiguous ? mn_size : m.size_k;
        const std::int64_t col_size = o.k_contiguous ? m.size_k : mn_size;
        detail::mma_decode(o.k_contiguous ? o.mn_dims : o.k_dims, sizes, row_lin, e);
        detail::mma_decode(o.k_contiguous ? o.k_dims : o.mn_dims, sizes, col_lin, e);
        const std::int64_t at = detail::mma_offset(o.coeff, o.constant, e);
        // a chunk: V elements from `at` on (cp.async reads bytes), as many as are in range
        const std::int64_t left = row_lin < row_size ? col_size - col_lin : 0;
        for (std::int64_t j = 0; j < V; ++j)
          tile[std::size_t(tile_offset(o, r, col + j))] =
              j < left ? detail::mma_read(b, at + j) : 0.0f;
      }
  };
  std::vector<float> ta, tb, acc, zacc, ra, rb, ra_lo, rb_lo, tl;
  // an operand's K-major stage: copied so, or landed M/N-contiguous (mma_plan::land_a/_b) and
  // written transposed by the rounding pass
  auto land = [&](const mma_operand& o, bool lands, const mma_operand& l, std::int64_t mn_blk,
                  std::int64_t mn_size, std::int64_t k_blk, std::vector<float>& tile) {
    if (!lands) return fill(o, mn_blk, mn_size, k_blk, tile);
    fill(l, mn_blk, mn_size, k_blk, tl);
    tile.assign(std::size_t(o.stage_bytes / std::int64_t(size_of(o.type))), 0.0f);
    for (std::int64_t r = 0; r < l.rows; ++r)  // landed (K, M/N)
      for (std::int64_t col = 0; col < l.cols; ++col)
        tile.at(std::size_t(tile_offset(o, col, r))) = tl.at(std::size_t(tile_offset(l, r, col)));
  };
  std::vector<float> stage;                        // the staged epilogue's block tile (wgmma)
  std::vector<std::vector<std::uint8_t>> written;  // ... and its writes per access and element
  if (m.wgmma) {
    // The pool as the kernel sees it (index = byte / element size), the stage of step s in
    // buffer s % stages; every warpgroup's instructions read it through their descriptors, as
    // the printer builds them, into each thread's registers in wgmma's accumulator layout (warp
    // w of the warpgroup: rows 16w + g (+8), columns 8j' + 2t (+1) for register 4j' + i); the
    // epilogue writes the registers where the printer says they belong.
    const std::int64_t WG = m.warps_m * m.warps_n, R = m.frags_m * m.frags_n * 4;
    const std::int64_t N = m.warp_n, mnb_a = wgmma_desc_offset(m.a, 64, 0) / 64;
    const std::int64_t mnb_b = wgmma_desc_offset(m.b, N, 0) / N;
    const std::int64_t elem = std::int64_t(size_of(m.a.type)), K = m.inst_k;
    std::vector<float> pool(std::size_t(p.shared_bytes / elem), 0.0f), regs, zregs;
    std::vector<float> fa(std::size_t(64 * K)), fb(std::size_t(N * K));
    std::vector<float> fa_lo(fa.size()), fb_lo(fb.size());
    auto place = [&](const mma_operand& o, std::int64_t slot, const std::vector<float>& t) {
      const std::int64_t at = (o.offset_bytes + slot * o.stage_bytes) / elem;
      for (std::size_t i = 0; i < t.size(); ++i) pool.at(std::size_t(at) + i) = t[i];
      if (!split) return;  // the rounding pass's low tile (the high one is rounded on reading)
      const std::int64_t lo = (o.lo_offset_bytes + slot * o.stage_bytes) / elem;
      for (std::size_t i = 0; i < t.size(); ++i) pool.at(std::size_t(lo) + i) = lo_part(t[i]);
    };
    for (std::int64_t bz = 0; bz < grid_z; ++bz)
      for (std::int64_t m_blk = 0; m_blk < m.size_m; m_blk += m.block_m)
        for (std::int64_t n_blk = 0; n_blk < m.size_n; n_blk += m.block_n) {
          detail::mma_decode(m.grid_dims, sizes, bz, e);
          regs.assign(std::size_t(WG * 128 * R), 0.0f);
          // split-K: block z's share of the steps into its own registers, added in z order
          for (std::int64_t z = 0; z < m.split; ++z) {
            const std::int64_t step0 = z * m.steps / m.split, step1 = (z + 1) * m.steps / m.split;
            zregs.assign(regs.size(), 0.0f);
            for (std::int64_t step = step0; step < step1; ++step) {
              const std::int64_t k_blk = (step % m.k_tiles) * m.block_k;
              const std::int64_t slot = (step - step0) % m.stages;
              if (!m.outer_k_dims.empty())
                detail::mma_decode(m.outer_k_dims, sizes, step / m.k_tiles, e);
              land(m.a, m.land_a, m.a_land, m_blk, m.size_m, k_blk, ta);
              land(m.b, m.land_b, m.b_land, n_blk, m.size_n, k_blk, tb);
              place(m.a, slot, ta), place(m.b, slot, tb);
              for (std::int64_t wg = 0; wg < WG; ++wg) {
                const std::int64_t wm = wg / m.warps_n, wn = wg % m.warps_n;
                const std::int64_t a_base =
                    m.a.offset_bytes + slot * m.a.stage_bytes + wm * m.warp_m * mnb_a;
                const std::int64_t b_base =
                    m.b.offset_bytes + slot * m.b.stage_bytes + wn * N * mnb_b;
                for (std::int64_t kk = 0; kk < m.block_k; kk += K) {
                  const std::uint64_t db =
                      wgmma_desc_hi(m.b) |
                      std::uint64_t(((b_base + wgmma_desc_offset(m.b, 0, kk)) & 0x3FFFF) >> 4);
                  // TF32: the kernel rounds the tiles in place (round_step) before wgmma reads them
                  auto read = [&](std::uint64_t desc, bool mn_major, std::int64_t mn,
                                  std::int64_t k) {
                    const float v = pool.at(
                        std::size_t(detail::wgmma_address(desc, mn_major, mn, k, elem) / elem));
                    return tf32 ? round_tf32(v) : v;
                  };
                  for (std::int64_t n = 0; n < N; ++n)
                    for (std::int64_t k = 0; k < K; ++k)
                      fb[std::size_t(n * K + k)] = read(db, !m.b.k_contiguous, n, k);
                  // split TF32: the low tiles through their own descriptors (already rounded)
                  const std::int64_t lo_a = m.a.lo_offset_bytes - m.a.offset_bytes,
                                     lo_b = m.b.lo_offset_bytes - m.b.offset_bytes;
                  if (split) {
                    const std::uint64_t db_lo =
                        wgmma_desc_hi(m.b) |
                        std::uint64_t(((b_base + lo_b + wgmma_desc_offset(m.b, 0, kk)) & 0x3FFFF) >>
                                      4);
                    for (std::int64_t n = 0; n < N; ++n)
                      for (std::int64_t k = 0; k < K; ++k)
                        fb_lo[std::size_t(n * K + k)] = read(db_lo, !m.b.k_contiguous, n, k);
                  }
                  for (std::int64_t fm = 0; fm < m.frags_m; ++fm) {
                    const std::uint64_t da =
                        wgmma_desc_hi(m.a) |
                        std::uint64_t(((a_base + fm * 64 * mnb_a + wgmma_desc_offset(m.a, 0, kk)) &
                                       0x3FFFF) >>
                                      4);
                    for (std::int64_t r = 0; r < 64; ++r)
                      for (std::int64_t k = 0; k < K; ++k)
                        fa[std::size_t(r * K + k)] = read(da, !m.a.k_contiguous, r, k);
                    if (split) {
                      const std::uint64_t da_lo =
                          wgmma_desc_hi(m.a) | std::uint64_t(((a_base + lo_a + fm * 64 * mnb_a +
                                                               wgmma_desc_offset(m.a, 0, kk)) &
                                                              0x3FFFF) >>
                                                             4);
                      for (std::int64_t r = 0; r < 64; ++r)
                        for (std::int64_t k = 0; k < K; ++k)
                          fa_lo[std::size_t(r * K + k)] = read(da_lo, !m.a.k_contiguous, r, k);
                    }
                    for (std::int64_t th = 0; th < 128; ++th)
                      for (std::int64_t j = 0; j < N / 2; ++j) {
                        const std::int64_t lane = th % 32, g = lane / 4, t = lane % 4;
                        const std::int64_t row = 16 * (th / 32) + g + 8 * ((j >> 1) & 1);
                        const std::int64_t col = 8 * (j >> 2) + 2 * t + (j & 1);
                        float s = 0;
                        for (std::int64_t k = 0; k < K; ++k) {
                          const std::size_t ia = std::size_t(row * K + k),
                                            ib = std::size_t(col * K + k);
                          if (split) s += fa_lo[ia] * fb[ib] + fa[ia] * fb_lo[ib];
                          s += fa[ia] * fb[ib];
                        }
                        zregs[std::size_t((wg * 128 + th) * R + fm * (N / 2) + j)] += s;
                      }
                  }
                }
              }
            }
            detail::add_share(regs, zregs, z);
          }
          // the staged epilogue: the registers into a block tile first (where they belong)
          if (m.stage_out) stage.assign(std::size_t(m.block_m * m.block_n), 0.0f);
          for (std::int64_t wg = 0; wg < WG; ++wg)
            for (std::int64_t th = 0; th < 128; ++th)
              for (std::int64_t fm = 0; fm < m.frags_m; ++fm)
                for (std::int64_t fn = 0; fn < m.frags_n; ++fn)
                  for (std::int64_t i = 0; i < 4; ++i) {
                    const std::int64_t wm = wg / m.warps_n, wn = wg % m.warps_n;
                    const std::int64_t wq = th / 32, g = (th % 32) / 4, t = th % 4;
                    const std::int64_t em =
                        m_blk + wm * m.warp_m + fm * 64 + wq * 16 + g + (i >> 1) * 8;
                    const std::int64_t en = n_blk + wn * m.warp_n + fn * 8 + 2 * t + (i & 1);
                    if (m.stage_out) {
                      stage[std::size_t((em - m_blk) * m.block_n + en - n_blk)] =
                          regs[std::size_t((wg * 128 + th) * R + fm * (N / 2) + fn * 4 + i)];
                      continue;
                    }
                    if (em >= m.size_m || en >= m.size_n) continue;
                    detail::mma_decode(m.m_dims, sizes, em, e);
                    detail::mma_decode(m.n_dims, sizes, en, e);
                    const float v =
                        regs[std::size_t((wg * 128 + th) * R + fm * (N / 2) + fn * 4 + i)];
                    for (const mma_write& w : m.writes)
                      detail::mma_write(out.at(0), detail::mma_offset(w.coeff, w.constant, e), v);
                  }
          if (m.stage_out)
            detail::mma_stage_block(
                p, out.at(0), m_blk, n_blk, e,
                [&](std::int64_t i, std::int64_t j) {
                  return stage[std::size_t(i * m.block_n + j)];
                },
                written);
        }
    return;
  }
  for (std::int64_t bz = 0; bz < grid_z; ++bz)
    for (std::int64_t m_blk = 0; m_blk < m.size_m; m_blk += m.block_m)
      for (std::int64_t n_blk = 0; n_blk < m.size_n; n_blk += m.block_n) {
        detail::mma_decode(m.grid_dims, sizes, bz, e);
        acc.assign(std::size_t(m.block_m * m.block_n), 0.0f);
        // rows and columns past the sizes are computed by the kernel but never written
        const std::int64_t rows = std::min(m.block_m, m.size_m - m_blk);
        const std::int64_t cols = std::min(m.block_n, m.size_n - n_blk);
        // split-K: block z's share of the steps into its own sums, added in z order
        for (std::int64_t z = 0; z < m.split; ++z) {
          zacc.assign(acc.size(), 0.0f);
          for (std::int64_t step = z * m.steps / m.split; step < (z + 1) * m.steps / m.split;
               ++step) {
            const std::int64_t k_blk = (step % m.k_tiles) * m.block_k;
            if (!m.outer_k_dims.empty())
              detail::mma_decode(m.outer_k_dims, sizes, step / m.k_tiles, e);
            fill(m.a, m_blk, m.size_m, k_blk, ta);
            fill(m.b, n_blk, m.size_n, k_blk, tb);
            auto at = [&](const mma_operand& o, const std::vector<float>& t, std::int64_t mn,
                          std::int64_t k) {
              const float v =
                  t[std::size_t(o.k_contiguous ? tile_offset(o, mn, k) : tile_offset(o, k, mn))];
              return tf32 ? round_tf32(v) : v;
            };
            const std::int64_t K = m.block_k;
            ra.resize(std::size_t(rows * K)), rb.resize(std::size_t(cols * K));
            for (std::int64_t i = 0; i < rows; ++i)
              for (std::int64_t k = 0; k < K; ++k) ra[std::size_t(i * K + k)] = at(m.a, ta, i, k);
            for (std::int64_t j = 0; j < cols; ++j)
              for (std::int64_t k = 0; k < K; ++k) rb[std::size_t(j * K + k)] = at(m.b, tb, j, k);
            if (split) {  // the low parts, from the unrounded tiles as the registers split them
              ra_lo.resize(ra.size()), rb_lo.resize(rb.size());
              auto raw = [&](const mma_operand& o, const std::vector<float>& t, std::int64_t mn,
                             std::int64_t k) {
                return t[std::size_t(o.k_contiguous ? tile_offset(o, mn, k)
                                                    : tile_offset(o, k, mn))];
              };
              for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t k = 0; k < K; ++k)
                  ra_lo[std::size_t(i * K + k)] = lo_part(raw(m.a, ta, i, k));
              for (std::int64_t j = 0; j < cols; ++j)
                for (std::int64_t k = 0; k < K; ++k)
                  rb_lo[std::size_t(j * K + k)] = lo_part(raw(m.b, tb, j, k));
            }
            for (std::int64_t i = 0; i < rows; ++i)
              for (std::int64_t j = 0; j < cols; ++j) {
                float s = 0;
                for (std::int64_t k = 0; k < K; ++k) {
                  const std::size_t ia = std::size_t(i * K + k), ib = std::size_t(j * K + k);
                  if (split) s += ra_lo[ia] * rb[ib] + ra[ia] * rb_lo[ib];
                  s += ra[ia] * rb[ib];
                }
                zacc[std::size_t(i * m.block_n + j)] += s;
              }
          }
          detail::add_share(acc, zacc, z);
        }
        if (m.stage_out) {
          detail::mma_stage_block(
              p, out.at(0), m_blk, n_blk, e,
              [&](std::int64_t i, std::int64_t j) { return acc[std::size_t(i * m.block_n + j)]; },
              written);
          continue;
        }
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j) {
            detail::mma_decode(m.m_dims, sizes, m_blk + i, e);
            detail::mma_decode(m.n_dims, sizes, n_blk + j, e);
            for (const mma_write& w : m.writes)
              detail::mma_write(out.at(0), detail::mma_offset(w.coeff, w.constant, e),
                                acc[std::size_t(i * m.block_n + j)]);
          }
      }
}

}  // namespace mdh::lower
