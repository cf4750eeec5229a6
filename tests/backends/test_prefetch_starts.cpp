// SPDX-License-Identifier: MIT
// The template's register prefetch, vectorised tile copies and unrolled reduction steps, and the
// tuner's start configurations (tuning/start_configurations.hpp):
//   - every start configuration of the benchmark cases passes check(), lies in the search space,
//     round-trips through to_space_configuration / to_config and emits CUDA (headers only);
//   - the generated source has the intended shape for explicit configurations (prefetch,
//     guarded copy slots, vector copies and stores, unrolled or rolled rm steps);
//   - start and explicit configurations of small products, convolutions and a column reduction
//     match mdh::reference on OpenCL (PoCL); skipped with a message without an OpenCL device;
//   - a parameter map written before `prefetch` existed still loads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <backends/cuda/emit.hpp>
#include <backends/opencl/emit.hpp>
#include <expressions/benchmark_cases.hpp>
#include <expressions/catalog.hpp>
#include <mdh/lower/lower.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>

#include "expression_cases.hpp"
#include "naive_reference.hpp"

#ifdef MDH_WITH_OPENCL
#include <backends/opencl/runtime.hpp>

#include "opencl_check.hpp"
#endif

using namespace mdh;

namespace {

using sizes_t = std::vector<std::int64_t>;

bool has_scan(const ir::computation& c) {
  for (auto& d : c.dims)
    if (d.combine == ir::combine_kind::prefix_sum) return true;
  return false;
}

bool caches_some_input(const lower::config& c) {
  for (auto& i : c.inputs)
    if (i.cache == lower::cache_kind::shared) return true;
  return false;
}

// blk_combine = atomic although no reduction dimension is split over blocks: the same kernel as
// with blk_combine = second kernel, one wasted evaluation (and outside the space for operators
// without atomics).
bool unsplit_atomic(const lower::config& c, const ir::computation& comp) {
  if (c.blk_combine != lower::block_combine::atomic) return false;
  for (std::size_t d = 0; d < comp.rank(); ++d)
    if (comp.is_reduction(d) && c.dims[d].blk > 1) return false;
  return true;
}

// The properties every start configuration must have; returns how many were checked.
// Calls f(c) with the computation, or with each stage of a fused pair (mdh::fuse).
template <class Op, class F>
void for_each_stage(const Op& op, F&& f) {
  if constexpr (is_fused_v<Op>) {
    f(op.ir().first);
    f(op.ir().second);
  } else {
    f(mdh::describe(op));
  }
}

int check_starts(std::string_view name, const ir::computation& c, const sizes_t& sizes,
                 const lower::device_limits& lim) {
  INFO(name, " on ", lim.name);
  auto starts = tuning::start_configurations(c, sizes, lim);
  auto space = tuning::make_search_space(c, sizes, lim);
  for (auto& s : starts) {
    INFO("start configuration: ", lower::to_string(s));
    CHECK_NOTHROW(lower::check(s, c, sizes, lim));
    const atf::configuration a = tuning::to_space_configuration(s, c, sizes);
    CHECK(tuning::to_config(a, c, sizes) == s);
    CHECK_FALSE(unsplit_atomic(s, c));
    CHECK_MESSAGE(space.find(a).has_value(), "not in the search space: ", a.to_string());
    const std::string src = cuda::emit(lower::lower(c, sizes, s, lim));
    CHECK(src.find("__global__") != std::string::npos);
    if (s.prefetch) CHECK(src.find("the next tile into registers") != std::string::npos);
  }
  return int(starts.size());
}

// The line after the first line containing `marker` (leading blanks removed), or "".
std::string line_after(const std::string& src, const std::string& marker) {
  auto p = src.find(marker);
  if (p == std::string::npos) return "";
  p = src.find('\n', p);
  if (p == std::string::npos) return "";
  auto e = src.find('\n', p + 1);
  std::string l = src.substr(p + 1, e == std::string::npos ? std::string::npos : e - p - 1);
  return l.substr(std::min(l.find_first_not_of(' '), l.size()));
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// A configuration with every dimension walked by one thread in one tile (then edited).
lower::config plain(const ir::computation& c, const sizes_t& sizes) {
  lower::config cfg;
  cfg.dims.resize(c.rank());
  cfg.inputs.resize(c.inputs.size());
  for (std::size_t d = 0; d < c.rank(); ++d) cfg.dims[d].t_sm = sizes[d];
  return cfg;
}
void set_dim(lower::config& cfg, std::size_t d, std::int64_t blk, std::int64_t thr,
             std::int64_t t_rm, std::int64_t t_sm, int thr_map = 0) {
  auto& x = cfg.dims[d];
  x.blk = blk, x.thr = thr, x.t_rm = t_rm, x.t_sm = t_sm, x.thr_map = thr_map;
}
void cache(lower::config& cfg, std::size_t b, bool transpose, std::int64_t pad) {
  cfg.inputs[b] = {lower::cache_kind::shared, transpose, pad};
}

// An explicit configuration, what its source must show, and the workload it runs on.
struct explicit_case {
  std::string what;
  std::string op;  // "matmul", "conv2d", "mcc", "bias_add_grad"
  sizes_t sizes;
  lower::config cfg;
  std::vector<std::string> expect;  // substrings of the OpenCL source
};

// matmul (i, j, k): A(i, k) input 0, B(k, j) input 1. conv2d (p, q, r, s): I(p+r, q+s), F(r, s).
// mcc (n, p, q, k, r, s, c): I(n, p+r, q+s, c), F(k, r, s, c). bias_add_grad (i, j): IB1(i, j).
std::vector<explicit_case> explicit_cases() {
  std::vector<explicit_case> v;
  const ir::computation mm = mdh::describe(ops::matmul());
  {
    // A stored k-major (transposed, pad 1), 128-element tiles over 64 threads: 2 slots each;
    // 4 sm tiles of k, each 2 rm steps of 4 (unrolled).
    sizes_t s{37, 45, 29};
    auto c = plain(mm, s);
    set_dim(c, 0, 1, 8, 2, 16, 1), set_dim(c, 1, 1, 8, 2, 16, 0), set_dim(c, 2, 1, 1, 4, 8);
    cache(c, 0, true, 1), cache(c, 1, false, 0);
    c.prefetch = true;
    v.push_back({"prefetch, transposed cached input",
                 "matmul",
                 s,
                 c,
                 {"float pf0[2];", "float pf1[2];", "if (st + 1 < 4)",
                  "in0_s[((f / 8)) * 1 + (f % 8) * 17]"}});
  }
  {
    // Tiles of 24x5 = 120 and 5x16 = 80 elements over 64 threads: the second slot is guarded.
    sizes_t s{37, 45, 29};
    auto c = plain(mm, s);
    set_dim(c, 0, 2, 8, 3, 24, 1), set_dim(c, 1, 1, 8, 2, 16, 0), set_dim(c, 2, 1, 1, 1, 5);
    cache(c, 0, false, 0), cache(c, 1, false, 1);
    c.prefetch = true;
    v.push_back({"prefetch, guarded copy slots",
                 "matmul",
                 s,
                 c,
                 {"float pf0[2];", "if (f < 120) {", "f < 80 ? (", "if (st + 1 < 6)"}});
  }
  {
    // Both tiles copied as float4 and stored as float4 (pad 4 keeps rows 16-byte aligned).
    sizes_t s{64, 64, 64};
    auto c = plain(mm, s);
    set_dim(c, 0, 2, 8, 4, 32, 1), set_dim(c, 1, 1, 16, 4, 64, 0), set_dim(c, 2, 1, 1, 4, 16);
    cache(c, 0, false, 4), cache(c, 1, false, 4);
    c.vec = 4;
    v.push_back({"vector copies with pad 4",
                 "matmul",
                 s,
                 c,
                 {"4-element vectors", "*(__local float4*)&in0_s[", "*(__local float4*)&in1_s[",
                  "vload4(0, &in0["}});
    c.prefetch = true;
    v.push_back(
        {"vector copies with pad 4, prefetched",
         "matmul",
         s,
         c,
         {"float4 pf0[1];", "float4 pf1[2];", "*(__local float4*)&in1_s[", "if (st + 1 < 4)"}});
  }
  {
    // float4 loads into registers, 48 and 96 vectors over 64 threads (guarded), A transposed
    // (stored element by element), 6 sm tiles of 12 over k = 64 (the last one partial).
    sizes_t s{64, 64, 64};
    auto c = plain(mm, s);
    set_dim(c, 0, 4, 8, 2, 16, 1), set_dim(c, 1, 2, 8, 4, 32, 0), set_dim(c, 2, 1, 1, 4, 12);
    cache(c, 0, true, 4), cache(c, 1, false, 0);
    c.vec = 4, c.prefetch = true;
    v.push_back({"vector prefetch, guarded slots, transposed tile",
                 "matmul",
                 s,
                 c,
                 {"float4 pf0[1];", "float4 pf1[2];", "if (f < 48) {", "f < 96 ? (", "pf0[c].w;",
                  "if (st + 1 < 6)"}});
  }
  {
    // 8x8 register tile, 64 rm steps of k in one tile: 4096 unrolled bodies, so the step loop
    // stays rolled (the register loops inside are still unrolled).
    sizes_t s{16, 16, 64};
    auto c = plain(mm, s);
    set_dim(c, 0, 1, 2, 8, 16, 1), set_dim(c, 1, 1, 2, 8, 16, 0), set_dim(c, 2, 1, 1, 1, 64);
    v.push_back({"rm steps not unrolled (large body)",
                 "matmul",
                 s,
                 c,
                 {"for (int st = 0; st < 1; ++st)", "for (int q2 = 0; q2 < 64; ++q2) {"}});
  }
  {
    // Two reduction dimensions, each in 2 sm tiles: 4 tiles in the linear loop st.
    const ir::computation cv = mdh::describe(ops::conv2d());
    sizes_t s{9, 10, 3, 3};
    auto c = plain(cv, s);
    set_dim(c, 0, 1, 4, 3, 12, 1), set_dim(c, 1, 1, 8, 2, 16, 0);
    set_dim(c, 2, 1, 1, 1, 2), set_dim(c, 3, 1, 1, 2, 2);
    cache(c, 0, false, 1), cache(c, 1, false, 0);
    c.prefetch = true;
    v.push_back({"prefetch over two reduction dimensions (conv2d)",
                 "conv2d",
                 s,
                 c,
                 {"for (int st = 0; st < 4; ++st)", "const int s2 = (st) / 2;",
                  "const int s3 = (st) % 2;", "const int sn2 = (st + 1) / 2;", "if (st + 1 < 4)"}});
  }
  {
    // mcc: r in 2 tiles, s whole, c in 2 tiles of 4 (2 rm steps of 2): 4 tiles; F transposed.
    const ir::computation mc = mdh::describe(ops::mcc());
    sizes_t s{1, 4, 5, 8, 3, 3, 6};
    auto c = plain(mc, s);
    set_dim(c, 0, 1, 1, 1, 1), set_dim(c, 1, 2, 2, 1, 2, 1), set_dim(c, 2, 1, 4, 2, 8, 1);
    set_dim(c, 3, 1, 8, 1, 8, 0);
    set_dim(c, 4, 1, 1, 1, 2), set_dim(c, 5, 1, 1, 3, 3), set_dim(c, 6, 1, 1, 2, 4);
    cache(c, 0, false, 0), cache(c, 1, true, 1);
    c.prefetch = true;
    v.push_back({"prefetch over two split reduction dimensions (mcc)",
                 "mcc",
                 s,
                 c,
                 {"for (int st = 0; st < 4; ++st)", "const int s5 = 0;", "if (st + 1 < 4)"}});
  }
  {
    // Column reduction: 4 threads on i combine, 5 sm tiles of 8 rows (the last partial), the
    // 8x64 tile as 128 float4 over 64 threads, rows padded by 4; and the same split over blocks.
    const ir::computation bg = mdh::describe(ops::bias_add_grad());
    sizes_t s{37, 64};
    auto c = plain(bg, s);
    set_dim(c, 0, 1, 4, 1, 8, 1), set_dim(c, 1, 1, 16, 4, 64, 0);
    cache(c, 0, false, 4);
    c.vec = 4, c.prefetch = true;
    v.push_back({"prefetch of a column reduction with float4 copies",
                 "bias_add_grad",
                 s,
                 c,
                 {"float4 pf0[2];", "*(__local float4*)&in0_s[", "if (st + 1 < 5)"}});
    set_dim(c, 0, 2, 4, 1, 8, 1);
    c.blk_combine = lower::block_combine::second_kernel;
    v.push_back({"prefetch of a column reduction split over blocks",
                 "bias_add_grad",
                 s,
                 c,
                 {"float4 pf0[2];", "if (st + 1 < 3)"}});
  }
  // Every prefetching case again with two shared-memory buffers per tile (prefetch = 2).
  const std::size_t n = v.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (v[k].cfg.prefetch != 1) continue;
    explicit_case d = v[k];
    d.what += ", two buffers";
    d.cfg.prefetch = 2;
    d.expect = {"_b + (st & 1) * ", "_n = ", "if (st + 2 < "};
    v.push_back(d);
  }
  return v;
}

// vec_pw: an explicit configuration, the substrings its OpenCL source must and must not contain.
struct vec_pw_case {
  std::string what;
  std::string op;
  sizes_t sizes;
  lower::config cfg;
  std::vector<std::string> expect, absent;
};

// dot (k): A(k) input 0, B(k) input 1. matvec (i, k): M(i, k), v(k). softmax_stats and
// layernorm_stats (r, c): X(r, c). batch_matmul_nt (b1, b2, i, j, k): A(.., i, k), B(.., j, k).
// Sizes divisible by the vector and not (partial groups, unaligned rows or chunks).
std::vector<vec_pw_case> vec_pw_cases() {
  std::vector<vec_pw_case> v;
  auto with = [](lower::config c, std::int64_t vec_pw) {
    c.vec_pw = vec_pw;
    return c;
  };
  const ir::computation dot = mdh::describe(ops::dot());
  {
    sizes_t s{1024};
    auto c = plain(dot, s);
    set_dim(c, 0, 1, 64, 4, 1024);
    v.push_back({"dot 1024, one float4 per thread and step",
                 "dot",
                 s,
                 with(c, 4),
                 {"const float4 wp0 = (pvg) ? vload4(0, &in0[peg]) : (float4)(0.0f);",
                  "const float4 wp1 = (pvg) ? vload4(0, &in1[peg]) : (float4)(0.0f);",
                  "const float x0 = pvg ? ((const float*)&wp0)[prl] : in0[e0];"},
                 {}});
  }
  {
    sizes_t s{1000};
    auto c = plain(dot, s);
    set_dim(c, 0, 1, 64, 8, 1000);  // 2 rm steps of 512, the second partial
    v.push_back({"dot 1000, two float4 per thread",
                 "dot",
                 s,
                 with(c, 4),
                 {"for (int prg = 0; prg < 8; prg += 4) {", "vload4(0, &in0[peg])"},
                 {}});
    set_dim(c, 0, 2, 16, 4, 128);  // chunks of 500 in 4 sm tiles
    c.blk_combine = lower::block_combine::atomic;
    v.push_back({"dot 1000 over 2 blocks, atomics",
                 "dot",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[peg])", "mdh_atomic_combine0("},
                 {}});
    set_dim(c, 0, 3, 16, 4, 128);  // chunks of 334: groups not aligned, scalar loads
    c.blk_combine = lower::block_combine::second_kernel;
    v.push_back({"dot 1000 over 3 blocks, unaligned chunks",
                 "dot",
                 s,
                 with(c, 4),
                 {"for (int r0 = 0; r0 < 4; ++r0) {"},
                 {"wp0"}});
  }
  {
    sizes_t s{129};
    auto c = plain(dot, s);
    set_dim(c, 0, 1, 8, 4, 129);  // the group 128..131 is partial: scalar loads
    v.push_back(
        {"dot 129, partial last group", "dot", s, with(c, 4), {"vload4(0, &in0[peg])"}, {}});
    v.push_back({"dot 129, float2", "dot", s, with(c, 2), {"vload2(0, &in1[peg])"}, {}});
  }
  const ir::computation mv = mdh::describe(ops::matvec());
  {
    sizes_t s{37, 1000};
    auto c = plain(mv, s);
    set_dim(c, 0, 5, 4, 2, 8, 1), set_dim(c, 1, 1, 16, 8, 1000, 0);
    v.push_back({"matvec 37x1000, M and v as float4",
                 "matvec",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[1000 * e0 + peg])", "vload4(0, &in1[peg])"},
                 {}});
    set_dim(c, 0, 10, 4, 1, 4, 1), set_dim(c, 1, 1, 16, 4, 256, 0);
    cache(c, 1, false, 0);
    c.prefetch = 1;
    v.push_back({"matvec 37x1000, v cached and prefetched",
                 "matvec",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[1000 * e0 + peg])", "if (st + 1 < 4)"},
                 {"vload4(0, &in1[peg])"}});
    c.prefetch = 2;
    v.push_back({"matvec 37x1000, v cached, two buffers",
                 "matvec",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[1000 * e0 + peg])", "if (st + 2 < 4)"},
                 {}});
  }
  {
    sizes_t s{13, 129};  // rows of 129: M stays scalar; vec 2 stores along i
    auto c = plain(mv, s);
    set_dim(c, 0, 4, 2, 2, 4, 1), set_dim(c, 1, 1, 8, 4, 129, 0);
    c.vec = 2;
    v.push_back({"matvec 13x129 with vec 2",
                 "matvec",
                 s,
                 with(c, 4),
                 {"vload4(0, &in1[peg])", "vstore2("},
                 {"vload4(0, &in0["}});
  }
  const ir::computation sm = mdh::describe(ops::softmax_stats());
  {
    sizes_t s{7, 128};
    auto c = plain(sm, s);
    set_dim(c, 0, 2, 4, 1, 4, 1), set_dim(c, 1, 2, 8, 4, 32, 0);
    v.push_back({"softmax_stats 7x128 over 2 blocks (second kernel)",
                 "softmax_stats",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[128 * e0 + peg])"},
                 {}});
    sizes_t s2{5, 130};
    auto c2 = plain(sm, s2);
    set_dim(c2, 0, 1, 5, 1, 5, 1), set_dim(c2, 1, 1, 8, 2, 130, 0);
    v.push_back({"softmax_stats 5x130, float2",
                 "softmax_stats",
                 s2,
                 with(c2, 2),
                 {"vload2(0, &in0[130 * e0 + peg])"},
                 {}});
    sizes_t s3{5, 129};
    auto c3 = plain(sm, s3);
    set_dim(c3, 0, 1, 5, 1, 5, 1), set_dim(c3, 1, 1, 8, 4, 129, 0);
    v.push_back(
        {"softmax_stats 5x129, rows unaligned", "softmax_stats", s3, with(c3, 4), {}, {"wp0"}});
  }
  const ir::computation ln = mdh::describe(ops::layernorm_stats());
  {
    sizes_t s{6, 1000};
    auto c = plain(ln, s);
    set_dim(c, 0, 1, 2, 3, 6, 1), set_dim(c, 1, 2, 32, 8, 256, 0);
    c.blk_combine = lower::block_combine::atomic;
    v.push_back({"layernorm_stats 6x1000 over 2 blocks, atomics",
                 "layernorm_stats",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[1000 * e0 + peg])", "mdh_atomic_combine1("},
                 {}});
    sizes_t s2{6, 129};
    auto c2 = plain(ln, s2);
    set_dim(c2, 0, 1, 2, 3, 6, 1), set_dim(c2, 1, 1, 32, 4, 129, 0);
    v.push_back({"layernorm_stats 6x129", "layernorm_stats", s2, with(c2, 4), {}, {}});
  }
  const ir::computation mm = mdh::describe(ops::matmul());
  {
    // vec along j (B, C) and vec_pw along k (A) at once: the k group outside the j group
    sizes_t s{16, 32, 64};
    auto c = plain(mm, s);
    set_dim(c, 0, 2, 4, 2, 8, 1), set_dim(c, 1, 1, 8, 4, 32, 0), set_dim(c, 2, 1, 1, 4, 16);
    c.vec = 4;
    v.push_back({"matmul 16x32x64, vec 4 and vec_pw 4",
                 "matmul",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[64 * e0 + peg])", "vload4(0, &in1[eg + 32 * e2])", "vstore4("},
                 {}});
  }
  {
    sizes_t s{17, 19, 132};
    auto c = plain(mm, s);
    set_dim(c, 0, 3, 2, 3, 6, 1), set_dim(c, 1, 2, 4, 2, 8, 0), set_dim(c, 2, 1, 1, 8, 32);
    cache(c, 1, false, 0);
    c.prefetch = 1;
    v.push_back({"matmul 17x19x132, B cached and prefetched",
                 "matmul",
                 s,
                 with(c, 4),
                 {"vload4(0, &in0[132 * e0 + peg])", "float pf1["},
                 {}});
  }
  {
    sizes_t s{17, 19, 129};
    auto c = plain(mm, s);
    set_dim(c, 0, 3, 2, 3, 6, 1), set_dim(c, 1, 2, 4, 2, 8, 0), set_dim(c, 2, 2, 2, 4, 32);
    c.blk_combine = lower::block_combine::atomic;
    v.push_back({"matmul 17x19x129 over 2 blocks along k", "matmul", s, with(c, 4), {}, {"wp0"}});
  }
  {
    // B(b1, b2, j, k) depends on j: the k group innermost, both operands as float4
    const ir::computation nt = mdh::describe(ops::batch_matmul<float, false, true>());
    sizes_t s{2, 2, 16, 24, 20};
    auto c = plain(nt, s);
    set_dim(c, 2, 2, 4, 2, 8, 1), set_dim(c, 3, 1, 6, 4, 24, 0), set_dim(c, 4, 1, 1, 4, 20);
    c.vec = 4;
    v.push_back({"batch_matmul_nt, vec 4 and vec_pw 4",
                 "batch_matmul_nt",
                 s,
                 with(c, 4),
                 {"20 * e2 + peg])", "20 * e3 + peg])"},
                 {}});
  }
  return v;
}

