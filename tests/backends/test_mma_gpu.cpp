// SPDX-License-Identifier: MIT
// On a GPU (label gpu; exits 77, skipped, without one): random valid tensor-core configurations
// (mma = 1, fused axes or not) of every case of mma_cases.hpp (bf16, f16, TF32, four in split
// TF32; matmul, batched with B transposed, transposed, convolutions NHWC and NCHW (strides 1, 2)
// as implicit GEMMs, TCCG), the tensor-core starts of the convolutions and contractions (fused
// first) also at a 14x14 NCHW size, and matmuls at odd sizes (997 x 1009 x 769: partial tiles and
// unaligned rows everywhere, each configuration also with mma_shift = 1) and at a BERT size,
// match mdh::reference within mdh::tuning::tolerance. A failure prints the configuration as JSON
// (a parameter file's "config"), the plan, and the first elements off by more than the tolerance
// allows. The same for wgmma (mma = 2, sm_90 only) at the end: random configurations of every
// case (bf16, f16, TF32), odd sizes, epilogues. Inputs that a tile copy reads in 16-byte chunks
// but that start off the 16-byte grid are refused at launch.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/program.hpp>
#include <mdh/lower/random_config.hpp>
#include <tuning/start_configurations.hpp>

#include "mma_cases.hpp"
#include "precompile.hpp"
#include "types_cases.hpp"

using namespace mdh;

namespace {
cuda::device& dev() {
  static cuda::device d(0);
  return d;
}

// c's plan, and where mma_shift can change it also that of c with shifted tile copies.
void push_with_shifted(std::vector<lower::kernel_plan>& plans, const ir::computation& x,
                       const std::vector<std::int64_t>& s, lower::config c,
                       const lower::device_limits& lim) {
  plans.push_back(lower::lower(x, s, c, lim));
  if (lower::mma_shift_applies(x, s)) {
    c.mma.shift = 1;
    plans.push_back(lower::lower(x, s, c, lim));
  }
}

template <class T>
std::string first_mismatches(const T* got, const T* want, std::int64_t n, double tol) {
  double ref2 = 0;
  for (std::int64_t k = 0; k < n; ++k) ref2 += double(want[k]) * double(want[k]);
  const double rms = std::sqrt(ref2 / double(std::max<std::int64_t>(n, 1)));
  std::ostringstream os;
  int shown = 0;
  for (std::int64_t k = 0; k < n && shown < 5; ++k) {
    const double g = double(got[k]), w = double(want[k]);
    if (!(std::abs(g - w) <= 8 * tol * std::max(rms, std::abs(w)))) {
      os << "\n  element " << k << ": got " << g << ", want " << w;
      ++shown;
    }
  }
  return shown ? os.str() : "\n  (no single element far off: the error is spread)";
}

std::string mismatches(const host_buffer& got, const host_buffer& want, double tol) {
  const std::int64_t n = std::int64_t(element_count(want.shape()));
  switch (want.type()) {
    case scalar_type::bf16:
      return first_mismatches(static_cast<const bf16*>(got.data()),
                              static_cast<const bf16*>(want.data()), n, tol);
    case scalar_type::f16:
      return first_mismatches(static_cast<const f16*>(got.data()),
                              static_cast<const f16*>(want.data()), n, tol);
    default:
      return first_mismatches(static_cast<const float*>(got.data()),
                              static_cast<const float*>(want.data()), n, tol);
  }
}

// Runs the plan on NaN-poisoned outputs; "" when it matches the reference, else the whole story.
std::string run_and_explain(const lower::kernel_plan& plan, const test::case_data& d,
                            std::int64_t L) {
  std::vector<host_buffer> got;
  for (auto& w : d.want) {
    got.emplace_back(w.type(), w.shape());
    std::memset(got.back().data(), 0xff, got.back().bytes());
  }
  std::vector<buffer_ref> in = d.in_refs(), out(got.begin(), got.end());
  cuda::program(dev(), plan).run(in, out);
  auto msg = tuning::compare(got[0], d.want[0], L);
  if (msg.empty()) return "";
  nlohmann::json j = plan.cfg;
  return plan.name + ": " + msg + " (tolerance " +
         std::to_string(tuning::tolerance(d.want[0].type(), L)) + ")\n  config " + j.dump() +
         mismatches(got[0], d.want[0], tuning::tolerance(d.want[0].type(), L)) + "\n" +
         lower::to_string(plan);
}

// A case with a point-wise epilogue: the kernel's inputs (the product's and the epilogue's own,
// bias, residual) random from `seed` on, and the reference's outputs (the epilogue's).
template <class Op>
test::case_data epilogue_case_data(const Op& op, const std::vector<std::int64_t>& sizes,
                                   std::uint64_t seed) {
  const ir::computation& x = op.ir();
  test::case_data d;
  for (auto& b : ir::kernel_inputs(x)) {
    d.in.emplace_back(b.type, ir::buffer_shape(x, b, sizes));
    d.in.back().randomize(seed++);
  }
  for (auto& b : ir::kernel_outputs(x)) d.want.emplace_back(b.type, ir::buffer_shape(x, b, sizes));
  std::vector<buffer_ref> in = d.in_refs(), want(d.want.begin(), d.want.end());
  reference(op, sizes, std::span<const buffer_ref>(in), std::span<const buffer_ref>(want));
  return d;
}

// Launches `prog` `launches` times on NaN-poisoned outputs (again and again: split-K's counters
// must come back to zero); "" when every output of every launch matches the reference, else
// which launch and output did not, with the first elements far off.
std::string launch_mismatches(cuda::program& prog, const test::case_data& d, std::int64_t L,
                              int launches) {
  for (int launch = 0; launch < launches; ++launch) {
    std::vector<host_buffer> got;
    for (auto& w : d.want) {
      got.emplace_back(w.type(), w.shape());
      std::memset(got.back().data(), 0xff, got.back().bytes());
    }
    std::vector<buffer_ref> in = d.in_refs(), out(got.begin(), got.end());
    prog.run(in, out);
    for (std::size_t o = 0; o < got.size(); ++o)
      if (auto msg = tuning::compare(got[o], d.want[o], L); !msg.empty())
        return "launch " + std::to_string(launch) + " output " + std::to_string(o) + ": " + msg +
               mismatches(got[o], d.want[o], tuning::tolerance(d.want[o].type(), L));
  }
  return "";
}

bool gpu_or_skip() {
  if (!cuda::device_available()) {
    std::cerr << "no CUDA device: skipping the GPU tests\n";
    std::exit(77);
  }
  return true;
}
}  // namespace

