// SPDX-License-Identifier: MIT
// Lowering a with_producer pair (ir::produced; attention) to one kernel: passes that write the
// producer_plan (roles, partition, global buffers, shared tiles, kernels, check), then
// producer_printer.hpp prints it. The kernel (per block: one coordinate of every batch
// dimension, t_i consumer rows):
//
//   copy the row operands (Q) of the block's rows into shared tiles
//   (m, l, acc)[rows x values per thread] = identity of the consumer's operator
//   for steps of t_j keys:
//     copy the column operands (K) and the value tile (V) of the step
//     s[rows x keys per thread] = +_d f_producer(row operands, column operands)   registers
//     s = producer epilogue (scale, mask); keys past the end: -inf
//     tile fold of f_consumer(s, v) = (s, 1, v) under online_softmax, in closed form:
//       m_t = max(m, row max of s), p = exp(s - m_t) (shared), l_t = row sum of p,
//       acc_t = p V
//     (m, l, acc) = (m, l, acc) (+) (m_t, l_t, acc_t)          the consumer's operator, printed
//   write the consumer's epilogue (acc / l) of (m, l, acc)
//
// The tile fold is the online-softmax operator's closed form (the fold of (s, 1, v) over a
// tile with the tile's max as reference), so the roles pass checks, on samples, that the
// consumer's scalar function is (s, 1, v) and its operator that law; any other pair is
// refused with the rule it breaks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/evaluate.hpp>
#include <mdh/ir/with_producer.hpp>
#include <mdh/lower/affine.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/dump.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/passes.hpp>
#include <mdh/lower/producer_plan.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/lower/rules.hpp>