template <class Visit>
void with_operator(const std::string& name, Visit&& visit) {
  if (name == "matmul") return visit(ops::matmul());
  if (name == "conv2d") return visit(ops::conv2d());
  if (name == "mcc") return visit(ops::mcc());
  if (name == "bias_add_grad") return visit(ops::bias_add_grad());
  if (name == "batch_matmul") return visit(ops::batch_matmul<float>());
  if (name == "batch_matmul_nt") return visit(ops::batch_matmul<float, false, true>());
  if (name == "dot") return visit(ops::dot());
  if (name == "matvec") return visit(ops::matvec());
  if (name == "softmax_stats") return visit(ops::softmax_stats());
  if (name == "layernorm_stats") return visit(ops::layernorm_stats());
  FAIL("unknown operator ", name);
}

#ifdef MDH_WITH_OPENCL
// The shared OpenCL context, or nullptr with the reason (no platform or device) in `why`.
opencl::context* shared_context(std::string& why) {
  static std::string error;
  static std::unique_ptr<opencl::context> ctx = []() -> std::unique_ptr<opencl::context> {
    try {
      return std::make_unique<opencl::context>();
    } catch (const std::exception& e) {
      error = e.what();
      return nullptr;
    }
  }();
  why = error;
  return ctx.get();
}

