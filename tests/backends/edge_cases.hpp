// SPDX-License-Identifier: MIT
// Issue 19's edge-tile development cases (products with odd extents, a batched product, matvec,
// dot, row sums), at the benchmark's sizes or scaled down with odd remainders kept, configurations
// with edge_split on (mdh/lower/edge_tiles.hpp), and a run of one plan against mdh::reference
// under the tuner's own check (tuning::compare: relative L2 under tuning::tolerance).
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include <expressions/bmatmul.hpp>
#include <expressions/dot.hpp>
#include <expressions/matmul.hpp>
#include <expressions/matvec.hpp>
#include <expressions/row_sum.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

namespace mdh::test {

using edge_sizes = std::vector<std::int64_t>;

// visit(name, op, sizes): the development cases; `small` scales them down for PoCL, keeping
// extents that no power-of-two tile divides (primes, 2^k + 5, 4093's remainder mod 4).
template <class Visit>
void for_each_edge_case(bool small, Visit&& visit) {
  visit(std::string_view("matmul_997x1009x769"), ops::matmul(),
        small ? edge_sizes{97, 101, 69} : edge_sizes{997, 1009, 769});
  visit(std::string_view("matmul_1023x1025x1027"), ops::matmul(),
        small ? edge_sizes{63, 65, 67} : edge_sizes{1023, 1025, 1027});
  visit(std::string_view("matmul_4095x4097x33"), ops::matmul(),
        small ? edge_sizes{127, 129, 33} : edge_sizes{4095, 4097, 33});
  visit(std::string_view("bmm_12x333x333x77"), ops::bmatmul(),
        small ? edge_sizes{3, 33, 35, 13} : edge_sizes{12, 333, 333, 77});
  visit(std::string_view("matvec_12289x3001"), ops::matvec(),
        small ? edge_sizes{193, 301} : edge_sizes{12289, 3001});
  visit(std::string_view("dot_8388613"), ops::dot(),
        small ? edge_sizes{(1 << 13) + 5} : edge_sizes{(1 << 23) + 5});
  visit(std::string_view("row_sum_3001x4093"), ops::row_sum(),
        small ? edge_sizes{31, 409} : edge_sizes{3001, 4093});
}

// Whether some dimension of the plan has a partial step, tile or block (a guard can fail).
inline bool has_partial_tiles(const lower::kernel_plan& p) {
  for (auto& d : p.dims)
    if (d.partial_steps || d.partial_tiles || d.partial_blocks) return true;
  return false;
}

// Up to n random valid configurations with edge_split on (1 or 2, drawn) whose plans have
// partial tiles and, where the computation can split (a ++ dimension, or reduction tiles without
// barriers or on CUDA), an interior and an edge path; from at most 60 n draws, seeded, so every
// run draws the same.
inline std::vector<lower::config> edge_split_configs(const ir::computation& c,
                                                     const edge_sizes& sizes,
                                                     const lower::device_limits& lim, std::size_t n,
                                                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<lower::config> out;
  for (std::size_t k = 0; k < 60 * n && out.size() < n; ++k) {
    lower::random_options opt;
    opt.edge_split = std::uniform_int_distribution<int>(1, 2)(rng);
    auto cfg = lower::random_config(c, sizes, lim, rng, opt);
    if (cfg.edge_split == 0) continue;
    const auto plan = lower::lower(c, sizes, cfg, lim);
    if (has_partial_tiles(plan) && (plan.interior_split || k >= 30 * n)) out.push_back(cfg);
  }
  return out;
}

}  // namespace mdh::test
