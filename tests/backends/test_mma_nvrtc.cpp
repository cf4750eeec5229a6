// SPDX-License-Identifier: MIT
// Without a GPU: the tensor-core path (mma = 1). Contraction recognition and its reasons, the
// rules and their messages, the configuration's names round-tripping through maps, JSON and
// text, the plan's decisions (ldmatrix.trans where a tile's contiguous index is not K, cp.async
// only where chunks are aligned and one run, fused axes), NVRTC compiling random valid MMA
// configurations of every case of mma_cases.hpp for sm_90 and sm_80, and every case's plans run
// on the CPU (simulate_mma) against the reference. At the end the same for wgmma (mma = 2): its
// rules and messages, its plan, NVRTC (sm_90a) and the CPU simulation of its descriptors and
// fragments for random configurations of every case, and its place in the space.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <backends/cuda/program.hpp>
#include <mdh/ir/contraction.hpp>
#include <mdh/lower/mma_simulate.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/nearest_shape_start.hpp>
#include <tuning/start_configurations.hpp>

#include "mma_cases.hpp"
#include "types_cases.hpp"

using namespace mdh;

namespace {
bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}
// "" when the CPU simulation of `plan` on d's inputs matches d's first output within the
// tolerance of reduction length L; else what differs (outputs start NaN-poisoned).
std::string simulated_mismatch(const lower::kernel_plan& plan, const test::case_data& d,
                               std::int64_t L) {
  host_buffer got(d.want[0].type(), d.want[0].shape());
  std::memset(got.data(), 0xff, got.bytes());
  lower::simulate_mma(plan, d.in_refs(), {buffer_ref(got)});
  return tuning::compare(got, d.want[0], L);
}
std::string error_of(const auto& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}
// The plan of x at s with the default configuration's SIMT part and tensor-core parameters m.
lower::kernel_plan plan_with_mma(const ir::computation& x, const std::vector<std::int64_t>& s,
                                 const lower::mma_config& m, const lower::device_limits& lim) {
  auto c = lower::default_config(x, s);
  c.mma = m;
  return lower::lower(x, s, c, lim);
}
// mma = 1 over (i, j, k): 2 x 2 warps of 64 x 64, K steps of 32, three stages.
lower::mma_config matmul_mma() {
  lower::mma_config m;
  m.on = 1, m.m = 0, m.n = 1, m.k = 2, m.warps_m = 2, m.warps_n = 2, m.tile_m = 64, m.tile_n = 64;
  m.tile_k = 32, m.stages = 3;
  return m;
}
}  // namespace

TEST_CASE("contractions are recognised with the role of every dimension, or why not") {
  using R = ir::contraction_role;
  auto mm = ir::recognize_contraction(ops::matmul<bf16>().ir());
  REQUIRE(mm);
  CHECK(mm.value->roles == std::vector<R>{R::m, R::n, R::k});
  auto bmm = ir::recognize_contraction(ops::batch_matmul<bf16, false, true>().ir());
  REQUIRE(bmm);
  CHECK(bmm.value->roles == std::vector<R>{R::batch, R::batch, R::m, R::n, R::k});
  auto conv = ir::recognize_contraction(ops::mcc<bf16>().ir());  // n p q k r s c
  REQUIRE(conv);
  CHECK(conv.value->roles == std::vector<R>{R::m, R::m, R::m, R::n, R::k, R::k, R::k});
  auto tccg = ir::recognize_contraction(ops::tccg_abcd_aebf_dfce<f16>().ir());
  REQUIRE(tccg);
  CHECK(tccg.value->roles == std::vector<R>{R::m, R::m, R::n, R::n, R::k, R::k});
  // NCHW (n k p q c r s): I(n, c, p + r, q + s) reads M and K dimensions in one index
  auto nchw = ir::recognize_contraction(ops::mcc_nchw<bf16>().ir());
  REQUIRE(nchw);
  CHECK(nchw.value->roles == std::vector<R>{R::m, R::n, R::m, R::m, R::k, R::k, R::k});
  CHECK(has(ir::recognize_contraction(ops::reduce<bf16>().ir()).why_not, "not a product"));
  CHECK(has(ir::recognize_contraction(ops::scan<float>().ir()).why_not, "prefix sum"));
  CHECK(has(ir::recognize_contraction(ops::multiply<bf16>().ir()).why_not, "no pw(add)"));
  // a product of bf16 factors that are not one type / fp32 without TF32
  CHECK(has(lower::mma_supported(ops::matmul<float>().ir()).why_not, "IEEE precision"));
  CHECK(lower::mma_supported(ops::matmul<float>().with_precision(ir::precision::tf32).ir()));
  CHECK(has(lower::mma_supported(ops::matvec<bf16>().ir()).why_not, "N dimension"));
}

TEST_CASE("forcing mma on what has no tensor-core path says why, naming the rule") {
  auto lim = lower::h200_limits();
  std::vector<std::int64_t> s{64, 64, 64};
  auto fp32 = ops::matmul<float>().ir();
  auto c = lower::default_config(fp32, s);
  c.mma.on = 1, c.mma.n = 1, c.mma.k = 2;
  auto e = error_of([&] { lower::lower(fp32, s, c, lim); });
  CHECK(has(e, "mma needs a contraction"));
  CHECK(has(e, "IEEE precision"));
  auto bf = ops::matmul<bf16>().ir();
  auto b = lower::default_config(bf, s);
  b.mma.on = 1, b.mma.m = 1, b.mma.n = 0, b.mma.k = 2;  // M and N swapped
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "dimension 'j' is N, not an M"));
  b.mma.m = 0, b.mma.n = 1, b.mma.tile_k = 24;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "mma_tile_k"));
  b.mma.tile_k = 16;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lower::named_limits("pocl-cpu")); }),
            "mma needs a CUDA device"));
  // fusion masks: only the role's other dimensions (mcc_nchw: n k p q c r s)
  auto nchw = ops::mcc_nchw<bf16>().ir();
  std::vector<std::int64_t> ns{2, 16, 5, 7, 4, 3, 3};
  auto f = lower::default_config(nchw, ns);
  f.mma.on = 1, f.mma.m = 3, f.mma.n = 1, f.mma.k = 6, f.mma.fuse_m = 0b1101;  // q again
  CHECK(has(error_of([&] { lower::lower(nchw, ns, f, lim); }), "'q' is already the innermost"));
  f.mma.fuse_m = 0b0010101;  // n, p and c
  CHECK(has(error_of([&] { lower::lower(nchw, ns, f, lim); }), "dimension 'c' is K, not M"));
  f.mma.fuse_m = 0b101, f.mma.fuse_k = 0b110000;
  CHECK_NOTHROW(lower::lower(nchw, ns, f, lim));
  // mma = 0 with a stray mma_* parameter: not two names for one configuration
  auto off = lower::default_config(bf, s);
  off.mma.stages = 3;
  CHECK(has(error_of([&] { lower::lower(bf, s, off, lim); }), "mma_stages"));
}

TEST_CASE("the mma parameters round-trip through maps, JSON and text; off they are absent") {
  auto bf = ops::matmul<bf16>().ir();
  std::vector<std::int64_t> s{128, 128, 64};
  std::mt19937_64 rng(3);
  auto c = lower::random_mma_config(bf, s, lower::h200_limits(), rng);
  CHECK(c.mma.on == 1);
  CHECK(lower::from_map(lower::to_map(c), 3, 2) == c);
  nlohmann::json j = c;
  CHECK(j.contains("mma_stages"));
  CHECK(lower::config_from_json(j, bf) == c);
  CHECK(lower::config_from_string(lower::to_string(c), bf) == c);
  auto d = lower::default_config(bf, s);
  CHECK(!lower::to_map(d).count("mma"));
  CHECK(!has(lower::to_string(d), "mma"));
  // unfused: no mma_fuse_* (the maps of before fusion); fused: written and read back
  CHECK(!has(lower::to_string(c), "mma_fuse"));
  auto nchw = ops::mcc_nchw<bf16>().ir();
  auto f = lower::random_mma_config(nchw, {2, 16, 5, 7, 4, 3, 3}, lower::h200_limits(), rng);
  f.mma.m = 3, f.mma.k = 6, f.mma.fuse_m = 0b101, f.mma.fuse_k = 0b110000;
  f.mma.flip_a = 1, f.mma.flip_b = 0;
  CHECK(lower::to_map(f).at("mma_fuse_k") == 48);
  CHECK(lower::to_map(f).at("mma_flip_a") == 1);
  CHECK(!lower::to_map(f).count("mma_flip_b"));
  CHECK(!lower::to_map(f).count("mma_fuse_n"));
  CHECK(lower::from_map(lower::to_map(f), 7, 2) == f);
  CHECK(lower::config_from_json(nlohmann::json(f), nchw) == f);
  CHECK(lower::config_from_string(lower::to_string(f), nchw) == f);
}

