// SPDX-License-Identifier: MIT
// The low-level model: one tuning configuration of the generic kernel template, as named integers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>

namespace mdh::lower {

// Where an input buffer is read from inside the kernel.
enum class cache_kind : std::uint8_t { global = 0, shared = 1 };
// How the threads of a block that share an output point combine their partial results.
enum class thread_combine : std::uint8_t { shared_tree = 0, warp_shuffle = 1 };
// How blocks that share an output point combine (only when a reduction dimension has blk > 1):
// atomics into the outputs after an init kernel; partials combined by a second kernel; or
// partials combined by the last block of the group to finish, in the same kernel.
enum class block_combine : std::uint8_t { atomic = 0, second_kernel = 1, last_block = 2 };

// Per md_hom dimension d. The dimension is cut into `blk` chunks (one per block), each chunk is
// walked in shared-memory tiles of `t_sm`, each tile in steps of thr*t_rm, and within a step each
// of the `thr` threads takes `t_rm` elements: consecutive ones (blocked) or thr apart (strided).
struct dim_config {
  std::int64_t blk = 1;   // blk_<d>: blocks along d
  std::int64_t thr = 1;   // thr_<d>: threads along d
  std::int64_t t_sm = 1;  // t_sm_<d>: elements per shared-memory tile step
  std::int64_t t_rm = 1;  // t_rm_<d>: elements per thread per step (register tile)
  bool strided = false;   // strided_<d>: thread t takes t, t+thr, ... instead of t*t_rm, ...
  int thr_map = 0;        // thr_map_<d>: CUDA thread axis (0 = x, 1 = y, 2 = z); dims that
  int blk_map = 0;        // blk_map_<d>: share an axis fold into it, the higher dim fastest
  friend bool operator==(const dim_config&, const dim_config&) = default;
};

// Per input buffer b (in computation order).
struct input_config {
  cache_kind cache = cache_kind::global;  // cache_<b>
  // transpose_<b>: the shared tile's layout. 0: the buffer's order; 1: its last two dims swapped;
  // 2: its first dim stored innermost (w[k][r][s][c] as [r][s][c][k]: a convolution's weights
  // read along the output channels k), rank >= 3 only (for rank 2 it is 1).
  int transpose = 0;
  std::int64_t pad = 0;  // pad_<b>: extra elements per shared-tile row (bank conflicts)
  friend bool operator==(const input_config&, const input_config&) = default;
};

// The tensor-core path (mma = 1; CUDA, contractions only, see mdh/lower/mma.hpp): one warp-level
// mma.sync per instruction tile, the block tile (warps_m * tile_m) x (warps_n * tile_n) walked
// along the K dimension in steps of tile_k, `stages` shared buffers filled by cp.async. With
// mma = 1 the parameters above (blk_d ... prefetch) are not read; with mma = 0 these are not.
struct mma_config {
  std::int64_t on = 0;               // mma
  std::int64_t m = 0, n = 0, k = 0;  // mma_m, mma_n, mma_k: the dimensions playing M, N, K
  std::int64_t warps_m = 1;          // mma_warps_m: warps along M
  std::int64_t warps_n = 1;          // mma_warps_n: warps along N
  std::int64_t tile_m = 16;          // mma_tile_m: warp tile along M (multiple of 16)
  std::int64_t tile_n = 16;          // mma_tile_n: warp tile along N (multiple of 16)
  std::int64_t tile_k = 16;          // mma_tile_k: block tile along K (instruction multiple)
  std::int64_t stages = 2;           // mma_stages: shared buffers in flight, 2..5
  std::int64_t swizzle = 0;          // mma_swizzle: 0 padded rows, 1 XOR-swizzled 16-byte chunks
  // mma_fuse_m, mma_fuse_n, mma_fuse_k: bit d set = dimension d joins the M (N, K) axis of the
  // product (an implicit GEMM: M = n*p*q of a convolution), outside m (n, k), which stays the
  // axis' innermost dimension; the others row-major in dimension order. 0: m alone.
  std::int64_t fuse_m = 0, fuse_n = 0, fuse_k = 0;
  // mma_flip_a, mma_flip_b: 1 = the operand's shared tile keeps the other axis contiguous than
  // its memory suggests (see mma_operand_tile): a gather can then walk memory in longer runs,
  // an NCHW image along q (14) rather than s (3). 0: as memory suggests.
  std::int64_t flip_a = 0, flip_b = 0;
  // mma_split: the K steps of each output tile divided among `split` blocks (split-K, for
  // shapes with fewer tiles than SMs); each writes its f32 partial sums, the tile's last block
  // adds them in split order and runs the epilogue. 1: one block per tile.
  std::int64_t split = 1;
  // mma_tma (mma = 2 only): 1 = both tiles are filled by the Tensor Memory Accelerator
  // (cp.async.bulk.tensor from a tensor map per operand, one thread issues them, mbarriers
  // instead of block barriers between the steps); only where each operand's tile is one box of
  // its buffer (mma_tiles decides, check refuses the rest). 0: cp.async by every thread.
  std::int64_t tma = 0;
  // mma_persistent (with mma_tma = 1, unsplit): a persistent, warp-specialised kernel: as many
  // blocks as fit the SMs at once, each walking output tiles; one more warpgroup per block
  // produces (issues the TMA boxes of every tile's steps, running ahead across tiles) while the
  // others compute and store. 0: one block per tile, every warpgroup computing.
  std::int64_t persistent = 0;
  // mma_cluster_m / mma_cluster_n (with mma_persistent = 1; at most one of them 2): thread-block
  // clusters of two blocks along M (they share the B tile) or along N (they share A); each
  // block's producer issues half the shared tile's boxes, multicast into both blocks' shared
  // memory, so the pair reads the shared operand from L2 once. 1: no cluster.
  std::int64_t cluster_m = 1, cluster_n = 1;
  // mma_stage_out: 1 = the epilogue's results go through a shared-memory tile and are copied to
  // global memory row by row in 16-byte stores (the staged epilogue, mma_plan::stage_out); 0 =
  // written from the registers.
  std::int64_t stage_out = 0;
  // mma_shift: 1 = tiles (16-bit, or TF32-read f32) whose rows do not start 16-byte aligned (odd
  // row lengths) are copied in 16-byte chunks shifted from two aligned loads
  // (mma_operand::shifted_copy), and a wgmma kernel that copies through registers issues the step's
  // wgmmas before those copies; 0 = element copies, copies first. The tuner's call: the shifted
  // chunks cost selects and a second load per chunk, which short rows (K = 33) do not repay.
  std::int64_t shift = 0;
  friend bool operator==(const mma_config&, const mma_config&) = default;
};

struct config {
  std::vector<dim_config> dims;
  std::vector<input_config> inputs;
  thread_combine thr_combine = thread_combine::shared_tree;  // thr_combine
  block_combine blk_combine = block_combine::second_kernel;  // blk_combine
  std::int64_t vec = 1;  // vec: vector width of output stores along the innermost dimension
  // vec_pw: vector width of input loads along the innermost reduction (pw) dimension
  std::int64_t vec_pw = 1;
  // prefetch: 1 = the shared-memory tiles of the next reduction step are loaded into registers
  // while the current one is computed on (hides global-memory latency); 2 = the same with two
  // shared-memory buffers per tile, so one barrier per step instead of two; 0 = off.
  std::int64_t prefetch = 0;
  // edge_split: where a dimension's size does not divide its tiles (997, 4093, 2^23+5).
  // 0 = off (the lowering of before this parameter existed); 1 = each chunk rounded up to whole
  // tiles and the register loops printed twice behind one block-uniform branch, an interior path
  // without the bounds checks and a guarded edge path; 2 = 1 plus shifted 16-byte loads along
  // rows whose start is not provably aligned (edge_tiles.hpp, docs/lowering.md). SIMT path only.
  std::int64_t edge_split = 0;
  mma_config mma;  // the tensor-core path, off by default
  friend bool operator==(const config&, const config&) = default;
};

// ---- names ----------------------------------------------------------------------------------

inline std::string param_name(const char* stem, std::size_t index) {
  return std::string(stem) + "_" + std::to_string(index);
}

// The flat map name -> value (bools as 0/1, enums as their integer values): what the tuner sees.
inline std::map<std::string, std::int64_t> to_map(const config& c) {
  std::map<std::string, std::int64_t> m;
  for (std::size_t d = 0; d < c.dims.size(); ++d) {
    auto& x = c.dims[d];
    m[param_name("blk", d)] = x.blk;
    m[param_name("thr", d)] = x.thr;
    m[param_name("t_sm", d)] = x.t_sm;
    m[param_name("t_rm", d)] = x.t_rm;
    m[param_name("strided", d)] = x.strided;
    m[param_name("thr_map", d)] = x.thr_map;
    m[param_name("blk_map", d)] = x.blk_map;
  }
  for (std::size_t b = 0; b < c.inputs.size(); ++b) {
    m[param_name("cache", b)] = std::int64_t(c.inputs[b].cache);
    m[param_name("transpose", b)] = c.inputs[b].transpose;
    m[param_name("pad", b)] = c.inputs[b].pad;
  }
  m["thr_combine"] = std::int64_t(c.thr_combine);
  m["blk_combine"] = std::int64_t(c.blk_combine);
  m["vec"] = c.vec;
  // Only when on: configurations without it keep their map, and so their source and kernel names.
  if (c.vec_pw != 1) m["vec_pw"] = c.vec_pw;
  m["prefetch"] = c.prefetch;
  // Only when on: configurations without it keep their map, sources, kernel names and files.
  if (c.edge_split) m["edge_split"] = c.edge_split;
  // Only when on: configurations of the SIMT path keep their map, sources and kernel names.
  if (c.mma.on) {
    m["mma"] = c.mma.on;
    m["mma_m"] = c.mma.m, m["mma_n"] = c.mma.n, m["mma_k"] = c.mma.k;
    m["mma_warps_m"] = c.mma.warps_m, m["mma_warps_n"] = c.mma.warps_n;
    m["mma_tile_m"] = c.mma.tile_m, m["mma_tile_n"] = c.mma.tile_n;
    m["mma_tile_k"] = c.mma.tile_k;
    m["mma_stages"] = c.mma.stages, m["mma_swizzle"] = c.mma.swizzle;
    // Only when on: unfused configurations keep their map, sources and kernel names.
    if (c.mma.fuse_m) m["mma_fuse_m"] = c.mma.fuse_m;
    if (c.mma.fuse_n) m["mma_fuse_n"] = c.mma.fuse_n;
    if (c.mma.fuse_k) m["mma_fuse_k"] = c.mma.fuse_k;
    if (c.mma.flip_a) m["mma_flip_a"] = c.mma.flip_a;
    if (c.mma.flip_b) m["mma_flip_b"] = c.mma.flip_b;
    if (c.mma.split != 1) m["mma_split"] = c.mma.split;
    if (c.mma.tma) m["mma_tma"] = c.mma.tma;
    if (c.mma.persistent) m["mma_persistent"] = c.mma.persistent;
    if (c.mma.cluster_m != 1) m["mma_cluster_m"] = c.mma.cluster_m;
    if (c.mma.cluster_n != 1) m["mma_cluster_n"] = c.mma.cluster_n;
    if (c.mma.stage_out) m["mma_stage_out"] = c.mma.stage_out;
    if (c.mma.shift) m["mma_shift"] = c.mma.shift;
  }
  return m;
}

// to_map with the parameters it leaves out at their values (vec_pw = 1, edge_split = 0, the mma_*
// of a configuration without mma): every parameter a rule may read.
inline std::map<std::string, std::int64_t> to_full_map(const config& c) {
  std::map<std::string, std::int64_t> m = to_map(c);
  m["vec_pw"] = c.vec_pw;
  m.emplace("edge_split", c.edge_split);
  m.emplace("mma", c.mma.on);
  m.emplace("mma_m", c.mma.m), m.emplace("mma_n", c.mma.n), m.emplace("mma_k", c.mma.k);
  m.emplace("mma_warps_m", c.mma.warps_m), m.emplace("mma_warps_n", c.mma.warps_n);
  m.emplace("mma_tile_m", c.mma.tile_m), m.emplace("mma_tile_n", c.mma.tile_n);
  m.emplace("mma_tile_k", c.mma.tile_k);
  m.emplace("mma_stages", c.mma.stages), m.emplace("mma_swizzle", c.mma.swizzle);
  m.emplace("mma_fuse_m", c.mma.fuse_m), m.emplace("mma_fuse_n", c.mma.fuse_n);
  m.emplace("mma_fuse_k", c.mma.fuse_k);
  m.emplace("mma_flip_a", c.mma.flip_a), m.emplace("mma_flip_b", c.mma.flip_b);
  m.emplace("mma_split", c.mma.split);
  m.emplace("mma_tma", c.mma.tma);
  m.emplace("mma_persistent", c.mma.persistent);
  m.emplace("mma_cluster_m", c.mma.cluster_m);
  m.emplace("mma_cluster_n", c.mma.cluster_n);
  m.emplace("mma_stage_out", c.mma.stage_out);
  m.emplace("mma_shift", c.mma.shift);
  return m;
}

// Reads a flat map; every parameter for `rank` dimensions and `inputs` buffers must be present
// and no other name may appear (a typo must not silently fall back to a default).
inline config from_map(const std::map<std::string, std::int64_t>& m, std::size_t rank,
                       std::size_t inputs) {
  std::set<std::string> read;
  auto get = [&](const std::string& n) {
    auto it = m.find(n);
    if (it == m.end()) throw error("configuration: parameter '" + n + "' is missing");
    read.insert(n);
    return it->second;
  };
  config c;
  c.dims.resize(rank);
  c.inputs.resize(inputs);
  for (std::size_t d = 0; d < rank; ++d) {
    auto& x = c.dims[d];
    x.blk = get(param_name("blk", d));
    x.thr = get(param_name("thr", d));
    x.t_sm = get(param_name("t_sm", d));
    x.t_rm = get(param_name("t_rm", d));
    x.strided = get(param_name("strided", d)) != 0;
    x.thr_map = int(get(param_name("thr_map", d)));
    x.blk_map = int(get(param_name("blk_map", d)));
  }
  for (std::size_t b = 0; b < inputs; ++b) {
    c.inputs[b].cache = cache_kind(get(param_name("cache", b)));
    c.inputs[b].transpose = int(get(param_name("transpose", b)));
    c.inputs[b].pad = get(param_name("pad", b));
  }
  c.thr_combine = thread_combine(get("thr_combine"));
  c.blk_combine = block_combine(get("blk_combine"));
  c.vec = get("vec");
  // Added after the first parameter files were written: absent means off (0, and vec_pw 1).
  if (m.count("prefetch")) c.prefetch = get("prefetch");
  if (m.count("vec_pw")) c.vec_pw = get("vec_pw");
  if (m.count("edge_split")) c.edge_split = get("edge_split");
  // The tensor-core parameters: all present (mma = 1, or written as 0) or none (off).
  if (m.count("mma")) {
    c.mma.on = get("mma");
    c.mma.m = get("mma_m"), c.mma.n = get("mma_n"), c.mma.k = get("mma_k");
    c.mma.warps_m = get("mma_warps_m"), c.mma.warps_n = get("mma_warps_n");
    c.mma.tile_m = get("mma_tile_m"), c.mma.tile_n = get("mma_tile_n");
    c.mma.tile_k = get("mma_tile_k");
    c.mma.stages = get("mma_stages"), c.mma.swizzle = get("mma_swizzle");
    // added after the first tensor-core files: absent means unfused, unflipped
    if (m.count("mma_fuse_m")) c.mma.fuse_m = get("mma_fuse_m");
    if (m.count("mma_fuse_n")) c.mma.fuse_n = get("mma_fuse_n");
    if (m.count("mma_fuse_k")) c.mma.fuse_k = get("mma_fuse_k");
    if (m.count("mma_flip_a")) c.mma.flip_a = get("mma_flip_a");
    if (m.count("mma_flip_b")) c.mma.flip_b = get("mma_flip_b");
    if (m.count("mma_split")) c.mma.split = get("mma_split");  // added later: absent means 1
    if (m.count("mma_tma")) c.mma.tma = get("mma_tma");        // added later: absent means 0
    if (m.count("mma_persistent")) c.mma.persistent = get("mma_persistent");  // the same
    if (m.count("mma_cluster_m")) c.mma.cluster_m = get("mma_cluster_m");     // absent means 1
    if (m.count("mma_cluster_n")) c.mma.cluster_n = get("mma_cluster_n");
    if (m.count("mma_stage_out")) c.mma.stage_out = get("mma_stage_out");  // absent means 0
    if (m.count("mma_shift")) c.mma.shift = get("mma_shift");              // absent means 0
  }
  for (auto& [n, v] : m)
    if (!read.count(n)) throw error("configuration: unknown parameter '" + n + "'");
  return c;
}

inline void to_json(nlohmann::json& j, const config& c) {
  j = nlohmann::json::object();
  for (auto& [n, v] : to_map(c)) j[n] = v;
}

// JSON is the flat map as an object; `comp` gives the rank and input count.
inline config config_from_json(const nlohmann::json& j, const ir::computation& comp) {
  if (!j.is_object()) throw error("configuration JSON must be an object of name -> integer");
  std::map<std::string, std::int64_t> m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_boolean())
      m[it.key()] = it.value().get<bool>();
    else if (it.value().is_number_integer())
      m[it.key()] = it.value().get<std::int64_t>();
    else
      throw error("configuration JSON: parameter '" + it.key() + "' is not an integer");
  }
  return from_map(m, comp.rank(), comp.inputs.size());
}