namespace mdh::lower {

namespace producer_passes {

[[noreturn]] inline void refuse(const ir::produced& x, const std::string& rule,
                                const std::string& detail) {
  throw error("with_producer '" + x.name + "' cannot be lowered: " + rule + " (" + detail + ")");
}
[[noreturn]] inline void violated(const std::string& param, const std::string& rule,
                                  const std::string& detail) {
  throw error("producer configuration violates '" + rule + "' (parameter " + param +
              "): " + detail);
}

inline bool close(double a, double b) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-5 * (std::fabs(a) + std::fabs(b)) + 1e-30;
}

// 1. Roles: which consumer dimension is the rows, the keys, the values; which producer dimension
// the depth; which producer reads are row or column operands. Checks the structure.
inline void roles(kernel_plan& kp) {
  producer_plan& p = kp.producer;
  const ir::produced& x = p.x;
  const ir::computation &pc = x.producer, &cc = x.consumer;
  // consumer: one pw dimension (the keys), no scans
  int key = -1;
  for (std::size_t d = 0; d < cc.rank(); ++d) {
    if (cc.dims[d].combine == ir::combine_kind::prefix_sum)
      refuse(x, "the consumer has no scan dimension", "'" + cc.dims[d].name + "' is ps");
    if (cc.dims[d].combine == ir::combine_kind::pointwise) {
      if (key >= 0)
        refuse(x, "the consumer reduces over one dimension",
               "'" + cc.dims[std::size_t(key)].name + "' and '" + cc.dims[d].name + "'");
      key = int(d);
    }
  }
  if (key < 0) refuse(x, "the consumer reduces over one dimension", "it has none");
  p.key_dim = std::size_t(key);
  auto produced_dim = [&](std::size_t d) {
    return std::find(x.dim_of.begin(), x.dim_of.end(), int(d)) != x.dim_of.end();
  };
  if (!produced_dim(p.key_dim))
    refuse(x, "the consumer reduces over a dimension of the produced buffer",
           "'" + cc.dims[p.key_dim].name + "' does not index it");
  std::vector<std::size_t> rows, values;
  for (std::size_t d = 0; d < cc.rank(); ++d)
    if (d != p.key_dim) (produced_dim(d) ? rows : values).push_back(d);
  if (rows.empty())
    refuse(x, "the produced buffer has a row dimension besides the keys", "it has none");
  if (values.size() != 1)
    refuse(x, "the consumer has one dimension that the produced buffer does not index (values)",
           std::to_string(values.size()) + " such dimensions");
  p.row_dim = rows.back();
  p.batch_dims.assign(rows.begin(), rows.end() - 1);
  p.value_dim = values[0];
  // consumer: (s, v) -> (s, 1, v) under the online-softmax law
  if (cc.inputs.size() != 2 || cc.num_args() != 2 || cc.outputs.size() != 3)
    refuse(x,
           "the consumer reads the produced buffer and one value buffer, once each, and has "
           "three results (m, l, acc)",
           std::to_string(cc.num_args()) + " reads, " + std::to_string(cc.outputs.size()) +
               " results");
  const std::size_t vin = 1 - x.read;
  p.value_access = 0;
  for (const double s : {2.5, -7.25})
    for (const double v : {-1.5, 0.75}) {
      std::vector<double> a(2);
      a[x.read] = s, a[vin] = v;
      auto r = ir::evaluate(cc.f, a);
      if (!close(r[0], s) || !close(r[1], 1) || !close(r[2], v))
        refuse(x, "the consumer's scalar function is f(s, v) = (s, 1, v)",
               "f(" + std::to_string(s) + ", " + std::to_string(v) + ") = (" +
                   std::to_string(r[0]) + ", " + std::to_string(r[1]) + ", " +
                   std::to_string(r[2]) + ")");
    }
  if (cc.reduction.kind != ir::builtin::custom || cc.reduction.identity.size() != 3 ||
      !(std::isinf(cc.reduction.identity[0]) && cc.reduction.identity[0] < 0) ||
      cc.reduction.identity[1] != 0 || cc.reduction.identity[2] != 0)
    refuse(x, "the consumer's operator is online_softmax with identity (-inf, 0, 0)",
           "'" + cc.reduction.name + "'");
  const double samples[][6] = {{0.5, 2, 3, 1.5, 1, -2},
                               {-3, 1, 1, -3, 2, 0.5},
                               {4, 0.25, -1, -10, 3, 7},
                               {-INFINITY, 0, 0, 1, 2, 3}};
  for (auto& q : samples) {
    const double m = std::max(q[0], q[3]);
    const double e1 = q[0] == m ? 1 : std::exp(q[0] - m), e2 = q[3] == m ? 1 : std::exp(q[3] - m);
    auto r = ir::evaluate(cc.reduction.custom, std::vector<double>(q, q + 6));
    if (!close(r[0], m) || !close(r[1], q[1] * e1 + q[4] * e2) ||
        !close(r[2], q[2] * e1 + q[5] * e2))
      refuse(x, "the consumer's operator is online_softmax (m, l, acc)",
             "'" + cc.reduction.name + "' differs on a sample");
  }
  // producer: one pw(add) dimension (the depth)
  int depth = -1;
  for (std::size_t d = 0; d < pc.rank(); ++d)
    if (pc.is_reduction(d)) {
      if (depth >= 0) refuse(x, "the producer reduces over one dimension", "it reduces over two");
      depth = int(d);
    }
  if (depth < 0 || pc.reduction.kind != ir::builtin::add)
    refuse(x, "the producer is a contraction: one pw(add) dimension", "'" + pc.name + "'");
  p.depth_dim = std::size_t(depth);
  std::size_t prow = 0, pkey = 0;
  for (std::size_t d = 0; d < pc.rank(); ++d) {
    if (x.dim_of[d] == int(p.row_dim)) prow = d;
    if (x.dim_of[d] == int(p.key_dim)) pkey = d;
  }
  p.operands.clear();
  std::size_t arg = 0;
  const auto kin = ir::kernel_inputs(pc);
  for (std::size_t b = 0; b < pc.inputs.size(); ++b)
    for (std::size_t a = 0; a < pc.inputs[b].accesses.size(); ++a, ++arg) {
      bool uses_row = false, uses_key = false;
      for (auto& ix : pc.inputs[b].accesses[a].index)
        uses_row = uses_row || ix.uses(prow), uses_key = uses_key || ix.uses(pkey);
      if (uses_row && uses_key)
        refuse(x, "every read of the producer depends on the rows or on the keys, not both",
               "'" + pc.inputs[b].name + "' access " + std::to_string(a) + " uses '" +
                   pc.dims[prow].name + "' and '" + pc.dims[pkey].name + "'");
      producer_operand o;
      o.input = b, o.access = a, o.kernel_input = b, o.row = !uses_key;
      p.operands.push_back(o);
    }
  // the value buffer: its kernel parameter (the pair's inputs list it by name)
  for (std::size_t k = 0; k < x.inputs.size(); ++k)
    if (x.inputs[k].name == cc.inputs[vin].name) p.value_input = k;
  for (auto& ix : cc.inputs[vin].accesses[0].index)
    if (ix.uses(p.row_dim))
      refuse(x, "the value buffer does not depend on the rows",
             "'" + cc.inputs[vin].name + "' uses '" + cc.dims[p.row_dim].name + "'");
  const auto ps = ir::producer_sizes(x, kp.sizes);
  p.rows = kp.sizes[p.row_dim], p.keys = kp.sizes[p.key_dim];
  p.values = kp.sizes[p.value_dim], p.depth = ps[p.depth_dim];
}

// The depth and the values of the tensor-core kernel: rounded up to the instruction's 16 (zeros
// past the end).
inline std::int64_t mma_padded(std::int64_t n) { return ceil_div(n, 16) * 16; }

// 2. Partition: threads, register tiles, blocks and steps.
inline void partition(kernel_plan& kp) {
  producer_plan& p = kp.producer;
  const producer_config& c = kp.producer_cfg;
  p.row_blocks = ceil_div(p.rows, c.t_i);
  p.key_steps = ceil_div(p.keys, c.t_j);
  p.batch_blocks = 1;
  for (auto d : p.batch_dims) p.batch_blocks *= kp.sizes[d];
  kp.threads = c.thr_i * c.thr_j;  // with mma: thr_i warps (thr_j = 32)
  kp.blocks = p.batch_blocks * p.row_blocks * c.split;
  if (c.mma) {  // a warp per 16 or 32 rows; each lane holds fragments, not rows
    p.depth_padded = mma_padded(p.depth);
    p.values_padded = mma_padded(p.values);
    p.rows_partial = p.rows % c.t_i != 0;
    p.keys_partial = p.keys % c.t_j != 0;
    p.rows_per_thread = p.keys_per_thread = p.values_per_thread = 0;
    kp.acc_count = c.t_i / c.thr_i * p.values_padded / 32;  // a warp's rows x values, by lane
    return;
  }
  p.rows_per_thread = c.t_i / c.thr_i;
  p.keys_per_thread = c.t_j / c.thr_j;
  p.values_per_thread = ceil_div(p.values, c.thr_j);
  kp.acc_count = p.rows_per_thread * p.values_per_thread;
}

// 3. Global buffers: the pair's inputs at the producer's sizes (its own) or the consumer's, the
// outputs at the consumer's; dense row-major.
inline void global_buffers(kernel_plan& kp) {
  const ir::produced& x = kp.producer.x;
  const auto ps = ir::producer_sizes(x, kp.sizes), cs = ir::consumer_sizes(x, kp.sizes);
  const auto pin = ir::kernel_inputs(x.producer);
  auto make = [&](const ir::buffer& b, const std::string& name, bool producer) {
    global_buffer g = dense_buffer(
        name, b.type,
        producer ? ir::buffer_shape(x.producer, b, ps) : ir::buffer_shape(x.consumer, b, cs));
    if (g.elements >= (std::int64_t(1) << 31)) kp.index64 = true;
    return g;
  };
  kp.inputs.clear(), kp.outputs.clear();
  for (std::size_t k = 0; k < x.inputs.size(); ++k)
    kp.inputs.push_back(make(x.inputs[k], "in" + std::to_string(k), k < pin.size()));
  for (std::size_t k = 0; k < x.outputs.size(); ++k)
    kp.outputs.push_back(make(x.outputs[k], "out" + std::to_string(k), false));
  // split keys (mma): each block's (m, l) of its rows and acc, per thread (split_floats), and one
  // counter per row tile (zeroed once; the tile's last block resets it)
  kp.partials.clear(), kp.counters.clear();
  const producer_config& c = kp.producer_cfg;
  if (c.split > 1) {
    const std::int64_t tiles = kp.producer.batch_blocks * kp.producer.row_blocks;
    add_last_block_buffers(kp, tiles * c.split * kp.threads,
                           split_floats(c, kp.producer.values_padded), tiles);
  }
}

// Whether a read's tile rows can be copied as 16-byte chunks: 16-bit elements, the row's
// dimension `along` contiguous (coefficient 1) and `extent` (its length) a multiple of 8, every
// other coefficient and the constant multiples of 8 elements, so that every row starts 16-byte
// aligned (the buffers themselves are 256-byte aligned allocations).
inline bool chunk_aligned(const ir::access& a, const global_buffer& g, std::size_t rank,
                          std::size_t along, std::int64_t extent) {
  if (size_of(g.type) != 2 || extent % 8 != 0) return false;
  const flat_access f = flatten(a, g, rank);
  if (f.coeff[along] != 1 || f.constant % 8 != 0) return false;
  for (std::size_t d = 0; d < rank; ++d)
    if (d != along && f.coeff[d] % 8 != 0) return false;
  return true;
}

// mma: the operands' and the values' copy modes (16-byte cp.async chunks where every tile row is
// aligned, chunk_aligned; else element by element).
inline void copy_mode(kernel_plan& kp) {
  producer_plan& p = kp.producer;
  const ir::produced& x = p.x;
  p.operand_chunks = true;
  for (auto& o : p.operands)
    p.operand_chunks =
        p.operand_chunks &&
        chunk_aligned(x.producer.inputs[o.input].accesses[o.access], kp.inputs[o.kernel_input],
                      x.producer.rank(), p.depth_dim, p.depth);
  p.value_chunks =
      chunk_aligned(x.consumer.inputs[1 - x.read].accesses[0], kp.inputs[p.value_input],
                    x.consumer.rank(), p.value_dim, p.values);
}

// 4. Shared memory: the operand tiles (stored type, rows padded), the value tile, p and the
// partial row maxima and sums (accumulation type), each 16-byte aligned. `place` lays them out
// for a configuration (writing the offsets when `out`), so that the shared-memory rule and the
// pass compute one number.
inline std::int64_t place_shared(const kernel_plan& kp, const producer_config& c,
                                 producer_plan* out) {
  const producer_plan& p = kp.producer;
  std::int64_t at = 0;
  auto place = [&](std::int64_t bytes) {
    const std::int64_t o = at;
    at += (bytes + 15) / 16 * 16;
    return o;
  };
  if (c.mma) {  // 16-bit tiles: the row operand once, the column operands and values per stage
    const std::int64_t dp = mma_padded(p.depth), vp = mma_padded(p.values);
    for (std::size_t k = 0; k < p.operands.size(); ++k) {
      const producer_operand& o = p.operands[k];
      const std::int64_t extent = o.row ? c.t_i : c.t_j, stride = dp + c.pad;
      const std::int64_t stage = extent * stride * 2, off = place(stage * (o.row ? 1 : c.stages));
      if (out)
        out->operands[k].extent = extent, out->operands[k].stride = stride,
        out->operands[k].offset_bytes = off, out->operands[k].stage_bytes = o.row ? 0 : stage;
    }
    const std::int64_t vstage = c.t_j * (vp + c.pad) * 2, v = place(vstage * c.stages);
    if (out)
      out->value_offset_bytes = v, out->value_stride = vp + c.pad, out->value_stage_bytes = vstage;
    return at;
  }
  for (std::size_t k = 0; k < p.operands.size(); ++k) {
    const producer_operand& o = p.operands[k];
    const std::int64_t extent = o.row ? c.t_i : c.t_j, stride = p.depth + c.pad;
    const std::int64_t off =
        place(extent * stride * std::int64_t(size_of(kp.inputs[o.kernel_input].type)));
    if (out)
      out->operands[k].extent = extent, out->operands[k].stride = stride,
      out->operands[k].offset_bytes = off;
  }
  const std::int64_t acc = std::int64_t(size_of(p.x.consumer.f.result_type(0)));
  const std::int64_t v =
      place(c.t_j * p.values * std::int64_t(size_of(kp.inputs[p.value_input].type)));
  const std::int64_t pp = place(c.t_i * (c.t_j + c.pad) * acc);
  const std::int64_t rm = place(c.t_i * c.thr_j * acc);
  const std::int64_t rs = place(c.t_i * c.thr_j * acc);
  if (out) {
    out->value_offset_bytes = v, out->p_offset_bytes = pp, out->p_stride = c.t_j + c.pad;
    out->red_max_offset_bytes = rm, out->red_sum_offset_bytes = rs;
  }
  return at;
}

inline void shared_tiles(kernel_plan& kp) {
  kp.shared_bytes = kp.tiles_bytes = place_shared(kp, kp.producer_cfg, &kp.producer);
}

// mma: whether the results leave as 16-byte stores through shared memory (producer_plan::
// results_chunks). The profile of the BERT attention (H200, b16 s128, ncu source page) had a
// quarter of its stall samples on the 2-byte stores of the fragments and the drain after them.
// Needs one output written through one access (the consumer's epilogue's), 16-bit, its value
// rows chunk_aligned, and the block's rows [t_i][values_padded + 8] within the shared pool,
// which the tiles no longer use after the last step (its barrier).
inline void results_mode(kernel_plan& kp) {
  producer_plan& p = kp.producer;
  const producer_config& c = kp.producer_cfg;
  const ir::computation& cc = p.x.consumer;
  p.results_chunks = false, p.results_offset_bytes = 0, p.results_stride = 0;
  if (!cc.epilogue || cc.epilogue->outputs.size() != 1 || kp.outputs.size() != 1 ||
      cc.epilogue->outputs[0].accesses.size() != 1)
    return;
  const std::int64_t stride = p.values_padded + 8;  // 16 bytes of padding: no bank conflicts
  if (!chunk_aligned(cc.epilogue->outputs[0].accesses[0], kp.outputs[0], cc.rank(), p.value_dim,
                     p.values) ||
      c.t_i * stride * 2 > kp.shared_bytes)
    return;
  p.results_chunks = true, p.results_stride = stride;
}

// The plan's name: mdh_<pair>_<hash8> of the structure, sizes, configuration and device.
inline std::string plan_name(const kernel_plan& kp) {
  ir::fnv1a h;
  h.u64(ir::structural_hash(kp.producer.x));
  for (auto s : kp.sizes) h.u64(std::uint64_t(s));
  h.str(to_string(kp.producer_cfg));
  h.str(kp.limits.name);
  return "mdh_" + passes::identifier_stem(kp.producer.x.name, "produced") + "_" +
         ir::hex16(h.value()).substr(0, 8);
}

// 5. Kernels: one main kernel, one block per (batch coordinates, row block).
inline void kernels(kernel_plan& kp) {
  kernel k;
  k.kind = kernel_kind::main;
  k.name = kp.name;
  k.launch.grid[0] = kp.blocks;
  k.launch.block[0] = kp.threads;
  k.launch.shared_bytes = kp.shared_bytes;
  kp.kernels = {k};
}

// The plan after roles and global_buffers, which the rules read (sizes, types, operands).
inline kernel_plan shape_plan(const ir::produced& x, const std::vector<std::int64_t>& sizes) {
  kernel_plan kp;
  kp.sizes = sizes;
  kp.producer.on = true;
  kp.producer.x = x;
  roles(kp);
  global_buffers(kp);
  return kp;
}

}  // namespace producer_passes

