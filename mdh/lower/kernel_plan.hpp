// SPDX-License-Identifier: MIT
// The kernel plan: plain data describing the kernels of one (computation, sizes, configuration).
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/print.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/layout.hpp>
#include <mdh/lower/mma_plan.hpp>
#include <mdh/lower/producer_plan.hpp>

namespace mdh::lower {

enum class dim_role : std::uint8_t { concat, reduce, scan };

// One dimension's partitioning; every count below is a compile-time constant of the kernel.
// Element e of dimension d handled by block b, sm-tile s, rm-step q, thread t, register slot r is
// elements(b, s, q, t, r), the layout (blk, n_sm, n_rm, thr, t_rm) : (chunk, t_sm, rm_step, ts, rs)
// with (ts, rs) = (1, thr) strided, (t_rm, 1) blocked; valid iff the part from q on is < t_sm,
// the part from s on is < chunk, and e < size.
struct dim_plan {
  std::string name;
  dim_role role = dim_role::concat;
  std::int64_t size = 1;
  std::int64_t blk = 1, thr = 1, chunk = 1, t_sm = 1, t_rm = 1, rm_step = 1;
  std::int64_t n_sm = 1, n_rm = 1;  // trip counts of the sm-tile and rm-step loops
  bool strided = false;
  // With edge_split (edge_tiles.hpp): which of the three guards can fail - the last rm step of a
  // tile is partial (t_sm % rm_step != 0), the last sm tile of a chunk (chunk % t_sm != 0), the
  // last block (blk * chunk != size) - and `interior`: the dimension's guards are dropped on
  // the kernel's interior path (kernel_plan::interior_split). All false without edge_split.
  bool partial_steps = false, partial_tiles = false, partial_blocks = false;
  bool interior = false;
  // A ++ dimension whose every read in the register loops comes from a shared tile: the loops
  // compute its out-of-range slots too (inside the tile box, their accumulators never stored),
  // so that only the stores are guarded along it (register_loops pass).
  bool slots_unguarded = false;
  int thr_axis = 0, blk_axis = 0;               // CUDA axis of the thread / block index
  std::int64_t thr_stride = 1, blk_stride = 1;  // index = (axis_id / stride) % count
  layout elements;  // (block, sm tile, rm step, thread, slot) -> element
  friend bool operator==(const dim_plan&, const dim_plan&) = default;
};

// A global buffer as the kernel sees it: dense row-major with these shape and strides.
struct global_buffer {
  std::string name;  // C identifier in the generated source
  scalar_type type = scalar_type::f32;
  std::vector<std::int64_t> shape, stride;
  std::int64_t elements = 1;
  friend bool operator==(const global_buffer&, const global_buffer&) = default;
};

// A dense row-major buffer of this shape: its strides and element count.
inline global_buffer dense_buffer(std::string name, scalar_type type,
                                  std::vector<std::int64_t> shape) {
  global_buffer g;
  g.name = std::move(name);
  g.type = type;
  g.shape = std::move(shape);
  g.stride.assign(g.shape.size(), 1);
  for (std::size_t j = g.shape.size(); j-- > 1;) g.stride[j - 1] = g.stride[j] * g.shape[j];
  for (auto s : g.shape) g.elements *= s;
  return g;
}

// A shared-memory copy of the part of an input that one block step reads: a dense box in the
// buffer's coordinates with base_k = sum_d base_coeff[k][d] * box_start_d + base_const[k].
// The box is: concat/scan dims: the current rm step (rm_step wide); reduce dims: the sm tile.
struct smem_tile {
  std::size_t input = 0;
  std::string name;
  // box coordinate (one per buffer dimension) -> element offset in the tile: the shape is the
  // box's extent, the strides follow the stored order and padding
  layout box;
  std::vector<std::size_t> order;                     // stored order, outermost first
  std::vector<std::vector<std::int64_t>> base_coeff;  // [k][d]
  std::vector<std::int64_t> base_const;               // [k]
  std::int64_t box_elements = 1;                      // product of extents: elements copied
  std::int64_t elements = 1;                          // storage incl. padding
  std::int64_t offset_bytes = 0;                      // in the block's shared-memory pool
  std::int64_t buffers = 1;        // 2 with prefetch = 2: step s computes on buffer s % 2
  std::int64_t buffer_stride = 0;  // elements from one buffer to the next (16-byte aligned)
  // The copy (copy_schedule pass): elements per global load (1, 2 or 4), whether a vector is
  // stored into the tile in one piece, and each thread's register slots when copies are staged.
  std::int64_t copy_width = 1;
  bool copy_store_vector = false;
  std::int64_t copy_slots = 0;
  // the box in vectors of copy_width: vector f -> coordinates, the row fastest, then the box
  // dimensions in the tile's stored order (copy_schedule's copy_order)
  layout copy_vectors;
  friend bool operator==(const smem_tile&, const smem_tile&) = default;
};

// A vector group (vectorize pass): the register tile of dimension `dim` walked in groups of
// `width` consecutive slots, the first element of each provably a multiple of width. One group
// along the innermost ++ dimension (vec), one along the innermost pw dimension (vec_pw).
struct vector_group {
  std::size_t dim = 0;
  std::int64_t width = 1;
  dim_role role = dim_role::concat;
  friend bool operator==(const vector_group&, const vector_group&) = default;
};

// One read of the scalar function's arguments: access `access` of input `input`, and the groups
// (indices into kernel_plan::vector_groups) that load it as a whole vector before their lane loop;
// shifted_groups, a subset of them (edge_split = 2), load the two aligned vectors that hold a
// group whose start is not provably aligned (rows of odd length), the lanes picked by the start's
// offset.
struct input_read {
  std::size_t input = 0, access = 0;
  std::vector<std::size_t> vector_groups;
  std::vector<std::size_t> shifted_groups;
  friend bool operator==(const input_read&, const input_read&) = default;
};

// A fused pair's input that the second stage takes from the first stage's registers instead of
// reading it again (fuse.hpp, keep_in_registers): both stages map its elements to threads and
// register slots alike, so the first stores each element where it reads it, at slot
// sum_d (q<d> * t_rm_d + r<d>) * weight_d of the thread's array `array`, and the second reads
// it there.
// A keep of a result (`result`): the first stage's output `input` as it stores it, kept by every
// thread that holds it after the combine; the slot leaves out the dimensions the first stage
// reduces (`reduced`), along which the result does not vary.
struct register_keep {
  std::size_t input = 0;      // the stage's input (the first stage's output, for a kept result)
  std::string array;          // declared by the fused kernel before its stages
  bool store = false;         // true: the first stage (stores what it reads); false: the second
  bool result = false;        // a result of the first stage instead of one of its inputs
  std::vector<bool> reduced;  // a kept result's slot: dimensions left out
  friend bool operator==(const register_keep&, const register_keep&) = default;
};

// One write of a result: access `access` of output `output`; vector_store when the write loop
// walks the vec group and this access stores the group's elements as one vector.
struct output_write {
  std::size_t output = 0, access = 0;
  bool vector_store = false;
  friend bool operator==(const output_write&, const output_write&) = default;
};

// How the shared tiles of a reduction step are filled (copy_schedule pass).
//   direct:      barrier; global -> tile; barrier; compute
//   registers:   (before the loop: step 0 -> registers) barrier; registers -> tile; barrier;
//                next step -> registers; compute
//   two_buffers: (before the loop: step 0 -> registers -> buffer 0, barrier, step 1 ->
//                registers) compute on buffer st % 2; registers -> the other buffer; step st + 2
//                -> registers; barrier
enum class tile_staging : std::uint8_t { none, direct, registers, two_buffers };

struct copy_schedule {
  tile_staging staging = tile_staging::none;
  std::int64_t steps = 1;  // the sm tiles of all reduction dimensions as one loop
  // two_buffers: the thread combine of the previous ++ step read scratch that shares the tiles'
  // bytes, so a barrier precedes the first fill.
  bool barrier_before_fill = false;
  friend bool operator==(const copy_schedule&, const copy_schedule&) = default;
};

enum class block_combine_kind : std::uint8_t { none, atomic, second_kernel, last_block };
enum class kernel_kind : std::uint8_t { init, main, final_combine };

struct launch_shape {
  std::int64_t grid[3] = {1, 1, 1};
  std::int64_t block[3] = {1, 1, 1};
  std::int64_t shared_bytes = 0;  // dynamic shared memory
  // thread-block cluster dimensions (sm_90; compiled into the kernel as __cluster_dims__, the
  // grid a multiple of them); 1, 1, 1: no cluster
  std::int64_t cluster[3] = {1, 1, 1};
  friend bool operator==(const launch_shape&, const launch_shape&) = default;
};

struct kernel {
  kernel_kind kind = kernel_kind::main;
  std::string name;
  launch_shape launch;
  friend bool operator==(const kernel&, const kernel&) = default;
};

struct kernel_plan {
  ir::computation comp;
  std::vector<std::int64_t> sizes;
  config cfg;
  device_limits limits;
  std::string name;  // mdh_<computation>_<hash8>, the stem of every kernel name

