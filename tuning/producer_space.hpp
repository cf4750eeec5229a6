// SPDX-License-Identifier: MIT
// The search space of a with_producer pair (attention; mdh/lower/producer_passes.hpp): the
// parameters t_i, t_j (powers of two up to 128 and the sizes), thr_i, thr_j (powers of two),
// pad (0, 1, 4, 8), vec (1, 4), mma (0, 1: the tensor-core kernel), stages (1, 2), split (1, 2,
// 4: blocks sharing a row tile's keys, tensor cores only), constrained
// by lower::producer_config_rules, so that every point of the space lowers; the translations
// between its points and lower::producer_config; its starts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <atf/atf.hpp>
#include <mdh/ir/with_producer.hpp>
#include <mdh/lower/producer_passes.hpp>
#include <tuning/search_space.hpp>

namespace mdh::tuning {

inline std::vector<atf::tp> make_parameters(const ir::produced& x,
                                            const std::vector<std::int64_t>& sizes,
                                            const lower::device_limits& limits,
                                            const space_options& opt = {}) {
  using std::int64_t;
  const lower::device_limits lim = space_limits(limits, opt);
  const auto shape = lower::producer_passes::shape_plan(x, sizes);
  auto tiles = [](int64_t n) {
    return atf::set(detail::powers_of_two_upto(std::min<int64_t>(128, detail::pow2_ceil(n))));
  };
  std::vector<atf::tp> ps;
  ps.emplace_back("t_i", tiles(shape.producer.rows));
  ps.emplace_back("t_j", tiles(shape.producer.keys));
  ps.emplace_back("thr_i", atf::set(detail::powers_of_two_upto(32)));
  ps.emplace_back("thr_j", atf::set(detail::powers_of_two_upto(64)));
  ps.emplace_back("pad", atf::set({int64_t{0}, int64_t{1}, int64_t{4}, int64_t{8}}));
  ps.emplace_back("vec", atf::set({int64_t{1}, int64_t{4}}));
  ps.emplace_back("mma", atf::set({int64_t{0}, int64_t{1}}));
  ps.emplace_back("stages", atf::set({int64_t{1}, int64_t{2}}));
  ps.emplace_back("split", atf::set({int64_t{1}, int64_t{2}, int64_t{4}}));
  for (const lower::rule& r : lower::producer_config_rules(x, sizes, lim)) detail::constrain(ps, r);
  return ps;
}

inline atf::search_space make_search_space(const ir::produced& x,
                                           const std::vector<std::int64_t>& sizes,
                                           const lower::device_limits& limits,
                                           const space_options& opt = {}) {
  return atf::search_space(make_parameters(x, sizes, limits, opt));
}

inline lower::producer_config to_config(const atf::configuration& a, const ir::produced&,
                                        const std::vector<std::int64_t>&) {
  lower::producer_config c;
  c.t_i = a.get<std::int64_t>("t_i"), c.t_j = a.get<std::int64_t>("t_j");
  c.thr_i = a.get<std::int64_t>("thr_i"), c.thr_j = a.get<std::int64_t>("thr_j");
  c.pad = a.get<std::int64_t>("pad");
  c.vec = a.get<std::int64_t>("vec");
  c.mma = a.get<std::int64_t>("mma"), c.stages = a.get<std::int64_t>("stages");
  c.split = a.get<std::int64_t>("split");
  return c;
}

inline atf::configuration to_space_configuration(const lower::producer_config& c,
                                                 const ir::produced&,
                                                 const std::vector<std::int64_t>&,
                                                 const lower::device_limits& = {}) {
  atf::configuration a;
  for (auto& [k, v] : lower::to_full_map(c)) a.set(k, atf::value(v));
  return a;
}

inline std::string kernel_key(const lower::producer_config& c) { return lower::to_string(c); }

// The default, then FlashAttention-like shapes (64 or 128 rows of a block, 32 or 64 keys per
// step, 128 or 256 threads; vector reads where the operands allow), and the tensor-core kernel's
// (2, 4 or 8 warps of 16 or 32 rows, 32 to 128 keys a step, two stages or one, the keys of a row
// tile in one block or split over 2 or 4), those valid here.
inline std::vector<lower::producer_config> start_configurations(
    const ir::produced& x, const std::vector<std::int64_t>& sizes,
    const lower::device_limits& limits) {
  std::vector<lower::producer_config> v;
  for (auto c : {lower::default_config(x, sizes),
                 lower::producer_config{64, 64, 16, 16, 4, 4},
                 lower::producer_config{64, 64, 16, 16, 1},
                 lower::producer_config{64, 32, 16, 8, 4, 4},
                 lower::producer_config{64, 32, 16, 8, 1},
                 lower::producer_config{128, 64, 16, 16, 4, 4},
                 lower::producer_config{128, 64, 16, 16, 1},
                 lower::producer_config{64, 64, 8, 32, 1},
                 lower::producer_config{16, 64, 4, 32, 1},
                 lower::producer_config{64, 64, 4, 32, 8, 1, 1, 2},
                 lower::producer_config{128, 64, 8, 32, 8, 1, 1, 2},
                 lower::producer_config{64, 128, 4, 32, 8, 1, 1, 2},
                 lower::producer_config{32, 64, 2, 32, 8, 1, 1, 2},
                 lower::producer_config{64, 32, 4, 32, 8, 1, 1, 2},
                 lower::producer_config{64, 64, 4, 32, 8, 1, 1, 1},
                 lower::producer_config{128, 128, 8, 32, 8, 1, 1, 2},
                 lower::producer_config{128, 64, 4, 32, 8, 1, 1, 2},
                 lower::producer_config{128, 32, 4, 32, 8, 1, 1, 2},
                 lower::producer_config{64, 64, 2, 32, 8, 1, 1, 2},
                 lower::producer_config{128, 64, 4, 32, 8, 1, 1, 1},
                 lower::producer_config{64, 64, 4, 32, 8, 1, 1, 2, 2},
                 lower::producer_config{64, 64, 4, 32, 8, 1, 1, 2, 4},
                 lower::producer_config{128, 64, 8, 32, 8, 1, 1, 2, 2},
                 lower::producer_config{64, 128, 4, 32, 8, 1, 1, 2, 2},
                 lower::producer_config{32, 64, 2, 32, 8, 1, 1, 2, 2}})
    if (lower::valid(x, sizes, c, limits) && std::find(v.begin(), v.end(), c) == v.end())
      v.push_back(c);
  return v;
}

}  // namespace mdh::tuning