// The first thing to run on a new GPU: one fixed configuration, 256^3 bf16, 128x128x32 block
// tiles of 2x2 warps, 3 cp.async stages, swizzled tiles.
TEST_CASE("CUDA: one MMA bf16 matmul at 256^3") {
  gpu_or_skip();
  auto lim = dev().limits();
  auto op = ops::matmul<bf16>();
  std::vector<std::int64_t> s{256, 256, 256};
  auto c = lower::default_config(op.ir(), s);
  c.mma.on = 1, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.warps_m = 2, c.mma.warps_n = 2;
  c.mma.tile_m = 64, c.mma.tile_n = 64, c.mma.tile_k = 32, c.mma.stages = 3, c.mma.swizzle = 1;
  auto plan = lower::lower(op.ir(), s, c, lim);
  auto d = test::make_case_data(op, s, 1);
  auto msg = run_and_explain(plan, d, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
  c.mma.swizzle = 0;  // padded rows
  msg = run_and_explain(lower::lower(op.ir(), s, c, lim), d, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
}

TEST_CASE("CUDA: an MMA operand copied in 16-byte chunks off the 16-byte grid is refused") {
  gpu_or_skip();
  auto op = ops::matmul<bf16>();
  for (std::vector<std::int64_t> s : {std::vector<std::int64_t>{256, 256, 256},   // cp.async
                                      std::vector<std::int64_t>{97, 101, 77}}) {  // shifted
    auto c = lower::default_config(op.ir(), s);
    c.mma.on = 1, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.warps_m = 2, c.mma.warps_n = 2;
    c.mma.tile_m = 64, c.mma.tile_n = 64, c.mma.tile_k = 32, c.mma.stages = 3;
    c.mma.shift = lower::mma_shift_applies(op.ir(), s) ? 1 : 0;
    c.vec = 1;  // not the vector accesses' check: the copies' own
    cuda::program prog(dev(), lower::lower(op.ir(), s, c, dev().limits()));
    REQUIRE((prog.plan().mma.a.async_copy || prog.plan().mma.a.shifted_copy));
    dev().make_current();
    cuda::device_buffer<bf16> a(std::size_t(s[0] * s[2] + 8)), b(std::size_t(s[2] * s[1])),
        out(std::size_t(s[0] * s[1]));
    const std::vector<CUdeviceptr> in{a.get() + 2, b.get()}, o{out.get()};
    CHECK_THROWS_WITH_AS(prog.launch(in, o),
                         doctest::Contains("tile copies read input 0 ('in0') in 16-byte chunks "
                                           "and need it aligned to 16 bytes"),
                         error);
  }
}

TEST_CASE("CUDA: random MMA configurations of every contraction and type match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  int total = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    auto d = test::make_case_data(op, sizes, 23);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < 12; ++k)
      plans.push_back(lower::lower(x, sizes, lower::random_mma_config(x, sizes, lim, rng), lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, L);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg);
      ++total;
    }
  });
  MESSAGE(total, " MMA kernels checked on the GPU");
  CHECK(total == 336);  // 28 cases (24, and 4 in split TF32) x 12
}