TEST_CASE(
    "the plan reads transposed tiles with ldmatrix.trans and copies aligned chunks by cp.async") {
  auto lim = lower::h200_limits();
  auto plan_of = [&](const ir::computation& x, std::vector<std::int64_t> s, lower::mma_config m) {
    return plan_with_mma(x, s, m, lim);
  };
  lower::mma_config m = matmul_mma();
  // C = A B: A is K-contiguous (ldmatrix), B is N-contiguous (ldmatrix.trans)
  auto p = plan_of(ops::matmul<bf16>().ir(), {256, 256, 256}, m);
  CHECK(p.mma.a.load == lower::mma_fragment_load::ldmatrix);
  CHECK(p.mma.b.load == lower::mma_fragment_load::ldmatrix_trans);
  CHECK(p.mma.a.async_copy);
  CHECK(p.mma.b.async_copy);
  CHECK(p.mma.block_m == 128);
  CHECK(main_kernel(p).launch.grid[0] == 2);
  CHECK(p.shared_bytes == 3 * (128 * 40 * 2 + 32 * 136 * 2));
  std::string src = cuda::emit(p);
  CHECK(has(src, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  CHECK(has(src, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
  CHECK(has(src, "cp.async.cg.shared.global"));
  CHECK(has(src, "cp.async.wait_group 1;"));
  // matmul_t: A(k, i) is M-contiguous (trans), B(j, k) K-contiguous
  auto t = plan_of(ops::matmul_t<bf16>().ir(), {256, 256, 256}, m);
  CHECK(t.mma.a.load == lower::mma_fragment_load::ldmatrix_trans);
  CHECK(t.mma.b.load == lower::mma_fragment_load::ldmatrix);
  // an odd leading dimension (769 elements) breaks 16-byte alignment: element copies
  auto odd = plan_of(ops::matmul<bf16>().ir(), {997, 1009, 769}, m);
  CHECK(!odd.mma.a.async_copy);
  CHECK(!odd.mma.b.async_copy);
  // TF32: m16n8k8, 32-bit loads rounded by cvt.rna
  auto tf =
      plan_of(ops::matmul<float>().with_precision(ir::precision::tf32).ir(), {256, 256, 256}, m);
  CHECK(tf.mma.a.load == lower::mma_fragment_load::scalar);
  CHECK(has(cuda::emit(tf), "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  CHECK(has(cuda::emit(tf), "cvt.rna.tf32.f32"));
  // the XOR swizzle: 32 K elements = 4 chunks per row, XOR with (row / 2) % 4, no padding
  m.swizzle = 1;
  auto sw = plan_of(ops::matmul<f16>().ir(), {256, 256, 256}, m);
  CHECK(sw.mma.a.swizzle_chunks == 4);
  CHECK(sw.mma.a.swizzle_rows == 2);
  CHECK(sw.mma.a.pitch == 32);
  CHECK(has(cuda::emit(sw), "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  // conv as implicit GEMM: M = q, N = k, K = c; n, p in grid.z; r, s around the K tiles
  lower::mma_config mc = m;
  mc.m = 2, mc.n = 3, mc.k = 6, mc.swizzle = 0;
  auto cv = plan_of(ops::mcc<bf16>().ir(), {2, 8, 30, 64, 3, 3, 64}, mc);
  CHECK(cv.mma.grid_dims == std::vector<std::size_t>{0, 1});
  CHECK(cv.mma.outer_k_dims == std::vector<std::size_t>{4, 5});
  CHECK(cv.mma.steps == 9 * 2);
  CHECK(cv.mma.a.async_copy);
  // ... and as one GEMM: M = n*p*q fused, K = r*s*c with c innermost (64: whole chunks, so
  // still cp.async), nothing left for grid.z or around the K tiles
  mc.fuse_m = 0b11, mc.fuse_k = 0b110000;
  auto cg = plan_of(ops::mcc<bf16>().ir(), {2, 8, 30, 64, 3, 3, 64}, mc);
  CHECK(cg.mma.m_dims == std::vector<std::size_t>{0, 1, 2});
  CHECK(cg.mma.k_dims == std::vector<std::size_t>{4, 5, 6});
  CHECK(cg.mma.size_m == 2 * 8 * 30);
  CHECK(cg.mma.size_k == 3 * 3 * 64);
  CHECK(cg.mma.grid_dims.empty());
  CHECK(cg.mma.outer_k_dims.empty());
  CHECK(cg.mma.a.async_copy);
  CHECK(cg.mma.b.async_copy);
  // NCHW (n k p q c r s), stride 1: M = n*p*q, K = c*r*s. The image's rows are gathered element
  // by element (p*q is not one run: w = q + s); the filter's c*r*s is one run: cp.async
  lower::mma_config mn = m;
  mn.m = 3, mn.n = 1, mn.k = 6, mn.fuse_m = 0b101, mn.fuse_k = 0b110000;
  auto nc = plan_of(ops::mcc_nchw<bf16>().ir(), {4, 64, 14, 14, 32, 3, 3}, mn);
  CHECK(nc.mma.size_m == 4 * 14 * 14);
  CHECK(nc.mma.size_k == 32 * 9);
  CHECK(nc.mma.steps == 9);  // 288 / 32
  CHECK(!nc.mma.a.async_copy);
  CHECK(nc.mma.a.k_contiguous);
  CHECK(nc.mma.b.async_copy);
  const std::string ns = cuda::emit(nc);
  CHECK(has(ns, "const idx_t lin_m = m_blk + r, lin_k = k_blk + col;"));
  CHECK(has(ns, "const idx_t e0 = lin_m / 196, e2 = lin_m / 14 % 14, e3 = lin_m % 14;"));
  CHECK(has(ns, "const idx_t e4 = lin_k / 9, e5 = lin_k / 3 % 3, e6 = lin_k % 3;"));
  CHECK(has(lower::to_string(nc.mma, {"n", "k", "p", "q", "c", "r", "s"}),
            "M=n*p*q (784) N=k (64) K=c*r*s (288)"));
  // stride 2: the image's M axis steps by 2 in w; still a gather, the filter still cp.async
  auto n2 = plan_of(ops::mcc_nchw<bf16>(2, 2).ir(), {4, 64, 7, 7, 32, 3, 3}, mn);
  CHECK(!n2.mma.a.async_copy);
  CHECK(n2.mma.b.async_copy);
  // mma_flip_a: the image's tile keeps M = n*p*q contiguous instead (read by ldmatrix.trans)
  mn.flip_a = 1;
  auto nf = plan_of(ops::mcc_nchw<bf16>().ir(), {4, 64, 14, 14, 32, 3, 3}, mn);
  CHECK(!nf.mma.a.k_contiguous);
  CHECK(nf.mma.a.load == lower::mma_fragment_load::ldmatrix_trans);
  CHECK(nf.mma.b.k_contiguous);
}

TEST_CASE("NVRTC compiles random valid MMA configurations of every case for sm_90 and sm_80") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");  // memory only: every plan really goes through NVRTC
  int total = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    for (int k = 0; k < 4; ++k) {
      auto cfg = lower::random_mma_config(x, sizes, lim, rng);
      auto plan = lower::lower(x, sizes, cfg, lim);
      INFO(lower::to_string(plan));
      CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
      if (k == 0) CHECK(!cuda::compile(plan, "sm_80", cache)->cubin.empty());
      ++total;
    }
  });
  MESSAGE(total, " MMA kernels compiled by NVRTC");
  CHECK(total == 112);  // 28 cases (24, and 4 in split TF32) x 4
}

TEST_CASE("NVRTC compiles the fused implicit-GEMM starts of the convolutions and contractions") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");
  int fused = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    for (auto& c : tuning::start_configurations(x, sizes, lim)) {
      if (!c.mma.on || (c.mma.fuse_m | c.mma.fuse_n | c.mma.fuse_k) == 0) continue;
      auto plan = lower::lower(x, sizes, c, lim);
      INFO(lower::to_string(plan));
      CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
      ++fused;
      break;  // the first: all axes fused
    }
  });
  MESSAGE(fused, " fused MMA starts compiled by NVRTC");
  // mcc, tccg_abcd_aebf_dfce, mcc_nchw, mcc_nchw_s2, tccg_abcdef_dega_gfbc in three types; in
  // split TF32 mcc_nchw and tccg_abcdef_dega_gfbc
  CHECK(fused == 5 * 3 + 2);
}

TEST_CASE("without a GPU: every MMA case's plans compute the contraction (simulate_mma)") {
  // The plans' data movement on the CPU against the reference: random configurations (fused or
  // not) and the tensor-core starts of every case; and an NCHW convolution whose fused K axis
  // looks cp.async-ready (coefficient 1, aligned) but whose chunks would straddle rows of r.
  auto lim = lower::h200_limits();
  int total = 0;
  auto check = [&](const std::string& name, const auto& op, const auto& sizes, int random) {
    INFO(name);
    const auto& x = op.ir();
    auto d = test::make_case_data(op, sizes, 23);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 1);
    std::vector<lower::config> cfgs;
    for (int k = 0; k < random; ++k) cfgs.push_back(lower::random_mma_config(x, sizes, lim, rng));
    for (auto& c : tuning::start_configurations(x, sizes, lim))
      if (c.mma.on) cfgs.push_back(c);
    for (auto& c : cfgs) {
      auto plan = lower::lower(x, sizes, c, lim);
      auto msg = simulated_mismatch(plan, d, L);
      CHECK_MESSAGE(msg.empty(), msg, "\n", lower::to_string(c), "\n", lower::to_string(plan));
      ++total;
    }
  };
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    check(name, op, sizes, 3);
  });
  check("f16 mcc_nchw straddling chunks", ops::mcc_nchw<f16>(2, 8, 2, 1),
        std::vector<std::int64_t>{2, 16, 2, 2, 2, 2, 4}, 8);
  MESSAGE(total, " MMA plans simulated");
  CHECK(total > 24 * 3);
}

TEST_CASE("MMA kernels with a point-wise epilogue apply it in registers, and NVRTC compiles them") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");
  int total = 0;
  test::for_each_mma_epilogue_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    REQUIRE(x.epilogue);
    REQUIRE(lower::mma_supported(x));
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    for (int k = 0; k < 3; ++k) {
      auto plan = lower::lower(x, sizes, lower::random_mma_config(x, sizes, lim, rng), lim);
      const std::string src = cuda::emit(plan);
      INFO(src);
      // the tensor-core kernel calls the epilogue on its accumulators and writes its outputs
      CHECK(has(src, "in registers -> its outputs"));
      CHECK(has(src, "mdh_epilogue("));
      CHECK(src.find("mdh_epilogue(") != src.rfind("mdh_epilogue("));  // defined and called
      // two adjacent columns through the epilogue and stored as one word, where N is even
      const bool even = sizes[plan.mma.n_dim] % 2 == 0;
      CHECK(plan.mma.pair_epilogue == even);
      CHECK(has(src, "two adjacent columns at a time") == even);
      CHECK(has(src, "&y0_1)") == even);
      CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
      ++total;
    }
  });
  CHECK(total == 12);
}

