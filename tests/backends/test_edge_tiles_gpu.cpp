// SPDX-License-Identifier: MIT
// On a GPU (label gpu; exits 77, skipped, without one): issue 19's edge-tile development cases at
// the benchmark's sizes (997x1009x769, 1023x1025x1027, 4095x4097x33, 12x(333x77)x(77x333),
// matvec 12289x3001, dot 2^23+5, row sums of 3001x4093), each under 4 random configurations with
// edge_split on (1 or 2; plans with an interior and an edge path) and, for the products, one
// start configuration with edge_split (about 32 NVRTC compiles in all), against mdh::reference
// on random non-zero inputs (tuning::compare; last-block plans launched twice).
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <backends/cuda/program.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/start_configurations.hpp>

#include "edge_cases.hpp"
#include "expression_cases.hpp"
#include "naive_reference.hpp"

using namespace mdh;

TEST_CASE("GPU: the edge-tile development cases with edge_split on, vs mdh::reference") {
  if (!cuda::device_available()) {
    std::cerr << "no CUDA device: skipping the GPU tests\n";
    std::exit(77);
  }
  cuda::device dev(0);
  const auto lim = dev.limits();
  int total = 0, split = 0, shifted = 0, cases = 0;
  test::for_each_edge_case(
      false, [&](std::string_view name, const auto& op, const test::edge_sizes& sizes) {
        INFO(name);
        const ir::computation& c = mdh::describe(op);
        auto in = test::make_inputs(c, sizes, 31 + std::uint64_t(cases));
        auto want = test::make_outputs(c, sizes);
        {
          std::vector<buffer_ref> ir, orf;
          for (auto& b : in) ir.push_back(b);
          for (auto& b : want) orf.push_back(b);
          test::call_reference(op, sizes, ir, orf);
        }
        const std::int64_t L = tuning::reduction_length(c, sizes);
        auto cfgs = test::edge_split_configs(c, sizes, lim, 4, 4200 + std::uint64_t(cases));
        CHECK_MESSAGE(cfgs.size() == 4, "few configurations with edge_split");
        int starts = 0;  // one product start with edge tiles (one of the tuner's first guesses)
        for (auto& s : tuning::start_configurations(c, sizes, lim))
          if (s.edge_split && starts++ < 1) cfgs.push_back(s);
        for (auto& cfg : cfgs) {
          INFO(lower::to_string(cfg));
          auto plan = lower::lower(c, sizes, cfg, lim);
          split += plan.interior_split;
          for (auto& r : plan.reads) shifted += !r.shifted_groups.empty();
          cuda::program prog(dev, plan);
          const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
          for (int launch = 1; launch <= launches; ++launch) {
            auto got = test::make_outputs(c, sizes);
            for (auto& g : got) g.poison();
            std::vector<buffer_ref> ir, orf;
            for (auto& b : in) ir.push_back(b);
            for (auto& b : got) orf.push_back(b);
            prog.run(ir, orf);
            for (std::size_t r = 0; r < got.size(); ++r) {
              auto msg = tuning::compare(got[r], want[r], L);
              CHECK_MESSAGE(msg.empty(), c.outputs[r].name, " (launch ", launch, "): ", msg, "\n",
                            lower::to_string(plan));
            }
          }
          ++total;
        }
        ++cases;
      });
  CHECK(cases == 7);
  MESSAGE(total, " configurations of ", cases, " edge cases checked on the GPU (", split,
          " with an interior path, ", shifted, " shifted vector reads)");
}