// The shared OpenCL context; nullptr, said as a skip, where there is none.
opencl::context* context_or_skip() {
  std::string why;
  opencl::context* ctx = shared_context(why);
  if (!ctx) MESSAGE("SKIPPED: no OpenCL device: ", why);
  return ctx;
}

// The device's limits as a GPU's (cpu = false): the GPU-shaped starts (prefetch, shared tiles)
// run on PoCL too; the CPU's own starts have a test of their own.
lower::device_limits cl_limits(opencl::context& ctx) {
  auto lim = ctx.limits();
  lim.name = "pocl-cpu";  // as the other OpenCL tests: the kernel names do not depend on it
  lim.cpu = false;
  return lim;
}

using test::run_configs;
#endif

// At most n of v, evenly spaced (first and last included).
std::vector<lower::config> spread(const std::vector<lower::config>& v, std::size_t n) {
  if (v.size() <= n) return v;
  std::vector<lower::config> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(v[k * (v.size() - 1) / (n - 1)]);
  return out;
}

}  // namespace

TEST_CASE("start configurations of every benchmark case: valid, in the space, round trip, emit") {
  const auto lim = lower::h200_limits();
  int total = 0, cases = 0;
  ops::for_each_benchmark_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    INFO(name);
    if constexpr (is_fused_v<std::decay_t<decltype(op)>>) {
      // a pair's starts: valid, in its space, round trip
      auto space = tuning::make_search_space(op.ir(), sizes, lim);
      auto starts = tuning::start_configurations(op.ir(), sizes, lim);
      CHECK(starts.size() >= 4);
      for (auto& st : starts) {
        INFO(lower::to_string(st));
        CHECK_NOTHROW(lower::check(st, op.ir(), sizes, lim));
        auto a = tuning::to_space_configuration(st, op.ir(), sizes);
        CHECK(space.contains(a));
        CHECK(tuning::to_config(a, op.ir(), sizes) == st);
      }
      total += int(starts.size());
      ++cases;
    } else {
      const ir::computation& c = mdh::describe(op);
      auto starts = tuning::start_configurations(c, sizes, lim);
      if (!has_scan(c)) CHECK_MESSAGE(!starts.empty(), "no start configuration");
      const bool product = name.starts_with("matmul") || name.starts_with("bmm");
      if (product) {
        bool staged = false;
        for (auto& s : starts) staged = staged || (s.prefetch && caches_some_input(s));
        CHECK_MESSAGE(staged, "a product without a prefetching start configuration");
      }
      if (name.starts_with("mcc") || name.starts_with("conv")) {
        // the weights w[k][r][s][c] also with the output channels innermost (transpose 2)
        bool rotated = false;
        for (auto& s : starts) rotated = rotated || s.inputs[1].transpose == 2;
        CHECK_MESSAGE(rotated, "a convolution without a start whose weight tile is rotated");
      }
      total += check_starts(name, c, sizes, lim);
      ++cases;
    }
  });
  MESSAGE(total, " start configurations of ", cases, " benchmark cases checked");
  CHECK(cases > 20);
}