  std::vector<dim_plan> dims;
  std::vector<std::size_t> concat_dims, scan_dims, reduce_dims;  // loop order within each group
  std::vector<global_buffer> inputs, outputs;
  std::vector<global_buffer> partials;  // one per result component (second kernel, last block)
  // last block only: one int per group of blocks sharing output points, counting the blocks
  // that have written their partials. Zeroed once when the runtime creates the program; the
  // last block resets its group's counter, so launches need no re-initialisation.
  std::vector<global_buffer> counters;
  std::vector<smem_tile> tiles;

  std::int64_t threads = 1;      // per block
  std::int64_t blocks = 1;       // in the grid
  std::int64_t acc_count = 1;    // register accumulators per result component and thread
  std::int64_t red_threads = 1;  // R: threads sharing one output point
  std::int64_t red_blocks = 1;   // RB: blocks sharing one output point
  std::int64_t groups = 1;       // blocks / RB: groups of blocks sharing output points
  std::int64_t points = 1;       // P: iteration points of the non-reduce dimensions
  std::int64_t tiles_bytes = 0, scratch_bytes = 0, shared_bytes = 0;
  bool thread_combine_needed = false;
  thread_combine thr_combine = thread_combine::shared_tree;
  block_combine_kind blk_combine = block_combine_kind::none;
  bool index64 = false;  // some buffer has >= 2^31 elements: index with 64-bit integers
  // Every output is bf16 or f16 and a function computes a float exp or division: those may take
  // the dialect's approximations (c_dialect::approx_math), whose error lies far below the 16-bit
  // rounding of the results.
  bool approx_math = false;
  // last block only: the unroll factor of its loop over the partials, so that independent loads
  // are in flight together (combines pass; the _final kernel's loop stays rolled)
  std::int64_t last_block_unroll = 0;
  std::int64_t prefetch = 0;  // 1: tiles staged in registers one step ahead; 2: also two buffers
  // edge_split: the register loops are printed twice behind a block-uniform branch: an interior
  // path without the guards of the dims marked interior, taken when the ++ step and the
  // reduction tile are whole along them, and the guarded edge path (edge_tiles.hpp).
  bool interior_split = false;

