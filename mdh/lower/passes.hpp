// SPDX-License-Identifier: MIT
// The lowering passes, each filling one part of a kernel_plan, and run_all(), which runs them in
// order; lower() checks the configuration first and the finished plan last (check.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/conversions.hpp>
#include <mdh/lower/copy_schedule.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/edge_tiles.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/mma.hpp>
#include <mdh/lower/register_loops.hpp>
#include <mdh/lower/vectorize.hpp>

namespace mdh::lower::passes {

// 1. Partition: per dimension its role, chunk per block, tile sizes and loop trip counts; with
//    edge_split, chunks in whole tiles, the guards its partial tiles need and whether an interior
//    path drops them (edge_tiles.hpp).
inline void partition(kernel_plan& p) {
  const auto& c = p.comp;
  const bool edges = p.cfg.edge_split != 0;
  const bool reduction_tiles = edges && reduction_tiles_split(p.cfg, p.limits);
  p.dims.clear();
  p.concat_dims.clear(), p.scan_dims.clear(), p.reduce_dims.clear();
  for (std::size_t d = 0; d < c.rank(); ++d) {
    const dim_config& x = p.cfg.dims.at(d);
    dim_plan dp;
    dp.name = c.dims[d].name;
    dp.role = c.dims[d].combine == ir::combine_kind::concat      ? dim_role::concat
              : c.dims[d].combine == ir::combine_kind::pointwise ? dim_role::reduce
                                                                 : dim_role::scan;
    dp.size = p.sizes[d];
    dp.blk = x.blk, dp.thr = x.thr, dp.t_rm = x.t_rm, dp.strided = x.strided;
    dp.chunk = ceil_div(dp.size, dp.blk);
    dp.t_sm = std::min(x.t_sm, dp.chunk);  // a tile larger than the chunk walks only the chunk
    dp.rm_step = dp.thr * dp.t_rm;
    if (edges) {  // the chunk in whole tiles where it can be
      // whole vectors of the widest group (16-bit: 8); 4 otherwise, as before 8 existed
      const std::int64_t vector = std::max<std::int64_t>({4, p.cfg.vec, p.cfg.vec_pw});
      const chunking ch = chunk_in_whole_tiles(dp.size, dp.blk, x.t_sm, dp.rm_step, vector);
      dp.chunk = ch.chunk, dp.t_sm = ch.t_sm;
    }
    dp.n_sm = ceil_div(dp.chunk, dp.t_sm);
    dp.n_rm = ceil_div(dp.t_sm, dp.rm_step);
    dp.thr_axis = x.thr_map, dp.blk_axis = x.blk_map;
    dp.elements = {
        {dp.blk, dp.n_sm, dp.n_rm, dp.thr, dp.t_rm},
        {dp.chunk, dp.t_sm, dp.rm_step, dp.strided ? 1 : dp.t_rm, dp.strided ? dp.thr : 1}};
    if (edges) mark_partial_tiles(dp, reduction_tiles);
    p.dims.push_back(dp);
    (dp.role == dim_role::concat ? p.concat_dims
     : dp.role == dim_role::scan ? p.scan_dims
                                 : p.reduce_dims)
        .push_back(d);
  }
  p.interior_split = edges && needs_interior_split(p);
}

// 2. Map threads and blocks onto the CUDA axes: dims sharing an axis fold row-major into it.
inline void map_threads(kernel_plan& p) {
  launch_shape& l = p.kernels.emplace_back().launch;
  for (int a = 0; a < 3; ++a) {
    std::int64_t ts = 1, bs = 1;
    for (std::size_t d = p.dims.size(); d-- > 0;) {
      auto& dp = p.dims[d];
      if (dp.thr_axis == a) dp.thr_stride = ts, ts *= dp.thr;
      if (dp.blk_axis == a) dp.blk_stride = bs, bs *= dp.blk;
    }
    l.block[a] = ts, l.grid[a] = bs;
  }
  p.threads = l.block[0] * l.block[1] * l.block[2];
  p.blocks = l.grid[0] * l.grid[1] * l.grid[2];
  p.acc_count = p.red_threads = p.red_blocks = p.points = 1;
  for (auto& dp : p.dims) {
    if (dp.role == dim_role::reduce) {
      p.red_threads *= dp.thr, p.red_blocks *= dp.blk;
    } else {
      p.acc_count *= dp.t_rm, p.points *= dp.size;
    }
  }
  p.kernels.back().kind = kernel_kind::main;
}

// 3. Global buffers: shapes from the index functions, dense row-major.
inline void global_buffers(kernel_plan& p) {
  auto make = [&](const ir::buffer& b, const std::string& prefix, std::size_t k) {
    global_buffer g =
        dense_buffer(prefix + std::to_string(k), b.type, ir::buffer_shape(p.comp, b, p.sizes));
    if (g.elements >= (std::int64_t(1) << 31)) p.index64 = true;
    return g;
  };
  p.inputs.clear(), p.outputs.clear();
  // The kernel's buffers: with an epilogue, its own inputs follow the computation's, and its
  // outputs are written instead of the computation's.
  const std::vector<ir::buffer> ins = ir::kernel_inputs(p.comp);
  const std::vector<ir::buffer>& outs = ir::kernel_outputs(p.comp);
  for (std::size_t k = 0; k < ins.size(); ++k) p.inputs.push_back(make(ins[k], "in", k));
  for (std::size_t k = 0; k < outs.size(); ++k) p.outputs.push_back(make(outs[k], "out", k));
  if (p.points * std::max<std::int64_t>(p.red_blocks, 1) >= (std::int64_t(1) << 31))
    p.index64 = true;
  // Results rounded to 16 bits (2^-9 relative for bf16, 2^-12 for f16) do not need IEEE float
  // exp and division: their slow paths and range reductions made the bf16 softmax issue-bound.
  p.approx_math = all_outputs_16_bit(p) && uses_f32_exp_or_division(p.comp);
}

// The box of iteration space one block step touches in dimension d (see smem_tile).
inline std::int64_t box_extent(const dim_plan& d) {
  return d.role == dim_role::reduce ? d.t_sm : d.rm_step;
}

// 4. Caching: one shared-memory tile per input with cache_<b> = shared.
inline void cache_inputs(kernel_plan& p) {
  p.tiles.clear();
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < p.comp.inputs.size(); ++b) {
    const input_config& ic = p.cfg.inputs.at(b);
    if (ic.cache != cache_kind::shared) continue;
    const ir::buffer& buf = p.comp.inputs[b];
    smem_tile t;
    t.input = b;
    t.name = "in" + std::to_string(b) + "_s";
    const std::size_t rank = buf.rank;
    t.box.shape.assign(rank, 1), t.box.stride.assign(rank, 1), t.base_const.assign(rank, 0);
    t.base_coeff.assign(rank, std::vector<std::int64_t>(p.dims.size(), 0));
    for (std::size_t k = 0; k < rank; ++k) {
      std::int64_t lo = buf.accesses[0].index[k].offset, hi = lo;
      for (auto& a : buf.accesses)
        lo = std::min(lo, a.index[k].offset), hi = std::max(hi, a.index[k].offset);
      std::int64_t ext = hi - lo + 1, base = lo;
      for (std::size_t d = 0; d < p.dims.size(); ++d) {
        std::int64_t cf = buf.accesses[0].index[k].coeff[d];
        std::int64_t e = box_extent(p.dims[d]);
        t.base_coeff[k][d] = cf;
        ext += (cf < 0 ? -cf : cf) * (e - 1);
        if (cf < 0) base += cf * (e - 1);
      }
      t.box.shape[k] = ext, t.base_const[k] = base;
    }
    for (std::size_t k = 0; k < rank; ++k) t.order.push_back(k);
    if (ic.transpose == 1 && rank >= 2) std::swap(t.order[rank - 1], t.order[rank - 2]);
    if (ic.transpose == 2) std::rotate(t.order.begin(), t.order.begin() + 1, t.order.end());
    std::int64_t s = 1;
    for (std::size_t j = rank; j-- > 0;) {
      std::size_t k = t.order[j];
      t.box.stride[k] = s;
      s *= t.box.shape[k] + (j + 1 == rank ? ic.pad : 0);
    }
    t.elements = s;
    t.box_elements = 1;
    t.box_elements = t.box.size();
    offset = ceil_div(offset, 16) * 16;
    t.offset_bytes = offset;
    const std::int64_t size = std::int64_t(size_of(buf.type));
    t.buffers = p.cfg.prefetch == 2 && !p.reduce_dims.empty() ? 2 : 1;
    t.buffer_stride = ceil_div(t.elements * size, 16) * 16 / size;
    offset += (t.buffers - 1) * t.buffer_stride * size + t.elements * size;
    p.tiles.push_back(std::move(t));
  }
  p.tiles_bytes = offset;
}