TEST_CASE("start configurations of the operator library at small and example sizes") {
  int total = 0;
  auto one = [&](std::string_view name, const ir::computation& c, const sizes_t& sizes) {
    for (auto lim : {lower::h200_limits(), lower::pocl_cpu_limits()}) {
      INFO(name, " ", to_string(sizes), " on ", lim.name);
      auto starts = tuning::start_configurations(c, sizes, lim);
      // scans have no rules; everything else gets at least one start configuration
      CHECK(starts.empty() == has_scan(c));
      total += check_starts(name, c, sizes, lim);
    }
  };
  test::for_each_expression_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    one(name, mdh::describe(op), sizes);
  });
  ops::for_each_operator([&](const ops::catalog_entry& e, auto make) {
    for_each_stage(make(e.example_sizes),
                   [&](const ir::computation& c) { one(e.name, c, e.example_sizes); });
  });
  MESSAGE(total, " start configurations checked");
}

TEST_CASE("contraction starts: steps that divide small extents, second reductions tiled") {
  // An extent of 48 takes 8 threads x 6 (not 16 x 4 = 64, a third idle); 997 has no dividing
  // step and keeps the halved one; sizes the step divides are left alone.
  std::int64_t thr = 16, rm = 8;
  tuning::detail::fit(48, thr, rm);
  CHECK(thr * rm == 48);
  CHECK(rm == 6);
  thr = 16, rm = 8;
  tuning::detail::fit(24, thr, rm);
  CHECK(thr * rm == 24);
  thr = 16, rm = 8;
  tuning::detail::fit(997, thr, rm);
  CHECK((thr == 16 && rm == 8));
  thr = 16, rm = 8;
  tuning::detail::fit(10, thr, rm);  // 10: no dividing step at least half of 16
  CHECK((thr == 16 && rm == 1));
  // A TCCG contraction with two reductions of 48 (abcd-aebf-dfce): the second reduction one
  // element per tile, so that the tiles fit in shared memory and most product starts are valid
  // (whole, only one of 33 was).
  const auto lim = lower::h100_limits();
  const auto op = ops::tccg_abcd_aebf_dfce();
  const ir::computation& c = mdh::describe(op);
  const sizes_t sizes{48, 48, 48, 48, 48, 48};
  auto starts = tuning::start_configurations(c, sizes, lim);
  CHECK(starts.size() >= 32);
  CHECK(check_starts("tccg_abcd_aebf_dfce", c, sizes, lim) == int(starts.size()));
  const auto& first = starts.front();
  CHECK(first.dims[4].t_sm == 4);  // e, B's last coordinate: 16-byte rows (contraction_starts)
  CHECK(48 % (first.dims[1].thr * first.dims[1].t_rm) == 0);  // b: whole steps
  CHECK(48 % (first.dims[3].thr * first.dims[3].t_rm) == 0);  // d: whole steps
}