// The tensor-core kernel's rules (mma, stages): what the instruction needs of the pair (16-bit
// operands and values of one type, a product over the depth, float accumulation, a CUDA device
// of compute capability 8.0 or newer) and of the tiles (a warp per 16 or 32 rows, 16 keys a
// step at least, ldmatrix's 16-byte rows), its registers, and stages 2 only with mma and 16-byte
// copies.
inline void append_producer_mma_rules(std::vector<rule>& r, const kernel_plan& shape,
                                      const device_limits& limits) {
  using span = std::span<const std::int64_t>;
  auto v = [](std::int64_t n) { return std::to_string(n); };
  const producer_plan& p = shape.producer;
  const ir::produced& x = p.x;
  // why the pair cannot take tensor cores, or empty
  std::string why;
  const scalar_type vt = shape.inputs[p.value_input].type;
  if (!limits.cuda || limits.cc_major < 8)
    why = "device " + limits.name + " (tensor cores need CUDA, compute capability >= 8.0)";
  else if (vt != scalar_type::bf16 && vt != scalar_type::f16)
    why = "the values are " + std::string(short_name(vt)) + " (tensor cores need bf16 or f16)";
  else if (p.operands.size() != 2 || p.operands[0].row == p.operands[1].row)
    why = "the producer reads " + v(std::int64_t(p.operands.size())) +
          " operands (tensor cores need one row and one column operand)";
  else if (x.producer.f.result_type(0) != scalar_type::f32 ||
           x.consumer.f.result_type(0) != scalar_type::f32)
    why = "the producer or the consumer does not accumulate in f32";
  else {
    for (auto& o : p.operands)
      if (shape.inputs[o.kernel_input].type != vt)
        why = "operand '" + x.producer.inputs[o.input].name + "' is " +
              std::string(short_name(shape.inputs[o.kernel_input].type)) + ", the values " +
              std::string(short_name(vt)) + " (tensor cores need one type)";
    for (const double a : {1.5, -3.25})
      for (const double b : {2.0, -0.75}) {
        auto got = ir::evaluate(x.producer.f, std::vector<double>{a, b});
        if (why.empty() && !producer_passes::close(got[0], a * b))
          why = "the producer's scalar function is not the product of its operands (f(" +
                std::to_string(a) + ", " + std::to_string(b) + ") = " + std::to_string(got[0]) +
                ")";
      }
  }
  r.push_back({"mma in {0, 1}, stages in {1, 2}; stages 2 only with mma",
               {"mma", "stages"},
               false,
               [v](span a) -> std::optional<rule_violation> {
                 if (a[0] != 0 && a[0] != 1) return rule_violation{"mma", "mma=" + v(a[0])};
                 if (a[1] != 1 && a[1] != 2) return rule_violation{"stages", "stages=" + v(a[1])};
                 if (a[1] == 2 && a[0] == 0) return rule_violation{"stages", "stages=2, mma=0"};
                 return std::nullopt;
               }});
  const std::int64_t keys = p.keys;
  r.push_back(
      {"split in {1, 2, 4}; split > 1 only with mma and at most the key steps "
       "(ceil(keys / t_j): each block at least one step)",
       {"mma", "t_j", "split"},
       false,
       [v, keys](span a) -> std::optional<rule_violation> {
         const std::int64_t split = a[2], steps = a[1] > 0 ? (keys + a[1] - 1) / a[1] : 1;
         if (split != 1 && split != 2 && split != 4)
           return rule_violation{"split", "split=" + v(split)};
         if (split > 1 && a[0] == 0)
           return rule_violation{"split", "split=" + v(split) + ", mma=0"};
         if (split > steps)
           return rule_violation{"split", "split=" + v(split) + " with " + v(steps) + " key steps"};
         return std::nullopt;
       }});
  r.push_back(
      {"mma = 1 needs bf16/f16 operands and values of one type, a product over the depth "
       "accumulated in f32, and a CUDA device of compute capability >= 8.0",
       {"mma"},
       false,
       [why](span a) -> std::optional<rule_violation> {
         if (a[0] == 0 || why.empty()) return std::nullopt;
         return rule_violation{"mma", why};
       }});
  r.push_back(
      {"mma = 1: t_i = 16 or 32 x thr_i (a warp per 16 or 32 rows), thr_j = 32, t_j a "
       "multiple of 16, pad 0 or 8, vec 1",
       {"t_i", "t_j", "thr_i", "thr_j", "pad", "vec", "mma"},
       false,
       [v](span a) -> std::optional<rule_violation> {
         if (a[6] == 0) return std::nullopt;
         if (a[0] != 16 * a[2] && a[0] != 32 * a[2])
           return rule_violation{"thr_i", "t_i=" + v(a[0]) + " thr_i=" + v(a[2])};
         if (a[3] != 32) return rule_violation{"thr_j", "thr_j=" + v(a[3])};
         if (a[1] % 16 != 0) return rule_violation{"t_j", "t_j=" + v(a[1])};
         if (a[4] != 0 && a[4] != 8) return rule_violation{"pad", "pad=" + v(a[4])};
         if (a[5] != 1) return rule_violation{"vec", "vec=" + v(a[5])};
         return std::nullopt;
       }});
  const std::int64_t dp = producer_passes::mma_padded(p.depth),
                     vp = producer_passes::mma_padded(p.values);
  r.push_back(
      {"mma = 1: fragment registers per thread (per m16 tile of a warp: scores t_j/2, p "
       "t_j/4, results values/2, row operand depth/4; rounded to 16) <= 200",
       {"t_i", "t_j", "thr_i", "mma"},
       false,
       [v, dp, vp](span a) -> std::optional<rule_violation> {
         if (a[3] == 0 || a[2] < 1) return std::nullopt;
         const std::int64_t tiles = std::max<std::int64_t>(1, a[0] / (16 * a[2]));
         const std::int64_t n = tiles * (a[1] / 2 + a[1] / 4 + vp / 2 + dp / 4);
         if (n <= 200) return std::nullopt;
         return rule_violation{"t_j", v(n) + " registers (" + v(tiles) + " m16 tiles, t_j=" +
                                          v(a[1]) + ", depth " + v(dp) + ", values " + v(vp) + ")"};
       }});
  kernel_plan copies = shape;
  producer_passes::copy_mode(copies);
  const bool chunks = copies.producer.operand_chunks && copies.producer.value_chunks;
  r.push_back(
      {"stages = 2 needs 16-byte copies (16-bit rows of the operands and the values, "
       "every row 16-byte aligned)",
       {"stages"},
       false,
       [chunks](span a) -> std::optional<rule_violation> {
         if (a[0] != 2 || chunks) return std::nullopt;
         return rule_violation{"stages",
                               "stages=2 with element copies (a row not 16-byte aligned)"};
       }});
}