// 5. Combines: across the threads of a block and across blocks, and the partials buffers.
inline void combines(kernel_plan& p) {
  p.thread_combine_needed = p.red_threads > 1;
  p.thr_combine = p.cfg.thr_combine;
  p.prefetch = p.cfg.prefetch;
  p.scratch_bytes = 0;
  const std::int64_t warp = p.limits.warp_size;
  if (p.thread_combine_needed && p.thr_combine == thread_combine::warp_shuffle &&
      p.red_threads > warp) {
    // warp totals: one slot per warp of each output group
    for (std::size_t r = 0; r < p.results(); ++r) {
      p.scratch_bytes = ceil_div(p.scratch_bytes, 16) * 16;
      p.scratch_bytes += p.acc_count * (p.threads / warp) * std::int64_t(size_of(p.acc_type(r)));
    }
  }
  if (p.thread_combine_needed && p.thr_combine == thread_combine::shared_tree) {
    for (std::size_t r = 0; r < p.results(); ++r) {
      p.scratch_bytes = ceil_div(p.scratch_bytes, 16) * 16;
      p.scratch_bytes += p.acc_count * p.threads * std::int64_t(size_of(p.acc_type(r)));
    }
  }
  // The scratch reuses the tiles' bytes: a barrier separates the last read of the tiles.
  p.shared_bytes = std::max(p.tiles_bytes, p.scratch_bytes);
  p.blk_combine = block_combine_kind::none;
  p.last_block_unroll = 0;
  p.partials.clear(), p.counters.clear();
  p.groups = p.blocks / p.red_blocks;
  if (p.red_blocks > 1) {
    p.blk_combine = p.cfg.blk_combine == block_combine::atomic ? block_combine_kind::atomic
                    : p.cfg.blk_combine == block_combine::last_block
                        ? block_combine_kind::last_block
                        : block_combine_kind::second_kernel;
    if (p.blk_combine != block_combine_kind::atomic)
      for (std::size_t r = 0; r < p.results(); ++r) {
        global_buffer g;
        g.name = "part" + std::to_string(r);
        g.type = p.acc_type(r);
        g.shape = {p.red_blocks, p.points};
        g.stride = {p.points, 1};
        g.elements = p.red_blocks * p.points;
        p.partials.push_back(g);
      }
    if (p.blk_combine == block_combine_kind::last_block) {
      p.last_block_unroll = 16;
      global_buffer g;
      g.name = "cnt";
      g.type = scalar_type::i32;
      g.shape = {p.groups}, g.stride = {1}, g.elements = p.groups;
      p.counters.push_back(g);
    }
  }
}