namespace {
// Held-out 4-D contractions of the TCCG family (no benchmark case, no tuned file): other
// permutations of the output and reduction indices in the inputs.
auto held_out_contraction_1() {  // C[a,b,c,d] = +_{e,f} A[d,e,a,f] * B[b,f,e,c]
  auto [a, b, c, d, e, f] = indices<6>();
  return computation("tccg_held_out_1", out_view(out<float, "C">(a, b, c, d)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, pw(add), pw(add)),
                     inp_view(in<float, "A">(d, e, a, f), in<float, "B">(b, f, e, c)));
}
auto held_out_contraction_2() {  // C[a,b,c,d] = +_{e,f} A[c,f,d,e] * B[e,a,f,b]
  auto [a, b, c, d, e, f] = indices<6>();
  return computation("tccg_held_out_2", out_view(out<float, "C">(a, b, c, d)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, pw(add), pw(add)),
                     inp_view(in<float, "A">(c, f, d, e), in<float, "B">(e, a, f, b)));
}

// Calls visit(name, op) for the two 4-D TCCG benchmark contractions and the held-out ones.
template <class Visit>
void for_each_4d_contraction(Visit&& visit) {
  visit("tccg_abcd_aebf_dfce", ops::tccg_abcd_aebf_dfce());
  visit("tccg_abcd_eafd_fbec", ops::tccg_abcd_eafd_fbec());
  visit("held_out_1 (A[d,e,a,f] B[b,f,e,c])", held_out_contraction_1());
  visit("held_out_2 (A[c,f,d,e] B[e,a,f,b])", held_out_contraction_2());
}

bool detail_uses(const ir::buffer& b, std::size_t d) {
  for (auto& a : b.accesses)
    for (auto& ix : a.index)
      if (ix.coeff.at(d) != 0) return true;
  return false;
}

// The dimension that coordinate k of b's only access is (a plain contraction index).
std::size_t coordinate_dim(const ir::buffer& b, std::size_t k) {
  const auto& ix = b.accesses.at(0).index.at(k);
  for (std::size_t d = 0; d < ix.coeff.size(); ++d)
    if (ix.coeff[d] != 0) return d;
  return ix.coeff.size();
}

// Distinct shared-memory banks (4-byte words) that the first 32 copy vectors of tile t store
// their first lane to: 32 for a warp without conflicts, 1 when all go to one bank.
std::size_t copy_store_banks(const lower::smem_tile& t) {
  std::set<std::int64_t> banks;
  const auto& v = t.copy_vectors;
  for (std::int64_t f = 0; f < std::min<std::int64_t>(32, v.size()); ++f) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < v.rank(); ++k) {
      std::int64_t u = (f / v.stride[k]) % v.shape[k];
      if (k + 1 == v.rank()) u *= t.copy_width;
      off += u * t.box.stride[k];
    }
    banks.insert(off % 32);
  }
  return banks.size();
}
}  // namespace

// TCCG contractions whose extents (48) are smaller than a block tile: the first product start
// spans two output dimensions per operand (the GEMM view's M = the dimensions only A reads, N
// those only B reads) with 256 threads, reads every operand's register tile from a shared tile
// that stores it innermost as 4-element vectors, keeps every reduction that is an operand's
// contiguous coordinate at least 4 long per tile (16-byte rows), and fills transposed tiles
// with a warp's stores spread over the banks. Before: 48 x 48 block tiles of 64 threads, B(d,
// f, c, e) read 4 bytes per 32-byte sector (e one element per tile), its d-innermost tile
// filled 32 ways into one bank.
TEST_CASE("contraction starts: two output dimensions per operand, vector reads, 16-byte rows") {
  const auto lim = lower::h100_limits();
  const sizes_t sizes{48, 48, 48, 48, 48, 48};
  for_each_4d_contraction([&](std::string_view name, const auto& op) {
    INFO(name);
    const ir::computation& c = mdh::describe(op);
    auto starts = tuning::start_configurations(c, sizes, lim);
    REQUIRE(!starts.empty());
    CHECK(check_starts(name, c, sizes, lim) == int(starts.size()));
    const lower::config& s = starts.front();
    INFO(lower::to_string(s));
    std::int64_t threads = 1, side[2] = {1, 1};
    for (std::size_t d = 0; d < 4; ++d) {
      threads *= s.dims[d].thr;
      // the side: 0 for the dimensions A reads, 1 for B's
      side[detail_uses(c.inputs[1], d) ? 1 : 0] *= s.dims[d].thr * s.dims[d].t_rm;
    }
    CHECK(threads == 256);
    CHECK(side[0] >= 64);
    CHECK(side[1] >= 64);
    const lower::kernel_plan plan = lower::lower(c, sizes, s, lim);
    REQUIRE(plan.tiles.size() == 2);
    for (const auto& t : plan.tiles) {
      INFO("tile of input ", t.input);
      const std::size_t inner = coordinate_dim(c.inputs[t.input], t.order.back());
      CHECK(!c.is_reduction(inner));
      CHECK(s.dims[inner].t_rm == 4);  // one 16-byte shared read per register step
      if (t.order.back() + 1 != t.order.size()) {
        // transposed: a warp's stores spread over the banks (the row's vectors go to
        // consecutive threads, then the tile's innermost dimension: 32 / vectors per row,
        // at most 16 with the 16 elements of the innermost dimension of these tiles)
        const std::int64_t row_vectors = t.copy_vectors.shape.back();
        CHECK(std::int64_t(copy_store_banks(t)) >= std::min<std::int64_t>(16, 32 / row_vectors));
      }
      // the input's last coordinate, a reduction: at least 4 per tile
      const std::size_t last = coordinate_dim(c.inputs[t.input], c.inputs[t.input].rank - 1);
      if (c.is_reduction(last)) CHECK(s.dims[last].t_sm >= 4);
    }
    // 16-byte global loads of both operands
    const std::string src = cuda::emit(plan);
    CHECK(contains(src, "*(const float4*)(&in0["));
    CHECK(contains(src, "*(const float4*)(&in1["));
  });
}

// Regression: with between sm_count and 2*sm_count blocks, with_split once kept an "atomic"
// copy of the unsplit configuration (outside the space for softmax_stats' custom operator).
TEST_CASE("no start configuration combines blocks by atomics without splitting a reduction") {
  const ir::computation c = mdh::describe(ops::softmax_stats());
  const sizes_t sizes{2048, 128};
  const auto lim = lower::h200_limits();
  auto space = tuning::make_search_space(c, sizes, lim);
  for (auto& s : tuning::start_configurations(c, sizes, lim)) {
    INFO(lower::to_string(s));
    CHECK_FALSE(unsplit_atomic(s, c));
    CHECK(space.find(tuning::to_space_configuration(s, c, sizes)).has_value());
  }
}

// The lane layout of warp shuffles is a constraint of the space (it was 14-29 % of the uniform
// samples of the reduction cases' spaces): no point of a space breaks it, and the points that
// shuffle stay.
TEST_CASE("search spaces hold no configuration that breaks the warp-shuffle lane layout") {
  const auto lim = lower::h200_limits();
  int shuffles = 0, reducing = 0;
  ops::for_each_benchmark_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    INFO(name);
    auto sample = [&](const auto& ir, auto&& to_check) {
      auto space = tuning::make_search_space(ir, sizes, lim);
      std::mt19937_64 rng(3);
      for (int k = 0; k < 300; ++k) {
        auto a = space.to_configuration(space.random_point(rng));
        auto cfg = tuning::to_config(a, ir, sizes);
        INFO(a.to_string());
        std::string what;
        try {
          lower::check(cfg, ir, sizes, lim);
        } catch (const error& e) {
          what = e.what();
        }
        CHECK(what.find("warp shuffle") == std::string::npos);
        shuffles += to_check(cfg);
      }
    };
    auto shuffle = [](const lower::config& c) {
      return c.thr_combine == lower::thread_combine::warp_shuffle;
    };
    if constexpr (is_fused_v<std::decay_t<decltype(op)>>) {
      reducing += op.ir().first.has_reduction();
      sample(op.ir(),
             [&](const lower::fused_config& c) { return shuffle(c.first) || shuffle(c.second); });
    } else {
      reducing += mdh::describe(op).has_reduction();
      sample(mdh::describe(op), shuffle);
    }
  });
  CHECK(reducing >= 10);
  CHECK(shuffles > 300);  // about half of the reducing cases' points
}