  // Decisions of the vectorize, register_loops and copy_schedule passes (see passes.hpp).
  std::vector<vector_group> vector_groups;  // of the register loops, vec's first
  std::vector<std::size_t> register_order;  // register loops, outermost first
  bool unroll_reduce_steps = false;         // the rm-step loops of the reduction dims
  // Inputs kept in registers between the stages of a fused pair (fuse.hpp), the slots per
  // thread, each dimension's slot weight, and whether the rm-step loops of the ++ dims are
  // unrolled (a kept element's slot must be a constant).
  std::vector<register_keep> keeps;
  std::int64_t keep_slots = 0;
  std::vector<std::int64_t> keep_weight;
  bool unroll_concat_steps = false;
  // A later stage of a fused plan: whether a block barrier comes before it (it reads a result of
  // the earlier stage from memory, or uses the shared memory the earlier stage used).
  bool barrier_before = true;
  std::vector<input_read> reads;     // the scalar function's arguments, in order
  bool vector_write = false;         // the write loop walks vector_groups[0] (vec)
  std::vector<output_write> writes;  // every access of every output, in order
  copy_schedule copies;

  std::vector<kernel> kernels;  // launched in this order

  // The tensor-core path (cfg.mma.on): written by the mma_tiles pass instead of the SIMT passes.
  mma_plan mma;

  // A fused plan (lower): its one kernel runs these stage plans in order, a block barrier
  // between them; the stages' buffers are named after this plan's parameters. Empty otherwise.
  std::vector<kernel_plan> stages;