// The convolutions as implicit GEMMs (M = n*p*q, K = c*r*s or r*s*c fused, mma_fuse_*) and the
// other contractions with several dimensions per role, in bf16 and TF32: every fused
// tensor-core start (all axes fused, then M and N fused with K alone; the unfused ones are the
// random test's), on fresh random non-zero inputs, also the NCHW convolution at a ResNet-like
// 14x14 size with 3x3 filters, strides 1 and 2.
TEST_CASE(
    "CUDA: the fused implicit-GEMM starts of convolutions and contractions match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  int total = 0;
  auto check = [&](const std::string& name, const auto& op, const std::vector<std::int64_t>& s) {
    INFO(name);
    const auto& x = op.ir();
    auto d = test::make_case_data(op, s, 41);
    const std::int64_t L = tuning::reduction_length(x, s);
    std::vector<lower::kernel_plan> plans;
    for (auto& c : tuning::start_configurations(x, s, lim))
      if (c.mma.on && (c.mma.fuse_m | c.mma.fuse_n | c.mma.fuse_k) != 0)
        plans.push_back(lower::lower(x, s, c, lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, L);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg);
      ++total;
    }
  };
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    if (name.rfind("f16", 0) != 0 &&
        (name.find("mcc") != std::string::npos || name.find("tccg") != std::string::npos))
      check(name, op, sizes);
  });
  using sz = std::vector<std::int64_t>;
  check("bf16 mcc_nchw 14x14", ops::mcc_nchw<bf16>(), sz{4, 64, 14, 14, 32, 3, 3});
  check("tf32 mcc_nchw 14x14", ops::mcc_nchw<float>().with_precision(ir::precision::tf32),
        sz{4, 64, 14, 14, 32, 3, 3});
  check("bf16 mcc_nchw stride 2 7x7", ops::mcc_nchw<bf16>(2, 2), sz{4, 64, 7, 7, 32, 3, 3});
  check("tf32 mcc_nchw stride 2 7x7",
        ops::mcc_nchw<float>(2, 2).with_precision(ir::precision::tf32), sz{4, 64, 7, 7, 32, 3, 3});
  MESSAGE(total, " fused MMA starts checked on the GPU");
  CHECK(total >= (5 * 2 + 4) * 5);
}

TEST_CASE("CUDA: MMA matmuls at odd and BERT sizes match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  std::mt19937_64 rng(11);
  auto check = [&](const auto& op, std::vector<std::int64_t> s, int configs) {
    auto d = test::make_case_data(op, s, 5);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < configs; ++k)
      push_with_shifted(plans, op.ir(), s, lower::random_mma_config(op.ir(), s, lim, rng), lim);
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, s[2]);
      REQUIRE_MESSAGE(msg.empty(), op.ir().name, " ", msg);
    }
  };
  for (std::vector<std::int64_t> s :
       {std::vector<std::int64_t>{997, 1009, 769}, std::vector<std::int64_t>{384, 768, 768}}) {
    check(ops::matmul<bf16>(), s, 4);
    check(ops::matmul<f16>(), s, 4);
    check(ops::matmul<float>().with_precision(ir::precision::tf32), s, 4);
    check(ops::matmul<float>().with_precision(ir::precision::tf32x3), s, 3);
    check(test::matmul_bf16_to_f32(), s, 2);
  }
}

