// SPDX-License-Identifier: MIT
// The validity rules of a configuration, each stated once: its name, the parameters it reads (by
// their configuration names, lower::to_map's), and a test of their values that says what is
// wrong. check() reports the first rule a configuration breaks; the tuner's search space
// (tuning/search_space.hpp) turns every rule whose parameters are all coordinates of the space
// into an atf constraint, so the tuner never proposes a configuration that breaks one.
// Rules over the finished plan as a whole (shared memory of all tiles, the launch shape against
// the device's block and grid limits, prefetched registers) stay in check().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/mma_support.hpp>

namespace mdh::lower {

// Limits on generated code size that keep registers from spilling (see docs/lowering.md).
inline constexpr std::int64_t max_accumulators = 256;  // acc_count * results per thread
inline constexpr std::int64_t max_unrolled = 1024;     // product of all t_rm (unrolled body copies)
// Staged tile elements per thread, counted as ceil(box / threads) per tile; the printer holds
// whole vectors, so a tile may take up to (vector width - 1) registers more.
inline constexpr std::int64_t max_prefetch_registers = 64;

// What a broken rule reports: the parameter to change and what is wrong with its value.
struct rule_violation {
  std::string param;
  std::string detail;
};

struct rule {
  std::string name;                // check(): "configuration violates '<name>' (parameter ...)"
  std::vector<std::string> reads;  // the parameters it reads; the last is the one it constrains
  // A bound on a product of values >= 1: it holds for every completion only if it holds with the
  // parameters not chosen yet at 1, so the space tests it as each parameter is chosen (pruning
  // a tree level by level instead of at its leaves).
  bool product_bound = false;
  // The values of `reads`, in that order -> nothing when the rule holds.
  std::function<std::optional<rule_violation>(std::span<const std::int64_t>)> test;
};

namespace detail {

inline bool accesses_share_coefficients(const ir::buffer& b) {
  for (auto& a : b.accesses)
    for (std::size_t k = 0; k < b.rank; ++k)
      if (a.index[k].coeff != b.accesses[0].index[k].coeff) return false;
  return true;
}

// Warp shuffles need the reduction threads as the lowest lanes: every reduction dimension with
// threads on the x axis, and no other dimension after it with threads on x. `dim(d)` gives
// dimension d of `count` as {reduces, threads, on x}. Returns the first reduction dimension
// (innermost first) that breaks the rule.
struct lane_dim {
  bool reduce = false;
  std::int64_t thr = 1;
  bool on_x = false;
};
template <class Dim>
std::optional<std::size_t> shuffle_lane_violation(std::size_t count, const Dim& dim) {
  for (std::size_t r = count; r-- > 0;) {
    const lane_dim x = dim(r);
    if (!x.reduce || x.thr == 1) continue;
    if (!x.on_x) return r;
    for (std::size_t e = r + 1; e < count; ++e) {
      const lane_dim y = dim(e);
      if (!y.reduce && y.on_x && y.thr > 1) return r;
    }
  }
  return std::nullopt;
}

inline bool atomic_supported(const ir::computation& c, const device_limits& l) {
  auto k = c.reduction.kind;
  if (k != ir::builtin::add && k != ir::builtin::mul && k != ir::builtin::max &&
      k != ir::builtin::min)
    return false;
  for (std::size_t r = 0; r < c.outputs.size(); ++r) {
    auto t = c.f.result_type(r);
    if (t != c.outputs[r].type) return false;
    if (t == scalar_type::f32 || t == scalar_type::i32) continue;
    if (l.cuda && (t == scalar_type::f64 || t == scalar_type::i64)) continue;
    return false;
  }
  return true;
}

// The dimension a pass-through parameter of `comp` vectorises along: the innermost one of `kind`.
inline std::optional<std::size_t> innermost(const ir::computation& comp, ir::combine_kind kind) {
  for (std::size_t d = comp.rank(); d-- > 0;)
    if (comp.dims[d].combine == kind) return d;
  return std::nullopt;
}

// The widest vector (in elements) of a computation's global accesses: 16 bytes, so 8 where a
// buffer has 16-bit elements (bf16, f16), else 4 (4-byte buffers: float4).
inline std::int64_t widest_vector(const ir::computation& comp) {
  for (auto* list : {&comp.inputs, &ir::kernel_outputs(comp)})
    for (const ir::buffer& b : *list)
      if (size_of(b.type) == 2) return 8;
  return 4;
}

inline std::string str(std::int64_t x) { return std::to_string(x); }
inline std::optional<rule_violation> holds() { return std::nullopt; }
inline std::optional<rule_violation> broken(std::string param, std::string detail) {
  return rule_violation{std::move(param), std::move(detail)};
}

}  // namespace detail

// The tensor-core parameters (mma, mma_*; mdh/lower/mma.hpp): with mma = 0 they sit at their
// defaults (one point of the space), with mma = 1 the computation must be a contraction of a
// tensor-core type on a CUDA device and the tiles must fit the instruction.
inline void append_mma_rules(std::vector<rule>& rs, const ir::computation& comp,
                             const device_limits& limits) {
  using detail::broken;
  using detail::holds;
  using detail::str;
  using values = std::span<const std::int64_t>;
  auto add = [&](std::string name, std::vector<std::string> reads, auto test) {
    rs.push_back({std::move(name), std::move(reads), false, std::move(test)});
  };
  add("mma in {0 = SIMT, 1 = mma.sync, 2 = wgmma}", {"mma"},
      [](values v) { return v[0] < 0 || v[0] > 2 ? broken("mma", "mma=" + str(v[0])) : holds(); });
  const mma_config off;
  const std::pair<const char*, std::int64_t> defaults[] = {{"mma_m", off.m},
                                                           {"mma_n", off.n},
                                                           {"mma_k", off.k},
                                                           {"mma_warps_m", off.warps_m},
                                                           {"mma_warps_n", off.warps_n},
                                                           {"mma_tile_m", off.tile_m},
                                                           {"mma_tile_n", off.tile_n},
                                                           {"mma_tile_k", off.tile_k},
                                                           {"mma_stages", off.stages},
                                                           {"mma_swizzle", off.swizzle},
                                                           {"mma_fuse_m", off.fuse_m},
                                                           {"mma_fuse_n", off.fuse_n},
                                                           {"mma_fuse_k", off.fuse_k},
                                                           {"mma_flip_a", off.flip_a},
                                                           {"mma_flip_b", off.flip_b},
                                                           {"mma_split", off.split},
                                                           {"mma_tma", off.tma},
                                                           {"mma_persistent", off.persistent},
                                                           {"mma_cluster_m", off.cluster_m},
                                                           {"mma_cluster_n", off.cluster_n},
                                                           {"mma_stage_out", off.stage_out},
                                                           {"mma_shift", off.shift}};
  for (auto [name, value] : defaults)
    add("mma = 0: the mma_* parameters at their defaults", {"mma", name},
        [name = std::string(name), value](values v) {
          return v[0] == 0 && v[1] != value
                     ? broken(name,
                              name + "=" + str(v[1]) + " with mma=0 (default " + str(value) + ")")
                     : holds();
        });
  // ---- the on/off parameters: mma_stage_out (the staged epilogue; where it applies is the
  // plan's, check.hpp) and mma_shift (shifted 16-byte tile copies; where a tile has unaligned
  // rows, mma.hpp) ----
  for (auto [name, meaning] :
       {std::pair<const char*, const char*>{"mma_stage_out",
                                            "0 = from registers, 1 = staged through shared memory"},
        {"mma_shift", "0 = element copies, 1 = shifted 16-byte chunks"}})
    add(std::string(name) + " in {" + meaning + "}", {"mma", name},
        [name = std::string(name)](values v) {
          return v[0] != 0 && v[1] != 0 && v[1] != 1 ? broken(name, name + "=" + str(v[1]))
                                                     : holds();
        });
  const std::string device = limits.name;
  const bool cuda = limits.cuda;
  add("mma needs a CUDA device", {"mma"}, [cuda, device](values v) {
    return v[0] != 0 && !cuda ? broken("mma", "device " + device) : holds();
  });
  const bool sm90 = cuda && limits.cc_major == 9;
  add("mma = 2 (wgmma) needs an sm_90 device", {"mma"}, [sm90, device](values v) {
    return v[0] == 2 && !sm90 ? broken("mma", "device " + device + " is not sm_90") : holds();
  });
  const mma_support s = mma_supported(comp);
  add("mma needs a contraction of bf16, f16 or TF32-read f32 factors", {"mma"},
      [s](values v) { return v[0] != 0 && !s ? broken("mma", s.why_not) : holds(); });
  if (!s) return;  // mma = 0: the rest holds
  const ir::contraction& ct = *s.contraction;
  const std::int64_t inst_k = mma_instruction_k(*s.instruction);
  const bool tf32 = *s.instruction == mma_instruction::m16n8k8_tf32;
  auto role_rule = [&](const char* param, ir::contraction_role role, const char* what) {
    std::vector<ir::contraction_role> roles = ct.roles;
    std::vector<std::string> names;
    for (auto& d : comp.dims) names.push_back(d.name);
    add(std::string(param) + " is " + what, {"mma", param},
        [roles, role, names, param = std::string(param), what](values v) {
          if (v[0] == 0) return holds();
          if (v[1] < 0 || v[1] >= std::int64_t(roles.size()))
            return broken(param, param + "=" + str(v[1]) + " is not a dimension");
          return roles[std::size_t(v[1])] != role
                     ? broken(param, "dimension '" + names[std::size_t(v[1])] + "' is " +
                                         ir::to_string(roles[std::size_t(v[1])]) + ", not " + what)
                     : holds();
        });
  };
  role_rule("mma_m", ir::contraction_role::m, "an M dimension (++, read by the first factor only)");
  role_rule("mma_n", ir::contraction_role::n,
            "an N dimension (++, read by the second factor only)");
  role_rule("mma_k", ir::contraction_role::k, "a K dimension (pw(add), read by both factors)");
  // mma_fuse_*: a mask of further dimensions of the same role, not the innermost itself
  auto fuse_rule = [&](const char* param, const char* innermost, ir::contraction_role role) {
    std::vector<ir::contraction_role> roles = ct.roles;
    std::vector<std::string> names;
    for (auto& d : comp.dims) names.push_back(d.name);
    add(std::string(param) + ": a mask of other " + ir::to_string(role) + " dimensions than " +
            innermost,
        {"mma", innermost, param}, [roles, role, names, param = std::string(param)](values v) {
          if (v[0] == 0 || v[2] == 0) return holds();
          if (v[2] < 0 || v[2] >= (std::int64_t(1) << roles.size()))
            return broken(param, param + "=" + str(v[2]) + " names no set of dimensions");
          for (std::size_t d = 0; d < roles.size(); ++d) {
            if (((v[2] >> d) & 1) == 0) continue;
            if (std::int64_t(d) == v[1])
              return broken(param, "dimension '" + names[d] + "' is already the innermost");
            if (roles[d] != role)
              return broken(param, "dimension '" + names[d] + "' is " + ir::to_string(roles[d]) +
                                       ", not " + ir::to_string(role));
          }
          return holds();
        });
  };
  fuse_rule("mma_fuse_m", "mma_m", ir::contraction_role::m);
  fuse_rule("mma_fuse_n", "mma_n", ir::contraction_role::n);
  fuse_rule("mma_fuse_k", "mma_k", ir::contraction_role::k);
  for (const char* flip : {"mma_flip_a", "mma_flip_b"})
    add(std::string(flip) + " in {0 = as memory suggests, 1 = the other axis contiguous}",
        {"mma", flip}, [name = std::string(flip)](values v) {
          return v[0] != 0 && v[1] != 0 && v[1] != 1 ? broken(name, name + "=" + str(v[1]))
                                                     : holds();
        });
  const std::int64_t max_warps = std::min<std::int64_t>(8, limits.max_threads_per_block / 32);
  add("mma: warps a power of two, warps_m * warps_n <= " + str(max_warps),
      {"mma", "mma_warps_m", "mma_warps_n"}, [max_warps](values v) {
        auto pow2 = [](std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; };
        return v[0] == 1 && (!pow2(v[1]) || !pow2(v[2]) || v[1] * v[2] > max_warps)
                   ? broken("mma_warps_n", str(v[1]) + "x" + str(v[2]) + " warps")
                   : holds();
      });
  add("mma: warp tiles multiples of 16 in [16, 128], tile_m * tile_n / 32 <= 128 accumulators",
      {"mma", "mma_tile_m", "mma_tile_n"}, [](values v) {
        auto ok = [](std::int64_t x) { return x >= 16 && x <= 128 && x % 16 == 0; };
        return v[0] == 1 && (!ok(v[1]) || !ok(v[2]) || v[1] * v[2] / 32 > 128)
                   ? broken("mma_tile_n", str(v[1]) + "x" + str(v[2]))
                   : holds();
      });
  add("mma: tile_k a multiple of the instruction's K (" + str(inst_k) + ") in [" + str(inst_k) +
          ", " + str(8 * inst_k) + "]",
      {"mma", "mma_tile_k"}, [inst_k](values v) {
        return v[0] == 1 && (v[1] < inst_k || v[1] > 8 * inst_k || v[1] % inst_k != 0)
                   ? broken("mma_tile_k", "tile_k=" + str(v[1]))
                   : holds();
      });
  add("mma: stages in [2, 5]", {"mma", "mma_stages"}, [](values v) {
    return v[0] != 0 && (v[1] < 2 || v[1] > 5) ? broken("mma_stages", str(v[1])) : holds();
  });
  add("mma_split in [1, 16]", {"mma", "mma_split"}, [](values v) {
    return v[0] != 0 && (v[1] < 1 || v[1] > 16) ? broken("mma_split", "split=" + str(v[1]))
                                                : holds();
  });
  add("mma_tma in {0, 1}, 1 only with mma = 2 (the Tensor Memory Accelerator feeds wgmma)",
      {"mma", "mma_tma"}, [](values v) {
        return v[0] != 0 && (v[1] < 0 || v[1] > 1 || (v[1] == 1 && v[0] != 2))
                   ? broken("mma_tma", "tma=" + str(v[1]) + " with mma=" + str(v[0]))
                   : holds();
      });
  add("mma_persistent in {0, 1}, 1 only with mma = 2, mma_tma = 1 and mma_split = 1 (a "
      "producer warpgroup issues TMA boxes for the tiles the block walks)",
      {"mma", "mma_persistent", "mma_tma", "mma_split"}, [](values v) {
        return v[0] != 0 && (v[1] < 0 || v[1] > 1 ||
                             (v[1] == 1 && (v[0] != 2 || v[2] != 1 || v[3] != 1)))
                   ? broken("mma_persistent", "persistent=" + str(v[1]) + " with mma=" + str(v[0]) +
                                                  ", mma_tma=" + str(v[2]) +
                                                  ", mma_split=" + str(v[3]))
                   : holds();
      });
  add("mma_cluster_m, mma_cluster_n in {1, 2}, at most one 2, only with mma_persistent = 1 "
      "(clusters of two blocks sharing one operand's tile by TMA multicast)",
      {"mma", "mma_cluster_m", "mma_cluster_n", "mma_persistent"}, [](values v) {
        const bool bad = v[1] < 1 || v[1] > 2 || v[2] < 1 || v[2] > 2 || v[1] * v[2] > 2 ||
                         (v[1] * v[2] == 2 && v[3] != 1);
        return v[0] != 0 && bad ? broken(v[1] != 1 ? "mma_cluster_m" : "mma_cluster_n",
                                         "cluster_m=" + str(v[1]) + ", cluster_n=" + str(v[2]) +
                                             " with mma_persistent=" + str(v[3]))
                                : holds();
      });
  add("mma_swizzle in {0 = padded rows, 1 = XOR swizzle (16-bit types only)}",
      {"mma", "mma_swizzle"}, [tf32](values v) {
        return v[0] == 1 && (v[1] < 0 || v[1] > 1 || (tf32 && v[1] == 1))
                   ? broken("mma_swizzle", "swizzle=" + str(v[1]) + (tf32 ? " (TF32)" : ""))
                   : holds();
      });
  // mma = 2: warpgroup MMA (wgmma.mma_async m64nNk16, TF32 m64nNk8; sm_90a; mma.hpp,
  // mma_printer.hpp).
  // mma_warps_m/n count warpgroups, mma_tile_m/n are a warpgroup's tile (N = tile_n).
  add("mma = 2 with TF32: mma_flip_a = mma_flip_b = 0 (wgmma reads TF32 tiles K-major only)",
      {"mma", "mma_flip_a", "mma_flip_b"}, [tf32](values v) {
        return v[0] == 2 && tf32 && (v[1] != 0 || v[2] != 0)
                   ? broken(v[1] != 0 ? "mma_flip_a" : "mma_flip_b", "a flip with TF32")
                   : holds();
      });
  add("mma = 2: warpgroups a power of two, warps_m * warps_n <= 4",
      {"mma", "mma_warps_m", "mma_warps_n"}, [](values v) {
        auto pow2 = [](std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; };
        return v[0] == 2 && (!pow2(v[1]) || !pow2(v[2]) || v[1] * v[2] > 4)
                   ? broken("mma_warps_n", str(v[1]) + "x" + str(v[2]) + " warpgroups")
                   : holds();
      });
  add("mma = 2: tile_m a multiple of 64 up to 256, tile_n a multiple of 16 up to 256, "
      "tile_m * tile_n / 128 <= min(128, 256 / warpgroups) accumulators per thread",
      {"mma", "mma_tile_m", "mma_tile_n", "mma_warps_m", "mma_warps_n"}, [](values v) {
        const bool ok_m = v[1] >= 64 && v[1] <= 256 && v[1] % 64 == 0;
        const bool ok_n = v[2] >= 16 && v[2] <= 256 && v[2] % 16 == 0;
        const std::int64_t wg = std::max<std::int64_t>(1, v[3] * v[4]);
        return v[0] == 2 &&
                       (!ok_m || !ok_n || v[1] * v[2] / 128 > std::min<std::int64_t>(128, 256 / wg))
                   ? broken("mma_tile_n",
                            str(v[1]) + "x" + str(v[2]) + " with " + str(wg) + " warpgroup(s)")
                   : holds();
      });
  add("mma = 2: tile_k in {1, 2, 4, 8} x the instruction's K (" + str(inst_k) + ")",
      {"mma", "mma_tile_k"}, [inst_k](values v) {
        const std::int64_t x = v[1] / inst_k;
        return v[0] == 2 && (v[1] % inst_k != 0 || (x != 1 && x != 2 && x != 4 && x != 8))
                   ? broken("mma_tile_k", "tile_k=" + str(v[1]))
                   : holds();
      });
  add("mma = 2: mma_swizzle = 1 (wgmma's tiles are always swizzled)", {"mma", "mma_swizzle"},
      [](values v) {
        return v[0] == 2 && v[1] != 1 ? broken("mma_swizzle", "swizzle=" + str(v[1])) : holds();
      });
}

// The rules of one computation at `sizes` on a device with `limits`, in the order check()
// reports them. `stage_prefix` names the input and kernel parameters (cache_b, vec, ...; not the
// dimension parameters) of a fused pair's second stage in the tuner's space ("s2_").
inline std::vector<rule> config_rules(const ir::computation& comp,
                                      const std::vector<std::int64_t>& sizes,
                                      const device_limits& limits,
                                      const std::string& stage_prefix = "") {
  using detail::broken;
  using detail::holds;
  using detail::str;
  using values = std::span<const std::int64_t>;
  std::vector<rule> rs;
  auto add = [&](std::string name, std::vector<std::string> reads, auto test,
                 bool product_bound = false) {
    rs.push_back({std::move(name), std::move(reads), product_bound, std::move(test)});
  };
  const std::size_t D = comp.rank();
  auto dim = [](const char* stem, std::size_t d) { return param_name(stem, d); };
  auto stage = [&](const char* stem, std::size_t b) { return stage_prefix + param_name(stem, b); };
  const std::string vec = stage_prefix + "vec", vec_pw = stage_prefix + "vec_pw",
                    thr_combine = stage_prefix + "thr_combine",
                    blk_combine = stage_prefix + "blk_combine",
                    prefetch = stage_prefix + "prefetch";

  for (std::size_t d = 0; d < D; ++d) {
    const std::int64_t size = sizes.at(d);
    const std::string blk = dim("blk", d), thr = dim("thr", d), t_rm = dim("t_rm", d),
                      t_sm = dim("t_sm", d), thr_map = dim("thr_map", d),
                      blk_map = dim("blk_map", d);
    add("1 <= blk_d <= size_d", {blk}, [blk, size](values v) {
      return v[0] < 1 || v[0] > size ? broken(blk, "blk=" + str(v[0]) + ", size=" + str(size))
                                     : holds();
    });
    add("thr_d >= 1", {thr},
        [thr](values v) { return v[0] < 1 ? broken(thr, "thr=" + str(v[0])) : holds(); });
    add("t_rm_d >= 1", {t_rm},
        [t_rm](values v) { return v[0] < 1 ? broken(t_rm, "t_rm=" + str(v[0])) : holds(); });
    add("1 <= t_sm_d <= 2^30", {t_sm}, [t_sm](values v) {
      return v[0] < 1 || v[0] > (std::int64_t(1) << 30) ? broken(t_sm, "t_sm=" + str(v[0]))
                                                        : holds();
    });
    add("t_rm_d * thr_d <= t_sm_d", {t_rm, thr, t_sm}, [t_sm](values v) {
      return v[0] * v[1] > v[2]
                 ? broken(t_sm, "t_rm=" + str(v[0]) + " thr=" + str(v[1]) + " t_sm=" + str(v[2]))
                 : holds();
    });
    add("thr_map_d in {0,1,2}", {thr_map}, [thr_map](values v) {
      return v[0] < 0 || v[0] > 2 ? broken(thr_map, "thr_map=" + str(v[0])) : holds();
    });
    add("blk_map_d in {0,1,2}", {blk_map}, [blk_map](values v) {
      return v[0] < 0 || v[0] > 2 ? broken(blk_map, "blk_map=" + str(v[0])) : holds();
    });
    if (comp.dims[d].combine == ir::combine_kind::prefix_sum) {
      const std::string why =
          "prefix-sum dimension '" + comp.dims[d].name + "' needs thr=1 and blk=1";
      add("scan dimensions run in one thread", {thr},
          [thr, why](values v) { return v[0] != 1 ? broken(thr, why) : holds(); });
      add("scan dimensions run in one thread", {blk},
          [blk, why](values v) { return v[0] != 1 ? broken(blk, why) : holds(); });
    }
  }

  for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
    const ir::buffer& in = comp.inputs[b];
    const std::string cache = stage("cache", b), transpose = stage("transpose", b),
                      pad = stage("pad", b), buffer = "buffer '" + in.name + "'";
    const std::int64_t rank = std::int64_t(in.rank);
    add("cache_b in {0 = global, 1 = shared}", {cache}, [cache](values v) {
      return v[0] != 0 && v[0] != 1 ? broken(cache, "cache=" + str(v[0])) : holds();
    });
    const bool shareable = detail::accesses_share_coefficients(in);
    add("a shared tile needs accesses differing by offsets only", {cache},
        [cache, shareable, buffer](values v) {
          return v[0] == 1 && !shareable ? broken(cache, buffer) : holds();
        });
    add("0 <= pad_b <= 32", {pad},
        [pad](values v) { return v[0] < 0 || v[0] > 32 ? broken(pad, str(v[0])) : holds(); });
    const std::string not_shared = buffer + " is not cached in shared memory";
    add("layout only for shared tiles", {cache, pad}, [pad, not_shared](values v) {
      return v[0] != 1 && v[1] != 0 ? broken(pad, not_shared) : holds();
    });
    add("layout only for shared tiles", {cache, transpose}, [transpose, not_shared](values v) {
      return v[0] != 1 && v[1] != 0 ? broken(transpose, not_shared) : holds();
    });
    add("transpose_b in {0, 1 = last two dims swapped, 2 = first dim innermost}", {transpose},
        [transpose](values v) {
          return v[0] < 0 || v[0] > 2 ? broken(transpose, "transpose=" + str(v[0])) : holds();
        });
    add("transpose needs rank >= 2", {transpose}, [transpose, rank, buffer](values v) {
      return v[0] != 0 && rank < 2 ? broken(transpose, buffer) : holds();
    });
    add("transpose = 2 needs rank >= 3 (rank 2: use 1)", {transpose},
        [transpose, rank, buffer](values v) {
          return v[0] == 2 && rank < 3 ? broken(transpose, buffer + " has rank " + str(rank))
                                       : holds();
        });
  }

