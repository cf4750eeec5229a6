// SPDX-License-Identifier: MIT
// Issue 19's "any shape" cases: the odd-extent products, matvec, dot, row and column sums and
// the TCCG contractions. At the benchmark's sizes, the configurations mdh_bench and the tuner
// start from are legal on the H200 and emit; scaled down to odd extents that no tile divides,
// the default configuration, the tuner's start configurations and random points of the search
// space run on OpenCL (PoCL) and match mdh::reference on random non-zero inputs.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <backends/cuda/emit.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>
#include <expressions/benchmark_cases.hpp>
#include <mdh/lower/lower.hpp>

#ifdef MDH_WITH_OPENCL
#include <backends/opencl/runtime.hpp>

#include "opencl_check.hpp"
#endif

using namespace mdh;

namespace {

using sizes_t = std::vector<std::int64_t>;

// The any_shape cases scaled down to odd (mostly prime) extents, each name as in
// ops::for_each_any_shape_case; a product's K of 33 stays a K that no power-of-two tile divides.
template <class Visit>
void for_each_small_any_shape_case(Visit&& visit) {
  visit(std::string_view("matmul_997x1009x769"), ops::matmul(), sizes_t{37, 41, 29});
  visit(std::string_view("matmul_1023x1025x1027"), ops::matmul(), sizes_t{63, 65, 67});
  visit(std::string_view("matmul_4095x4097x33"), ops::matmul(), sizes_t{127, 129, 33});
  visit(std::string_view("bmm_12x333x333x77"), ops::bmatmul(), sizes_t{3, 33, 33, 7});
  visit(std::string_view("matvec_12289x3001"), ops::matvec(), sizes_t{97, 301});
  visit(std::string_view("dot_8388613"), ops::dot(), sizes_t{(1 << 13) + 5});
  visit(std::string_view("row_sum_3001x4093"), ops::row_sum(), sizes_t{31, 409});
  visit(std::string_view("col_sum_3001x4093"), ops::bias_add_grad(), sizes_t{301, 41});
  visit(std::string_view("tccg_abcd_aebf_dfce"), ops::tccg_abcd_aebf_dfce(),
        sizes_t{5, 7, 3, 9, 5, 7});
  visit(std::string_view("tccg_abcd_eafd_fbec"), ops::tccg_abcd_eafd_fbec(),
        sizes_t{7, 3, 5, 9, 7, 5});
  visit(std::string_view("tccg_abc_adec_ebd"), ops::tccg_abc_adec_ebd(), sizes_t{9, 11, 7, 5, 3});
  visit(std::string_view("tccg_abcdef_dega_gfbc"), ops::tccg_abcdef_dega_gfbc(),
        sizes_t{5, 3, 3, 5, 3, 3, 7});
  visit(std::string_view("tccg_abcdef_dfgb_geac"), ops::tccg_abcdef_dfgb_geac(),
        sizes_t{3, 5, 3, 3, 5, 3, 7});
}

// At most n of v, evenly spaced (first and last included).
std::vector<lower::config> spread(const std::vector<lower::config>& v, std::size_t n) {
  if (v.size() <= n) return v;
  std::vector<lower::config> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(v[k * (v.size() - 1) / (n - 1)]);
  return out;
}

// n random points of the tuner's search space that lower::check accepts (the space's
// constraints leave a few checks to the evaluation), from at most 40 n draws.
std::vector<lower::config> random_space_configs(const ir::computation& c, const sizes_t& sizes,
                                                const lower::device_limits& lim, std::size_t n,
                                                std::uint64_t seed) {
  auto space = tuning::make_search_space(c, sizes, lim);
  std::mt19937_64 rng(seed);
  std::vector<lower::config> out;
  for (std::size_t k = 0; k < 40 * n && out.size() < n; ++k) {
    auto cfg = tuning::to_config(space.to_configuration(space.random_point(rng)), c, sizes);
    try {
      lower::check(cfg, c, sizes, lim);
      out.push_back(cfg);
    } catch (const error&) {
    }
  }
  return out;
}

}  // namespace

TEST_CASE("any_shape cases at the benchmark's sizes: default and start configurations are legal") {
  const auto lim = lower::h200_limits();
  int cases = 0;
  ops::for_each_any_shape_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    INFO(name, " ", to_string(sizes));
    const ir::computation& c = mdh::describe(op);
    auto cfgs = tuning::start_configurations(c, sizes, lim);
    CHECK_MESSAGE(!cfgs.empty(), "no start configuration");
    cfgs.insert(cfgs.begin(), lower::default_config(c, sizes));
    for (auto& cfg : cfgs) {
      INFO(lower::to_string(cfg));
      CHECK_NOTHROW(lower::check(cfg, c, sizes, lim));
      CHECK(cuda::emit(lower::lower(c, sizes, cfg, lim)).find("__global__") != std::string::npos);
    }
    ++cases;
  });
  CHECK(cases == 13);
}

TEST_CASE("OpenCL: any_shape cases at odd sizes, default / start / random configurations") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  std::unique_ptr<opencl::context> ctx;
  try {
    ctx = std::make_unique<opencl::context>();
  } catch (const std::exception& e) {
    MESSAGE("SKIPPED: no OpenCL device: ", e.what());
    return;
  }
  auto lim = ctx->limits();
  lim.name = "pocl-cpu";
  int total = 0, cases = 0;
  for_each_small_any_shape_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    INFO(name, " at ", to_string(sizes));
    const ir::computation& c = mdh::describe(op);
    std::vector<lower::config> cfgs{lower::default_config(c, sizes)};
    for (auto& s : spread(tuning::start_configurations(c, sizes, lim), 2)) cfgs.push_back(s);
    auto random = random_space_configs(c, sizes, lim, 2, std::hash<std::string_view>{}(name));
    CHECK_MESSAGE(random.size() == 2, "few valid points in the search space");
    cfgs.insert(cfgs.end(), random.begin(), random.end());
    total += test::run_configs(*ctx, op, sizes, cfgs, 19 + std::uint64_t(cases));
    ++cases;
  });
  CHECK(cases == 13);
  MESSAGE(total, " configurations of ", cases, " any_shape cases checked on ", lim.name);
#endif
}