TEST_CASE("CUDA: MMA configurations with a point-wise epilogue match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  int total = 0;
  test::for_each_mma_epilogue_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const ir::computation& x = op.ir();
    const test::case_data d = epilogue_case_data(op, sizes, 31);
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < 8; ++k)
      plans.push_back(lower::lower(x, sizes, lower::random_mma_config(x, sizes, lim, rng), lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, L);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg);
      ++total;
    }
  });
  CHECK(total == 32);
}

// mma = 2 (wgmma.mma_async, sm_90 only; skipped elsewhere): first fixed configurations (the
// printer's plainest case: 256^3 bf16, one warpgroup of 64x128, K-major A, N-major B; then other
// tiles and stages, and TF32), then random valid wgmma configurations of every case of
// mma_cases.hpp (bf16, f16, TF32; fused axes, flipped tiles, K- and MN-major operands,
// 32/64/128-byte swizzles, 2-5 stages), matmuls at odd sizes, and the point-wise epilogue cases,
// each against the reference within the tolerance.
namespace {
bool sm90_or_skip(const lower::device_limits& lim) {
  if (lim.cc_major != 9) {
    MESSAGE("device ", lim.name, " is not sm_90: no wgmma");
    return false;
  }
  return true;
}
}  // namespace

TEST_CASE("CUDA wgmma: fixed bf16 and TF32 matmuls at 256^3") {
  gpu_or_skip();
  auto lim = dev().limits();
  if (!sm90_or_skip(lim)) return;
  auto op = ops::matmul<bf16>();
  std::vector<std::int64_t> s{256, 256, 256};
  auto c = lower::default_config(op.ir(), s);
  c.mma.on = 2, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.warps_m = 1, c.mma.warps_n = 1;
  c.mma.tile_m = 64, c.mma.tile_n = 128, c.mma.tile_k = 64, c.mma.stages = 3, c.mma.swizzle = 1;
  auto d = test::make_case_data(op, s, 1);
  auto msg = run_and_explain(lower::lower(op.ir(), s, c, lim), d, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
  c.mma.stages = 2, c.mma.tile_k = 16;  // no wgmma left in flight across steps; 32-byte swizzle
  msg = run_and_explain(lower::lower(op.ir(), s, c, lim), d, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
  c.mma.warps_m = 2, c.mma.warps_n = 2, c.mma.tile_m = 128, c.mma.tile_n = 64, c.mma.stages = 4;
  c.mma.tile_k = 32;
  msg = run_and_explain(lower::lower(op.ir(), s, c, lim), d, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
  auto tf = ops::matmul<float>().with_precision(ir::precision::tf32);  // m64nNk8, B gathered
  auto td = test::make_case_data(tf, s, 1);
  auto t = c;
  t.mma.warps_m = 1, t.mma.warps_n = 1, t.mma.tile_m = 64, t.mma.tile_n = 128, t.mma.tile_k = 32;
  t.mma.stages = 3;
  msg = run_and_explain(lower::lower(tf.ir(), s, t, lim), td, 256);
  REQUIRE_MESSAGE(msg.empty(), msg);
}

TEST_CASE("CUDA wgmma: random configurations of every contraction and type match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  if (!sm90_or_skip(lim)) return;
  int total = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 2);
    auto d = test::make_case_data(op, sizes, 23);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < 12; ++k)
      plans.push_back(lower::lower(x, sizes, lower::random_wgmma_config(x, sizes, lim, rng), lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, L);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg);
      ++total;
    }
  });
  MESSAGE(total, " wgmma kernels checked on the GPU");
  CHECK(total == 336);  // 28 cases (24, and 4 in split TF32) x 12
}