TEST_CASE("starts that split a reduction over blocks combine by the last block or atomics") {
  const auto lim = lower::h200_limits();
  int last_block = 0;
  ops::for_each_benchmark_case([&](std::string_view name, const auto& op, const sizes_t& sizes) {
    for_each_stage(op, [&](const ir::computation& c) {
      for (auto& s : tuning::start_configurations(c, sizes, lim)) {
        bool split = false;
        for (std::size_t d = 0; d < c.rank(); ++d)
          split = split || (c.is_reduction(d) && s.dims[d].blk > 1);
        if (!split) continue;
        INFO(name, " ", lower::to_string(s));
        CHECK(s.blk_combine != lower::block_combine::second_kernel);
        last_block += s.blk_combine == lower::block_combine::last_block;
      }
    });
  });
  CHECK(last_block > 0);
  MESSAGE(last_block, " start configurations combine blocks by the last block");
}

TEST_CASE("prefetch, vector tile copies and unrolled rm steps in the generated source") {
  const auto lim = lower::pocl_cpu_limits();
  for (auto& e : explicit_cases()) {
    INFO(e.what, ": ", lower::to_string(e.cfg));
    with_operator(e.op, [&](const auto& op) {
      const ir::computation& c = mdh::describe(op);
      REQUIRE_NOTHROW(lower::check(e.cfg, c, e.sizes, lim));
      const std::string src = opencl::emit(lower::lower(c, e.sizes, e.cfg, lim));
      for (auto& x : e.expect) CHECK_MESSAGE(contains(src, x), "missing: ", x, "\n", src);
      // those the search space can express (pad 4, prefetch) round-trip through it
      auto space = tuning::make_search_space(c, e.sizes, lim);
      auto a = tuning::to_space_configuration(e.cfg, c, e.sizes);
      if (space.find(a)) CHECK(tuning::to_config(a, c, e.sizes) == e.cfg);
    });
  }
  // rm steps: unrolled while steps <= 64 and (steps of all pw dims) x (product of all t_rm) <= 1024
  const ir::computation mm = mdh::describe(ops::matmul());
  sizes_t s{16, 16, 64};
  auto c = plain(mm, s);
  set_dim(c, 0, 1, 2, 8, 16, 1), set_dim(c, 1, 1, 2, 8, 16, 0), set_dim(c, 2, 1, 1, 1, 64);
  CHECK(line_after(opencl::emit(lower::lower(mm, s, c, lim)), "// rm steps of k") ==
        "for (int q2 = 0; q2 < 64; ++q2) {");  // 64 x 64 = 4096 bodies
  c.dims[2].t_sm = 32;
  CHECK(line_after(opencl::emit(lower::lower(mm, s, c, lim)), "// rm steps of k") ==
        "for (int q2 = 0; q2 < 32; ++q2) {");  // 32 x 64 = 2048 bodies
  c.dims[2].t_sm = 16;
  CHECK(line_after(opencl::emit(lower::lower(mm, s, c, lim)), "// rm steps of k") ==
        "#pragma unroll");  // 16 x 64 = 1024
  c.dims[2].t_sm = 32;
  // and at most 64 steps whatever the body: 128 steps of one element stay a loop
  sizes_t s1{1, 1, 128};
  auto one = plain(mm, s1);
  set_dim(one, 2, 1, 1, 1, 128);
  CHECK(line_after(opencl::emit(lower::lower(mm, s1, one, lim)), "// rm steps of k") ==
        "for (int q2 = 0; q2 < 128; ++q2) {");
  one.dims[2].t_sm = 64;
  CHECK(line_after(opencl::emit(lower::lower(mm, s1, one, lim)), "// rm steps of k") ==
        "#pragma unroll");
  // a plain copy (no prefetch) stays one loop over the tile
  cache(c, 0, false, 0);
  const std::string plain_copy = opencl::emit(lower::lower(mm, s, c, lim));
  CHECK(contains(plain_copy, "for (int f = tid; f < 128; f += 4) {"));
  CHECK_FALSE(contains(plain_copy, "pf0"));
  // rows of 30 floats: 2-element vectors, never float4
  sizes_t odd{16, 16, 30};
  auto o = plain(mm, odd);
  set_dim(o, 0, 1, 2, 8, 16, 1), set_dim(o, 1, 1, 2, 8, 16, 0), set_dim(o, 2, 1, 1, 2, 8);
  cache(o, 0, false, 4), cache(o, 1, false, 4);
  const std::string odd_src = opencl::emit(lower::lower(mm, odd, o, lim));
  CHECK_FALSE(contains(odd_src, "vload4(0, &in0["));  // A's rows: 30 floats
  CHECK(contains(odd_src, "vload4(0, &in1["));        // B's rows: 16 floats
  CHECK(contains(odd_src, "vload2(0, &in0["));        // 30 = 15 float2
  // CUDA: the same vector copies through float4 pointers into the shared pool
  const std::string cu = cuda::emit(lower::lower(mm, odd, o, lim));
  CHECK(contains(cu, "*(float4*)&in1_s["));
  CHECK(contains(cu, "*(const float4*)(&in1["));
}

// Two shared buffers reuse the bytes of the thread combine's scratch: the prologue of the next
// ++ step must wait for every thread to have read its combined results (a race the tuner found on
// the H200 as wrong results; PoCL's lockstep work-items cannot show it, test_cuda_gpu.cpp runs it).
TEST_CASE("prefetch 2: a barrier between a thread combine and the next step's first tile") {
  const auto lim = lower::named_limits("h200");
  const ir::computation mm = mdh::describe(ops::matmul());
  sizes_t s{16, 64, 64};
  auto c = plain(mm, s);
  // i: 2 ++ steps of 8 rows; j: 16 threads x 4; k: 2 threads, 4 sm tiles of 16
  set_dim(c, 0, 1, 8, 1, 8, 1), set_dim(c, 1, 1, 16, 4, 64, 0), set_dim(c, 2, 1, 2, 1, 16, 2);
  cache(c, 0, false, 0), cache(c, 1, false, 0);
  c.prefetch = 2;
  const std::string marker = "one barrier per step";
  const std::string combined = cuda::emit(lower::lower(mm, s, c, lim));
  CHECK(contains(combined, "tree in shared memory"));
  CHECK(line_after(combined, marker) == "__syncthreads();");
  // without threads along k there is no combine and no extra barrier
  set_dim(c, 2, 1, 1, 1, 16, 2);
  CHECK(line_after(cuda::emit(lower::lower(mm, s, c, lim)), marker) != "__syncthreads();");
}

TEST_CASE("vec_pw: vector loads along the innermost reduction in the generated source") {
  const auto lim = lower::pocl_cpu_limits();
  for (auto& e : vec_pw_cases()) {
    INFO(e.what, ": ", lower::to_string(e.cfg));
    with_operator(e.op, [&](const auto& op) {
      const ir::computation& c = mdh::describe(op);
      REQUIRE_NOTHROW(lower::check(e.cfg, c, e.sizes, lim));
      const std::string src = opencl::emit(lower::lower(c, e.sizes, e.cfg, lim));
      for (auto& x : e.expect) CHECK_MESSAGE(contains(src, x), "missing: ", x, "\n", src);
      for (auto& x : e.absent) CHECK_MESSAGE(!contains(src, x), "unexpected: ", x, "\n", src);
    });
  }
  // CUDA: dot over 256 blocks of 256 threads with 4 registers each: one float4 per operand
  const ir::computation dot = mdh::describe(ops::dot());
  const sizes_t s{1 << 20};
  auto c = plain(dot, s);
  set_dim(c, 0, 256, 256, 4, 4096);
  c.vec_pw = 4;
  const std::string cu = cuda::emit(lower::lower(dot, s, c, lower::h200_limits()));
  CHECK(contains(cu,
                 "const float4 wp0 = (pvg) ? *(const float4*)(&in0[peg]) : "
                 "make_float4(0.0f, 0.0f, 0.0f, 0.0f);"));
  CHECK(contains(cu, "const float x1 = pvg ? ((const float*)&wp1)[prl] : in1[e0];"));
  c.vec_pw = 1;
  CHECK_FALSE(contains(cuda::emit(lower::lower(dot, s, c, lower::h200_limits())), "float4"));
  // in the search space (round trip), but not strided
  c.vec_pw = 4;
  auto space = tuning::make_search_space(dot, s, lower::h200_limits());
  auto a = tuning::to_space_configuration(c, dot, s);
  CHECK(space.find(a).has_value());
  CHECK(tuning::to_config(a, dot, s) == c);
  c.dims[0].strided = true;
  CHECK_FALSE(space.find(tuning::to_space_configuration(c, dot, s)).has_value());
}