TEST_CASE("the tuner's space offers MMA points for bf16/f16/TF32 contractions on CUDA only") {
  auto h200 = lower::h200_limits();
  std::vector<std::int64_t> s{512, 768, 384};
  auto bf = ops::matmul<bf16>().ir();
  auto names = [](const std::vector<atf::tp>& ps) {
    std::set<std::string> n;
    for (auto& p : ps) n.insert(p.name());
    return n;
  };
  CHECK(names(tuning::make_parameters(bf, s, h200)).count("mma_stages"));
  // unchanged where there is no tensor-core path: fp32 read as IEEE, or OpenCL
  CHECK(!names(tuning::make_parameters(ops::matmul<float>().ir(), s, h200)).count("mma"));
  CHECK(!names(tuning::make_parameters(bf, s, lower::named_limits("pocl-cpu"))).count("mma"));
  auto space = tuning::make_search_space(bf, s, h200);
  // the MMA starts come first and are points of the space; to_config gives them back
  auto starts = tuning::start_configurations(bf, s, h200);
  REQUIRE(!starts.empty());
  CHECK(starts.front().mma.on == 1);
  int mma_starts = 0;
  for (auto& c : starts) {
    auto a = tuning::to_space_configuration(c, bf, s, h200);
    REQUIRE(space.find(a).has_value());
    CHECK(tuning::to_config(a, bf, s) == c);
    mma_starts += c.mma.on == 1;
  }
  CHECK(mma_starts >= 4);
  // random points of the space: some use the tensor cores, and every one lowers
  std::mt19937_64 rng(5);
  int on = 0;
  for (int k = 0; k < 40; ++k) {
    auto a = space.random_point(rng);
    auto c = tuning::to_config(space.to_configuration(a), bf, s);
    on += c.mma.on == 1;
    try {
      lower::lower(bf, s, c, h200);
    } catch (const error& e) {  // plan rules (shared memory, grid) are the tuner's invalid points
      CHECK(has(e.what(), "configuration violates"));
    }
  }
  CHECK(on > 0);
}

TEST_CASE("the space of a convolution offers fused MMA axes; a matmul's space is unchanged") {
  auto h200 = lower::h200_limits();
  auto names = [](const std::vector<atf::tp>& ps) {
    std::set<std::string> n;
    for (auto& p : ps) n.insert(p.name());
    return n;
  };
  auto mm = names(tuning::make_parameters(ops::matmul<bf16>().ir(), {64, 64, 64}, h200));
  CHECK(!mm.count("mma_fuse_m"));
  CHECK(!mm.count("mma_flip_a"));
  auto nchw = ops::mcc_nchw<bf16>().ir();
  std::vector<std::int64_t> s{4, 64, 14, 14, 32, 3, 3};
  auto ns = names(tuning::make_parameters(nchw, s, h200));
  CHECK(ns.count("mma_fuse_m"));
  CHECK(!ns.count("mma_fuse_n"));  // k alone
  CHECK(ns.count("mma_fuse_k"));
  CHECK(ns.count("mma_flip_a"));
  auto space = tuning::make_search_space(nchw, s, h200);
  auto starts = tuning::start_configurations(nchw, s, h200);
  REQUIRE(!starts.empty());
  // the first start is the implicit GEMM: M = n*p*q (q innermost), K = c*r*s (s innermost)
  CHECK(starts.front().mma.m == 3);
  CHECK(starts.front().mma.fuse_m == 0b101);
  CHECK(starts.front().mma.k == 6);
  CHECK(starts.front().mma.fuse_k == 0b110000);
  for (auto& c : starts) {
    auto a = tuning::to_space_configuration(c, nchw, s, h200);
    REQUIRE(space.find(a).has_value());
    CHECK(tuning::to_config(a, nchw, s) == c);
  }
  // the kernel key tells fused from unfused
  auto unfused = starts.front();
  unfused.mma.fuse_m = unfused.mma.fuse_k = 0;
  CHECK(tuning::kernel_key(unfused) != tuning::kernel_key(starts.front()));
  // random points of the space lower or break only the plan's rules
  std::mt19937_64 rng(9);
  int fused = 0;
  for (int k = 0; k < 40; ++k) {
    auto c = tuning::to_config(space.to_configuration(space.random_point(rng)), nchw, s);
    fused += c.mma.on == 1 && (c.mma.fuse_m | c.mma.fuse_k) != 0;
    try {
      lower::lower(nchw, s, c, h200);
    } catch (const error& e) {
      CHECK(has(e.what(), "configuration violates"));
    }
  }
  CHECK(fused > 0);
}

TEST_CASE(
    "the shared tiles are one-to-one, inside their stage, and ldmatrix reads them without "
    "bank conflicts") {
  auto lim = lower::h200_limits();
  int tiles = 0;
  for (int swizzle : {0, 1})
    for (std::int64_t tk : {16, 32, 64})
      for (std::int64_t tm : {16, 32, 64})
        for (bool transposed : {false, true}) {
          auto x = transposed ? ops::matmul_t<bf16>().ir() : ops::matmul<bf16>().ir();
          std::vector<std::int64_t> s{256, 256, 256};
          auto c = lower::default_config(x, s);
          c.mma.on = 1, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2;
          c.mma.warps_m = 2, c.mma.warps_n = 2, c.mma.tile_m = tm, c.mma.tile_n = 32;
          c.mma.tile_k = tk, c.mma.stages = 2, c.mma.swizzle = swizzle;
          auto p = lower::lower(x, s, c, lim);
          for (const lower::mma_operand* o : {&p.mma.a, &p.mma.b}) {
            INFO("swizzle ", swizzle, " tile ", o->rows, "x", o->cols, " pitch ", o->pitch);
            std::set<std::int64_t> seen;
            for (std::int64_t r = 0; r < o->rows; ++r)
              for (std::int64_t col = 0; col < o->cols; ++col) {
                const std::int64_t at = lower::tile_offset(*o, r, col);
                CHECK(at >= 0);
                CHECK(at * 2 < o->stage_bytes);
                seen.insert(at);
              }
            CHECK(std::int64_t(seen.size()) == o->rows * o->cols);
            // one ldmatrix phase: 8 consecutive rows, the same 16-byte chunk, 8 distinct 4-bank
            // groups of the 32 banks
            for (std::int64_t r0 = 0; r0 + 8 <= o->rows; r0 += 8)
              for (std::int64_t col = 0; col < o->cols; col += 8) {
                std::set<std::int64_t> groups;
                for (std::int64_t r = r0; r < r0 + 8; ++r)
                  groups.insert(lower::tile_offset(*o, r, col) * 2 / 16 % 8);
                CHECK(groups.size() == 8);
              }
            ++tiles;
          }
        }
  CHECK(tiles == 72);
}

TEST_CASE("a tensor-core configuration carries over to nearby sizes with its MMA tiles") {
  auto h200 = lower::h200_limits();
  auto bf = ops::matmul<bf16>().ir();
  const std::vector<std::int64_t> tuned{256, 256, 256}, here{300, 280, 260};
  auto starts = tuning::start_configurations(bf, tuned, h200);
  REQUIRE(!starts.empty());
  REQUIRE(starts.front().mma.on == 1);
  const lower::config carried = tuning::carry_over(starts.front(), tuned, here);
  CHECK(carried.mma == starts.front().mma);
  CHECK_NOTHROW(lower::check(carried, bf, here, h200));
  auto space = tuning::make_search_space(bf, here, h200);
  CHECK(space.find(tuning::to_space_configuration(carried, bf, here, h200)).has_value());
}

TEST_CASE("split TF32's parts: x - hi - lo below 2^-21 |x|, lo a TF32 value, a NaN kept in lo") {
  // the kernels' integer split (the CUDA prelude's mdh_tf32_hi/_lo), written out on the CPU
  auto bits = [](float f) { return std::bit_cast<std::uint32_t>(f); };
  auto hi_of = [&](float x) { return std::bit_cast<float>((bits(x) + 0x1000u) & 0xffffe000u); };
  auto lo_of = [&](float x, float hi) { return std::bit_cast<float>(bits(x - hi) & 0xffffe000u); };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-100, 100);
  for (int i = 0; i < 100000; ++i) {
    const float x = (i % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
    const float hi = hi_of(x), lo = lo_of(x, hi);
    REQUIRE(hi == round_tf32(x));  // to nearest, ties away, as cvt.rna for finite x
    REQUIRE(lo == split_tf32_lo(x));
    REQUIRE((bits(lo) & 0x1fffu) == 0u);  // a TF32 value
    REQUIRE(std::fabs(double(x) - double(hi) - double(lo)) < std::ldexp(std::fabs(double(x)), -21));
  }
  // NaN (the canonical 0x7fffffff: hi overflows to -0) and infinity reach the sum through lo
  for (std::uint32_t u : {0x7fffffffu, 0xffffffffu, 0x7fc00000u, 0x7f800000u}) {
    const float x = std::bit_cast<float>(u);
    CHECK(std::isnan(lo_of(x, hi_of(x))));
  }
}

TEST_CASE(
    "split TF32 (precision tf32x3): three TF32 products per product reach near-fp32 accuracy") {
  // mma.sync splits in registers, wgmma reads low tiles the rounding pass writes; both against
  // the IEEE reference at fp32's tolerance, which the same plans with one TF32 product fail.
  auto lim = lower::h200_limits();
  const std::vector<std::int64_t> s{96, 80, 512};
  auto op = ops::matmul<float>().with_precision(ir::precision::tf32x3);
  const ir::computation& x = op.ir();
  CHECK(ir::splits_tf32(x));
  CHECK(!ir::reads_tf32(x));
  CHECK(has(ir::to_string(x), "precision tf32x3"));
  CHECK(ir::structural_hash_hex(x) !=
        ir::structural_hash_hex(ops::matmul<float>().with_precision(ir::precision::tf32).ir()));
  CHECK(tuning::workload::of(x, s).precision == "tf32x3");
  CHECK(has(error_of([] { (void)ops::multiply<float>().with_precision(ir::precision::tf32x3); }),
            "precision tf32x3 applies to fp32 contractions"));
  auto d = test::make_case_data(op, s, 11);  // the reference reads the inputs as stored
  cuda::module_cache cache("");
  for (const std::int64_t on : {1, 2}) {
    INFO("mma = ", on);
    auto c = lower::default_config(x, s);
    c.mma.on = on, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.stages = 3;
    c.mma.warps_m = on == 1 ? 2 : 1, c.mma.warps_n = on == 1 ? 2 : 1;
    c.mma.tile_m = on == 1 ? 32 : 64, c.mma.tile_n = on == 1 ? 32 : 80;
    c.mma.tile_k = 32, c.mma.swizzle = on == 2 ? 1 : 0;
    auto plan = lower::lower(x, s, c, lim);
    REQUIRE(plan.mma.split_tf32);
    INFO(lower::to_string(plan));
    CHECK(has(lower::to_string(plan), "x3 (split TF32"));
    const std::string src = cuda::emit(plan);
    // the split is integer arithmetic (no cvt.rna.tf32.f32, which sm_90 runs with a NaN test)
    CHECK(has(src, "mdh_tf32_hi(float x)"));
    if (on == 1) {
      CHECK(has(src, "af[fm][0] = mdh_tf32_hi(x);"));
      CHECK(has(src, "al[fm][0] = mdh_tf32_lo(x, af[fm][0]);"));
      CHECK(!has(src, "\"=r\"(af[fm][0])"));  // no fragment through cvt.rna.tf32.f32
    } else {
      // B(k, j) is N-contiguous: it lands so by cp.async and is transposed into its K-major
      // tiles; A is K-contiguous already
      CHECK(!plan.mma.land_a);
      REQUIRE(plan.mma.land_b);
      CHECK(plan.mma.b_land.async_copy);
      CHECK(!plan.mma.b_land.k_contiguous);
      const std::int64_t hi = plan.mma.stages * (plan.mma.a.stage_bytes + plan.mma.b.stage_bytes);
      CHECK(plan.mma.a.lo_offset_bytes == hi);
      CHECK(plan.mma.b.lo_offset_bytes == hi + plan.mma.b.offset_bytes);
      CHECK(plan.mma.b_land.offset_bytes == 2 * hi);
      CHECK(plan.tiles_bytes == 2 * hi + plan.mma.stages * plan.mma.b_land.stage_bytes);
      CHECK(has(src, "__uint_as_float(mdh_tf32_lo(w.x, h.x))"));   // A in place, by chunks
      CHECK(has(src, "__uint_as_float(mdh_tf32_lo(w0.x, h.x))"));  // B transposed, by blocks
      CHECK(has(src, "da_lo"));
    }
    CHECK(simulated_mismatch(plan, d, 512).empty());
    auto one = plan;  // the same tiles, one TF32 product
    one.mma.split_tf32 = false;
    CHECK(has(simulated_mismatch(one, d, 512), "above tolerance"));
    CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
  }
  // without tensor cores (mma = 0) the computation is the IEEE one
  auto simt = lower::lower(x, s, lower::default_config(x, s), lim);
  CHECK(!has(cuda::emit(simt), "mdh_tf32(A"));
}

