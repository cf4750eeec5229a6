// SPDX-License-Identifier: MIT
// How much of a correctness sweep a test run compiles and runs. The full sweep (MDH_TEST_FULL=1,
// which `scripts/test.sh --full` sets) runs every configuration drawn. The default run draws the
// same configurations from the same seeds and keeps, in drawing order, a subset that covers every
// value class (value_classes below) that the whole list covers: every code path class of the
// kernel template the full sweep takes, with a third to a half of the kernels to compile.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/fuse.hpp>

namespace mdh::test {

// MDH_TEST_FULL set to anything but "" or "0".
inline bool full_sweep() {
  const char* v = std::getenv("MDH_TEST_FULL");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// What the kernel template tells dimension d apart by: its kind (concatenation, point-wise
// reduction, prefix sum) and whether it is the innermost of its kind (the vector dimensions, and
// the fastest-moving index of the buffers). Dimensions of the same role take the same code.
inline std::string dimension_role(const ir::computation& comp, std::size_t d) {
  const auto kind = comp.dims[d].combine;
  bool innermost = true;
  for (std::size_t e = d + 1; e < comp.rank(); ++e)
    innermost = innermost && comp.dims[e].combine != kind;
  const char* name = kind == ir::combine_kind::concat      ? "cc"
                     : kind == ir::combine_kind::pointwise ? "pw"
                                                           : "ps";
  return std::string(name) + (innermost ? "-inner" : "-outer");
}

// The classes of the template's code paths one configuration of `comp` at `sizes` takes, one
// string each. Per dimension: blocks, threads and registers one or more (a loop or none); one or
// several rm steps per shared tile and tiles per block chunk; the size a whole number of tiles or
// not (the guards); blocked or strided; the thread axis (when threads > 1) and block axis (when
// blocks > 1); each for every dimension role (above), not every dimension. Per input: global or
// shared, and a shared tile's layout and padding. The thread and block combine only where a
// reduction dimension is split over threads / blocks (elsewhere they generate nothing); vector
// widths and prefetch by value.
inline std::set<std::string> value_classes(const lower::config& c, const ir::computation& comp,
                                           const std::vector<std::int64_t>& sizes) {
  std::set<std::string> out;
  auto one_or_more = [](std::int64_t v) { return v > 1 ? ">1" : "=1"; };
  bool red_thr = false, red_blk = false;
  for (std::size_t d = 0; d < c.dims.size(); ++d) {
    const auto& x = c.dims[d];
    const std::string p = dimension_role(comp, d) + ".";
    const std::int64_t step = x.thr * x.t_rm;
    const std::int64_t chunk = lower::ceil_div(sizes[d], x.blk);
    const std::int64_t tiles = lower::ceil_div(chunk, x.t_sm);
    out.insert(p + "blk" + one_or_more(x.blk));
    out.insert(p + "thr" + one_or_more(x.thr));
    out.insert(p + "t_rm" + one_or_more(x.t_rm));
    out.insert(p + "steps" + one_or_more(lower::ceil_div(x.t_sm, step)));
    out.insert(p + "tiles" + one_or_more(tiles));
    out.insert(p + (sizes[d] == x.blk * tiles * x.t_sm ? "whole" : "ragged"));
    out.insert(p + (x.strided ? "strided" : "blocked"));
    if (x.thr > 1) out.insert(p + "thr_map=" + std::to_string(x.thr_map));
    if (x.blk > 1) out.insert(p + "blk_map=" + std::to_string(x.blk_map));
    red_thr = red_thr || (comp.is_reduction(d) && x.thr > 1);
    red_blk = red_blk || (comp.is_reduction(d) && x.blk > 1);
  }
  for (std::size_t b = 0; b < c.inputs.size(); ++b) {
    const auto& i = c.inputs[b];
    const std::string p = "in" + std::to_string(b) + ".";
    if (i.cache == lower::cache_kind::global) {
      out.insert(p + "global");
      continue;
    }
    out.insert(p + "shared");
    out.insert(p + "transpose=" + std::to_string(i.transpose));
    out.insert(p + "pad" + (i.pad > 0 ? ">0" : "=0"));
  }
  if (red_thr) out.insert("thr_combine=" + std::to_string(int(c.thr_combine)));
  if (red_blk) out.insert("blk_combine=" + std::to_string(int(c.blk_combine)));
  out.insert("vec=" + std::to_string(c.vec));
  out.insert("vec_pw=" + std::to_string(c.vec_pw));
  out.insert("prefetch=" + std::to_string(c.prefetch));
  return out;
}

// A fused pair: the classes of both stages, each stage's prefixed.
inline std::set<std::string> value_classes(const lower::fused_config& c, const ir::fused& f,
                                           const std::vector<std::int64_t>& sizes) {
  std::set<std::string> out;
  for (auto& s : value_classes(c.first, f.first, sizes)) out.insert("1:" + s);
  for (auto& s : value_classes(c.second, f.second, sizes)) out.insert("2:" + s);
  return out;
}

// The union of the classes of `cfgs`.
template <class Config, class Comp>
std::set<std::string> value_classes(const std::vector<Config>& cfgs, const Comp& comp,
                                    const std::vector<std::int64_t>& sizes) {
  std::set<std::string> out;
  for (auto& c : cfgs) out.merge(value_classes(c, comp, sizes));
  return out;
}

// A subset of `all` with the same union of classes, in the order of `all`: the first `kept`
// (the hand-made edge configurations: limits and corners that are no class of their own), then
// greedily the configuration that adds the most classes not yet covered (the earliest of equals),
// until none adds any. Deterministic: the same list gives the same subset.
template <class Config, class Comp>
std::vector<Config> covering_subset(const std::vector<Config>& all, const Comp& comp,
                                    const std::vector<std::int64_t>& sizes, std::size_t kept = 0) {
  std::vector<std::set<std::string>> classes;
  for (auto& c : all) classes.push_back(value_classes(c, comp, sizes));
  std::set<std::string> covered;
  std::vector<bool> keep(all.size(), false);
  for (std::size_t k = 0; k < std::min(kept, all.size()); ++k) {
    keep[k] = true;
    covered.insert(classes[k].begin(), classes[k].end());
  }
  for (;;) {
    std::size_t best = all.size(), gain = 0;
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (keep[k]) continue;
      std::size_t g = 0;
      for (auto& s : classes[k]) g += !covered.count(s);
      if (g > gain) best = k, gain = g;
    }
    if (best == all.size()) break;
    keep[best] = true;
    covered.insert(classes[best].begin(), classes[best].end());
  }
  std::vector<Config> out;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (keep[k]) out.push_back(all[k]);
  return out;
}

// What a sweep runs of the configurations it made (`kept` hand-made ones first, then the random
// draws): all of them in the full sweep, else the covering subset.
template <class Config, class Comp>
std::vector<Config> sweep_sample(const std::vector<Config>& all, const Comp& comp,
                                 const std::vector<std::int64_t>& sizes, std::size_t kept) {
  return full_sweep() ? all : covering_subset(all, comp, sizes, kept);
}

}  // namespace mdh::test
