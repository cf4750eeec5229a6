// SPDX-License-Identifier: MIT
// On a GPU (label gpu): GEMM epilogues (mdh::with_epilogue) at BERT's shapes, the default and
// random configurations on every write path (the product's reduction in a thread, over threads,
// over blocks by a second kernel or by the last block - launched twice, its counters must be
// left at zero - and the vector write loop), against the plain composition on fresh random
// non-zero inputs; test::compare's tolerance, 1e-5 * max(1, K / 8) relative. Exits 77 (skipped)
// without a device.
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <random>
#include <string>

#include <backends/cuda/program.hpp>
#include <expressions/gemm_epilogues.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>

#include "naive_reference.hpp"

using namespace mdh;

namespace {
cuda::device& dev() {
  static cuda::device d(0);
  return d;
}

int paths_of(const lower::kernel_plan& p) {
  if (p.blk_combine == lower::block_combine_kind::second_kernel) return 0;
  if (p.blk_combine == lower::block_combine_kind::last_block) return 1;
  if (p.vector_write) return 2;
  return p.thread_combine_needed ? 3 : 4;
}

template <class Op>
int check_on_gpu(const Op& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
  const ir::computation& c = op.ir();
  const auto lim = dev().limits();
  auto in = test::make_inputs(c, sizes, seed);
  auto want = test::make_outputs(c, sizes);
  {
    std::vector<buffer_ref> ir, wr;
    for (auto& b : in) ir.push_back(b);
    for (auto& b : want) wr.push_back(b);
    reference(op, sizes, std::span<const buffer_ref>(ir), std::span<const buffer_ref>(wr));
  }
  const std::int64_t L = test::reduction_length(c, sizes);
  std::mt19937_64 rng(seed);
  std::vector<lower::config> cfgs{lower::default_config(c, sizes)};
  std::array<int, 5> found{};
  for (int a = 0; a < 2000 && cfgs.size() < 16; ++a) {
    auto cfg = lower::random_config(c, sizes, lim, rng, {1024, 2000});
    const int q = paths_of(lower::lower(c, sizes, cfg, lim));
    if (found[std::size_t(q)] >= 3) continue;
    found[std::size_t(q)]++;
    cfgs.push_back(cfg);
  }
  int n = 0;
  for (auto& cfg : cfgs) {
    INFO(c.name, " config: ", lower::to_string(cfg));
    auto plan = lower::lower(c, sizes, cfg, lim);
    cuda::program prog(dev(), plan);
    const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
    for (int launch = 1; launch <= launches; ++launch) {
      auto got = test::make_outputs(c, sizes);
      std::vector<buffer_ref> ir, orf;
      for (auto& b : in) ir.push_back(b);
      for (auto& b : got) orf.push_back(b);
      prog.run(ir, orf);
      for (std::size_t r = 0; r < got.size(); ++r) {
        auto msg = test::compare(got[r], want[r], L);
        REQUIRE_MESSAGE(msg.empty(), "launch ", launch, ": ", msg, "\n", lower::to_string(plan));
      }
    }
    ++n;
  }
  MESSAGE(c.name, ": ", n, " configurations checked on the GPU");
  return n;
}
}  // namespace

TEST_CASE("GEMM epilogues on the GPU match the product followed by the point-wise computation") {
  if (!cuda::device_available()) std::exit(77);
  int n = 0;
  n += check_on_gpu(ops::matmul_bias_gelu(), {2048, 3072, 768}, 1);
  n += check_on_gpu(ops::matmul_bias_residual(), {2048, 768, 3072}, 2);
  n += check_on_gpu(ops::matmul_nt_bias_gelu(), {2048, 3072, 768}, 3);
  n += check_on_gpu(ops::matmul_bias(), {1000, 1001, 333}, 4);  // no tile divides them
  n += check_on_gpu(ops::batch_matmul_bias(), {16, 12, 128, 64, 128}, 5);
  CHECK(n >= 5 * 6);
}