// The rules over a configuration's parameters (t_i, t_j, thr_i, thr_j, pad, vec, mma, stages),
// stated once: check_config reports the first one broken, the tuner's space turns each into an atf
// constraint (on its last parameter, the order of the space). Throws mdh::error when the pair
// cannot be lowered at all (roles).
inline std::vector<rule> producer_config_rules(const ir::produced& x,
                                               const std::vector<std::int64_t>& sizes,
                                               const device_limits& limits) {
  using span = std::span<const std::int64_t>;
  auto v = [](std::int64_t n) { return std::to_string(n); };
  auto shape = std::make_shared<const kernel_plan>(producer_passes::shape_plan(x, sizes));
  const std::int64_t values = shape->producer.values;
  const std::int64_t max_threads = std::min(limits.max_threads_per_block, limits.max_block[0]);
  const std::int64_t max_shared = limits.shared_per_block_optin;
  std::vector<rule> r;
  r.push_back({"every tile and thread count >= 1, 0 <= pad <= 8",
               {"t_i", "t_j", "thr_i", "thr_j", "pad"},
               false,
               [v](span a) -> std::optional<rule_violation> {
                 const char* n[] = {"t_i", "t_j", "thr_i", "thr_j"};
                 for (int k = 0; k < 4; ++k)
                   if (a[std::size_t(k)] < 1)
                     return rule_violation{n[k], std::string(n[k]) + "=" + v(a[std::size_t(k)])};
                 if (a[4] < 0 || a[4] > 8) return rule_violation{"pad", "pad=" + v(a[4])};
                 return std::nullopt;
               }});
  r.push_back({"thr_i divides t_i (each thread owns t_i / thr_i rows)",
               {"t_i", "thr_i"},
               false,
               [v](span a) -> std::optional<rule_violation> {
                 if (a[1] >= 1 && a[0] % a[1] == 0) return std::nullopt;
                 return rule_violation{"thr_i", "t_i=" + v(a[0]) + " thr_i=" + v(a[1])};
               }});
  r.push_back({"thr_j divides t_j (each thread owns t_j / thr_j keys of a step; SIMT)",
               {"t_j", "thr_j", "mma"},
               false,
               [v](span a) -> std::optional<rule_violation> {
                 if (a[2] != 0 || (a[1] >= 1 && a[0] % a[1] == 0)) return std::nullopt;
                 return rule_violation{"thr_j", "t_j=" + v(a[0]) + " thr_j=" + v(a[1])};
               }});
  r.push_back({"threads per block <= " + v(max_threads),
               {"thr_i", "thr_j"},
               true,
               [v, max_threads](span a) -> std::optional<rule_violation> {
                 if (a[0] * a[1] <= max_threads) return std::nullopt;
                 return rule_violation{"thr_j", v(a[0] * a[1]) + " threads (thr_i=" + v(a[0]) +
                                                    ", thr_j=" + v(a[1]) + ")"};
               }});
  r.push_back({"score registers per thread (t_i / thr_i x t_j / thr_j) <= 128",
               {"t_i", "t_j", "thr_i", "thr_j"},
               false,
               [v](span a) -> std::optional<rule_violation> {
                 if (a[2] < 1 || a[3] < 1 || (a[0] / a[2]) * (a[1] / a[3]) <= 128)
                   return std::nullopt;
                 return rule_violation{"thr_j", v(a[0] / a[2]) + " x " + v(a[1] / a[3])};
               }});
  r.push_back({"result registers per thread (t_i / thr_i rows x values / thr_j) <= 128",
               {"t_i", "thr_i", "thr_j"},
               false,
               [v, values](span a) -> std::optional<rule_violation> {
                 if (a[1] < 1 || a[2] < 1) return std::nullopt;
                 const std::int64_t n = (a[0] / a[1]) * ceil_div(values, a[2]);
                 if (n <= 128) return std::nullopt;
                 return rule_violation{"thr_j", v(a[0] / a[1]) + " rows x " +
                                                    v(ceil_div(values, a[2])) + " values (" +
                                                    v(values) + " over thr_j=" + v(a[2]) + ")"};
               }});
  r.push_back({"shared memory <= " + v(max_shared),
               {"t_i", "t_j", "thr_j", "pad", "mma", "stages"},
               false,
               [v, shape, max_shared](span a) -> std::optional<rule_violation> {
                 producer_config c;
                 c.t_i = a[0], c.t_j = a[1], c.thr_j = a[2], c.pad = a[3];
                 c.mma = a[4], c.stages = a[5];
                 const std::int64_t bytes = producer_passes::place_shared(*shape, c, nullptr);
                 if (bytes <= max_shared) return std::nullopt;
                 return rule_violation{"t_i", v(bytes) + " bytes (depth " +
                                                  v(shape->producer.depth) + ", values " +
                                                  v(shape->producer.values) + ")"};
               }});
  bool four_byte = true;
  for (auto& o : shape->producer.operands)
    four_byte = four_byte && size_of(shape->inputs[o.kernel_input].type) == 4;
  const std::int64_t depth = shape->producer.depth;
  r.push_back({"vec is 1, or 4 with 4-byte operands and depth and pad multiples of 4",
               {"pad", "vec"},
               false,
               [v, four_byte, depth](span a) -> std::optional<rule_violation> {
                 if (a[1] == 1) return std::nullopt;
                 if (a[1] != 4) return rule_violation{"vec", "vec=" + v(a[1])};
                 if (!four_byte) return rule_violation{"vec", "vec=4 with 16-bit operands"};
                 if (depth % 4 != 0) return rule_violation{"vec", "vec=4, depth " + v(depth)};
                 if (a[0] % 4 != 0) return rule_violation{"vec", "vec=4, pad=" + v(a[0])};
                 return std::nullopt;
               }});
  append_producer_mma_rules(r, *shape, limits);
  return r;
}