TEST_CASE("CUDA wgmma: matmuls at odd and BERT sizes, and with epilogues, match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  if (!sm90_or_skip(lim)) return;
  std::mt19937_64 rng(13);
  auto check = [&](const auto& op, std::vector<std::int64_t> s, int configs) {
    auto d = test::make_case_data(op, s, 5);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < configs; ++k)
      push_with_shifted(plans, op.ir(), s, lower::random_wgmma_config(op.ir(), s, lim, rng), lim);
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, s[2]);
      REQUIRE_MESSAGE(msg.empty(), op.ir().name, " ", msg);
    }
  };
  for (std::vector<std::int64_t> s :
       {std::vector<std::int64_t>{997, 1009, 769}, std::vector<std::int64_t>{384, 768, 768},
        std::vector<std::int64_t>{2048, 768, 768}}) {
    check(ops::matmul<bf16>(), s, 4);
    check(ops::matmul<f16>(), s, 4);
    check(ops::matmul<float>().with_precision(ir::precision::tf32), s, 3);
    check(ops::matmul<float>().with_precision(ir::precision::tf32x3), s, 3);
    check(test::matmul_bf16_to_f32(), s, 2);
  }
  int total = 0;
  test::for_each_mma_epilogue_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const ir::computation& x = op.ir();
    const test::case_data d = epilogue_case_data(op, sizes, 31);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::vector<lower::kernel_plan> plans;
    for (int k = 0; k < 6; ++k)
      plans.push_back(lower::lower(x, sizes, lower::random_wgmma_config(x, sizes, lim, rng), lim));
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, L);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg);
      ++total;
    }
  });
  CHECK(total == 24);
}

TEST_CASE("CUDA wgmma: landed TF32 operands, transposed by 4x4 blocks, at every K tile match") {
  // B(k, j) of a row-major product is N-contiguous: TF32 wgmma lands it so and the rounding pass
  // transposes each thread's 4x4 blocks into the K-major tile (docs/lowering.md 7.4). K tiles of
  // 8 to 64 floats (32- to 256-byte K rows), fewer blocks than threads (the guarded copies) and
  // more (several blocks per thread), M and K odd (A copied by elements), TF32 and split TF32.
  gpu_or_skip();
  auto lim = dev().limits();
  if (!sm90_or_skip(lim)) return;
  const std::vector<std::int64_t> s{997, 1012, 769};
  int checked = 0;
  for (const auto precision : {ir::precision::tf32, ir::precision::tf32x3}) {
    auto op = ops::matmul<float>().with_precision(precision);
    const ir::computation& x = op.ir();
    auto d = test::make_case_data(op, s, 41);
    std::vector<lower::kernel_plan> plans;
    for (const std::int64_t tk : {8, 16, 32, 64})
      for (const std::int64_t tn : {32, 64, 128}) {
        auto c = lower::default_config(x, s);
        c.mma.on = 2, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.swizzle = 1;
        c.mma.warps_m = tn == 32 ? 1 : 2, c.mma.warps_n = 1, c.mma.tile_m = 64, c.mma.tile_n = tn;
        c.mma.tile_k = tk, c.mma.stages = tk == 64 ? 2 : 3;
        try {
          plans.push_back(lower::lower(x, s, c, lim));
        } catch (const error& e) {  // the shared-memory rule (split TF32's low tiles, K 64)
          INFO(e.what());
          CHECK(tk * tn * (precision == ir::precision::tf32x3 ? 2 : 1) >= 64 * 64);
          continue;
        }
        REQUIRE(plans.back().mma.land_b);
      }
    for (auto& plan : test::precompiled(std::move(plans), dev())) {
      auto msg = run_and_explain(plan, d, s[2]);
      REQUIRE_MESSAGE(msg.empty(), x.name, " ", msg);
      ++checked;
    }
  }
  MESSAGE(checked, " landed TF32 wgmma kernels checked");
  CHECK(checked >= 18);
}