TEST_CASE(
    "TF32 wgmma: a landed operand's 4x4 blocks cover its tile once, each copied and transposed by "
    "one thread, with 16-byte loads and stores on distinct banks (128-byte K rows)") {
  // The rounding pass transposes what the thread itself copied (cp.async completes per thread),
  // so the copy must hand each thread whole blocks; the rotation of landing_block_origin keeps
  // the eight lanes of each 16-byte phase on distinct banks of both tiles.
  auto lim = lower::h200_limits();
  const std::vector<std::int64_t> s{256, 384, 512};
  std::mt19937_64 rng(23);
  int landed = 0, conflict_free = 0;
  for (const auto precision : {ir::precision::tf32, ir::precision::tf32x3}) {
    auto x = ops::matmul<float>().with_precision(precision).ir();
    for (int k = 0; k < 30; ++k) {
      auto plan = lower::lower(x, s, lower::random_wgmma_config(x, s, lim, rng), lim);
      REQUIRE(plan.mma.land_b);  // B(k, j) is N-contiguous
      const lower::mma_operand &l = plan.mma.b_land, &o = plan.mma.b;
      INFO(lower::to_string(plan));
      ++landed;
      REQUIRE(l.copy_rows == 4);
      REQUIRE(l.rows % 4 == 0);
      const std::int64_t per_row = l.cols / l.chunk, blocks = lower::landing_blocks(l);
      CHECK(blocks * 16 == l.rows * l.cols);
      const std::int64_t T = plan.threads;
      CHECK(l.copies_per_thread == 4 * ((blocks + T - 1) / T));
      // every chunk of the landing tile copied exactly once, a block's rows by one thread
      std::vector<int> copied(std::size_t(l.rows * per_row), 0);
      for (std::int64_t tid = 0; tid < T; ++tid)
        for (std::int64_t q = 0; q < l.copies_per_thread; ++q) {
          const std::int64_t b = tid + q / 4 * T;
          if (b >= blocks) continue;
          const auto [r0, col] = lower::landing_block_origin(l, b);
          ++copied.at(std::size_t((r0 + q % 4) * per_row + col / l.chunk));
        }
      CHECK(std::count(copied.begin(), copied.end(), 1) == std::int64_t(copied.size()));
      // the 16-byte accesses of each phase of eight consecutive blocks (lanes): bank groups
      // (16-byte chunk index mod 8) of the four loads and the four transposed stores
      int worst = 1;
      for (std::int64_t b0 = 0; b0 + 8 <= blocks; b0 += 8)
        for (int i = 0; i < 4; ++i) {
          std::array<int, 8> loads{}, stores{};
          for (std::int64_t b = b0; b < b0 + 8; ++b) {
            const auto [r0, col] = lower::landing_block_origin(l, b);
            ++loads[std::size_t(lower::tile_offset(l, r0 + i, col) / 4 % 8)];
            ++stores[std::size_t(lower::tile_offset(o, col + i, r0) / 4 % 8)];
          }
          worst = std::max({worst, *std::max_element(loads.begin(), loads.end()),
                            *std::max_element(stores.begin(), stores.end())});
        }
      INFO("worst phase: ", worst, "-way");
      // a K-major row of 32 (64) bytes holds two (four) chunks: the eight stores of a phase, all
      // at the same M/N offset within their chunks, then spread over four (eight) bank groups
      CHECK(worst <= (o.atom_cols * 4 == 32 ? 4 : 2));
      if (o.atom_cols * 4 == 128 && per_row % 8 == 0) CHECK(worst == 1);
      conflict_free += worst == 1;
      CHECK(has(cuda::emit(plan), "the thread's 4x4 block"));
    }
  }
  CHECK(landed == 60);
  CHECK(conflict_free > 0);
}

// --- mma = 2: warpgroup MMA (wgmma.mma_async, sm_90a) -------------------------------------------

TEST_CASE(
    "rows of odd length: 16-bit tiles move in shifted 16-byte chunks, wgmma issues before the "
    "register copies, and the plans compute the product") {
  auto lim = lower::h200_limits();
  cuda::module_cache cache("");
  auto plan_of = [&](const ir::computation& x, std::vector<std::int64_t> s, lower::mma_config m) {
    return plan_with_mma(x, s, m, lim);
  };
  lower::mma_config m = matmul_mma();
  m.shift = 1;
  lower::mma_config w = m;  // wgmma: one warpgroup of 64 x 64, swizzled
  w.on = 2, w.warps_m = 1, w.warps_n = 1, w.swizzle = 1;
  // rows of 77 (A) and 101 (B) elements: no chunk is provably aligned, every one shifted
  const std::vector<std::int64_t> odd{97, 101, 77};
  const auto bf = ops::matmul<bf16>().ir();
  CHECK(lower::mma_shift_applies(bf, odd));
  CHECK(!lower::mma_shift_applies(bf, {256, 256, 256}));
  CHECK(
      lower::mma_shift_applies(ops::matmul<float>().with_precision(ir::precision::tf32).ir(), odd));
  CHECK(!lower::mma_shift_applies(ops::matmul<float>().with_precision(ir::precision::tf32).ir(),
                                  {256, 256, 256}));
  for (const auto& cfg : {m, w}) {
    INFO("mma = " << cfg.on);
    // mma_shift = 0: element copies, the step's copies before its wgmmas (as before the
    // parameter existed)
    lower::mma_config off = cfg;
    off.shift = 0;
    auto e = plan_of(bf, odd, off);
    CHECK(!e.mma.a.shifted_copy);
    CHECK(e.mma.a.copies_per_thread == e.mma.block_m * 32 / e.threads);
    const std::string es = cuda::emit(e);
    CHECK(!has(es, "mdh_shift16"));
    if (cfg.on == 2) {
      const auto loop = es.find("for (int step = ");
      CHECK(es.find("load_step(next", loop) < es.find("wgmma.commit_group.sync.aligned", loop));
    }
    auto p = plan_of(bf, odd, cfg);
    CHECK(!p.mma.a.async_copy);
    CHECK(p.mma.a.shifted_copy);
    CHECK(p.mma.b.shifted_copy);
    CHECK(p.mma.a.buffer_elements == 97 * 77);
    CHECK(p.mma.b.buffer_elements == 77 * 101);
    // chunks of 8 per thread, not elements: A is block_m x 32 per stage
    CHECK(p.mma.a.copies_per_thread == p.mma.block_m * 32 / 8 / p.threads);
    CHECK(has(lower::to_string(p), "16-byte chunks through registers, shifted"));
    const std::string src = cuda::emit(p);
    CHECK(has(src, "static __device__ __forceinline__ uint4 mdh_shift16("));
    CHECK(has(src, "x = sh == 0 ? lo : mdh_shift16(lo, w[1], sh * 2);"));
    // the second vector of the buffer's last chunks would end past it: those read elements
    CHECK(has(src, "(sh == 0 || at - sh + 16 <= 7469))"));
    auto mod = cuda::compile(p, "sm_90", cache);
    CHECK(has(mod->ptx, "ld.global.nc.v4"));
    CHECK(has(mod->ptx, "prmt.b32"));
    CHECK(!has(mod->log, "wgmma.mma_async instructions are serialized"));
    if (cfg.on == 2) {  // the step's wgmmas are committed before the next step's copies
      const auto loop = src.find("for (int step = ");
      REQUIRE(loop != std::string::npos);
      const auto commit = src.find("wgmma.commit_group.sync.aligned", loop);
      const auto copy = src.find("load_step(next", loop);
      const auto wait = src.find("wgmma.wait_group.sync.aligned", loop);
      CHECK(commit < copy);
      CHECK(copy < wait);
    }
    auto d = test::make_case_data(ops::matmul<bf16>(), odd, 41);
    auto msg = simulated_mismatch(p, d, 77);
    CHECK_MESSAGE(msg.empty(), msg);
  }
  // the parameter: written only when 1, read back, refused without mma or outside {0, 1}
  auto c = lower::default_config(bf, odd);
  c.mma = w;
  CHECK(lower::to_map(c).at("mma_shift") == 1);
  CHECK(lower::config_from_json(nlohmann::json(c), bf) == c);
  c.mma.shift = 0;
  CHECK(!lower::to_map(c).count("mma_shift"));
  c.mma.shift = 2;
  CHECK(has(error_of([&] { lower::check(c, bf, odd, lim); }), "mma_shift in {0 = element"));
  auto plain = lower::default_config(bf, odd);
  plain.mma.shift = 1;
  CHECK(has(error_of([&] { lower::check(plain, bf, odd, lim); }), "mma_shift=1 with mma=0"));
  // the tuner's space has it where it applies; the starts try it
  auto names = [&](const std::vector<std::int64_t>& s) {
    std::set<std::string> n;
    for (auto& t : tuning::make_parameters(bf, s, lim)) n.insert(t.name());
    return n;
  };
  CHECK(names(odd).count("mma_shift"));
  CHECK(!names({256, 256, 256}).count("mma_shift"));
  int shifted_starts = 0;
  for (auto& st : tuning::start_configurations(bf, odd, lim)) shifted_starts += st.mma.shift != 0;
  CHECK(shifted_starts >= 1);
  // aligned rows keep cp.async (and wgmma its order: copies, then the step's wgmmas)
  auto al = plan_of(ops::matmul<bf16>().ir(), {256, 256, 256}, w);
  CHECK(al.mma.a.async_copy);
  CHECK(!al.mma.a.shifted_copy);
  const std::string as = cuda::emit(al);
  CHECK(!has(as, "mdh_shift16"));
  const auto loop = as.find("for (int step = ");
  CHECK(as.find("load_step(next", loop) < as.find("wgmma.commit_group.sync.aligned", loop));
  // TF32 and split TF32: chunks of 4 floats, which the rounding pass then walks as it walks
  // cp.async's; wgmma reads TF32 K-major only, so its B (N-contiguous in memory) is gathered
  for (ir::precision pr : {ir::precision::tf32, ir::precision::tf32x3}) {
    const auto op = ops::matmul<float>().with_precision(pr);
    auto d = test::make_case_data(op, odd, 43);
    for (auto cfg : {m, w}) {
      INFO("precision " << int(pr) << ", mma = " << cfg.on);
      cfg.swizzle = cfg.on == 2 ? 1 : 0, cfg.tile_k = 16;
      auto tf = plan_of(op.ir(), odd, cfg);
      CHECK(tf.mma.a.shifted_copy);
      CHECK(tf.mma.a.chunk == 4);
      CHECK(tf.mma.a.copies_per_thread == tf.mma.block_m * 16 / 4 / tf.threads);
      CHECK(tf.mma.b.shifted_copy == (cfg.on == 1));
      const std::string ts = cuda::emit(tf);
      CHECK(has(ts, "x = sh == 0 ? lo : mdh_shift16(lo, w[1], sh * 4);"));
      CHECK(has(ts, "e[j] = e2 + j < 77 ? __float_as_uint(in0[at + j]) : 0u;"));
      CHECK(has(ts, "round_step(") == (cfg.on == 2));  // mma.sync rounds as it reads
      auto mod = cuda::compile(tf, "sm_90", cache);
      CHECK(has(mod->ptx, "ld.global.nc.v4"));
      auto msg = simulated_mismatch(tf, d, 77);
      CHECK_MESSAGE(msg.empty(), msg);
    }
  }
  // a gathered NCHW image (a fused K axis, not one run in memory) stays element copies
  lower::mma_config mn = m;
  mn.m = 3, mn.n = 1, mn.k = 6, mn.fuse_m = 0b101, mn.fuse_k = 0b110000;
  auto nc = plan_of(ops::mcc_nchw<bf16>().ir(), {4, 64, 14, 14, 32, 3, 3}, mn);
  CHECK(!nc.mma.a.async_copy);
  CHECK(!nc.mma.a.shifted_copy);
}

