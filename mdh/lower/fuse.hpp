// SPDX-License-Identifier: MIT
// Lowering a fused pair (ir::fused) to one kernel: both computations keep their own
// configuration and generated code; the kernel runs the first one's body, a block barrier, then
// the second one's. That is correct when every block of the second reads only outputs of the
// first that the same block wrote, which the rules of check(fused_config, ...) guarantee: no
// reduction is split over blocks, and both stages cut every dimension into the same block chunks on
// the same grid and block shape.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mdh/error.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/conversions.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/passes.hpp>

namespace mdh::lower {

struct fused_config {
  config first, second;
  friend bool operator==(const fused_config&, const fused_config&) = default;
};

// JSON: {"first": {flat config}, "second": {flat config}}.
inline void to_json(nlohmann::json& j, const fused_config& c) {
  j = nlohmann::json::object();
  j["first"] = c.first;
  j["second"] = c.second;
}

inline fused_config config_from_json(const nlohmann::json& j, const ir::fused& f) {
  if (!j.is_object() || !j.contains("first") || !j.contains("second"))
    throw error("configuration of the fused pair '" + f.name +
                "' must be an object {\"first\": {...}, \"second\": {...}}");
  fused_config c;
  try {
    c.first = config_from_json(j["first"], f.first);
  } catch (const error& e) {
    throw error("configuration 'first' (" + f.first.name + "): " + e.what());
  }
  try {
    c.second = config_from_json(j["second"], f.second);
  } catch (const error& e) {
    throw error("configuration 'second' (" + f.second.name + "): " + e.what());
  }
  return c;
}

inline std::string to_string(const fused_config& c) {
  return "first: " + to_string(c.first) + " | second: " + to_string(c.second);
}

namespace detail {
[[noreturn]] inline void fused_violated(const std::string& param, const std::string& rule,
                                        const std::string& detail) {
  throw error("fused configuration violates '" + rule + "' (parameter " + param + "): " + detail);
}

// The ir::computation a fused plan shows to the runtime: the pair's name and buffers.
inline ir::computation fused_signature(const ir::fused& f) {
  ir::computation c;
  c.name = f.name;
  c.dims = f.first.dims;
  c.inputs = f.inputs;
  c.outputs = f.outputs;
  return c;
}
}  // namespace detail

namespace detail {
// One stage through the pipeline once: check_config, the passes, the check pass; errors carry
// the stage.
inline kernel_plan lower_stage(const char* which, const config& cfg, const ir::computation& c,
                               const std::vector<std::int64_t>& sizes, const device_limits& limits,
                               const passes::pass_observer& after) {
  try {
    check_config(cfg, c, sizes, limits);
    if (cfg.mma.on)  // the fused kernel prints the stages' SIMT bodies
      throw error("configuration violates 'a fused stage has no tensor-core path' (parameter mma)");
    if (cfg.edge_split)  // the stages must cut every dimension into the same chunks
      throw error(
          "configuration violates 'a fused stage has no edge split' (parameter edge_split)");
    kernel_plan p = passes::run_all(c, sizes, cfg, limits, after);
    check_plan(p);
    if (after) after("check", p);
    return p;
  } catch (const error& e) {
    throw error(std::string(which) + " stage (" + c.name + "): " + e.what());
  }
}

// Both stages' plans (lower_stage) and the fusion rules over them; throws mdh::error naming the
// parameter and the rule.
inline std::array<kernel_plan, 2> lower_stages(const fused_config& cfg, const ir::fused& f,
                                               const std::vector<std::int64_t>& sizes,
                                               const device_limits& limits,
                                               const passes::pass_observer& after) {
  ir::check_shared_shapes(f, sizes);
  std::array<kernel_plan, 2> st{lower_stage("first", cfg.first, f.first, sizes, limits, after),
                                lower_stage("second", cfg.second, f.second, sizes, limits, after)};
  auto v = [](std::int64_t x) { return std::to_string(x); };
  for (std::size_t d = 0; d < f.first.rank(); ++d) {
    const auto& a = cfg.first.dims[d];
    const auto& b = cfg.second.dims[d];
    const std::string dim = "dimension '" + f.first.dims[d].name + "'";
    for (auto* s : {&f.first, &f.second}) {
      const auto& x = s == &f.first ? a : b;
      if (s->is_reduction(d) && x.blk != 1)
        fused_violated(param_name("blk", d), "fused: reductions are not split over blocks",
                       dim + " reduces in '" + s->name + "' and has blk=" + v(x.blk));
    }
    if (a.blk != b.blk || a.blk_map != b.blk_map)
      fused_violated(param_name(a.blk != b.blk ? "blk" : "blk_map", d),
                     "fused: both stages cut every dimension into the same blocks",
                     dim + ": first blk=" + v(a.blk) + " blk_map=" + v(a.blk_map) +
                         ", second blk=" + v(b.blk) + " blk_map=" + v(b.blk_map));
  }
  const kernel_plan &p1 = st[0], &p2 = st[1];
  const auto& l1 = main_kernel(p1).launch;
  const auto& l2 = main_kernel(p2).launch;
  for (int k = 0; k < 3; ++k)
    if (l1.block[k] != l2.block[k] || l1.grid[k] != l2.grid[k])
      fused_violated("thr_*/thr_map_*", "fused: both stages have the same grid and block shape",
                     "first grid(" + v(l1.grid[0]) + "," + v(l1.grid[1]) + "," + v(l1.grid[2]) +
                         ") block(" + v(l1.block[0]) + "," + v(l1.block[1]) + "," + v(l1.block[2]) +
                         "), second grid(" + v(l2.grid[0]) + "," + v(l2.grid[1]) + "," +
                         v(l2.grid[2]) + ") block(" + v(l2.block[0]) + "," + v(l2.block[1]) + "," +
                         v(l2.block[2]) + ")");
  if (p1.kernels.size() != 1 || p2.kernels.size() != 1)
    throw internal_error("check: a stage without block reductions has more than one kernel");
  const std::int64_t shared = std::max(p1.shared_bytes, p2.shared_bytes);
  if (shared > limits.shared_per_block_optin)
    fused_violated("t_sm_*/cache_*", "shared memory <= " + v(limits.shared_per_block_optin),
                   v(shared) + " bytes");
  return st;
}
}  // namespace detail

// The keep_in_registers pass: the inputs of the first stage that the second reads again, taken
// from the first stage's registers where both stages give every element of them to the same
// thread at the same register slot. Then the second stage reads each such row once, not twice
// (the second read waited on L2 after the barrier: the bf16 layernorm's stages are
// latency-bound). Conditions, each needed for the slot to be a constant on both sides: every
// dimension mapped alike (same layout, thread and block axes) in one sm tile per block; the
// first stage's ++ dimensions in one rm step (their loop holds the barriers of its combine) and
// both stages' reduction steps unrolled; each stage reads the input through one access, the same
// one, and the second has no shared tile of it; at most 32 slots per thread (registers, not local
// memory).
// The first stage's results that the second reads are kept too, as the first stage stores them
// (bf16: rounded), where every thread that reads one holds it after the combine: the
// shared-memory tree and shuffles within one warp leave the total in every thread of the group.
// Then, when the second stage reads no result from memory and uses no shared memory, no block
// barrier separates the stages, and the second stage's own loads (layernorm's gamma and beta)
// can start while the first still combines.
inline void keep_in_registers(const ir::fused& f, kernel_plan& s1, kernel_plan& s2) {
  constexpr std::int64_t max_slots = 32;
  std::int64_t slots = 1;
  std::vector<std::int64_t> weight(s1.dims.size(), 0);
  for (std::size_t d = s1.dims.size(); d-- > 0;) {
    const dim_plan &a = s1.dims[d], &b = s2.dims[d];
    if (a.elements != b.elements || a.thr_axis != b.thr_axis || a.thr_stride != b.thr_stride ||
        a.blk_axis != b.blk_axis || a.blk_stride != b.blk_stride || a.n_sm != 1 || b.n_sm != 1)
      return;
    if (a.role == dim_role::reduce ? a.n_rm > 1 && !s1.unroll_reduce_steps : a.n_rm != 1) return;
    if (b.role == dim_role::reduce && b.n_rm > 1 && !s2.unroll_reduce_steps) return;
    weight[d] = slots;
    slots *= a.n_rm * a.t_rm;
  }
  if (slots > max_slots) return;
  auto single_read = [](const kernel_plan& p, std::size_t input) -> const input_read* {
    const input_read* found = nullptr;
    for (auto& r : p.reads)
      if (r.input == input) {
        if (found) return nullptr;
        found = &r;
      }
    return found;
  };
  for (std::size_t k = 0; k < s2.inputs.size(); ++k) {
    const ir::fused_source& src = f.second_inputs.at(k);
    if (src.from_first_output || src.index >= f.first.inputs.size()) continue;
    const input_read* r1 = single_read(s1, src.index);
    const input_read* r2 = single_read(s2, k);
    if (!r1 || !r2 ||
        f.first.inputs[src.index].accesses[r1->access] != f.second.inputs[k].accesses[r2->access])
      continue;
    // the second stage copies it to shared memory (and reads every slot there)
    if (tile_of(s2, k)) continue;
    const std::string array = "mdh_keep" + std::to_string(s1.keeps.size());
    s1.keeps.push_back({src.index, array, true, false, {}});
    s2.keeps.push_back({k, array, false, false, {}});
  }
  const bool every_thread_holds =
      !(s1.thread_combine_needed && s1.thr_combine == thread_combine::warp_shuffle &&
        s1.red_threads > s1.limits.warp_size);
  if (every_thread_holds && !s1.comp.epilogue && s1.scan_dims.empty() && s1.partials.empty()) {
    std::vector<bool> reduced(s1.dims.size());
    for (std::size_t d = 0; d < reduced.size(); ++d) reduced[d] = f.first.is_reduction(d);
    for (std::size_t k = 0; k < s2.inputs.size(); ++k) {
      const ir::fused_source& src = f.second_inputs.at(k);
      if (!src.from_first_output) continue;
      const ir::buffer& out = f.first.outputs.at(src.index);
      const input_read* r2 = single_read(s2, k);
      if (out.accesses.size() != 1 || !r2 || tile_of(s2, k) ||
          f.second.inputs[k].accesses[r2->access] != out.accesses[0])
        continue;
      const std::string array = "mdh_keep" + std::to_string(s1.keeps.size());
      s1.keeps.push_back({src.index, array, true, true, reduced});
      s2.keeps.push_back({k, array, false, true, reduced});
    }
  }
  if (s1.keeps.empty()) return;
  for (auto* s : {&s1, &s2}) s->keep_slots = slots, s->keep_weight = weight;
  s2.unroll_concat_steps = true;
  bool reads_results = false;
  for (std::size_t k = 0; k < s2.inputs.size(); ++k)
    if (f.second_inputs.at(k).from_first_output && !keep_of(s2, k)) reads_results = true;
  s2.barrier_before = reads_results || s2.shared_bytes > 0;
}

// Checks both stages (each error prefixed with its stage) and the fusion rules; throws
// mdh::error naming the parameter and the rule.
inline void check(const fused_config& cfg, const ir::fused& f,
                  const std::vector<std::int64_t>& sizes, const device_limits& limits) {
  detail::lower_stages(cfg, f, sizes, limits, {});
}

// Whether dimension d is a scan (prefix sum) in either stage: one thread walks it.
inline bool fused_scans(const ir::fused& f, std::size_t d) {
  return f.first.dims[d].combine == ir::combine_kind::prefix_sum ||
         f.second.dims[d].combine == ir::combine_kind::prefix_sum;
}

// The default: the first stage's default configuration with every reduction dimension walked
// inside its block (blk 1), and the second stage walking the same tiling with its inputs read
// from global memory.
inline fused_config default_config(const ir::fused& f, const std::vector<std::int64_t>& sizes) {
  fused_config c;
  c.first = default_config(f.first, sizes);
  for (std::size_t d = 0; d < f.first.rank(); ++d) {
    auto& x = c.first.dims[d];
    if (fused_scans(f, d)) x.thr = 1, x.t_rm = 1;  // one thread walks a scan
    if (f.first.is_reduction(d) || f.second.is_reduction(d)) {
      x.blk = 1;
      x.t_sm = ceil_div(sizes[d], x.thr * x.t_rm) * x.thr * x.t_rm;
    }
  }
  c.first.blk_combine = block_combine::second_kernel;
  c.second = default_config(f.second, sizes);
  c.second.dims = c.first.dims;
  c.second.blk_combine = block_combine::second_kernel;
  c.second.thr_combine = c.first.thr_combine;
  return c;
}

// A 16-bit pair's statistics - float outputs of the first stage that the second reads (softmax's
// M and S, float since 2026-11-29 so that they are not rounded to 16 bits) - feed only results
// rounded to 16 bits: the first stage may then approximate float exp and division as the second
// (kernel_plan::approx_math; relative errors below 2^-16, far below the results' rounding and far
// above a 16-bit statistic's). Needs the second stage approximating (so every output of it
// 16-bit) and every float output of the first read by the second.
inline void approximate_statistics(const ir::fused& f, kernel_plan& s1, const kernel_plan& s2) {
  if (s1.approx_math || !s2.approx_math || !uses_f32_exp_or_division(s1.comp)) return;
  for (std::size_t k = 0; k < s1.outputs.size(); ++k) {
    if (is_float16(s1.outputs[k].type)) continue;
    const bool read = std::any_of(f.second_inputs.begin(), f.second_inputs.end(),
                                  [&](auto& in) { return in.from_first_output && in.index == k; });
    if (!read) return;
  }
  s1.approx_math = true;
}

// Both stages through the pipeline once (with the fusion rules), then one plan whose single kernel
// runs both stages. The plan's `stages` hold the two stage plans, their buffers renamed to the
// pair's kernel parameters (in0.., out0..); its inputs and outputs are the pair's; its cfg is the
// first stage's with vec and vec_pw the widest of both (the launch checks pointer alignment against
// them).
inline kernel_plan lower(const ir::fused& f, const std::vector<std::int64_t>& sizes,
                         const fused_config& cfg, const device_limits& limits) {
  const passes::pass_observer after = pass_dumper();
  auto [s1, s2] = detail::lower_stages(cfg, f, sizes, limits, after);
  keep_in_registers(f, s1, s2);
  if (after) after("keep_in_registers", s1), after("keep_in_registers", s2);
  approximate_statistics(f, s1, s2);
  if (after) after("approximate_statistics", s1);
  for (std::size_t k = 0; k < s2.inputs.size(); ++k) {
    const auto& src = f.second_inputs.at(k);
    s2.inputs[k].name = (src.from_first_output ? "out" : "in") + std::to_string(src.index);
  }
  for (std::size_t k = 0; k < s2.outputs.size(); ++k)
    s2.outputs[k].name = "out" + std::to_string(s1.outputs.size() + k);

  kernel_plan p;
  p.comp = detail::fused_signature(f);
  p.sizes = sizes;
  p.cfg = cfg.first;
  p.cfg.vec = std::max(cfg.first.vec, cfg.second.vec);
  p.cfg.vec_pw = std::max(cfg.first.vec_pw, cfg.second.vec_pw);
  p.limits = limits;
  p.dims = s1.dims;
  p.concat_dims = s1.concat_dims;
  p.reduce_dims = s1.reduce_dims;
  p.inputs = s1.inputs;
  for (std::size_t k = 0; k < s2.inputs.size(); ++k)
    if (!f.second_inputs[k].from_first_output && f.second_inputs[k].index >= p.inputs.size())
      p.inputs.push_back(s2.inputs[k]);
  p.outputs = s1.outputs;
  p.outputs.insert(p.outputs.end(), s2.outputs.begin(), s2.outputs.end());
  p.threads = s1.threads;
  p.blocks = s1.blocks;
  p.index64 = s1.index64 || s2.index64;
  p.shared_bytes = std::max(s1.shared_bytes, s2.shared_bytes);

  ir::fnv1a h;
  h.str(passes::hash8(s1)), h.str(passes::hash8(s2)), h.str(f.name);
  h.u64(ir::structural_hash(f));
  p.name =
      "mdh_" + passes::identifier_stem(f.name, "fused") + "_" + ir::hex16(h.value()).substr(0, 8);
  kernel k = main_kernel(s1);
  k.name = p.name;
  k.launch.shared_bytes = p.shared_bytes;
  p.kernels = {k};
  p.stages = {std::move(s1), std::move(s2)};
  return p;
}

}  // namespace mdh::lower
