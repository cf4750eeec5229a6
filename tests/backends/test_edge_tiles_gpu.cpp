// SPDX-License-Identifier: MIT
// On a GPU (label gpu; exits 77, skipped, without one): issue 19's edge-tile development cases at
// the benchmark's sizes (997x1009x769, 1023x1025x1027, 4095x4097x33, 12x(333x77)x(77x333),
// matvec 12289x3001, dot 2^23+5, row and column sums of 3001x4093), each under random
// configurations whose plans take both the interior and the edge path, plus the default one,
// against mdh::reference on random non-zero inputs (last-block plans launched twice).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <backends/cuda/program.hpp>

#include "edge_cases.hpp"
#include "expression_cases.hpp"
#include "naive_reference.hpp"

using namespace mdh;

TEST_CASE("GPU: the edge-tile development cases, configurations with both paths") {
  if (!cuda::device_available()) std::exit(77);
  cuda::device dev(0);
  const auto lim = dev.limits();
  int total = 0, cases = 0;
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
        const std::int64_t L = test::reduction_length(c, sizes);
        auto cfgs = test::edge_split_configs(c, sizes, lim, 6, 4200 + std::uint64_t(cases));
        CHECK_MESSAGE(cfgs.size() == 6, "few configurations with an interior path");
        cfgs.push_back(lower::default_config(c, sizes));
        for (auto& cfg : cfgs) {
          INFO(lower::to_string(cfg));
          auto plan = lower::lower(c, sizes, cfg, lim);
          cuda::program prog(dev, plan);
          const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
          for (int launch = 1; launch <= launches; ++launch) {
            auto got = test::make_outputs(c, sizes);
            std::vector<buffer_ref> ir, orf;
            for (auto& b : in) ir.push_back(b);
            for (auto& b : got) orf.push_back(b);
            prog.run(ir, orf);
            for (std::size_t r = 0; r < got.size(); ++r) {
              auto msg = test::compare(got[r], want[r], L);
              CHECK_MESSAGE(msg.empty(), c.outputs[r].name, " (launch ", launch, "): ", msg, "\n",
                            lower::to_string(plan));
            }
          }
          ++total;
        }
        ++cases;
      });
  CHECK(cases == 8);
  MESSAGE(total, " configurations of ", cases, " edge cases checked on the GPU");
}