inline std::string hash8(const kernel_plan& p) {
  ir::fnv1a h;
  h.u64(ir::structural_hash(p.comp));
  for (auto s : p.sizes) h.i64(s);
  for (auto& [n, v] : to_map(p.cfg)) h.str(n), h.i64(v);
  h.str(p.limits.name);
  return ir::hex16(h.value()).substr(0, 8);
}

// A name as a C identifier stem: every character that is not a letter or digit becomes '_'.
inline std::string identifier_stem(const std::string& name, const char* fallback) {
  std::string stem;
  for (char ch : name) stem += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  return stem.empty() ? std::string(fallback) : stem;
}

// mdh_<computation>_<hash8>: the stem of every kernel name, from the pipeline's inputs alone.
inline std::string plan_name(const kernel_plan& p) {
  return "mdh_" + identifier_stem(p.comp.name, "kernel") + "_" + hash8(p);
}

// 10. Kernels: names, launch shapes; init (atomics) and final_combine (second kernel) kernels
//    walk the P output points grid-stride with 256 threads per block.
inline void kernels(kernel_plan& p) {
  p.name = plan_name(p);
  kernel main = p.kernels.at(0);
  main.name = p.name;
  main.launch.shared_bytes = p.shared_bytes;
  p.kernels.clear();
  kernel aux;
  aux.launch.block[0] = std::min<std::int64_t>(256, p.limits.max_threads_per_block);
  aux.launch.grid[0] = std::min<std::int64_t>(ceil_div(p.points, aux.launch.block[0]), 65535);
  if (p.blk_combine == block_combine_kind::atomic) {
    aux.kind = kernel_kind::init, aux.name = p.name + "_init";
    p.kernels.push_back(aux);
  }
  p.kernels.push_back(main);
  if (p.blk_combine == block_combine_kind::second_kernel) {
    aux.kind = kernel_kind::final_combine, aux.name = p.name + "_final";
    p.kernels.push_back(aux);
  }
}