  // 8 only with 16-bit buffers: a vector is at most 16 bytes
  const std::int64_t widest = detail::widest_vector(comp);
  const std::string widths = widest == 8 ? "{1, 2, 4, 8}" : "{1, 2, 4}";
  auto width_ok = [widest](std::int64_t w) { return w == 1 || w == 2 || w == 4 || w == widest; };
  add("vec in " + widths, {vec}, [vec, width_ok](values v) {
    return !width_ok(v[0]) ? broken(vec, "vec=" + str(v[0])) : holds();
  });
  add("vec_pw in " + widths, {vec_pw}, [vec_pw, width_ok](values v) {
    return !width_ok(v[0]) ? broken(vec_pw, "vec_pw=" + str(v[0])) : holds();
  });
  add("thr_combine in {0 = shared tree, 1 = warp shuffle}", {thr_combine}, [thr_combine](values v) {
    return v[0] != 0 && v[0] != 1 ? broken(thr_combine, str(v[0])) : holds();
  });
  add("blk_combine in {0 = atomic, 1 = second kernel, 2 = last block}", {blk_combine},
      [blk_combine](values v) {
        return v[0] < 0 || v[0] > 2 ? broken(blk_combine, str(v[0])) : holds();
      });

  // Threads and register tiles: bounds on products, so the space prunes as it goes.
  std::vector<std::string> thrs, t_rms, red_thrs, acc_t_rms;
  for (std::size_t d = 0; d < D; ++d) {
    thrs.push_back(dim("thr", d));
    t_rms.push_back(dim("t_rm", d));
    if (comp.dims[d].combine == ir::combine_kind::pointwise)
      red_thrs.push_back(dim("thr", d));
    else  // the accumulators: one per element of the ++ and scan dimensions' register tiles
      acc_t_rms.push_back(dim("t_rm", d));
  }
  auto product = [](values v) {
    std::int64_t p = 1;
    for (auto x : v) p *= x;
    return p;
  };
  const std::int64_t max_threads = limits.max_threads_per_block;
  add(
      "threads per block <= " + str(max_threads), thrs,
      [max_threads, product](values v) {
        const std::int64_t t = product(v);
        return t > max_threads ? broken("thr_*", str(t) + " threads") : holds();
      },
      true);
  const std::int64_t results = std::int64_t(comp.outputs.size());
  add(
      "accumulators (product of t_rm over ++/ps dims, times results) <= " + str(max_accumulators),
      acc_t_rms,
      [results, product](values v) {
        const std::int64_t a = product(v) * results;
        return a > max_accumulators ? broken("t_rm_*", str(a)) : holds();
      },
      true);
  add(
      "product of all t_rm <= " + str(max_unrolled), t_rms,
      [product](values v) {
        const std::int64_t u = product(v);
        return u > max_unrolled ? broken("t_rm_*", str(u)) : holds();
      },
      true);