  // A with_producer pair's plan (producer_passes.hpp): its one kernel computes the producer's
  // tiles where the consumer reads them. Off otherwise.
  producer_plan producer;
  producer_config producer_cfg;

  std::size_t results() const { return comp.outputs.size(); }
  // The type of accumulator component r: the scalar function's result type.
  scalar_type acc_type(std::size_t r) const { return comp.f.result_type(r); }
};

inline const char* to_string(dim_role r) {
  return r == dim_role::concat ? "++" : r == dim_role::reduce ? "pw" : "ps";
}
inline const char* to_string(kernel_kind k) {
  return k == kernel_kind::init ? "init" : k == kernel_kind::main ? "main" : "final_combine";
}

// The buffers of the last-block protocol (c_printer.hpp, detail::print_last_block): the
// partials part0 (`rows` x `cols` floats) and one counter per tile, cnt (zeroed once when the
// runtime creates the program; each tile's last block resets its own).
inline void add_last_block_buffers(kernel_plan& p, std::int64_t rows, std::int64_t cols,
                                   std::int64_t tiles) {
  global_buffer g;
  g.name = "part0";
  g.type = scalar_type::f32;
  g.shape = {rows, cols};
  g.stride = {cols, 1};
  g.elements = rows * cols;
  p.partials.push_back(g);
  global_buffer n;
  n.name = "cnt";
  n.type = scalar_type::i32;
  n.shape = {tiles}, n.stride = {1}, n.elements = tiles;
  p.counters.push_back(n);
}

// The main kernel (the plan also holds init or final_combine kernels for some block combines).
inline const kernel& main_kernel(const kernel_plan& p) {
  for (auto& k : p.kernels)
    if (k.kind == kernel_kind::main) return k;
  throw internal_error("kernel plan " + p.name + " has no main kernel");
}

// Whether every output of p is bf16 or f16 (results rounded to 16 bits).
inline bool all_outputs_16_bit(const kernel_plan& p) {
  return !p.outputs.empty() &&
         std::all_of(p.outputs.begin(), p.outputs.end(),
                     [](const global_buffer& g) { return is_float16(g.type); });
}

// The shared-memory tile of input `input` (cache_inputs makes at most one), or nullptr.
inline const smem_tile* tile_of(const kernel_plan& p, std::size_t input) {
  for (auto& t : p.tiles)
    if (t.input == input) return &t;
  return nullptr;
}

// The keep of stage input `input`, or nullptr.
inline const register_keep* keep_of(const kernel_plan& p, std::size_t input) {
  for (auto& k : p.keeps)
    if (k.input == input && !(k.store && k.result)) return &k;
  return nullptr;
}

// A readable dump: the loop nest with its bounds, tiles, combines and launches (.plan.txt).
inline std::string to_string(const kernel_plan& p) {
  std::ostringstream os;
  if (p.producer.on) {
    os << "plan " << p.name << "\nsizes";
    for (auto s : p.sizes) os << " " << s;
    os << "\nconfig " << to_string(p.producer_cfg) << "\ndevice " << p.limits.name << "\n"
       << to_string(p.producer, p.producer_cfg) << "threads/block=" << p.threads
       << " blocks=" << p.blocks << " shared=" << p.shared_bytes << "\n";
    for (auto& k : p.kernels)
      os << "kernel " << k.name << " grid(" << k.launch.grid[0] << ") block(" << k.launch.block[0]
         << ") shared " << k.launch.shared_bytes << "\n";
    return os.str();
  }
  if (!p.stages.empty()) {
    bool barriers = true;
    for (std::size_t s = 1; s < p.stages.size(); ++s)
      barriers = barriers && p.stages[s].barrier_before;
    os << "fused plan " << p.name << ": one kernel running " << p.stages.size()
       << " stages in order, "
       << (barriers
               ? "a block barrier between them"
               : "no barrier between them (the second reads the first's results from registers)")
       << "\n";
    for (auto& k : p.kernels)
      os << "kernel " << k.name << " grid(" << k.launch.grid[0] << "," << k.launch.grid[1] << ","
         << k.launch.grid[2] << ") block(" << k.launch.block[0] << "," << k.launch.block[1] << ","
         << k.launch.block[2] << ") shared " << k.launch.shared_bytes << "\n";
    for (std::size_t s = 0; s < p.stages.size(); ++s)
      os << "\n---- stage " << s << "\n" << to_string(p.stages[s]);
    return os.str();
  }
  os << "plan " << p.name << "\n" << ir::to_string(p.comp) << "\nsizes";
  for (auto s : p.sizes) os << " " << s;
  os << "\nconfig " << to_string(p.cfg) << "\ndevice " << p.limits.name << "\n";
  if (p.approx_math) os << "math: float exp and division approximate (every output is 16-bit)\n";
  os << "\n";
  if (p.mma.on) {
    std::vector<std::string> names;
    for (auto& d : p.comp.dims) names.push_back(d.name);
    os << to_string(p.mma, names) << "\nthreads/block=" << p.threads << " blocks=" << p.blocks
       << " shared=" << p.shared_bytes << "\nkernels:\n";
    for (auto& k : p.kernels)
      os << "  " << to_string(k.kind) << " " << k.name << " grid(" << k.launch.grid[0] << ","
         << k.launch.grid[1] << "," << k.launch.grid[2] << ") block(" << k.launch.block[0] << ","
         << k.launch.block[1] << "," << k.launch.block[2] << ") shared " << k.launch.shared_bytes
         << "\n";
    return os.str();
  }
  os << "dims:\n";
  const char* axis = "xyz";
  for (auto& d : p.dims)
    os << "  " << d.name << " " << to_string(d.role) << " size=" << d.size << " blk=" << d.blk
       << " chunk=" << d.chunk << " t_sm=" << d.t_sm << " (x" << d.n_sm << ") rm_step=" << d.rm_step
       << " (x" << d.n_rm << ") thr=" << d.thr << " t_rm=" << d.t_rm
       << (d.strided ? " strided" : " blocked") << " thread=" << axis[d.thr_axis] << "/"
       << d.thr_stride << " block=" << axis[d.blk_axis] << "/" << d.blk_stride
       << " elements=" << to_string(d.elements)
       << (d.partial_steps || d.partial_tiles || d.partial_blocks
               ? std::string(" partial:") + (d.partial_steps ? " steps" : "") +
                     (d.partial_tiles ? " tiles" : "") + (d.partial_blocks ? " blocks" : "") +
                     (d.interior ? " (unguarded on the interior path)" : "")
               : std::string())
       << (d.slots_unguarded ? " slots unguarded (stores guarded)" : "") << "\n";
  if (p.interior_split)
    os << "interior path: the register loops without the guards of the dims marked unguarded, "
          "in the ++ steps and reduction tiles that are whole along them; else the edge path\n";
  auto names = [&](const std::vector<std::size_t>& v) {
    std::string s;
    for (auto d : v) s += (s.empty() ? "" : ",") + p.dims[d].name;
    return s.empty() ? std::string("-") : s;
  };
  os << "\nloop nest (per thread):\n"
     << "  for sm tiles of [" << names(p.concat_dims) << "]\n"
     << "   for rm steps of [" << names(p.concat_dims) << "]"
     << (p.unroll_concat_steps ? " (unrolled)" : "") << "\n";
  if (!p.scan_dims.empty())
    os << "    carry = identity\n    for sm tiles, rm steps of [" << names(p.scan_dims) << "]\n";
  os << "     acc[" << p.acc_count << "] = identity\n"
     << "     for sm tiles of [" << names(p.reduce_dims) << "]\n";
  for (auto& t : p.tiles) {
    os << "       copy " << p.comp.inputs[t.input].name << " -> " << t.name << " box "
       << to_string(t.box) << " (" << t.elements << " elements at byte " << t.offset_bytes
       << (t.buffers > 1 ? ", 2 buffers" : "") << ")";
    if (p.copies.staging != tile_staging::none) {  // after copy_schedule
      os << ", " << t.copy_width << "-element loads"
         << (t.copy_width > 1 ? (t.copy_store_vector ? ", vector stores" : ", element stores") : "")
         << ", vectors " << to_string(t.copy_vectors);
      if (p.copies.staging != tile_staging::direct)
        os << ", staged in " << t.copy_slots << " registers per thread";
    }
    os << "\n";
  }
  if (p.copies.staging != tile_staging::none)
    os << "       staging "
       << (p.copies.staging == tile_staging::direct      ? "direct: barrier, copy, barrier"
           : p.copies.staging == tile_staging::registers ? "registers one step ahead: barrier, "
                                                           "registers -> tile, barrier, next loads"
                                                         : "two buffers: one barrier per step")
       << (p.copies.barrier_before_fill ? "; a barrier before the first fill" : "") << "\n";
  os << "       for rm steps of [" << names(p.reduce_dims) << "]"
     << (p.reduce_dims.empty()   ? ""
         : p.unroll_reduce_steps ? " (unrolled)"
                                 : " (not unrolled)")
     << ": unrolled register loops [" << names(p.register_order) << "]: acc "
     << (p.comp.has_reduction() ? "(+)=" : "=") << " f(...)\n";
  for (auto& g : p.vector_groups)
    os << "         vector group: " << p.dims[g.dim].name << " in groups of " << g.width << "\n";
  for (std::size_t a = 0; a < p.reads.size(); ++a) {
    const auto& r = p.reads[a];
    const register_keep* keep = keep_of(p, r.input);
    os << "         arg " << a << ": " << p.comp.inputs[r.input].name << " access " << r.access
       << (keep && !keep->store ? std::string(keep->result ? " (the first stage's result)" : "") +
                                      " from the first stage's registers (" + keep->array + ")"
           : tile_of(p, r.input) ? std::string(" from its tile")
                                 : std::string(" from global memory"))
       << (keep && keep->store
               ? ", kept in " + keep->array + " (" + std::to_string(p.keep_slots) + " per thread)"
               : std::string());
    if (keep && !keep->store) {
      os << "\n";
      continue;
    }
    for (auto g : r.vector_groups)
      os << ", " << p.vector_groups[g].width * std::int64_t(size_of(p.inputs[r.input].type))
         << "-byte vector loads along " << p.dims[p.vector_groups[g].dim].name
         << (std::find(r.shifted_groups.begin(), r.shifted_groups.end(), g) !=
                     r.shifted_groups.end()
                 ? " (two aligned per group: start not aligned)"
                 : "");
    os << "\n";
  }
  if (p.thread_combine_needed)
    os << "     combine over " << p.red_threads << " threads by "
       << (p.thr_combine == thread_combine::warp_shuffle ? "warp shuffles" : "shared-memory tree")
       << "\n";
  if (!p.scan_dims.empty()) os << "     scan acc with carry\n";
  os << "     write: "
     << (p.blk_combine == block_combine_kind::atomic          ? "atomic combine into outputs"
         : p.blk_combine == block_combine_kind::second_kernel ? "partials[block]"
         : p.blk_combine == block_combine_kind::last_block
             ? "partials[block]; the group's last block combines them into outputs"
             : "outputs")
     << (p.vector_write ? ", walking the vector group" : "") << "\n";
  if (p.comp.epilogue)
    os << "     epilogue " << p.comp.epilogue->name
       << " on the final values, in registers, where the outputs are written\n";
  for (auto& w : p.writes)
    if (w.vector_store)
      os << "       " << ir::kernel_outputs(p.comp)[w.output].name << " access " << w.access << ": "
         << p.vector_groups[0].width * std::int64_t(size_of(p.outputs[w.output].type))
         << "-byte vector stores\n";
  for (auto& k : p.keeps)
    if (k.store && k.result)
      os << "     keep: " << ir::kernel_outputs(p.comp)[k.input].name << " as stored, in "
         << k.array << " (every thread of the combine), for the next stage\n";
  os << "\nthreads/block=" << p.threads << " blocks=" << p.blocks << " acc=" << p.acc_count
     << " red_threads=" << p.red_threads << " red_blocks=" << p.red_blocks
     << " shared=" << p.shared_bytes << " (tiles " << p.tiles_bytes << ", scratch "
     << p.scratch_bytes << ")\nkernels:\n";
  for (auto& k : p.kernels)
    os << "  " << to_string(k.kind) << " " << k.name << " grid(" << k.launch.grid[0] << ","
       << k.launch.grid[1] << "," << k.launch.grid[2] << ") block(" << k.launch.block[0] << ","
       << k.launch.block[1] << "," << k.launch.block[2] << ") shared " << k.launch.shared_bytes
       << "\n";
  return os.str();
}

}  // namespace mdh::lower
