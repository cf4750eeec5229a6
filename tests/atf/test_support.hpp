// SPDX-License-Identifier: MIT
// Small spaces, cost functions and technique names shared by the atf tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <atf/atf.hpp>

namespace atf_test {

// x in 1..20, y in 1..20 dividing 2x; cost_of has its optimum at (12, 4).
inline atf::search_space small_space() {
  atf::tp x("x", atf::interval<std::int64_t>(1, 20));
  atf::tp y("y", atf::interval<std::int64_t>(1, 20), atf::divides(x * 2));
  return atf::search_space(x, y);
}
inline double cost_of(const atf::configuration& c) {
  return static_cast<double>(std::abs(c.get<std::int64_t>("x") - 12) +
                             std::abs(c.get<std::int64_t>("y") - 4)) +
         1;
}

// A technique by name (anything else: auc_bandit).
inline std::unique_ptr<atf::search::technique> make_technique(const std::string& name) {
  if (name == "exhaustive") return std::make_unique<atf::search::exhaustive>();
  if (name == "random") return std::make_unique<atf::search::random>();
  if (name == "simulated_annealing") return std::make_unique<atf::search::simulated_annealing>();
  if (name == "differential_evolution")
    return std::make_unique<atf::search::differential_evolution>();
  if (name == "pattern_search") return std::make_unique<atf::search::pattern_search>();
  if (name == "torczon") return std::make_unique<atf::search::torczon>();
  if (name == "surrogate") return std::make_unique<atf::search::surrogate>();
  return std::make_unique<atf::search::auc_bandit>();
}

}  // namespace atf_test