// Split-K (mma_split): the tile's last block adds the others' partials and resets the tile's
// counter, so one program launched again and again stays right; mma.sync and (on sm_90) wgmma,
// an odd matmul with 2-4 blocks per tile, a skinny one with 16, and a point-wise epilogue.
TEST_CASE("CUDA: split TF32 keeps fp32's accuracy at K = 3072; one TF32 product does not") {
  // Relative L2 errors against the IEEE reference on the same inputs: split TF32 on mma.sync and
  // (sm_90) wgmma within fp32's tolerance, beside the SIMT fp32 kernel and the TF32 kernel of
  // the same sizes, which must miss it (else the test could not tell the split from TF32).
  gpu_or_skip();
  auto lim = dev().limits();
  const std::vector<std::int64_t> s{256, 384, 3072};
  auto x3 = ops::matmul<float>().with_precision(ir::precision::tf32x3);
  auto d = test::make_case_data(x3, s, 7);
  const double tol = tuning::tolerance(scalar_type::f32, s[2]);
  auto error_of = [&](const lower::kernel_plan& plan) {
    host_buffer got(scalar_type::f32, d.want[0].shape());
    std::vector<buffer_ref> in = d.in_refs(), out{buffer_ref(got)};
    cuda::program(dev(), plan).run(in, out);
    const float* g = static_cast<const float*>(got.data());
    const float* w = static_cast<const float*>(d.want[0].data());
    double diff2 = 0, ref2 = 0;
    for (std::int64_t k = 0; k < element_count(got.shape()); ++k)
      diff2 += (double(g[k]) - w[k]) * (double(g[k]) - w[k]), ref2 += double(w[k]) * w[k];
    return std::sqrt(diff2 / ref2);
  };
  std::mt19937_64 rng(3);
  const double simt = error_of(lower::lower(x3.ir(), s, lower::default_config(x3.ir(), s), lim));
  auto tf = ops::matmul<float>().with_precision(ir::precision::tf32);
  const double one =
      error_of(lower::lower(tf.ir(), s, lower::random_mma_config(tf.ir(), s, lim, rng), lim));
  const double split =
      error_of(lower::lower(x3.ir(), s, lower::random_mma_config(x3.ir(), s, lim, rng), lim));
  MESSAGE("relative L2 error at K = 3072 (tolerance ", tol, "): SIMT fp32 ", simt,
          ", mma.sync split TF32 ", split, ", mma.sync TF32 ", one);
  CHECK(simt <= tol);
  CHECK(split <= tol);
  CHECK(one > tol);
  if (lim.cc_major == 9) {
    const double wg =
        error_of(lower::lower(x3.ir(), s, lower::random_wgmma_config(x3.ir(), s, lim, rng), lim));
    MESSAGE("wgmma split TF32 ", wg);
    CHECK(wg <= tol);
  }
}

TEST_CASE("CUDA: split-K MMA plans match the reference, launch after launch of one program") {
  gpu_or_skip();
  auto lim = dev().limits();
  int total = 0;
  auto check = [&](const auto& op, const std::vector<std::int64_t>& s, lower::config c) {
    const ir::computation& x = op.ir();
    const test::case_data d = epilogue_case_data(op, s, 41);
    const std::int64_t L = tuning::reduction_length(x, s);
    auto plan = lower::lower(x, s, c, lim);
    INFO(lower::to_string(plan));
    REQUIRE(plan.mma.split == c.mma.split);
    cuda::program prog(dev(), plan);
    const std::string msg = launch_mismatches(prog, d, L, 3);
    CHECK_MESSAGE(msg.empty(), msg);
    ++total;
  };
  for (int on : {1, 2}) {
    if (on == 2 && lim.cc_major != 9) continue;
    auto mm = ops::matmul<bf16>();
    const std::vector<std::int64_t> odd{997, 1009, 769}, skinny{16, 1000, 2048};
    auto c = lower::default_config(mm.ir(), odd);
    c.mma.on = on, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.swizzle = 1;
    c.mma.warps_m = 2, c.mma.warps_n = on == 1 ? 2 : 1, c.mma.tile_m = 64;
    c.mma.tile_n = on == 1 ? 64 : 128, c.mma.tile_k = 64, c.mma.stages = 3;
    for (std::int64_t split : {2, 3, 4}) {
      c.mma.split = split;
      check(mm, odd, c);
    }
    auto k = lower::default_config(mm.ir(), skinny);  // its own SIMT parameters (unread)
    k.mma = c.mma;
    k.mma.split = 16;
    check(mm, skinny, k);
    auto ep = ops::matmul_bias_gelu<bf16>();
    const std::vector<std::int64_t> es{97, 101, 770};
    auto e = lower::default_config(ep.ir(), es);
    e.mma = c.mma;
    e.mma.split = 3;
    check(ep, es, e);
  }
  CHECK(total >= 5);
}