namespace producer_passes {

// Reports the first rule the configuration breaks (before the passes).
inline void check_config(const producer_config& c, const ir::produced& x,
                         const std::vector<std::int64_t>& sizes, const device_limits& limits) {
  const auto m = to_full_map(c);
  for (const rule& r : producer_config_rules(x, sizes, limits)) {
    std::vector<std::int64_t> vals;
    for (auto& n : r.reads) vals.push_back(m.at(n));
    if (auto bad = r.test(vals)) violated(bad->param, r.name, bad->detail);
  }
}

// 6. Check: the rules that read the finished plan (the grid).
inline void check(const kernel_plan& kp) {
  if (kp.blocks > kp.limits.max_grid[0])
    violated("t_i", "blocks <= " + std::to_string(kp.limits.max_grid[0]),
             std::to_string(kp.blocks));
}

}  // namespace producer_passes

// The kernel's signature as the runtime sees it: the pair's name and buffers.
inline ir::computation produced_signature(const ir::produced& x) {
  ir::computation c;
  c.name = x.name;
  c.dims = x.consumer.dims;
  c.inputs = x.inputs;
  c.outputs = x.outputs;
  // the function whose results the outputs are (the dialects' preludes read their types)
  c.f = x.consumer.epilogue ? x.consumer.epilogue->f : x.consumer.f;
  return c;
}

