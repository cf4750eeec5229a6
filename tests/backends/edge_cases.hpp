// SPDX-License-Identifier: MIT
// Issue 19's edge-tile development cases (products with odd extents, matvec, dot, row and column
// sums), at the benchmark's sizes or scaled down with odd remainders kept, and configurations
// that exercise both paths of an edge-split kernel (kernel_plan::interior_split).
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include <expressions/bias_add_grad.hpp>
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
  visit(std::string_view("col_sum_3001x4093"), ops::bias_add_grad(),
        small ? edge_sizes{301, 41} : edge_sizes{3001, 4093});
}

// Up to n random valid configurations whose plans have partial tiles and split into an interior
// and an edge path (both run: block 0's first step is whole along the interior dims,
// edge_tiles.hpp), from at most 60 n draws; seeded, so every run draws the same. On OpenCL
// devices a computation without ++ dims cannot split (its reduction dims keep their guards
// there): configurations with partial tiles.
inline std::vector<lower::config> edge_split_configs(const ir::computation& c,
                                                     const edge_sizes& sizes,
                                                     const lower::device_limits& lim, std::size_t n,
                                                     std::uint64_t seed) {
  bool can_split = lim.cuda;
  for (auto& d : c.dims) can_split |= d.combine == ir::combine_kind::concat;
  std::mt19937_64 rng(seed);
  std::vector<lower::config> out;
  for (std::size_t k = 0; k < 60 * n && out.size() < n; ++k) {
    auto cfg = lower::random_config(c, sizes, lim, rng);
    const auto plan = lower::lower(c, sizes, cfg, lim);
    bool partial = false;
    for (auto& d : plan.dims) partial |= d.partial_steps || d.partial_tiles || d.partial_blocks;
    if (partial && (plan.interior_split || !can_split)) out.push_back(cfg);
  }
  return out;
}

}  // namespace mdh::test