  // Warp shuffles (thr_combine = 1), when threads of a block share an output point.
  {
    std::vector<std::string> reads = red_thrs;
    reads.push_back(thr_combine);
    const bool cuda = limits.cuda;
    const std::string device = "device " + limits.name;
    add("warp shuffles need a CUDA device", reads, [cuda, device, thr_combine, product](values v) {
      const std::int64_t red_threads = product(v.first(v.size() - 1));
      return v.back() == 1 && red_threads > 1 && !cuda ? broken(thr_combine, device) : holds();
    });
    // The reduction threads must be the lowest lanes: on x, fastest.
    std::vector<std::string> lanes;
    for (std::size_t d = 0; d < D; ++d) {
      lanes.push_back(dim("thr", d));
      lanes.push_back(dim("thr_map", d));
    }
    lanes.push_back(thr_combine);
    std::vector<bool> reduce;
    for (std::size_t d = 0; d < D; ++d)
      reduce.push_back(comp.dims[d].combine == ir::combine_kind::pointwise);
    add("warp shuffle: reduction threads fastest on x", lanes, [reduce, comp](values v) {
      if (v.back() != 1) return holds();
      auto bad = detail::shuffle_lane_violation(reduce.size(), [&](std::size_t d) {
        return detail::lane_dim{reduce[d], v[2 * d], v[2 * d + 1] == 0};
      });
      return bad ? broken(param_name("thr_map", *bad),
                          "dimension '" + comp.dims[*bad].name +
                              "' must map to x below every ++ dimension")
                 : holds();
    });
    // More than a warp: whole warps, their totals combined by one warp (two levels).
    const std::int64_t most = std::int64_t(limits.warp_size) * limits.warp_size;
    add("warp shuffle: reduction threads a power of two <= warp size squared", reads,
        [most, thr_combine, product](values v) {
          const std::int64_t red_threads = product(v.first(v.size() - 1));
          return v.back() == 1 && red_threads > 1 &&
                         ((red_threads & (red_threads - 1)) != 0 || red_threads > most)
                     ? broken(thr_combine, str(red_threads) + " reduction threads")
                     : holds();
        });
  }