// Checks the sizes, the configuration, runs the passes and the check pass; throws mdh::error
// naming the rule (and the parameter).
inline kernel_plan lower(const ir::produced& x, const std::vector<std::int64_t>& sizes,
                         const producer_config& cfg, const device_limits& limits) {
  if (sizes.size() != ir::rank(x))
    throw error("with_producer '" + x.name + "': " + std::to_string(sizes.size()) +
                " sizes given, expected " + std::to_string(ir::rank(x)) +
                " (the consumer's dimensions, then the producer's reductions)");
  for (std::size_t k = 0; k < sizes.size(); ++k)
    if (sizes[k] < 1)
      throw error("with_producer '" + x.name + "': size " + std::to_string(k) + " is " +
                  std::to_string(sizes[k]) + "; every size must be >= 1");
  producer_passes::check_config(cfg, x, sizes, limits);
  kernel_plan kp;
  kp.comp = produced_signature(x);
  kp.sizes = sizes;
  kp.limits = limits;
  kp.producer.on = true;
  kp.producer.x = x;
  kp.producer_cfg = cfg;
  kp.name = producer_passes::plan_name(kp);
  const std::string dir = dump_dir();
  int n = 0;
  auto run = [&](const char* name, void (*pass)(kernel_plan&)) {
    pass(kp);
    if (!dir.empty()) {
      char num[16];
      std::snprintf(num, sizeof num, "%02d", ++n);
      write_text_file(dir, kp.name + "." + num + "-" + name + ".plan.txt", to_string(kp));
    }
  };
  run("roles", producer_passes::roles);
  run("partition", producer_passes::partition);
  run("global_buffers", producer_passes::global_buffers);
  if (cfg.mma) run("copy_mode", producer_passes::copy_mode);
  run("shared_tiles", producer_passes::shared_tiles);
  if (cfg.mma) run("results_mode", producer_passes::results_mode);
  run("kernels", producer_passes::kernels);
  producer_passes::check(kp);
  return kp;
}