// TMA (mma_tma = 1): both tiles of each step arrive as tensor-map boxes, counted on the stage's
// mbarrier, every other configuration persistent and warp-specialised (mma_persistent); random
// wgmma configurations with TMA of the cases whose rows are 16-byte multiples (the rest: check()
// refuses TMA), sizes that leave partial tiles along M, N and K (the boxes' zero fill), batched and
// transposed operands, a TCCG contraction (4-D boxes), a point-wise epilogue, split-K launched
// three times, and bf16 / f16. A third of the persistent ones run in clusters of two blocks along
// M and a third along N (mma_cluster_*: one operand multicast; odd tile counts leave a unit's
// second tile past the edge).
TEST_CASE("CUDA wgmma TMA: random TMA configurations match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  if (!sm90_or_skip(lim)) return;
  int total = 0, clustered = 0;
  auto check = [&](const std::string& name, const auto& op, const std::vector<std::int64_t>& s,
                   int configs, std::int64_t split = 1, std::vector<std::int64_t> axes = {}) {
    INFO(name);
    const ir::computation& x = op.ir();
    const test::case_data d = epilogue_case_data(op, s, 53);
    const std::int64_t L = tuning::reduction_length(x, s);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 7);
    int found = 0;
    for (int attempt = 0; attempt < 400 && found < configs; ++attempt) {
      lower::config c = lower::draw_wgmma_config(x, s, rng);
      c.mma.tma = 1, c.mma.split = split;
      c.mma.persistent = split == 1 ? found % 2 : 0;  // every other one persistent
      // of the persistent ones, in turn: no cluster, clusters along M, clusters along N
      const int along = c.mma.persistent ? found / 2 % 3 : 0;
      c.mma.cluster_m = along == 1 ? 2 : 1, c.mma.cluster_n = along == 2 ? 2 : 1;
      if (!axes.empty())  // M, N, K whose tiles are boxes (a random draw rarely finds them)
        c.mma.m = axes[0], c.mma.n = axes[1], c.mma.k = axes[2],
        c.mma.fuse_m = c.mma.fuse_n = c.mma.fuse_k = c.mma.flip_a = c.mma.flip_b = 0;
      try {
        lower::check(c, x, s, lim);
      } catch (const error&) {
        continue;
      }
      const auto plan = lower::lower(x, s, c, lim);
      REQUIRE(plan.mma.tma);
      REQUIRE(plan.mma.persistent == (c.mma.persistent == 1));
      REQUIRE(plan.mma.cluster_m * plan.mma.cluster_n == (along ? 2 : 1));
      clustered += along ? 1 : 0;
      cuda::program prog(dev(), plan);
      const std::string msg = launch_mismatches(prog, d, L, split > 1 ? 3 : 1);
      REQUIRE_MESSAGE(msg.empty(), name, " ", msg, "\n", nlohmann::json(plan.cfg).dump(), "\n",
                      lower::to_string(plan));
      ++found, ++total;
    }
    CHECK_MESSAGE(found == configs, name, ": ", found, " TMA configurations drawn");
  };
  const std::vector<std::int64_t> mm{200, 264, 136}, bmm{2, 3, 72, 136, 40};
  check("bf16 matmul", ops::matmul<bf16>(), mm, 8);
  check("f16 matmul", ops::matmul<f16>(), mm, 4);
  check("bf16 matmul_t", ops::matmul_t<bf16>(), mm, 4);
  check("bf16 batch_matmul", ops::batch_matmul<bf16>(), bmm, 4);
  check("f16 batch_matmul_nt", ops::batch_matmul<f16, false, true>(), bmm, 4);
  // a, c innermost in A(d, e, g, a) and B(g, f, b, c): 4-D boxes, d, e, f, b on grid.z
  check("bf16 tccg_abcdef_dega_gfbc", ops::tccg_abcdef_dega_gfbc<bf16>(), {16, 2, 24, 3, 2, 3, 40},
        4, 1, {0, 2, 6});
  check("bf16 matmul_bias_gelu", ops::matmul_bias_gelu<bf16>(), mm, 4);
  check("bf16 matmul split-K 3", ops::matmul<bf16>(), {128, 256, 1024}, 3, 3);
  // more tiles than a wave of blocks: persistent blocks and clusters walk several tiles each
  check("bf16 matmul many tiles", ops::matmul<bf16>(), {1100, 2120, 136}, 12);
  MESSAGE(total, " TMA kernels checked on the GPU, ", clustered, " in clusters of two");
  CHECK(clustered >= 6);
}