TEST_CASE("wgmma (mma = 2): the rules keep it to sm_90 and its tiles, saying why") {
  auto lim = lower::h200_limits();
  std::vector<std::int64_t> s{256, 256, 128};
  auto bf = ops::matmul<bf16>().ir();
  auto c = lower::default_config(bf, s);
  c.mma.on = 2, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.warps_m = 2, c.mma.warps_n = 1;
  c.mma.tile_m = 64, c.mma.tile_n = 128, c.mma.tile_k = 64, c.mma.stages = 3, c.mma.swizzle = 1;
  CHECK_NOTHROW(lower::lower(bf, s, c, lim));
  auto sm80 = lim;
  sm80.name = "an sm_80 GPU", sm80.cc_major = 8;
  CHECK(has(error_of([&] { lower::lower(bf, s, c, sm80); }), "needs an sm_90 device"));
  CHECK(has(error_of([&] { lower::lower(bf, s, c, lower::named_limits("pocl-cpu")); }),
            "mma needs a CUDA device"));
  auto tf = ops::matmul<float>().with_precision(ir::precision::tf32).ir();
  auto t = c;
  t.mma.tile_k = 32;
  auto tplan = lower::lower(tf, s, t, lim);  // TF32: m64nNk8, both tiles K-major (B gathered)
  CHECK(has(lower::to_string(tplan), "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32"));
  CHECK(tplan.mma.a.k_contiguous);
  CHECK(tplan.mma.b.k_contiguous);
  CHECK(!tplan.mma.b.async_copy);
  CHECK(has(cuda::emit(tplan), "round_step("));
  t.mma.tile_k = 128;
  CHECK(has(error_of([&] { lower::lower(tf, s, t, lim); }), "mma_tile_k"));
  t.mma.tile_k = 32, t.mma.flip_b = 1;
  CHECK(has(error_of([&] { lower::lower(tf, s, t, lim); }), "K-major only"));
  auto b = c;
  b.mma.tile_m = 32;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "tile_m a multiple of 64"));
  b = c, b.mma.tile_n = 24;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "mma_tile_n"));
  b = c, b.mma.tile_m = 128, b.mma.tile_n = 256;  // 256 accumulators per thread
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "accumulators per thread"));
  b = c, b.mma.warps_m = 4, b.mma.warps_n = 2;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "warps_m * warps_n <= 4"));
  b = c, b.mma.tile_k = 48;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "tile_k in {1, 2, 4, 8} x"));
  b = c, b.mma.swizzle = 0;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "always swizzled"));
  b = c, b.mma.on = 3;
  CHECK(has(error_of([&] { lower::lower(bf, s, b, lim); }), "mma=3"));
  // stored as mma = 2 with the same names; read back
  CHECK(lower::to_map(c).at("mma") == 2);
  CHECK(lower::from_map(lower::to_map(c), 3, 2) == c);
  CHECK(lower::config_from_json(nlohmann::json(c), bf) == c);
  // the plan: warpgroups, K-major A (128-byte swizzle), N-major B in 64-column atoms
  auto plan = lower::lower(bf, s, c, lim);
  CHECK(plan.mma.wgmma);
  CHECK(plan.threads == 256);
  CHECK(plan.mma.a.k_contiguous);
  CHECK(plan.mma.a.atom_cols == 64);
  CHECK(plan.mma.a.desc_mode == 1);
  CHECK(!plan.mma.b.k_contiguous);
  CHECK(plan.mma.b.atom_cols == 64);
  CHECK(plan.mma.b.desc_lbo == 64 * 64 * 2);  // from one 64-column atom block to the next
  CHECK(plan.mma.wgmma_depth == 1);
  CHECK(plan.mma.copies_ahead == 1);
  CHECK(has(lower::to_string(plan), "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
}

TEST_CASE(
    "wgmma: NVRTC compiles random configurations of every case for sm_90a, and the CPU "
    "simulation of their descriptors and fragments computes the contraction") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  int total = 0;
  // cuobjdump, where the toolkit has it: the SASS holds HGMMA
  const bool cuobjdump = std::system("cuobjdump --version > /dev/null 2>&1") == 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    auto d = test::make_case_data(op, sizes, 23);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 2);
    for (int k = 0; k < 4; ++k) {
      auto cfg = lower::random_wgmma_config(x, sizes, lim, rng);
      auto plan = lower::lower(x, sizes, cfg, lim);
      INFO(lower::to_string(plan));
      auto m = cuda::compile(plan, "sm_90", cache);
      CHECK(m->arch == "sm_90a");
      CHECK(!m->cubin.empty());
      CHECK(has(m->ptx, "wgmma.mma_async.sync.aligned.m64n" + std::to_string(plan.mma.warp_n)));
      CHECK(!has(m->log, "wgmma.mma_async instructions are serialized"));
      if (cuobjdump && k == 0) {
        const std::string f = "/tmp/mdh_wgmma_" + plan.name + ".cubin";
        std::ofstream(f, std::ios::binary)
            .write(reinterpret_cast<const char*>(m->cubin.data()),
                   std::streamsize(m->cubin.size()));
        CHECK(std::system(("cuobjdump -sass " + f + " | grep -q HGMMA").c_str()) == 0);
        std::remove(f.c_str());
      }
      auto msg = simulated_mismatch(plan, d, L);
      CHECK_MESSAGE(msg.empty(), msg);
      ++total;
    }
  });
  MESSAGE(total, " wgmma kernels compiled by NVRTC and simulated");
  CHECK(total == 112);  // 28 cases (24, and 4 in split TF32) x 4
  // with a point-wise epilogue: compiled (the epilogue is the mma.sync path's, not simulated)
  test::for_each_mma_epilogue_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    auto plan =
        lower::lower(op.ir(), sizes, lower::random_wgmma_config(op.ir(), sizes, lim, rng), lim);
    CHECK(has(cuda::emit(plan), "mdh_epilogue("));
    CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
  });
}

TEST_CASE("wgmma: the CPU simulation fails a tile layout that wgmma would read differently") {
  // The simulation reads the tiles through the descriptors as the PTX ISA defines them, not
  // through the layout the copies wrote: a plan whose swizzle or strides disagree is wrong.
  auto lim = lower::h100_limits();
  auto op = ops::matmul<bf16>();
  std::vector<std::int64_t> s{128, 128, 64};
  auto d = test::make_case_data(op, s, 3);
  auto c = lower::default_config(op.ir(), s);
  c.mma.on = 2, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.warps_m = 1, c.mma.warps_n = 1;
  c.mma.tile_m = 64, c.mma.tile_n = 128, c.mma.tile_k = 64, c.mma.stages = 3, c.mma.swizzle = 1;
  const auto good = lower::lower(op.ir(), s, c, lim);
  auto run = [&](const lower::kernel_plan& p) { return simulated_mismatch(p, d, 64); };
  CHECK(run(good).empty());
  auto bad = good;
  bad.mma.a.swizzle_rows = 2;  // A's chunks XOR-ed as a 64-byte swizzle would
  CHECK(!run(bad).empty());
  bad = good;
  bad.mma.b.desc_lbo /= 2;  // B's atom blocks not where the descriptor says
  CHECK(!run(bad).empty());
  bad = good;
  bad.mma.b.desc_mode = 2;  // B described as 64-byte swizzled
  CHECK(!run(bad).empty());
}