// Checks the configuration (the rules, the passes, the check pass) without keeping the plan;
// throws mdh::error naming the rule and the parameter.
inline void check(const producer_config& cfg, const ir::produced& x,
                  const std::vector<std::int64_t>& sizes, const device_limits& limits) {
  lower(x, sizes, cfg, limits);
}

// A parameter file's configuration object (flat: t_i, t_j, thr_i, thr_j, pad).
inline producer_config config_from_json(const nlohmann::json& j, const ir::produced&) {
  return producer_config_from_json(j);
}

// Valid for every pair, size and named device: 32 rows x 32 keys per block, 8 x 16 threads.
inline producer_config default_config(const ir::produced&, const std::vector<std::int64_t>&) {
  return {};
}

// Whether cfg lowers at these sizes on this device (the tuner's and the random draws' test).
inline bool valid(const ir::produced& x, const std::vector<std::int64_t>& sizes,
                  const producer_config& cfg, const device_limits& limits) {
  try {
    lower(x, sizes, cfg, limits);
    return true;
  } catch (const error&) {
    return false;
  }
}

// A random valid tensor-core configuration (seeded; for tests): 1, 2, 4 or 8 warps of 16 or 32
// rows, 16 to 128 keys a step, pad 0 or 8, one or two stages (two where the copies allow). Throws
// mdh::error when the pair or the device has no tensor-core kernel (the rule's reason).
template <class Rng>
producer_config random_mma_config(const ir::produced& x, const std::vector<std::int64_t>& sizes,
                                  const device_limits& limits, Rng& rng) {
  producer_config c;
  c.mma = 1, c.thr_j = 32, c.vec = 1, c.pad = 8, c.t_i = 16, c.thr_i = 1, c.t_j = 16;
  producer_passes::check_config(c, x, sizes, limits);  // the pair's reason, if any
  for (int tries = 0; tries < 100; ++tries) {
    c.thr_i = std::int64_t(1) << (rng() % 4);
    c.t_i = (rng() % 2 ? 16 : 32) * c.thr_i;  // one or two m16 tiles a warp
    c.t_j = 16 << (rng() % 4);
    c.pad = rng() % 2 ? 8 : 0;
    c.stages = 1 + std::int64_t(rng() % 2);
    c.split = std::int64_t(1) << (rng() % 3);  // 1, 2 or 4 blocks a row tile
    if (valid(x, sizes, c, limits)) return c;
  }
  throw internal_error("random_mma_config(with_producer '" + x.name +
                       "'): no valid configuration drawn");
}