// The staged epilogue (mma_stage_out): results through a shared tile, copied in 16-byte stores
// where the output's rows allow (odd N: a scalar head and tail per row), mma.sync and (on sm_90)
// wgmma; odd and output-bound sizes, a batched product, f32 and TF32 outputs, point-wise
// epilogues (bias + GELU, bias + residual), split-K over 3 blocks; every output compared.
TEST_CASE("staged epilogue (mma_stage_out): mma.sync and wgmma plans match the reference") {
  gpu_or_skip();
  auto lim = dev().limits();
  int total = 0;
  auto check = [&](const std::string& name, const auto& op, const std::vector<std::int64_t>& s,
                   int on, std::int64_t split) {
    INFO(name, " mma=", on, " split=", split);
    const ir::computation& x = op.ir();
    const bool tf32 = ir::reads_tf32(x);
    auto c = lower::default_config(x, s);
    const std::int64_t r = std::int64_t(x.rank());  // M, N, K the last three dimensions
    c.mma.on = on, c.mma.m = r - 3, c.mma.n = r - 2, c.mma.k = r - 1;
    c.mma.swizzle = on == 1 && tf32 ? 0 : 1;
    c.mma.warps_m = 2, c.mma.warps_n = on == 1 ? 2 : 1, c.mma.tile_m = 64;
    c.mma.tile_n = on == 1 ? 64 : 128, c.mma.stages = 3;
    c.mma.tile_k = on == 1 ? (tf32 ? 16 : 32) : (tf32 ? 32 : 64);
    c.mma.split = split, c.mma.stage_out = 1;
    auto plan = lower::lower(x, s, c, lim);
    INFO(lower::to_string(plan));
    REQUIRE(plan.mma.stage_out);
    const test::case_data d = epilogue_case_data(op, s, 43);
    const std::int64_t L = tuning::reduction_length(x, s);
    cuda::program prog(dev(), plan);
    const std::string msg = launch_mismatches(prog, d, L, split > 1 ? 2 : 1);
    CHECK_MESSAGE(msg.empty(), msg);
    ++total;
  };
  using sz = std::vector<std::int64_t>;
  for (int on : {1, 2}) {
    if (on == 2 && lim.cc_major != 9) continue;
    check("bf16 matmul 997x1009x769", ops::matmul<bf16>(), sz{997, 1009, 769}, on, 1);
    check("bf16 matmul 997x1009x769 split-K 3", ops::matmul<bf16>(), sz{997, 1009, 769}, on, 3);
    check("bf16 matmul 4095x4097x33", ops::matmul<bf16>(), sz{4095, 4097, 33}, on, 1);
    check("f16 matmul 1000x1010x64 (even N)", ops::matmul<f16>(), sz{1000, 1010, 64}, on, 1);
    check("bf16 matmul 1024x1024x256 (aligned)", ops::matmul<bf16>(), sz{1024, 1024, 256}, on, 1);
    check("bf16 -> f32 matmul 997x1009x769", test::matmul_bf16_to_f32(), sz{997, 1009, 769}, on, 1);
    check("tf32 matmul 997x1009x769", ops::matmul<float>().with_precision(ir::precision::tf32),
          sz{997, 1009, 769}, on, 1);
    check("bf16 batch_matmul_nt 2x3x129x131x72", ops::batch_matmul<bf16, false, true>(),
          sz{2, 3, 129, 131, 72}, on, 1);
    check("bf16 matmul_bias_gelu 997x1009x769", ops::matmul_bias_gelu<bf16>(), sz{997, 1009, 769},
          on, 1);
    check("bf16 matmul_bias_gelu 97x101x770 split-K 3", ops::matmul_bias_gelu<bf16>(),
          sz{97, 101, 770}, on, 3);
    check("f16 matmul_bias_residual 45x70x49", ops::matmul_bias_residual<f16>(), sz{45, 70, 49}, on,
          1);
  }
  MESSAGE(total, " staged plans checked on the GPU");
  CHECK(total >= 11);
}