  // Atomics, when a reduction is split over blocks.
  {
    std::vector<std::string> reads;
    for (std::size_t d = 0; d < D; ++d)
      if (comp.dims[d].combine == ir::combine_kind::pointwise) reads.push_back(dim("blk", d));
    reads.push_back(blk_combine);
    const bool supported = detail::atomic_supported(comp, limits);
    const std::string op = "operator '" + comp.reduction.name + "'";
    add("atomics need add/mul/max/min on 32-bit types (64-bit on CUDA)", reads,
        [supported, op, blk_combine, product](values v) {
          const bool split = product(v.first(v.size() - 1)) > 1;
          return v.back() == 0 && split && !supported ? broken(blk_combine, op) : holds();
        });
    if (comp.epilogue) {
      const std::string epi = "the epilogue '" + comp.epilogue->name + "'";
      add("an epilogue needs a last combining step: no atomics when a reduction is split over "
          "blocks",
          reads, [epi, blk_combine, product](values v) {
            const bool split = product(v.first(v.size() - 1)) > 1;
            return v.back() == 0 && split ? broken(blk_combine, epi) : holds();
          });
    }
  }

  // Prefetch: the next reduction step's shared tiles staged in registers.
  add("prefetch in {0 = off, 1 = registers, 2 = registers + two buffers}", {prefetch},
      [prefetch](values v) {
        return v[0] < 0 || v[0] > 2 ? broken(prefetch, str(v[0])) : holds();
      });
  {
    std::vector<std::string> reads;
    for (std::size_t b = 0; b < comp.inputs.size(); ++b) reads.push_back(stage("cache", b));
    reads.push_back(prefetch);
    const bool reduces = detail::innermost(comp, ir::combine_kind::pointwise).has_value();
    add("prefetch needs a cached input and a reduction dimension", reads,
        [reduces, prefetch](values v) {
          if (v.back() == 0) return holds();
          bool cached = false;
          for (std::size_t b = 0; b + 1 < v.size(); ++b) cached |= v[b] == 1;
          if (!cached) return broken(prefetch, "no input is cached in shared memory");
          return reduces ? holds() : broken(prefetch, "no reduction dimension");
        });
  }

