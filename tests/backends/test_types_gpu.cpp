// SPDX-License-Identifier: MIT
// On a GPU (label gpu; exits 77, skipped, without one): the bf16, f16 and TF32 cases of
// types_cases.hpp under random valid configurations match mdh::reference (tolerance of
// mdh::tuning::tolerance), and a TF32 matmul differs from the fp32 reference (cvt.rna rounds).
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <backends/cuda/program.hpp>

#include "precompile.hpp"
#include "types_cases.hpp"

using namespace mdh;

namespace {
cuda::device& dev() {
  static cuda::device d(0);
  return d;
}
auto run_cuda = [](const lower::kernel_plan& p, const std::vector<buffer_ref>& in,
                   const std::vector<buffer_ref>& out) { cuda::program(dev(), p).run(in, out); };
}  // namespace

TEST_CASE("CUDA: bf16, f16 and TF32 cases match mdh::reference over random valid configurations") {
  if (!cuda::device_available()) {
    std::cerr << "no CUDA device: skipping the GPU tests\n";
    std::exit(77);
  }
  auto lim = dev().limits();
  int total = 0;
  test::for_each_type_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    auto d = test::make_case_data(op, sizes, 17);
    const std::int64_t L = test::reduction_length_of(x, sizes);
    std::vector<lower::kernel_plan> plans;
    for (auto& cfg : test::case_configs(x, sizes, lim, rng, 30))
      plans.push_back(lower::lower(x, sizes, cfg, lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      INFO(lower::to_string(plan));
      auto msg = test::run_and_compare(plan, d, L, run_cuda);
      REQUIRE_MESSAGE(msg.empty(), msg);
      ++total;
    }
  });
  MESSAGE(total, " kernels of bf16/f16/tf32 cases checked on the GPU");
  CHECK(total > 400);
}

TEST_CASE("CUDA: bf16 and tf32 matmuls at a BERT size match the reference") {
  if (!cuda::device_available()) std::exit(77);
  auto lim = dev().limits();
  std::vector<std::int64_t> s{384, 768, 768};
  std::mt19937_64 rng(7);
  auto check = [&](const auto& op) {
    auto d = test::make_case_data(op, s, 5);
    std::vector<lower::kernel_plan> plans;
    for (auto& cfg : test::case_configs(op.ir(), s, lim, rng, 10))
      plans.push_back(lower::lower(op.ir(), s, cfg, lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = test::run_and_compare(plan, d, 768, run_cuda);
      REQUIRE_MESSAGE(msg.empty(), op.ir().name, " ", lower::to_string(plan.cfg), ": ", msg);
    }
  };
  check(ops::matmul<bf16>());
  check(ops::matmul<f16>());
  check(ops::matmul<float>().with_precision(ir::precision::tf32));
  // cvt.rna.tf32 really rounds: against the fp32 reference the TF32 kernel is off.
  auto ieee = ops::matmul<float>();
  auto tf32 = ieee.with_precision(ir::precision::tf32);
  auto d_ieee = test::make_case_data(ieee, s, 5);
  auto plan = lower::lower(tf32.ir(), s, lower::default_config(tf32.ir(), s), lim);
  CHECK(!test::run_and_compare(plan, d_ieee, 768, run_cuda).empty());
}

TEST_CASE("CUDA: 16-bit buffers moved as 16-byte vectors match mdh::reference") {
  if (!cuda::device_available()) std::exit(77);
  auto lim = dev().limits();
  int total = 0;
  test::for_each_vector16_case([&](const std::string& name, const auto& op, const auto& sizes,
                                   const lower::config& c) {
    INFO(name);
    auto plan = lower::lower(op.ir(), sizes, c, lim);
    INFO(lower::to_string(plan));
    auto d = test::make_case_data(op, sizes, 29);
    auto msg = test::run_and_compare(plan, d, test::reduction_length_of(op.ir(), sizes), run_cuda);
    CHECK_MESSAGE(msg.empty(), msg);
    ++total;
  });
  CHECK(total == 6);
}