TEST_CASE("check: prefetch needs a cached input, a reduction and few staged elements") {
  const auto lim = lower::h200_limits();
  const ir::computation mm = mdh::describe(ops::matmul());
  sizes_t s{64, 64, 64};
  auto c = lower::default_config(mm, s);
  c.prefetch = true;
  CHECK_THROWS_WITH_AS(lower::check(c, mm, s, lim),
                       doctest::Contains("prefetch needs a cached input and a reduction dimension"),
                       error);
  const ir::computation mul = mdh::describe(ops::multiply());
  const sizes_t ms{64, 64};
  auto m = lower::default_config(mul, ms);
  m.inputs[0].cache = lower::cache_kind::shared;
  m.prefetch = true;
  CHECK_THROWS_WITH_AS(lower::check(m, mul, ms, lim), doctest::Contains("no reduction dimension"),
                       error);
  // 64x64 tiles of A and B over 64 threads: 128 staged elements per thread
  auto big = plain(mm, s);
  set_dim(big, 0, 1, 8, 8, 64, 1), set_dim(big, 1, 1, 8, 8, 64, 0), set_dim(big, 2, 1, 1, 4, 64);
  cache(big, 0, false, 0), cache(big, 1, false, 0);
  CHECK_NOTHROW(lower::check(big, mm, s, lim));
  big.prefetch = true;
  CHECK_THROWS_WITH_AS(lower::check(big, mm, s, lim),
                       doctest::Contains("prefetched elements per thread <= 64"), error);
  big.dims[2].t_sm = 32;  // 64 per thread
  CHECK_NOTHROW(lower::check(big, mm, s, lim));
}

TEST_CASE("OpenCL: start configurations of small products and a column reduction") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  opencl::context* ctx = context_or_skip();
  if (!ctx) return;
  const auto lim = cl_limits(*ctx);
  int total = 0;
  struct work {
    std::string op;
    sizes_t sizes;
  };
  for (const work& w :
       {work{"matmul", {37, 45, 29}}, work{"matmul", {64, 64, 64}},
        work{"batch_matmul", {2, 3, 17, 20, 12}}, work{"batch_matmul_nt", {2, 2, 16, 24, 20}},
        work{"bias_add_grad", {37, 64}}, work{"mcc", {1, 5, 6, 8, 3, 3, 3}}}) {
    with_operator(w.op, [&](const auto& op) {
      const ir::computation& c = mdh::describe(op);
      auto starts = tuning::start_configurations(c, w.sizes, lim);
      CHECK_MESSAGE(!starts.empty(), w.op, " ", to_string(w.sizes));
      // up to 7 with prefetch and 3 (the column reduction: 8) without, evenly spaced
      std::vector<lower::config> staged_starts, direct;
      for (auto& s : starts) (s.prefetch ? staged_starts : direct).push_back(s);
      auto pick = spread(staged_starts, 7);
      for (auto& s : spread(direct, staged_starts.empty() ? 8 : 3)) pick.push_back(s);
      int staged = 0;
      for (auto& s : pick) staged += s.prefetch;
      MESSAGE(w.op, " ", to_string(w.sizes), ": ", pick.size(), " of ", starts.size(),
              " start configurations (", staged, " with prefetch)");
      total += run_configs(*ctx, op, w.sizes, pick, 21);
    });
  }
  MESSAGE(total, " start configurations checked on ", lim.name);
#endif
}

// On a CPU (limits.cpu) a product starts from one work-item per group with a register tile,
// scalar reads, nothing in local memory; on a GPU as before (shared tiles, prefetch).
TEST_CASE("a product's start configurations on a CPU: one work-item per group, register tiles") {
  const ir::computation mm = mdh::describe(ops::matmul());
  for (const sizes_t& sizes :
       {sizes_t{96, 80, 64}, sizes_t{37, 45, 29}, sizes_t{1024, 1024, 1024}}) {
    INFO(to_string(sizes));
    auto cpu = tuning::start_configurations(mm, sizes, lower::pocl_cpu_limits());
    REQUIRE(!cpu.empty());
    CHECK(cpu.size() <= 12);  // each costs an evaluation (the quick start has 20)
    bool tile_8x8 = false, one_group = false;
    for (auto& s : cpu) {
      INFO(lower::to_string(s));
      for (auto& x : s.dims) CHECK(x.thr == 1);
      CHECK_FALSE(caches_some_input(s));
      CHECK(s.vec == 1);
      CHECK(s.prefetch == 0);
      tile_8x8 = tile_8x8 || (s.dims[0].t_rm == 8 && s.dims[1].t_rm == 8);
      one_group = one_group || (s.dims[0].blk == 1 && s.dims[1].blk == 1);
    }
    CHECK(tile_8x8);
    CHECK(one_group);
    lower::device_limits gpu_like = lower::pocl_cpu_limits();
    gpu_like.cpu = false;
    bool staged = false;
    for (auto& s : tuning::start_configurations(mm, sizes, gpu_like))
      staged = staged || (s.prefetch && caches_some_input(s));
    CHECK(staged);
  }
  // a ragged size: the tiles that divide it come first (37 = prime: 1; 45: 3 rows of 3 x 5 x 3)
  auto ragged = tuning::start_configurations(mm, {37, 45, 29}, lower::pocl_cpu_limits());
  CHECK(ragged.front().dims[0].t_rm == 1);
  CHECK(ragged.front().dims[1].t_rm == 3);
}

TEST_CASE("OpenCL: the CPU's start configurations of products match mdh::reference") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  opencl::context* ctx = context_or_skip();
  if (!ctx) return;
  auto lim = cl_limits(*ctx);
  lim.cpu = true;
  int total = 0;
  struct work {
    std::string op;
    sizes_t sizes;
  };
  for (const work& w : {work{"matmul", {37, 45, 29}}, work{"batch_matmul", {2, 3, 17, 20, 12}},
                        work{"mcc", {1, 5, 6, 8, 3, 3, 3}}}) {
    with_operator(w.op, [&](const auto& op) {
      const ir::computation& c = mdh::describe(op);
      auto starts = tuning::start_configurations(c, w.sizes, lim);
      CHECK_MESSAGE(!starts.empty(), w.op, " ", to_string(w.sizes));
      total += run_configs(*ctx, op, w.sizes, spread(starts, 4), 23);
    });
  }
  MESSAGE(total, " CPU start configurations checked on ", lim.name);
#endif
}