inline std::string to_string(const config& c) {
  std::string s;
  for (auto& [n, v] : to_map(c)) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(v);
  return s;
}

// The inverse of to_string: "blk_0=2 thr_0=4 ..." (as error messages and logs print a
// configuration) back to a configuration of `comp`.
inline config config_from_string(const std::string& text, const ir::computation& comp) {
  std::map<std::string, std::int64_t> m;
  std::size_t at = 0;
  while ((at = text.find_first_not_of(" \t\n", at)) != std::string::npos) {
    const std::size_t end = std::min(text.find_first_of(" \t\n", at), text.size());
    const std::string kv = text.substr(at, end - at);
    const std::size_t eq = kv.find('=');
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      if (eq != std::string::npos) v = std::stoll(kv.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || eq + 1 + used != kv.size())
      throw error("configuration text: '" + kv + "' is not name=integer");
    m[kv.substr(0, eq)] = v;
    at = end;
  }
  return from_map(m, comp.rank(), comp.inputs.size());
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The default configuration, valid for every computation, size and device with at least 256
// threads per block: up to 256 threads over the two innermost concatenation dimensions (the
// last one on x, so consecutive threads touch consecutive elements), one block per thread
// group along concatenation dimensions (all folded into the grid's x axis), reduction and scan
// dimensions walked sequentially by each thread, every input read from global memory.
inline config default_config(const ir::computation& comp, const std::vector<std::int64_t>& sizes) {
  if (sizes.size() != comp.rank())
    throw error("default_config: " + std::to_string(sizes.size()) + " sizes for rank " +
                std::to_string(comp.rank()));
  config c;
  c.dims.resize(comp.rank());
  c.inputs.resize(comp.inputs.size());
  std::int64_t budget = 256;
  int axis = 0;
  for (std::size_t k = comp.rank(); k-- > 0;) {
    auto& x = c.dims[k];
    std::int64_t n = std::max<std::int64_t>(sizes[k], 1);
    if (comp.is_reduction(k)) {
      x.t_sm = n;
      continue;
    }
    if (axis < 2 && budget > 1) {
      x.thr = std::min(n, budget);
      budget /= x.thr;
      x.thr_map = axis++;
    } else {
      x.thr_map = 2;
    }
    x.blk = ceil_div(n, x.thr);
    x.t_sm = x.thr;
  }
  // Threads left over (e.g. a dot product, or a row reduction of a short matrix) go to the
  // innermost point-wise reduction dimension, combined by a shared-memory tree; when the
  // concatenation dimensions give few blocks, that dimension is also split over blocks and the
  // partial results combined by the deterministic second kernel. A single thread walking a
  // million-element reduction is the alternative.
  int red = -1;
  for (std::size_t k = comp.rank(); k-- > 0;)
    if (comp.dims[k].combine == ir::combine_kind::pointwise) {
      red = int(k);
      break;
    }
  if (red >= 0 && budget >= 32 && axis < 2) {
    auto& x = c.dims[std::size_t(red)];
    std::int64_t n = std::max<std::int64_t>(sizes[std::size_t(red)], 1), t = 1;
    while (t * 2 <= budget && t * 2 <= n) t *= 2;
    x.thr = t;
    x.thr_map = axis;
    std::int64_t blocks = 1;
    for (auto& d : c.dims) blocks *= d.blk;
    if (blocks < 128)
      x.blk = std::max<std::int64_t>(1, std::min(ceil_div(n, t * 64), 256 / blocks));
    x.t_sm = ceil_div(ceil_div(n, x.blk), t) * t;
    c.blk_combine = block_combine::second_kernel;
    c.thr_combine = thread_combine::shared_tree;
  }
  // The grid's x axis holds up to 2^31-1 blocks: shrink the largest block count until it fits.
  for (;;) {
    std::int64_t total = 1;
    for (auto& x : c.dims) total *= x.blk;
    if (total <= 2147483647) break;
    auto it = std::max_element(c.dims.begin(), c.dims.end(),
                               [](auto& a, auto& b) { return a.blk < b.blk; });
    it->blk = ceil_div(it->blk, 2);
  }
  return c;
}

}  // namespace mdh::lower