// A pass: its name (in dumps and docs) and the function that writes its part of the plan.
struct named_pass {
  const char* name;
  void (*run)(kernel_plan&);
};

// The passes in the order they run. The performance decisions are vector_groups, register_loops,
// vector_accesses and copy_schedule; the printer prints what they wrote.
inline const std::array<named_pass, 10>& pipeline() {
  static const std::array<named_pass, 10> passes{{{"partition", partition},
                                                  {"map_threads", map_threads},
                                                  {"global_buffers", global_buffers},
                                                  {"cache_inputs", cache_inputs},
                                                  {"combines", combines},
                                                  {"vector_groups", vector_groups},
                                                  {"register_loops", register_loops},
                                                  {"vector_accesses", vector_accesses},
                                                  {"copy_schedule", copy_schedule},
                                                  {"kernels", kernels}}};
  return passes;
}

// The passes of the tensor-core path (cfg.mma.on): the buffers, the tiles and fragments of the
// mma.sync kernel (mma.hpp), the kernel names.
inline const std::array<named_pass, 3>& mma_pipeline() {
  static const std::array<named_pass, 3> passes{
      {{"global_buffers", global_buffers}, {"mma_tiles", mma_tiles}, {"kernels", kernels}}};
  return passes;
}

// Called after each pass with its name and the plan so far (lower() dumps it with MDH_DUMP_DIR).
using pass_observer = std::function<void(const char* pass, const kernel_plan&)>;

// All passes in order, without checking the configuration (check_config comes first, check_plan
// last; see check.hpp and lower.hpp).
inline kernel_plan run_all(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                           const config& cfg, const device_limits& limits,
                           const pass_observer& after = {}) {
  kernel_plan p;
  p.comp = comp, p.sizes = sizes, p.cfg = cfg, p.limits = limits;
  p.name = plan_name(p);
  auto run = [&](const auto& passes) {
    for (const named_pass& pass : passes) {
      pass.run(p);
      if (after) after(pass.name, p);
    }
  };
  if (cfg.mma.on)
    run(mma_pipeline());
  else
    run(pipeline());
  return p;
}

}  // namespace mdh::lower::passes