  // Vector stores along the innermost ++ dimension: blocked, t_rm a multiple of vec.
  if (auto d = detail::innermost(comp, ir::combine_kind::concat)) {
    const std::string dim_name = "dimension '" + comp.dims[*d].name + "'";
    add("vec > 1: blocked innermost ++ dimension with t_rm a multiple of vec",
        {dim("t_rm", *d), dim("strided", *d), vec}, [vec, dim_name](values v) {
          return v[2] > 1 && (v[0] % v[2] != 0 || v[1] != 0)
                     ? broken(vec, dim_name + " t_rm=" + str(v[0]))
                     : holds();
        });
  } else {
    add("vec > 1 needs a ++ dimension", {vec},
        [vec](values v) { return v[0] > 1 ? broken(vec, "computation has none") : holds(); });
  }
  // Vector loads along the innermost pw dimension: its register tile walked in whole groups.
  if (auto d = detail::innermost(comp, ir::combine_kind::pointwise)) {
    const std::string dim_name = "dimension '" + comp.dims[*d].name + "'";
    add("vec_pw > 1: blocked innermost pw dimension", {dim("strided", *d), vec_pw},
        [vec_pw, dim_name](values v) {
          return v[1] > 1 && v[0] != 0 ? broken(vec_pw, dim_name + " is strided") : holds();
        });
    add("vec_pw > 1: t_rm of the innermost pw dimension a multiple of vec_pw",
        {dim("t_rm", *d), vec_pw}, [vec_pw, dim_name](values v) {
          return v[1] > 1 && v[0] % v[1] != 0
                     ? broken(vec_pw, dim_name + " t_rm=" + str(v[0]) + ", vec_pw=" + str(v[1]))
                     : holds();
        });
  } else {
    add("vec_pw > 1 needs a pw dimension", {vec_pw},
        [vec_pw](values v) { return v[0] > 1 ? broken(vec_pw, "computation has none") : holds(); });
  }
  // Edge tiles (edge_tiles.hpp): 2 adds shifted vector loads, which need a vector group.
  const std::string edge_split = stage_prefix + "edge_split";
  add("edge_split in {0 = off, 1 = whole-tile chunks + interior path, 2 = 1 + shifted vector "
      "loads}",
      {edge_split}, [edge_split](values v) {
        return v[0] < 0 || v[0] > 2 ? broken(edge_split, "edge_split=" + str(v[0])) : holds();
      });
  add("edge_split = 2 (shifted vector loads) needs vec > 1 or vec_pw > 1",
      {vec, vec_pw, edge_split}, [edge_split](values v) {
        return v[2] == 2 && v[0] == 1 && v[1] == 1 ? broken(edge_split, "vec=1, vec_pw=1")
                                                   : holds();
      });
  if (stage_prefix.empty()) append_mma_rules(rs, comp, limits);
  return rs;
}

// The first rule of `rules` that `cfg` breaks: its name and what it reports.
struct broken_rule {
  std::string name;
  rule_violation violation;
};
inline std::optional<broken_rule> first_broken(const std::vector<rule>& rules, const config& cfg) {
  const std::map<std::string, std::int64_t> m = to_full_map(cfg);
  std::vector<std::int64_t> vals;
  for (const rule& r : rules) {
    vals.clear();
    for (const std::string& n : r.reads) vals.push_back(m.at(n));
    if (auto v = r.test(vals)) return broken_rule{r.name, std::move(*v)};
  }
  return std::nullopt;
}

}  // namespace mdh::lower
