// SPDX-License-Identifier: MIT
// The tensor-core part of a kernel plan (written by the mma_tiles pass, mdh/lower/mma.hpp; printed
// by mdh/lower/mma_printer.hpp): which dimensions play M, N and K of a warp-level mma.sync, the
// block and warp tiles, the shared tiles of both operands with their layouts, how they are
// filled (cp.async with zero-fill, or element copies) and read (ldmatrix, with .trans when the
// tile's contiguous index is not K, or scalar loads for TF32), and the epilogue's writes.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/lower/layout.hpp>

namespace mdh::lower {

// The mma.sync shapes and operand types mdh uses (accumulators always f32).
enum class mma_instruction : std::uint8_t { m16n8k16_bf16, m16n8k16_f16, m16n8k8_tf32 };

constexpr std::int64_t mma_instruction_k(mma_instruction i) {
  return i == mma_instruction::m16n8k8_tf32 ? 8 : 16;
}
// The warpgroup instruction of mma = 2 (sm_90a): m64nNk16 (bf16, f16) or m64nNk8 (TF32), D in
// f32 registers, A and B from shared memory through matrix descriptors.
inline std::string wgmma_ptx(mma_instruction i, std::int64_t n) {
  const std::string mn = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n);
  switch (i) {
    case mma_instruction::m16n8k16_bf16:
      return mn + "k16.f32.bf16.bf16";
    case mma_instruction::m16n8k16_f16:
      return mn + "k16.f32.f16.f16";
    case mma_instruction::m16n8k8_tf32:
      return mn + "k8.f32.tf32.tf32";
  }
  return "?";
}
inline std::string mma_ptx(mma_instruction i) {
  switch (i) {
    case mma_instruction::m16n8k16_bf16:
      return "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
    case mma_instruction::m16n8k16_f16:
      return "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
    case mma_instruction::m16n8k8_tf32:
      return "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  }
  return "?";
}

// How a warp reads its fragments from an operand's shared tile.
enum class mma_fragment_load : std::uint8_t {
  ldmatrix,        // ldmatrix.sync.aligned.m8n8.x4.shared.b16: tile rows are M (or N), K contiguous
  ldmatrix_trans,  // the same with .trans: tile rows are K, M (or N) contiguous
  scalar,          // 32-bit shared loads, rounded by cvt.rna.tf32.f32 (TF32)
  descriptor,      // wgmma reads the tile itself through a matrix descriptor (mma = 2)
};
inline const char* to_string(mma_fragment_load f) {
  return f == mma_fragment_load::ldmatrix         ? "ldmatrix.x4"
         : f == mma_fragment_load::ldmatrix_trans ? "ldmatrix.x4.trans"
         : f == mma_fragment_load::descriptor     ? "wgmma matrix descriptors"
                                                  : "32-bit loads + cvt.rna.tf32";
}

// One operand (A: rows of the product, B: its columns) and its shared tile: `rows` x `cols`
// elements per stage, cols contiguous; element (r, c) lies at
//   r * pitch + ((c / chunk) ^ ((r / swizzle_rows) % swizzle_chunks)) * chunk + c % chunk
// (swizzle_chunks = 1: no swizzle, the rows padded instead: tile = (rows, cols):(pitch, 1)).
struct mma_operand {
  std::size_t input = 0, access = 0;  // the factor of f: access `access` of input `input`
  scalar_type type = scalar_type::bf16;
  std::size_t mn_dim = 0, k_dim = 0;  // the tile's dimensions: M (A) or N (B), and K
  // The whole axes (mma_plan's m_dims or n_dims, and k_dims), outermost first, ending in mn_dim
  // and k_dim; a tile index along a fused axis decodes into one index per dimension.
  std::vector<std::size_t> mn_dims, k_dims;
  bool k_contiguous = true;  // rows are mn_dim, K contiguous; else rows are K
  std::int64_t rows = 0, cols = 0, pitch = 0;
  std::int64_t chunk = 8;  // elements per 16 bytes
  std::int64_t swizzle_chunks = 1, swizzle_rows = 1;
  layout tile;                    // (rows, cols):(pitch, 1) before the swizzle
  std::int64_t offset_bytes = 0;  // stage 0 in the shared pool
  std::int64_t stage_bytes = 0;   // from one stage's tile to the next
  // Split TF32 with wgmma (mma_plan::split_tf32, mma = 2): stage 0 of a second tile of the same
  // layout holding each element's low part x - tf32(x) truncated to TF32 (wgmma reads both through
  // descriptors); 0 elsewhere.
  std::int64_t lo_offset_bytes = 0;
  // The copy global -> tile: cp.async of 16-byte chunks with zero-fill (src-size 0..16: tile
  // edges read as zeros), when the contiguous index walks memory with coefficient 1 (one
  // dimension, or a fused axis laid out row-major in memory) and every chunk starts 16-byte
  // aligned; else element loads through registers (also zero past the edges): a gather where
  // the tile's contiguous index is strided or not one run in memory (an NCHW image's fused
  // M = n*p*q, its w = q + s mixing an M and a K dimension).
  bool async_copy = false;
  // mma_shift = 1: where cp.async cannot copy because some chunk does not start 16-byte aligned
  // (a row of odd length: A(i, k) of a 1023 x 1027 product) but the contiguous index walks
  // memory with coefficient 1 along one dimension, tiles still move in 16-byte chunks through
  // registers: the two aligned vectors that hold a chunk are loaded and shifted into it
  // (mdh_shift16), then stored to the tile as one vector (TF32's rounding pass then walks the
  // same chunks); chunks that cross the edge of the tensor or whose second vector would end
  // past the buffer (`buffer_elements`) fall back to elements.
  bool shifted_copy = false;
  std::int64_t buffer_elements = 0;    // the input's elements (shifted_copy's bound)
  std::int64_t copies_per_thread = 0;  // chunks (async, shifted) or elements, rounded up
  // A landing tile (mma_plan::land_a/_b) is copied in blocks of 4 rows x one chunk (4x4
  // floats), each thread copying whole blocks (copies_per_thread = 4 x blocks per thread), so
  // the rounding pass can transpose each block from registers with 16-byte loads and stores;
  // 1 elsewhere (one chunk per copy index, row-major).
  std::int64_t copy_rows = 1;
  std::vector<std::int64_t> coeff;  // the flat access: offset = sum_d coeff[d] * e_d + constant
  std::int64_t constant = 0;
  mma_fragment_load load = mma_fragment_load::ldmatrix;
  // wgmma (mma = 2) only; 0 elsewhere. The tile is stored in column blocks ("swizzle atoms") of
  // atom_cols elements each, block after block: element (r, c) of the formula above is that of
  // (r, c % atom_cols) in a tile of atom_cols columns (pitch = atom_cols), plus
  // (c / atom_cols) * rows * atom_cols. atom_cols * element size is the swizzle width in bytes
  // (32, 64 or 128), and swizzle_chunks / swizzle_rows those of wgmma's swizzle modes, so the
  // tile is the canonical K-major (k_contiguous) or MN-major layout of the PTX ISA. The matrix
  // descriptor's fields: desc_lbo / desc_sbo (bytes) and desc_mode (1: 128B, 2: 64B, 3: 32B).
  std::int64_t atom_cols = 0;
  std::int64_t desc_lbo = 0, desc_sbo = 0, desc_mode = 0;
  // TMA (mma_tma = 1): the stage is filled by cp.async.bulk.tensor boxes of a tensor map over
  // the whole input buffer. Map dimension j (innermost first) is buffer coordinate rank-1-j:
  // extent tma_extent[j], stride tma_stride[j] bytes (j >= 1), box tma_box[j] elements, its
  // coordinate the index of dimension tma_dim[j]. The box is one swizzle atom: atom_cols
  // along the contiguous index (tma_swizzle = its bytes, the hardware's 32/64/128-byte swizzle,
  // which is the atom's XOR pattern), up to 256 rows; tma_col_boxes x tma_row_boxes boxes per
  // stage. Elements outside the buffer arrive as zeros (the tile edges).
  bool tma = false;
  std::vector<std::int64_t> tma_extent, tma_stride, tma_box;
  std::vector<std::size_t> tma_dim;
  std::int64_t tma_swizzle = 0, tma_col_boxes = 0, tma_row_boxes = 0, tma_box_rows = 0;
  // multicast (the operand a cluster's two blocks share, mma_plan::cluster_*): the stage's boxes,
  // numbered i = cb * tma_row_boxes + rb, are issued half by each block, box i by the block of
  // cluster rank i % 2, each into the same stage of both blocks (.multicast::cluster), completing
  // bytes on both blocks' full barriers; their count is even (the plan halves the boxes' rows).
  bool multicast = false;
  friend bool operator==(const mma_operand&, const mma_operand&) = default;
};

// The element offset of tile element (r, c) of `o` within one stage (the formula above; the
// printer spells the same in C).
inline std::int64_t tile_offset(const mma_operand& o, std::int64_t r, std::int64_t c) {
  if (o.atom_cols > 0) {
    const std::int64_t block = (c / o.atom_cols) * o.rows * o.atom_cols;
    c %= o.atom_cols;
    return block + r * o.pitch +
           ((c / o.chunk) ^ ((r / o.swizzle_rows) % o.swizzle_chunks)) * o.chunk + c % o.chunk;
  }
  return r * o.pitch + ((c / o.chunk) ^ ((r / o.swizzle_rows) % o.swizzle_chunks)) * o.chunk +
         c % o.chunk;
}

// A landing tile (copy_rows 4): its count of 4x4 blocks (4 rows by one chunk), and the first row
// and column of block c < that count. Rows are rotated by half the block's chunk index, so that the
// eight lanes of a 16-byte access phase (consecutive c: consecutive chunks) load from distinct
// banks of the landing tile and store their transposed rows into distinct banks of the K-major tile
// (its swizzle, or an odd pitch in chunks, spreads them). The printer spells the same in C.
inline std::int64_t landing_blocks(const mma_operand& l) { return l.rows / 4 * (l.cols / l.chunk); }
inline std::pair<std::int64_t, std::int64_t> landing_block_origin(const mma_operand& l,
                                                                  std::int64_t c) {
  const std::int64_t per_row = l.cols / l.chunk;
  return {(c / per_row + c % per_row / 2) % (l.rows / 4) * 4, c % per_row * l.chunk};
}

// wgmma (mma = 2): the byte offset within one stage of operand o's tile at which the matrix
// descriptor of one instruction starts: its M (N) rows from mn0 on (a multiple of 64 for A, of
// the warpgroup tile for B; either a multiple of atom_cols where the tile is MN-major), its K
// slice from kk on (a multiple of the instruction's K: 32 bytes). K-major: the atom block of kk,
// row mn0, kk's bytes within the 32/64/128-byte row (the swizzle applies to the address bits, so a
// start inside the row reads the same pattern); MN-major: the atom block of mn0, K row kk.
inline std::int64_t wgmma_desc_offset(const mma_operand& o, std::int64_t mn0, std::int64_t kk) {
  const std::int64_t elem = 16 / o.chunk, block = o.rows * o.atom_cols * elem;
  if (o.k_contiguous)
    return (kk / o.atom_cols) * block + mn0 * o.atom_cols * elem + (kk % o.atom_cols) * elem;
  return (mn0 / o.atom_cols) * block + kk * o.atom_cols * elem;
}

// wgmma: the matrix descriptor of operand o without its start address (bits 0-13): bits 16-29
// the leading dimension byte offset >> 4, 32-45 the stride dimension byte offset >> 4, 62-63
// the swizzle mode (PTX ISA, "Matrix Descriptor Format").
inline std::uint64_t wgmma_desc_hi(const mma_operand& o) {
  return (std::uint64_t(o.desc_lbo >> 4) << 16) | (std::uint64_t(o.desc_sbo >> 4) << 32) |
         (std::uint64_t(o.desc_mode) << 62);
}

// A write of the epilogue: access `access` of the output, as a flat affine offset.
struct mma_write {
  std::size_t access = 0;
  std::vector<std::int64_t> coeff;
  std::int64_t constant = 0;
  friend bool operator==(const mma_write&, const mma_write&) = default;
};

// ---- the staged epilogue (mma_stage_out) ----
// One output's tile of the staged epilogue in the shared pool: block_m rows of `pitch` elements
// of the output's type. Row r (M index m_blk + r) holds the block's columns from element
// `shift` on, shift = (the row's flat offset at column n_blk) % vector: a row's element lies at
// the same offset modulo 16 bytes in the tile as in the output (the buffer 16-byte aligned), so
// that every whole 16-byte chunk of the tile is one aligned 16-byte store. The copy to global
// memory walks (row, chunk) pairs, chunks_per_row per row, consecutive threads on consecutive
// chunks; a chunk the row's columns fill is one 16-byte store, the first and last of a row (its
// head up to the first 16-byte boundary, its tail) and the columns past N are stored (or left)
// element by element, rows past M not at all.
struct mma_stage {
  std::size_t output = 0;  // p.outputs[output]: the product's, or a point-wise epilogue's
  scalar_type type = scalar_type::f32;
  std::int64_t vector = 8;  // elements per 16 bytes
  // block_n + vector: room for the shift, and rows 16 bytes apart modulo 128 (the fragments'
  // 8 rows of one store instruction in different banks)
  std::int64_t pitch = 0;
  std::int64_t offset_bytes = 0, bytes = 0;  // in the pool (from 0: the pipeline's tiles reused)
  // the output's flat accesses: coefficient 1 along N (fused N: the axis row-major in memory);
  // the first gives the shift
  std::vector<mma_write> writes;
  bool shifted = true;  // some row's shift is not 0: one chunk more per row than block_n / vector
  bool pair = false;    // every shift even: two adjacent columns staged as one 4- or 8-byte store
  std::int64_t chunks_per_row = 0, copies_per_thread = 0;
  friend bool operator==(const mma_stage&, const mma_stage&) = default;
};
// ---- end the staged epilogue ----

struct mma_plan {
  bool on = false;
  // mma = 2: warpgroup MMA (wgmma.mma_async, sm_90a). warps_m / warps_n then count warpgroups
  // (4 warps each), warp_m / warp_n are one warpgroup's tile (warp_m a multiple of 64: frags_m
  // instructions m64nNk16 along M, N = warp_n; frags_n = warp_n / 8 accumulator groups of 4, in
  // the fragment layout of mma.sync's C repeated: warp w of the warpgroup holds rows 16w..16w+15
  // of each 64). wgmma_depth: wgmma groups left in flight at the end of a step (0, or 1 with 3 or
  // more stages); copies_ahead = stages - 1 - wgmma_depth steps are copied ahead.
  bool wgmma = false;
  std::int64_t wgmma_depth = 0, copies_ahead = 1;
  mma_instruction instruction = mma_instruction::m16n8k16_bf16;
  // Split TF32 (precision tf32x3, m16n8k8.tf32 only): every element x of both tiles is read as
  // hi = tf32(x) and lo = x - hi truncated to TF32, and each K slice issues three instructions,
  // lo*hi, hi*lo, then hi*hi, into the same accumulators (near-fp32 accuracy: lo*lo and what lo
  // leaves out are below 2^-20 |x*y|). mma.sync splits in registers; wgmma reads a second, low tile
  // of each operand (mma_operand::lo_offset_bytes) that the step's rounding pass writes.
  bool split_tf32 = false;
  std::int64_t inst_m = 16, inst_n = 8, inst_k = 16;
  std::size_t m_dim = 0, n_dim = 0, k_dim = 0;  // each axis' innermost dimension
  // The dimensions of each axis, outermost first (mma_axis: m_dim alone, or fused with others
  // by mma_fuse_*); size_* are the products of their sizes.
  std::vector<std::size_t> m_dims, n_dims, k_dims;
  std::int64_t size_m = 1, size_n = 1, size_k = 1;
  std::int64_t warps_m = 1, warps_n = 1, warp_m = 16, warp_n = 16;
  std::int64_t frags_m = 1, frags_n = 2;  // instruction tiles per warp along M and N
  std::int64_t block_m = 16, block_n = 16, block_k = 16;
  std::int64_t stages = 2;
  // The ++ dimensions other than M and N, one block each, folded row-major into grid.z; the pw
  // dimensions other than K, walked around the K tiles: step s = (outer_k..., K tile).
  std::vector<std::size_t> grid_dims, outer_k_dims;
  std::int64_t k_tiles = 1, steps = 1;
  // Split-K (mma_split): grid.z holds split blocks per tile (the fastest-varying part of bz);
  // block z of a tile takes steps [z * steps / split, (z + 1) * steps / split). Each block but
  // the tile's last to finish writes its accumulators to the partials buffer (f32, tile-major:
  // tile t, block z at (t * split + z) * block_m * block_n, each thread's float4 groups
  // interleaved across the block's threads) and counts itself in the tile's counter (low 16
  // bits: finished, high 16: partials written); the last adds every partial in z order (its
  // own registers at its z), resets the counter and runs the epilogue. 1: none of this.
  std::int64_t split = 1;
  mma_operand a, b;
  // TF32 with wgmma, which reads TF32 tiles K-major only: an operand that memory stores M/N-
  // contiguous lands by cp.async in that orientation, in a tile of its own (a_land / b_land,
  // padded rows, after the other tiles), and the step's rounding pass writes it transposed
  // into the K-major tile (and the low tile) wgmma reads, instead of a strided element gather.
  bool land_a = false, land_b = false;
  mma_operand a_land, b_land;
  scalar_type out_type = scalar_type::f32;
  std::vector<mma_write> writes;
  // The epilogue: guards only where the size does not divide into block tiles; pair_store: the
  // two adjacent columns of an accumulator pair stored as one 4-byte (16-bit types) or 8-byte
  // (f32) word, where every write has coefficient 1 along N's innermost dimension, even
  // offsets, and that dimension's size is even (a pair never straddles two of its rows).
  bool guard_m = true, guard_n = true, pair_store = false;
  // pair_epilogue: the same for a point-wise epilogue's outputs (the plan has one): two adjacent
  // accumulators go through it, and each of its outputs is stored as one word per pair.
  bool pair_epilogue = false;
  // TMA (mma_tma = 1, both operands' tma): one thread issues each step's boxes, which complete
  // the transaction count of the stage's `full` mbarrier (tma_bytes per stage); every warp
  // waits on it instead of a block barrier, and after its wgmmas of a stage have completed
  // arrives on the stage's `empty` mbarrier (count: the block's warps), which the issuing thread
  // waits on before refilling it. The 2 * stages barriers (8 bytes each) lie at byte
  // barriers_offset of the aligned pool. tma_refused: why mma_tma = 1 could not be planned (the
  // check pass refuses the configuration with it); "" otherwise.
  bool tma = false;
  std::int64_t tma_bytes = 0, barriers_offset = 0;
  std::string tma_refused;
  // Persistent and warp-specialised (mma_persistent, with tma): the grid is as many blocks as
  // fit the SMs at once (at most `tiles`); block b takes output tiles b, b + grid, ... (tile t:
  // N tile fastest, then M, then the grid.z dimensions). The block's last warpgroup is the
  // producer: one of its threads issues the boxes of every step of every tile in that order,
  // counting steps over tiles (stage = count % stages), each stage refilled once its empty
  // barrier completes; the other warpgroups (warps_m x warps_n) compute and store each tile.
  bool persistent = false;
  std::int64_t tiles = 0;
  // Clusters (mma_cluster_m / mma_cluster_n = 2, persistent only): the grid's blocks pair up in
  // clusters of two (cluster rank = blockIdx.x % 2); a cluster walks `cluster_units` units of
  // two tiles, units u, u + clusters, ... from its cluster id u, each unit the tiles of two
  // adjacent N (cluster_n) or M (cluster_m) tile indices, one per rank (the second past the
  // edge, a tile of zeros that is not stored, where the tile count along that axis is odd). The
  // shared operand (A for cluster_n, B for cluster_m) is multicast (mma_operand::multicast); each
  // stage's empty barrier counts the computing warps of both blocks, which arrive on both, and
  // each producer waits for its stages' last releases before its block exits (the partner may
  // still arrive on them). cluster_refused: why the clusters could not be planned ("" if they
  // could; check refuses the configuration with it).
  std::int64_t cluster_m = 1, cluster_n = 1, cluster_units = 0;
  std::string cluster_refused;
  // ---- the staged epilogue (mma_stage_out = 1) ----
  // stage_out: after the main loop (and split-K's combine) the block's results - converted
  // accumulators, or the point-wise epilogue's outputs computed in registers as without it - go
  // to one shared tile per output (`staged`, mma_stage), then every thread copies chunks of it to
  // global memory. stage_out_refused: why mma_stage_out = 1 cannot apply (check_plan refuses the
  // configuration with it); empty where it can.
  bool stage_out = false;
  std::vector<mma_stage> staged;
  std::string stage_out_refused;
  // ---- end the staged epilogue ----
  friend bool operator==(const mma_plan&, const mma_plan&) = default;
};

// An axis' dimension names, outermost first: "q", or "n*p*q" for a fused one.
inline std::string axis_name(const std::vector<std::size_t>& dims,
                             const std::vector<std::string>& dim_names) {
  std::string s;
  for (auto d : dims) s += (s.empty() ? "" : "*") + dim_names[d];
  return s;
}

// The threads that compute and copy the staged tiles out: the block's, less the producer
// warpgroup (the last 128 threads) in the persistent kernel.
inline std::int64_t computing_threads(const mma_plan& m, std::int64_t block_threads) {
  return m.persistent ? block_threads - 128 : block_threads;
}

inline std::string to_string(const mma_plan& m, const std::vector<std::string>& dim_names) {
  std::ostringstream os;
  os << "tensor cores: " << (m.wgmma ? wgmma_ptx(m.instruction, m.warp_n) : mma_ptx(m.instruction))
     << (m.split_tf32 ? " x3 (split TF32: lo*hi + hi*lo + hi*hi)" : "")
     << "\n  M=" << axis_name(m.m_dims, dim_names) << " (" << m.size_m
     << ") N=" << axis_name(m.n_dims, dim_names) << " (" << m.size_n
     << ") K=" << axis_name(m.k_dims, dim_names) << " (" << m.size_k << ")";
  auto list = [&](const std::vector<std::size_t>& v) {
    std::string s;
    for (auto d : v) s += (s.empty() ? "" : ",") + dim_names[d];
    return s.empty() ? std::string("-") : s;
  };
  os << " grid.z over [" << list(m.grid_dims) << "], K steps also over [" << list(m.outer_k_dims)
     << "]\n  block tile " << m.block_m << "x" << m.block_n << "x" << m.block_k << ", " << m.warps_m
     << "x" << m.warps_n << (m.wgmma ? " warpgroups of " : " warps of ") << m.warp_m << "x"
     << m.warp_n << " (" << m.frags_m << "x" << m.frags_n
     << (m.wgmma ? " accumulator groups), " : " instructions), ") << m.stages << " stages, "
     << m.steps << " steps (" << m.k_tiles << " K tiles)";
  if (m.split > 1)
    os << ", split over " << m.split << " blocks per tile (f32 partials, the last block adds)";
  if (m.tma)
    os << ", TMA: " << m.tma_bytes << " bytes per stage, full/empty mbarriers at byte "
       << m.barriers_offset;
  if (m.persistent) os << ", persistent over " << m.tiles << " tiles with a producer warpgroup";
  if (m.cluster_m * m.cluster_n > 1)
    os << ", clusters of " << m.cluster_m << "x" << m.cluster_n << " blocks (" << m.cluster_units
       << " units of two tiles, " << (m.cluster_n > 1 ? "A" : "B") << " multicast)";
  os << "\n";
  for (const mma_operand* o : {&m.a, &m.b}) {
    os << "  " << (o == &m.a ? "A" : "B") << ": input " << o->input << " access " << o->access
       << " tile " << o->rows << "x" << o->cols << " ("
       << axis_name(o->k_contiguous ? o->mn_dims : o->k_dims, dim_names) << " rows, "
       << axis_name(o->k_contiguous ? o->k_dims : o->mn_dims, dim_names) << " contiguous) pitch "
       << o->pitch;
    if (o->atom_cols > 0)
      os << " in blocks of " << o->atom_cols << " columns, " << 16 * (o->atom_cols / o->chunk)
         << "B-swizzled (descriptor lbo " << o->desc_lbo << " sbo " << o->desc_sbo << ")";
    else if (o->swizzle_chunks > 1)
      os << " xor-swizzled (chunk ^ (row / " << o->swizzle_rows << ") % " << o->swizzle_chunks
         << ")";
    else
      os << " layout " << to_string(o->tile);
    os << " at byte " << o->offset_bytes << " (+" << o->stage_bytes << " per stage), ";
    if (o->lo_offset_bytes > 0) os << "low parts at byte " << o->lo_offset_bytes << ", ";
    if (o->tma) {
      os << "TMA boxes of";
      for (std::size_t j = 0; j < o->tma_box.size(); ++j)
        os << (j ? "x" : " ") << o->tma_box[j] << "(" << dim_names[o->tma_dim[j]] << ")";
      os << " (" << o->tma_col_boxes << "x" << o->tma_row_boxes << " per stage, " << o->tma_swizzle
         << "B swizzle" << (o->multicast ? ", multicast: half from each block of the cluster" : "")
         << ")";
    } else {
      os << (o->async_copy     ? "cp.async 16-byte chunks with zero-fill"
             : o->shifted_copy ? "16-byte chunks through registers, shifted from two aligned loads"
                               : "element copies")
         << " (" << o->copies_per_thread << " per thread)";
    }
    os << ", fragments by " << to_string(o->load) << "\n";
    const bool lands = o == &m.a ? m.land_a : m.land_b;
    const mma_operand& l = o == &m.a ? m.a_land : m.b_land;
    if (lands)
      os << "    landing tile " << l.rows << "x" << l.cols << " (" << axis_name(l.k_dims, dim_names)
         << " rows) pitch " << l.pitch << " at byte " << l.offset_bytes << " (+" << l.stage_bytes
         << " per stage), cp.async 16-byte chunks (" << l.copies_per_thread
         << " per thread, in blocks of " << l.copy_rows
         << " rows), transposed block by block by the rounding pass\n";
  }
  os << "  epilogue: f32 accumulators -> " << short_name(m.out_type) << ", " << m.writes.size()
     << " write(s) through the out_view" << (m.pair_store ? " in column pairs" : "")
     << (m.pair_epilogue ? ", the epilogue in column pairs" : "")
     << (m.guard_m || m.guard_n ? ", guarded" : ", unguarded (whole tiles)") << "\n";
  for (const mma_stage& st : m.staged)  // the staged epilogue (mma_stage_out)
    os << "  staged epilogue: output " << st.output << " (" << short_name(st.type) << ") tile "
       << m.block_m << "x" << m.block_n << " pitch " << st.pitch << " at byte " << st.offset_bytes
       << (st.shifted ? ", rows shifted to the output's 16-byte phase" : ", rows aligned")
       << (st.pair ? ", staged in column pairs" : "") << ", copied in 16-byte chunks ("
       << st.chunks_per_row << " per row, " << st.copies_per_thread << " per thread)\n";
  return os.str();
}

}  // namespace mdh::lower