// A random valid configuration (seeded; for tests): powers of two tiles and threads (at most
// opt.max_threads per block), pad 0/1/4, vec 1/4.
template <class Rng>
producer_config random_config(const ir::produced& x, const std::vector<std::int64_t>& sizes,
                              const device_limits& limits, Rng& rng,
                              const random_options& opt = {}) {
  for (int tries = 0; tries < std::max(opt.max_attempts, 1) * 5; ++tries) {
    producer_config c;
    c.t_i = std::int64_t(1) << (rng() % 8);  // 1..128
    c.t_j = std::int64_t(1) << (rng() % 8);
    c.thr_i = std::int64_t(1) << (rng() % 6);  // 1..32
    c.thr_j = std::int64_t(1) << (rng() % 7);  // 1..64
    const std::int64_t pads[] = {0, 1, 4};
    c.pad = pads[rng() % 3];
    c.vec = rng() % 2 ? 4 : 1;
    if (c.t_i % c.thr_i != 0 || c.t_j % c.thr_j != 0 || c.thr_i * c.thr_j > opt.max_threads)
      continue;
    if (valid(x, sizes, c, limits)) return c;
  }
  throw internal_error("random_config(with_producer '" + x.name +
                       "'): no valid configuration drawn");
}

}  // namespace mdh::lower