TEST_CASE("wgmma: the space offers mma = 2 on sm_90 only, and its random points lower") {
  auto h100 = lower::h100_limits();
  std::vector<std::int64_t> s{512, 768, 384};
  auto bf = ops::matmul<bf16>().ir();
  auto sm80 = h100;
  sm80.cc_major = 8;
  auto values = [](const std::vector<atf::tp>& ps, const std::string& n) {
    for (auto& p : ps)
      if (p.name() == n) return p.values().size();
    return std::size_t(0);
  };
  CHECK(values(tuning::make_parameters(bf, s, h100), "mma") == 3);
  CHECK(values(tuning::make_parameters(bf, s, sm80), "mma") == 2);
  auto tf = ops::matmul<float>().with_precision(ir::precision::tf32).ir();
  CHECK(values(tuning::make_parameters(tf, s, h100), "mma") == 3);
  auto space = tuning::make_search_space(bf, s, h100);
  std::mt19937_64 rng(9);
  int wgmma = 0;
  for (int k = 0; k < 200 && wgmma < 5; ++k) {
    auto a = space.random_point(rng);
    auto c = tuning::to_config(space.to_configuration(a), bf, s);
    if (c.mma.on != 2) continue;
    ++wgmma;
    try {
      auto plan = lower::lower(bf, s, c, h100);
      CHECK(plan.mma.wgmma);
      CHECK(tuning::kernel_key(c) != nlohmann::json(c).dump());  // SIMT parameters left out
    } catch (const error& e) {  // plan rules (shared memory) are the tuner's invalid points
      CHECK(has(e.what(), "configuration violates"));
    }
  }
  CHECK(wgmma > 0);
}

TEST_CASE(
    "split-K (mma_split): every MMA case split over 2 and 3 blocks per tile computes the "
    "contraction (simulate_mma), NVRTC compiles it for mma.sync and wgmma, and unsplit sources "
    "have no combine") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  int total = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    auto d = test::make_case_data(op, sizes, 29);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 3);
    for (int on : {1, 2}) {
      lower::config c = on == 1 ? lower::random_mma_config(x, sizes, lim, rng)
                                : lower::random_wgmma_config(x, sizes, lim, rng);
      // one instruction's K per step, so that every case has steps to split
      c.mma.tile_k = lower::mma_instruction_k(*lower::mma_supported(x).instruction);
      c.mma.split = 1;
      const std::string plain = cuda::emit(lower::lower(x, sizes, c, lim));
      CHECK(!has(plain, "__syncthreads_or"));
      CHECK(!has(plain, "cnt"));
      for (std::int64_t split : {2, 3}) {
        c.mma.split = split;
        lower::kernel_plan plan;
        try {
          plan = lower::lower(x, sizes, c, lim);
        } catch (const error& e) {  // fewer K steps than blocks: the rule says so
          CHECK(has(e.what(), "mma_split <= K steps"));
          continue;
        }
        INFO(lower::to_string(plan));
        CHECK(plan.mma.split == split);
        CHECK(plan.kernels[0].launch.grid[2] % split == 0);
        REQUIRE(plan.partials.size() == 1);
        REQUIRE(plan.counters.size() == 1);
        CHECK(plan.partials[0].elements ==
              plan.blocks * plan.mma.block_m * plan.mma.block_n);  // blocks = tiles * split
        const std::string src = cuda::emit(plan);
        CHECK(has(src, "__syncthreads_or"));
        CHECK(has(src, "atomicAdd(&cnt[tile], 0x10000)"));
        auto m = cuda::compile(plan, "sm_90", cache);
        CHECK(!m->cubin.empty());
        auto msg = simulated_mismatch(plan, d, L);
        CHECK_MESSAGE(msg.empty(), msg);
        ++total;
      }
    }
  });
  MESSAGE(total, " split-K plans compiled and simulated");
  CHECK(total >= 48);
  // a split larger than the K steps is refused, naming the parameter
  auto x = ops::matmul<bf16>().ir();
  lower::config c = tuning::start_configurations(x, {64, 64, 64}, lim).front();
  REQUIRE(c.mma.on != 0);
  c.mma.split = 16;
  CHECK_THROWS_WITH_AS(lower::check(c, x, {64, 64, 64}, lim),
                       doctest::Contains("parameter mma_split"), error);
}

TEST_CASE("split-K: a start whose tiles leave SMs idle comes with its split variant") {
  auto lim = lower::h100_limits();
  auto x = ops::matmul<bf16>().ir();
  const std::vector<std::int64_t> sizes{1024, 1024, 1024};  // 64 tiles of 128x128 on 132 SMs
  int split = 0;
  for (auto& c : tuning::start_configurations(x, sizes, lim)) {
    if (c.mma.split == 1) continue;
    ++split;
    auto plan = lower::lower(x, sizes, c, lim);
    CHECK(plan.blocks <= lim.sm_count);
    CHECK(plan.blocks * 2 > lim.sm_count);  // the most blocks that still fit one wave
  }
  CHECK(split > 0);
  // 2048x3072 in 128x128 tiles fills the SMs: no split start of that tile
  for (auto& c : tuning::start_configurations(x, {2048, 3072, 768}, lim))
    if (c.mma.on == 2 && c.mma.warps_m * c.mma.tile_m == 128 && c.mma.warps_n * c.mma.tile_n == 128)
      CHECK(c.mma.split == 1);
}

TEST_CASE("wave-fit starts: block tiles that fill the SMs' waves, checked, compiled, simulated") {
  auto lim = lower::h200_limits();  // 132 SMs
  auto x = ops::matmul<bf16>().ir();
  // 2048 x 768 (BERT's output projections): 128 x 128 tiles are 96 blocks; 128 x 96 are 128,
  // one wave 97 % full
  const std::vector<std::int64_t> bert{2048, 768, 3072};
  const auto starts = tuning::start_configurations(x, bert, lim);
  auto wave_fit = [](const lower::config& c) {
    return c.mma.on == 2 && c.mma.tma == 1 && c.mma.stages == 4 && c.mma.tile_n == 96;
  };
  auto first = std::find_if(starts.begin(), starts.end(), wave_fit);
  REQUIRE(first != starts.end());
  CHECK(first->mma.warps_m * first->mma.tile_m == 128);
  CHECK(first->mma.warps_n * first->mma.tile_n == 96);
  CHECK(lower::lower(x, bert, *first, lim).blocks == 128);
  // its persistent variant follows it
  auto persistent = std::next(first);
  REQUIRE(persistent != starts.end());
  CHECK(persistent->mma.persistent == 1);
  CHECK(persistent->mma.tile_n == 96);
  // the 96-column tiles compute the product (simulated at a size the CPU walks quickly, with an
  // N edge: 200 = 2 x 96 + 8) and compile, N contiguous in B (64-byte swizzle) or not
  cuda::module_cache cache("");
  auto computes = [&](const auto& op) {
    const std::vector<std::int64_t> small{128, 200, 64};
    auto plan = lower::lower(op.ir(), small, *first, lim);
    auto d = test::make_case_data(op, small, 31);
    auto msg = simulated_mismatch(plan, d, 64);
    CHECK_MESSAGE(msg.empty(), msg, "\n", lower::to_string(plan));
    CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
  };
  computes(ops::matmul<bf16>());
  computes(ops::matmul_nt<bf16>());
  // 96 is in the sm_90 space
  auto space = tuning::make_search_space(x, bert, lim);
  CHECK(space.find(tuning::to_space_configuration(*first, x, bert, lim)).has_value());
}