// Every 4-D contraction C[a,b,c,d] = +_{e,f} A B with two output dimensions per operand, in any
// order in either operand (3456, every 12th checked), at 48^6: the first start has 256 threads,
// block-tile sides of 128, both operands' register tiles read as 4-element vectors, 16-byte tile
// copies and every reduction that is an operand's contiguous index at least 4 per tile. Before:
// 64 threads, sides of 48, no vector reads, half the copies scalar.
TEST_CASE("contraction starts: every permutation of a 4-D contraction") {
  const auto lim = lower::h100_limits();
  const sizes_t sizes(6, 48);
  const ir::computation base = mdh::describe(ops::tccg_abcd_aebf_dfce());
  int n = 0, checked = 0;
  for (int mask = 0; mask < 16; ++mask) {
    if (__builtin_popcount(unsigned(mask)) != 2) continue;
    std::vector<std::size_t> ia{4, 5}, ib{4, 5};  // the operands' dimensions: e, f and two outputs
    for (std::size_t d = 0; d < 4; ++d) ((mask >> d) & 1 ? ia : ib).push_back(d);
    std::sort(ia.begin(), ia.end());
    do {
      std::sort(ib.begin(), ib.end());
      do {
        if (n++ % 12 != 0) continue;
        ir::computation c = base;
        for (auto [b, ix] : {std::pair{0, &ia}, std::pair{1, &ib}})
          for (std::size_t k = 0; k < 4; ++k) {
            auto& f = c.inputs[std::size_t(b)].accesses[0].index[k];
            std::fill(f.coeff.begin(), f.coeff.end(), 0);
            f.coeff[(*ix)[k]] = 1;
          }
        auto starts = tuning::start_configurations(c, sizes, lim);
        REQUIRE(!starts.empty());
        const lower::config& s = starts.front();
        INFO("A dims ", to_string(sizes_t(ia.begin(), ia.end())), " B dims ",
             to_string(sizes_t(ib.begin(), ib.end())), ": ", lower::to_string(s));
        std::int64_t threads = 1, side[2] = {1, 1};
        for (std::size_t d = 0; d < 4; ++d) {
          threads *= s.dims[d].thr;
          side[(mask >> d) & 1] *= s.dims[d].thr * s.dims[d].t_rm;
        }
        CHECK(threads == 256);
        CHECK(side[0] == 128);
        CHECK(side[1] == 128);
        const lower::kernel_plan plan = lower::lower(c, sizes, s, lim);
        REQUIRE(plan.tiles.size() == 2);
        for (const auto& t : plan.tiles) {
          const auto& in = c.inputs[t.input];
          const std::size_t inner = coordinate_dim(in, t.order.back());
          CHECK(!c.is_reduction(inner));
          CHECK(s.dims[inner].t_rm == 4);
          CHECK(t.copy_width == 4);
          const std::size_t last = coordinate_dim(in, in.rank - 1);
          if (c.is_reduction(last)) CHECK(s.dims[last].t_sm >= 4);
        }
        ++checked;
      } while (std::next_permutation(ib.begin(), ib.end()));
    } while (std::next_permutation(ia.begin(), ia.end()));
  }
  CHECK(n == 3456);
  MESSAGE(checked, " of ", n, " 4-D contractions' first start checked");
}

TEST_CASE("OpenCL: start configurations of 4-D TCCG contractions, held-out ones too") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  opencl::context* ctx = context_or_skip();
  if (!ctx) return;
  const auto lim = cl_limits(*ctx);
  // extents under a block tile: two output dimensions per operand, register tiles of 4 and 6,
  // reductions of 12 in runs of 4
  const sizes_t sizes{16, 12, 16, 8, 12, 16};
  int total = 0;
  for_each_4d_contraction([&](std::string_view name, const auto& op) {
    INFO(name);
    auto starts = tuning::start_configurations(mdh::describe(op), sizes, lim);
    REQUIRE(!starts.empty());
    std::vector<lower::config> pick;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, starts.size()); ++k)
      pick.push_back(starts[k]);
    for (auto& st : spread(starts, 3)) pick.push_back(st);
    total += run_configs(*ctx, op, sizes, pick, 29);
  });
  MESSAGE(total, " start configurations of 4-D contractions checked on ", lim.name);
#endif
}

TEST_CASE("OpenCL: explicit prefetch / vector copy configurations") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  opencl::context* ctx = context_or_skip();
  if (!ctx) return;
  for (auto& e : explicit_cases()) {
    INFO(e.what);
    with_operator(e.op, [&](const auto& op) { run_configs(*ctx, op, e.sizes, {e.cfg}, 5); });
  }
#endif
}

TEST_CASE("OpenCL: vec_pw configurations and start configurations match mdh::reference") {
#ifndef MDH_WITH_OPENCL
  MESSAGE("SKIPPED: built without OpenCL (MDH_HAS_OPENCL off)");
#else
  opencl::context* ctx = context_or_skip();
  if (!ctx) return;
  int total = 0;
  for (auto& e : vec_pw_cases()) {
    INFO(e.what);
    with_operator(e.op,
                  [&](const auto& op) { total += run_configs(*ctx, op, e.sizes, {e.cfg}, 9); });
  }
  // the tuner's vec_pw starts of the streaming reductions, at sizes that divide and do not
  const auto lim = cl_limits(*ctx);
  struct work {
    std::string op;
    sizes_t sizes;
  };
  for (const work& w : {work{"dot", {1000}}, work{"dot", {4099}}, work{"matvec", {37, 1000}},
                        work{"matvec", {9, 129}}, work{"softmax_stats", {7, 128}},
                        work{"layernorm_stats", {6, 1000}}}) {
    with_operator(w.op, [&](const auto& op) {
      const ir::computation& c = mdh::describe(op);
      std::vector<lower::config> vectors;
      for (auto& s : tuning::start_configurations(c, w.sizes, lim))
        if (s.vec_pw > 1) vectors.push_back(s);
      CHECK_MESSAGE(!vectors.empty(), w.op, " ", to_string(w.sizes), ": no vec_pw start");
      total += run_configs(*ctx, op, w.sizes, spread(vectors, 4), 13);
    });
  }
  MESSAGE(total, " vec_pw configurations checked on ", lim.name);
#endif
}

TEST_CASE("a parameter map without prefetch loads with prefetch off") {
  const ir::computation mm = mdh::describe(ops::matmul());
  auto c = lower::default_config(mm, {64, 64, 64});
  c.prefetch = true;
  auto m = lower::to_map(c);
  REQUIRE(m.count("prefetch"));
  CHECK(lower::from_map(m, 3, 2) == c);
  m.erase("prefetch");
  auto old = lower::from_map(m, 3, 2);
  CHECK_FALSE(old.prefetch);
  c.prefetch = false;
  CHECK(old == c);
  // the same through JSON (parameter files)
  nlohmann::json j = c;
  j.erase("prefetch");
  CHECK(lower::config_from_json(j, mm) == c);
  // vec_pw: written only when on, absent = 1
  CHECK_FALSE(m.count("vec_pw"));
  c.vec_pw = 4;
  auto with_pw = lower::to_map(c);
  CHECK(with_pw.at("vec_pw") == 4);
  CHECK(lower::from_map(with_pw, 3, 2) == c);
  with_pw["vec_pw"] = 1;
  CHECK(lower::from_map(with_pw, 3, 2).vec_pw == 1);
  // still strict about everything else
  auto typo = m;
  typo["prefech"] = 1;
  CHECK_THROWS_WITH_AS(lower::from_map(typo, 3, 2),
                       doctest::Contains("unknown parameter 'prefech'"), error);
  auto missing = m;
  missing.erase("vec");
  CHECK_THROWS_WITH_AS(lower::from_map(missing, 3, 2), doctest::Contains("'vec' is missing"),
                       error);
}
