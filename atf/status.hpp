// SPDX-License-Identifier: MIT
// atf::tuning_status: what abort conditions and the progress line see of a running tuning.
#pragma once

#include <atf/search_space.hpp>

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace atf {

struct tuning_status {
  std::uint64_t evaluations = 0;  // unique configurations evaluated (valid + invalid)
  std::uint64_t valid = 0;
  std::uint64_t invalid = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  double elapsed_s = 0;  // including earlier sessions of a resumed run
  double session_s = 0;  // this session alone
  index_t space_size = 0;
  // (evaluations, best cost) each time the best improved, oldest first.
  const std::vector<std::pair<std::uint64_t, double>>* improvements = nullptr;
  // (elapsed_s) at each of those improvements.
  const std::vector<double>* improvement_times = nullptr;
};

}  // namespace atf