TEST_CASE(
    "TMA (mma_tma): tiles that are boxes of their buffers are planned as tensor-map boxes, "
    "compiled by NVRTC and computed right (simulate_mma); the rest is refused, saying why") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  int total = 0, persistent = 0, clustered = 0, persistent_staged = 0;
  auto check = [&](const std::string& name, const auto& op, const std::vector<std::int64_t>& s,
                   int configs, std::vector<std::int64_t> axes = {}) {
    INFO(name);
    const ir::computation& x = op.ir();
    auto d = test::make_case_data(op, s, 61);
    const std::int64_t L = tuning::reduction_length(x, s);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 5);
    int found = 0;
    for (int attempt = 0; attempt < 400 && found < configs; ++attempt) {
      lower::config c = lower::draw_wgmma_config(x, s, rng);
      c.mma.tma = 1, c.mma.persistent = 0, c.mma.cluster_m = c.mma.cluster_n = 1;
      if (!axes.empty())  // M, N, K whose tiles are boxes (a random draw rarely finds them)
        c.mma.m = axes[0], c.mma.n = axes[1], c.mma.k = axes[2],
        c.mma.fuse_m = c.mma.fuse_n = c.mma.fuse_k = c.mma.flip_a = c.mma.flip_b = 0;
      lower::kernel_plan plan;
      try {
        plan = lower::lower(x, s, c, lim);
      } catch (const error&) {
        continue;
      }
      INFO(lower::to_string(plan));
      REQUIRE(plan.mma.tma);
      CHECK(plan.mma.a.tma);
      CHECK(plan.mma.b.tma);
      CHECK(plan.mma.tma_bytes ==
            (plan.mma.a.rows * plan.mma.a.cols + plan.mma.b.rows * plan.mma.b.cols) *
                std::int64_t(size_of(plan.mma.a.type)));
      CHECK(has(lower::to_string(plan), "TMA boxes of"));
      const std::string src = cuda::emit(plan);
      CHECK(has(src, "cp.async.bulk.tensor"));
      CHECK(has(src, "mbarrier.try_wait.parity"));
      CHECK(!has(src, "cp.async.cg"));  // no thread copies a chunk itself
      auto m = cuda::compile(plan, "sm_90", cache);
      CHECK(!m->cubin.empty());
      auto msg = simulated_mismatch(plan, d, L);
      CHECK_MESSAGE(msg.empty(), msg);
      ++found, ++total;
      // the same persistent and warp-specialised: a producer warpgroup more, one wave of blocks
      if (c.mma.split != 1) continue;
      c.mma.persistent = 1;  // staged or not as drawn (staged: its own tiles, if they fit)
      lower::kernel_plan pp;
      try {
        pp = lower::lower(x, s, c, lim);
      } catch (const error& e) {
        REQUIRE_MESSAGE(c.mma.stage_out == 1, e.what());
        CHECK(has(e.what(), "shared"));
        c.mma.stage_out = 0;
        pp = lower::lower(x, s, c, lim);
      }
      CHECK(pp.mma.persistent);
      if (pp.mma.stage_out) {  // after the pipeline's tiles and barriers, copied by its warps
        ++persistent_staged;
        for (const auto& st : pp.mma.staged)
          CHECK(st.offset_bytes >= pp.mma.barriers_offset + 16 * pp.mma.stages);
        CHECK(has(cuda::emit(pp), "bar.sync 1, " + std::to_string(pp.threads - 128)));
      }
      CHECK(pp.threads == plan.threads + 128);
      CHECK(pp.kernels[0].launch.grid[0] <= std::min<std::int64_t>(pp.mma.tiles, 2 * lim.sm_count));
      CHECK(pp.mma.tiles == plan.blocks);
      const std::string ps = cuda::emit(pp);
      CHECK(has(ps, "the producer warpgroup"));
      CHECK(has(ps, "tile += (int)gridDim.x"));
      CHECK(!cuda::compile(pp, "sm_90", cache)->cubin.empty());
      msg = simulated_mismatch(pp, d, L);
      CHECK_MESSAGE(msg.empty(), msg);
      ++persistent;
      // and in clusters of two blocks along N (A multicast) or M (B multicast)
      (found % 2 ? c.mma.cluster_n : c.mma.cluster_m) = 2;
      const auto cp = lower::lower(x, s, c, lim);
      INFO(lower::to_string(cp));
      const lower::mma_operand& shared = found % 2 ? cp.mma.a : cp.mma.b;
      CHECK(shared.multicast);
      CHECK(!(found % 2 ? cp.mma.b : cp.mma.a).multicast);
      CHECK(shared.tma_col_boxes * shared.tma_row_boxes % 2 == 0);
      CHECK(cp.kernels[0].launch.cluster[0] == 2);
      CHECK(cp.kernels[0].launch.grid[0] % 2 == 0);
      CHECK(cp.kernels[0].launch.grid[0] <= 2 * cp.mma.cluster_units);
      CHECK(cp.mma.cluster_units * 2 >= cp.mma.tiles);  // every tile in a unit
      CHECK(cp.mma.cluster_units <= cp.mma.tiles);
      const std::string cs = cuda::emit(cp);
      CHECK(has(cs, "__cluster_dims__(2, 1, 1)"));
      CHECK(has(cs, ".multicast::cluster"));
      CHECK(has(cs, "mapa.shared::cluster"));
      CHECK(has(cs, "barrier.cluster.wait"));
      CHECK(!cuda::compile(cp, "sm_90", cache)->cubin.empty());
      msg = simulated_mismatch(cp, d, L);
      CHECK_MESSAGE(msg.empty(), msg);
      ++clustered;
    }
    CHECK_MESSAGE(found == configs, name, ": ", found, " TMA configurations drawn");
  };
  const std::vector<std::int64_t> mm{72, 136, 40}, bmm{2, 3, 24, 40, 16};
  check("bf16 matmul", ops::matmul<bf16>(), mm, 6);
  check("f16 matmul_t", ops::matmul_t<f16>(), mm, 3);
  check("bf16 batch_matmul", ops::batch_matmul<bf16>(), bmm, 3);
  check("bf16 batch_matmul_nt", ops::batch_matmul<bf16, false, true>(), bmm, 3);
  // a, c innermost in A(d, e, g, a) and B(g, f, b, c): 4-D boxes, d, e, f, b on grid.z
  check("bf16 tccg_abcdef_dega_gfbc", ops::tccg_abcdef_dega_gfbc<bf16>(), {8, 2, 16, 3, 2, 3, 24},
        3, {0, 2, 6});
  MESSAGE(total, " TMA plans compiled and simulated, ", persistent, " also persistent (",
          persistent_staged, " staged), ", clustered, " also in clusters");
  CHECK(persistent > 0);
  CHECK(persistent_staged > 0);
  CHECK(clustered == persistent);

  // refused, naming the parameter and the reason: rows of 77 bf16 (154 bytes), TF32, mma = 1
  auto x = ops::matmul<bf16>().ir();
  lower::config c = lower::default_config(x, {97, 101, 77});
  c.mma.on = 2, c.mma.m = 0, c.mma.n = 1, c.mma.k = 2, c.mma.swizzle = 1, c.mma.warps_m = 1;
  c.mma.warps_n = 1, c.mma.tile_m = 64, c.mma.tile_n = 64, c.mma.tile_k = 32, c.mma.stages = 3;
  c.mma.tma = 1;
  CHECK_THROWS_WITH_AS(lower::check(c, x, {97, 101, 77}, lim),
                       doctest::Contains("parameter mma_tma"), error);
  CHECK_THROWS_WITH_AS(lower::check(c, x, {97, 101, 77}, lim),
                       doctest::Contains("a multiple of 16"), error);
  CHECK_NOTHROW(lower::check(c, x, {96, 104, 80}, lim));
  auto t = ops::matmul<float>().with_precision(ir::precision::tf32).ir();
  CHECK_THROWS_WITH_AS(lower::check(c, t, {96, 104, 80}, lim), doctest::Contains("TF32"), error);
  c.mma.on = 1;
  CHECK_THROWS_WITH_AS(lower::check(c, x, {96, 104, 80}, lim),
                       doctest::Contains("parameter mma_tma"), error);
  c.mma.on = 2, c.mma.tma = 0, c.mma.persistent = 1;  // persistent needs TMA
  CHECK_THROWS_WITH_AS(lower::check(c, x, {96, 104, 80}, lim),
                       doctest::Contains("parameter mma_persistent"), error);
  c.mma.persistent = 0;
  // without mma_tma the source is that of before it (no tensor map, no mbarrier)
  c.mma.on = 2, c.mma.tma = 0;
  const std::string plain = cuda::emit(lower::lower(x, {96, 104, 80}, c, lim));
  CHECK(!has(plain, "mdh_tensor_map"));
  CHECK(!has(plain, "mbarrier"));
  CHECK(lower::to_map(c).count("mma_tma") == 0);
  const std::string key = tuning::kernel_key(c);
  c.mma.tma = 1;
  CHECK(lower::to_map(c).at("mma_tma") == 1);
  // each is another kernel for the tuner (which measures a kernel key once)
  CHECK(tuning::kernel_key(c) != key);
  c.mma.persistent = 1;
  CHECK(tuning::kernel_key(c) != key);
  CHECK(lower::from_map(lower::to_map(c), x.rank(), x.inputs.size()) == c);
  c.mma.cluster_n = 2;  // clusters are other kernels too, and written to parameter files
  CHECK(tuning::kernel_key(c) != key);
  CHECK(lower::to_map(c).at("mma_cluster_n") == 2);
  CHECK(lower::from_map(lower::to_map(c), x.rank(), x.inputs.size()) == c);
  CHECK_NOTHROW(lower::check(c, x, {96, 104, 80}, lim));
  c.mma.cluster_m = 2;  // one direction at a time, and only persistent
  CHECK_THROWS_WITH_AS(lower::check(c, x, {96, 104, 80}, lim),
                       doctest::Contains("parameter mma_cluster_m"), error);
  c.mma.cluster_m = 1, c.mma.persistent = 0;
  CHECK_THROWS_WITH_AS(lower::check(c, x, {96, 104, 80}, lim),
                       doctest::Contains("parameter mma_cluster_n"), error);
  c.mma.cluster_n = 1;
  CHECK(lower::to_map(c).count("mma_cluster_n") == 0);
  CHECK(lower::from_map(lower::to_map(c), x.rank(), x.inputs.size()) == c);
}

// --- the staged epilogue (mma_stage_out) ----------------------------------------------------

TEST_CASE(
    "staged epilogue (mma_stage_out): every MMA case staged, mma.sync and wgmma, some split-K, "
    "NVRTC compiles it for sm_90 and the CPU simulation of the staged copy computes the "
    "contraction; it is refused exactly where an output is not contiguous along N") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  int staged = 0, refused = 0, split = 0;
  test::for_each_mma_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    auto d = test::make_case_data(op, sizes, 37);
    const std::int64_t L = tuning::reduction_length(x, sizes);
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 4);
    for (int on : {1, 2})
      for (int k = 0; k < 2; ++k) {
        lower::config c = on == 1 ? lower::random_mma_config(x, sizes, lim, rng)
                                  : lower::random_wgmma_config(x, sizes, lim, rng);
        c.mma.stage_out = 0;
        if (k == 1) {  // one instruction's K per step, split over 2 blocks where that passes
          c.mma.tile_k = lower::mma_instruction_k(*lower::mma_supported(x).instruction);
          c.mma.split = 2;
          if (!error_of([&] { lower::check(c, x, sizes, lim); }).empty()) c.mma.split = 1;
        }
        const lower::kernel_plan plain = lower::lower(x, sizes, c, lim);
        CHECK(!plain.mma.stage_out);
        CHECK(plain.mma.staged.empty());
        CHECK(!has(cuda::emit(plain), "mdh_stage"));
        // where it applies: every write steps 1 along N's innermost dimension, a fused N axis
        // row-major in memory
        bool applies = true;
        for (auto& w : plain.mma.writes) {
          applies = applies && w.coeff[plain.mma.n_dim] == 1;
          for (std::size_t j = 0; j + 1 < plain.mma.n_dims.size(); ++j)
            applies = applies && w.coeff[plain.mma.n_dims[j]] == w.coeff[plain.mma.n_dims[j + 1]] *
                                                                     sizes[plain.mma.n_dims[j + 1]];
        }
        c.mma.stage_out = 1;
        lower::kernel_plan plan;
        const std::string e = error_of([&] { plan = lower::lower(x, sizes, c, lim); });
        CHECK(e.empty() == applies);
        if (!e.empty()) {
          CHECK(has(e, "(parameter mma_stage_out)"));
          CHECK((has(e, "along N's innermost dimension") ||
                 has(e, "the fused N axis is not row-major in memory")));
          ++refused;
          continue;
        }
        INFO(lower::to_string(plan));
        REQUIRE(plan.mma.stage_out);
        REQUIRE(plan.mma.staged.size() == 1);
        const lower::mma_stage& st = plan.mma.staged[0];
        CHECK(st.pitch == plan.mma.block_n + st.vector);
        CHECK(st.vector * std::int64_t(size_of(st.type)) == 16);
        CHECK(st.chunks_per_row == plan.mma.block_n / st.vector + (st.shifted ? 1 : 0));
        CHECK(plan.shared_bytes >= st.bytes);
        CHECK(has(lower::to_string(plan), "staged epilogue: output 0"));
        const std::string src = cuda::emit(plan);
        CHECK(has(src, "the staged epilogue: results -> shared tiles -> 16-byte stores"));
        CHECK(has(src, "*(uint4*)("));
        if (plan.mma.persistent)  // own tiles: the computing warpgroups' named barrier
          CHECK(has(src, "bar.sync 1, "));
        else  // the pipeline's tiles reused
          CHECK(has(src, "cp.async.wait_group 0;"));
        auto m = cuda::compile(plan, "sm_90", cache);
        CHECK(!m->cubin.empty());
        CHECK(!has(m->log, "wgmma.mma_async instructions are serialized"));
        auto msg = simulated_mismatch(plan, d, L);
        CHECK_MESSAGE(msg.empty(), msg);
        ++staged;
        split += plan.mma.split > 1;
      }
  });
  MESSAGE(staged, " staged plans compiled and simulated (", split, " split-K), ", refused,
          " refused");
  CHECK(staged + refused == 112);
  CHECK(staged >= 40);
  CHECK(split >= 20);
  CHECK(refused >= 36);  // matmul_t (C written transposed) and the NCHW outputs at least
}

TEST_CASE(
    "staged epilogue: odd, aligned, even and f32-output matmuls stage rows shifted to the "
    "output's 16-byte phase (or not), and the simulation checks every store") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  auto check = [&](const auto& op, const std::vector<std::int64_t>& s, int on, std::int64_t split,
                   bool shifted, bool pair, std::int64_t vector) {
    const auto& x = op.ir();
    INFO(x.name, " ", s[0], "x", s[1], "x", s[2], " mma=", on, " split=", split);
    auto c = lower::default_config(x, s);
    const std::int64_t r = std::int64_t(x.rank());  // M, N, K the last three dimensions
    const bool tf32 = vector == 4 && x.inputs[0].type == scalar_type::f32;
    c.mma.on = on, c.mma.m = r - 3, c.mma.n = r - 2, c.mma.k = r - 1;
    c.mma.swizzle = on == 1 && tf32 ? 0 : 1;
    c.mma.warps_m = 2, c.mma.warps_n = on == 1 ? 2 : 1, c.mma.tile_m = 64;
    c.mma.tile_n = on == 1 ? 64 : 128, c.mma.tile_k = 32, c.mma.stages = 3;
    c.mma.split = split, c.mma.stage_out = 1;
    auto plan = lower::lower(x, s, c, lim);
    INFO(lower::to_string(plan));
    REQUIRE(plan.mma.staged.size() == 1);
    const lower::mma_stage& st = plan.mma.staged[0];
    CHECK(st.shifted == shifted);
    CHECK(st.pair == pair);
    CHECK(st.vector == vector);
    CHECK(st.chunks_per_row == 128 / vector + (shifted ? 1 : 0));
    CHECK(st.copies_per_thread == lower::ceil_div(128 * st.chunks_per_row, plan.threads));
    CHECK(has(lower::to_string(plan), shifted ? "rows shifted" : "rows aligned"));
    CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
    auto d = test::make_case_data(op, s, 7);
    const std::int64_t L = s.back();
    auto msg = simulated_mismatch(plan, d, L);
    CHECK_MESSAGE(msg.empty(), msg);
    // a tile whose rows were not shifted would store 16 bytes off the output's 16-byte grid
    if (shifted) {
      auto bad = plan;
      bad.mma.staged[0].shifted = false;
      bad.mma.staged[0].chunks_per_row -= 1;
      CHECK(has(error_of([&] { simulated_mismatch(bad, d, L); }), "not 16-byte aligned"));
    }
    return plan;
  };
  for (int on : {1, 2}) {
    // N odd: every row in another phase, 2-byte columns one at a time into the tile
    check(ops::matmul<bf16>(), {4095, 4097, 33}, on, 1, true, false, 8);
    check(ops::matmul<bf16>(), {997, 1009, 769}, on, 3, true, false, 8);
    // N even: shifted by an even number of columns, staged in pairs
    check(ops::matmul<f16>(), {130, 1010, 64}, on, 1, true, true, 8);
    // N a multiple of 8: rows aligned, no extra chunk
    check(ops::matmul<bf16>(), {256, 256, 64}, on, 2, false, true, 8);
    // f32 output: chunks of 4
    check(test::matmul_bf16_to_f32(), {97, 101, 77}, on, 1, true, false, 4);
    check(ops::matmul<float>().with_precision(ir::precision::tf32), {64, 96, 40}, on, 1, false,
          true, 4);
  }
  // a batched product: grid.z over the batch dimensions, each row's offset with them
  check(ops::batch_matmul<bf16, false, true>(), {2, 3, 33, 41, 72}, 1, 1, true, false, 8);
  check(ops::batch_matmul<bf16, false, true>(), {2, 3, 33, 41, 72}, 2, 3, true, false, 8);
}

TEST_CASE("staged epilogue: point-wise epilogues stage their outputs, and NVRTC compiles them") {
  auto lim = lower::h100_limits();
  cuda::module_cache cache("");
  int total = 0;
  test::for_each_mma_epilogue_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 5);
    for (int on : {1, 2}) {
      auto c = on == 1 ? lower::random_mma_config(x, sizes, lim, rng)
                       : lower::random_wgmma_config(x, sizes, lim, rng);
      c.mma.stage_out = 1;
      auto plan = lower::lower(x, sizes, c, lim);
      INFO(lower::to_string(plan));
      REQUIRE(plan.mma.stage_out);
      CHECK(plan.mma.staged.size() == x.epilogue->outputs.size());
      const std::string src = cuda::emit(plan);
      CHECK(has(src, "mdh_epilogue("));
      CHECK(has(src, "mdh_st0["));
      CHECK(has(src, "*(uint4*)("));
      CHECK(!cuda::compile(plan, "sm_90", cache)->cubin.empty());
      ++total;
    }
  });
  CHECK(total == 8);
}

TEST_CASE("staged epilogue: the parameter's rules, names, space, starts and refusals") {
  auto lim = lower::h100_limits();
  auto bf = ops::matmul<bf16>().ir();
  const std::vector<std::int64_t> s{4095, 4097, 33};
  // off: absent from the map (files, sources and kernel names as before); on: written, read back
  auto c = tuning::start_configurations(bf, s, lim).front();
  REQUIRE(c.mma.on == 1);
  CHECK(c.mma.stage_out == 0);
  CHECK(!lower::to_map(c).count("mma_stage_out"));
  const std::string key = tuning::kernel_key(c);
  c.mma.stage_out = 1;
  CHECK(lower::to_map(c).at("mma_stage_out") == 1);
  CHECK(lower::from_map(lower::to_map(c), 3, 2) == c);
  CHECK(lower::config_from_json(nlohmann::json(c), bf) == c);
  CHECK(tuning::kernel_key(c) != key);
  // with mma = 0 it stays 0, and it is 0 or 1
  auto off = lower::default_config(bf, s);
  off.mma.stage_out = 1;
  CHECK(has(error_of([&] { lower::check(off, bf, s, lim); }), "(parameter mma_stage_out)"));
  c.mma.stage_out = 2;
  CHECK(has(error_of([&] { lower::check(c, bf, s, lim); }), "mma_stage_out in {0"));
  c.mma.stage_out = 1;
  // a transposed output (matmul_t: C(j, i)) has no contiguous rows along N: refused, saying why
  auto t = ops::matmul_t<bf16>().ir();
  auto tc = lower::default_config(t, {64, 64, 64});
  tc.mma = c.mma;
  CHECK_THROWS_WITH_AS(lower::check(tc, t, {64, 64, 64}, lim),
                       doctest::Contains("(parameter mma_stage_out): output 'C' access 0 steps 64 "
                                         "elements along N's innermost dimension 'j'"),
                       error);
  // staged tiles past the shared memory: a 128x128 f32 tile (67584 bytes) on a device of 64 KB,
  // where the pipeline's 48 KB fit
  auto f = test::matmul_bf16_to_f32().ir();
  auto small = lim;
  small.shared_per_block_optin = 65536;
  auto big = lower::default_config(f, {1024, 1024, 64});
  big.mma = c.mma;
  big.mma.stage_out = 0;
  CHECK_NOTHROW(lower::check(big, f, {1024, 1024, 64}, small));
  big.mma.stage_out = 1;
  CHECK_THROWS_WITH_AS(lower::check(big, f, {1024, 1024, 64}, small),
                       doctest::Contains("the staged output tiles fit shared memory (<= 65536 "
                                         "bytes)' (parameter mma_stage_out): 67584 bytes"),
                       error);
  // the space: {0, 1} where it has the tensor-core parameters, absent elsewhere
  auto values = [](const std::vector<atf::tp>& ps, const std::string& n) {
    for (auto& p : ps)
      if (p.name() == n) return p.values().size();
    return std::size_t(0);
  };
  CHECK(values(tuning::make_parameters(bf, s, lim), "mma_stage_out") == 2);
  CHECK(values(tuning::make_parameters(ops::matmul<float>().ir(), s, lim), "mma_stage_out") == 0);
  // the starts: where the output outweighs the K steps, the first start of each kind staged,
  // after the others; points of the space, to_config gives them back
  auto starts = tuning::start_configurations(bf, s, lim);
  auto space = tuning::make_search_space(bf, s, lim);
  int staged_starts = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i].mma.stage_out == 0) continue;
    ++staged_starts;
    CHECK(starts[i].mma.split == 1);
    CHECK(i > 0);
    CHECK(starts[i - 1].mma.on != 0);  // after the unstaged tensor-core starts
    auto a = tuning::to_space_configuration(starts[i], bf, s, lim);
    REQUIRE(space.find(a).has_value());
    CHECK(tuning::to_config(a, bf, s) == starts[i]);
  }
  CHECK(staged_starts == 2);  // mma = 1 and 2 (sm_90)
  auto first = starts.front();
  first.mma.stage_out = 1;
  CHECK(std::find(starts.begin(), starts.end(), first) != starts.end());
  // a K-heavy product keeps the starts of before
  for (auto& x : tuning::start_configurations(bf, {2048, 3072, 768}, lim))
    CHECK(x.mma.stage_out == 0);
}
