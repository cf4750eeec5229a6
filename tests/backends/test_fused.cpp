// SPDX-License-Identifier: MIT
// Fused pairs (mdh::fuse): the IR rules, the configuration rules, the printed kernel, and - on
// OpenCL (PoCL) and through NVRTC where built - every generated fused kernel against the
// reference of both computations run one after the other.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <expressions/layernorm.hpp>
#include <expressions/softmax.hpp>
#include <mdh/fused.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/lower/random_config.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>
#if MDH_WITH_OPENCL
#include <filesystem>

#include <backends/opencl/emit.hpp>
#include <backends/opencl/runtime.hpp>
#include <tuning/opencl_target.hpp>
#include <tuning/tune.hpp>

#include "opencl_check.hpp"
#endif
#if MDH_WITH_CUDA
#include <backends/cuda/program.hpp>
#endif

#include "fused_cases.hpp"
#include "naive_reference.hpp"
#include "sweep_sample.hpp"

using namespace mdh;
using mdh::test::layernorm_pair;
using mdh::test::map_then_rowsum;
using mdh::test::map_then_scan;
using mdh::test::softmax_pair;

namespace {

// The fused kernel's body: stage 0's block, then `barrier` as a statement of its own, then
// stage 1's block.
bool barrier_between_stages(const std::string& src, const std::string& barrier) {
  auto s0 = src.find("{  // ---- stage "), b = src.find("\n  " + barrier + "\n");
  auto s1 = src.find("{  // ---- stage ", s0 + 1);
  return s0 != std::string::npos && b != std::string::npos && s1 != std::string::npos && s0 < b &&
         b < s1;
}

// Whether the second stage of a fused plan needs the barrier before it: it reads a result of the
// first stage from memory (not kept in registers) or uses shared memory.
template <class F>
bool second_reads_results_from_memory(const F& f, const lower::kernel_plan& plan) {
  const auto& s2 = plan.stages.at(1);
  bool from_memory = s2.shared_bytes > 0;
  for (std::size_t k = 0; k < f.ir().second_inputs.size(); ++k)
    if (f.ir().second_inputs[k].from_first_output && !lower::keep_of(s2, k)) from_memory = true;
  return from_memory;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// Inputs, and the reference outputs of the pair.
template <class F>
void make_data(const F& f, const std::vector<std::int64_t>& sizes, std::uint64_t seed,
               std::vector<test::host_buffer>& in, std::vector<test::host_buffer>& want) {
  const ir::fused& x = f.ir();
  in.clear(), want.clear();
  for (auto& b : x.inputs) {
    in.emplace_back(b.type, f.shape(b.name, sizes));
    in.back().randomize(seed++);
  }
  for (auto& b : x.outputs) {
    want.emplace_back(b.type, f.shape(b.name, sizes));
    want.back().poison();
  }
  std::vector<buffer_ref> ir, orf;
  for (auto& b : in) ir.push_back(b);
  for (auto& b : want) orf.push_back(b);
  reference(f, sizes, std::span<const buffer_ref>(ir), std::span<const buffer_ref>(orf));
}

}  // namespace

TEST_CASE("mdh::fuse: the pair's buffers, and what it refuses") {
  auto sm = softmax_pair();
  const ir::fused& x = sm.ir();
  REQUIRE(x.inputs.size() == 1);
  CHECK(x.inputs[0].name == "X");
  REQUIRE(x.outputs.size() == 3);
  CHECK(x.outputs[0].name == "M");
  CHECK(x.outputs[1].name == "S");
  CHECK(x.outputs[2].name == "Y");
  REQUIRE(x.second_inputs.size() == 3);
  CHECK(!x.second_inputs[0].from_first_output);  // X: the pair's input 0
  CHECK(x.second_inputs[1].from_first_output);   // M: the first's output 0
  CHECK(x.second_inputs[2].index == 1);          // S: the first's output 1

  auto ln = layernorm_pair(768);
  CHECK(ln.ir().inputs.size() == 3);  // X, gamma, beta
  CHECK(ln.ir().outputs.size() == 3);
  CHECK(ln.hash() != sm.hash());

  auto [r, c] = indices<2>();
  // reads the statistics at another point than the one they were written at
  auto shifted = computation("shifted", out_view(out<float, "Y">(r, c)),
                             md_hom([](auto x, auto m) { return x - m; }, cc, cc),
                             inp_view(in<float, "X">(r, c), in<float, "M">(r + 1)));
  CHECK(error_of([&] {
          fuse("bad", ops::softmax_stats(), shifted);
        }).find("does not write it with") != std::string::npos);
  // writes a buffer the first computation reads
  auto overwrite =
      computation("overwrite", out_view(out<float, "X">(r, c)),
                  md_hom([](auto m) { return m; }, cc, cc), inp_view(in<float, "M">(r)));
  CHECK(error_of([&] {
          fuse("bad", ops::softmax_stats(), overwrite);
        }).find("must be new buffers") != std::string::npos);
  // another buffer type under a shared name
  auto wrong_type =
      computation("wrong_type", out_view(out<double, "Z">(r, c)),
                  md_hom([](auto m) { return m; }, cc, cc), inp_view(in<double, "M">(r)));
  CHECK(error_of([&] { fuse("bad", ops::softmax_stats(), wrong_type); }).find("buffer 'M' is") !=
        std::string::npos);
  // an output that every point of a ++ dimension writes (so several blocks would): the DSL
  // refuses it statically, so the IR is built by hand (M(r, c) cut to M(r))
  auto copy = computation("bcast", out_view(out<float, "M">(r, c)),
                          md_hom([](auto x) { return x; }, cc, cc), inp_view(in<float, "X">(r, c)));
  ir::computation bcast = copy.ir();
  bcast.outputs[0].rank = 1;
  bcast.outputs[0].accesses[0].index.pop_back();
  auto use = computation("use", out_view(out<float, "Y">(r, c)),
                         md_hom([](auto x, auto m) { return x - m; }, cc, cc),
                         inp_view(in<float, "X">(r, c), in<float, "M">(r)));
  CHECK(error_of([&] {
          ir::make_fused("bad", bcast, use.ir());
        }).find("at the same element for every value") != std::string::npos);
  // a shared input seen whole by one computation but not by the other: refused at given sizes
  auto rowsum =
      computation("rowsum", out_view(out<float, "S">(r)),
                  md_hom([](auto x) { return x; }, cc, pw(add)), inp_view(in<float, "X">(r, c)));
  auto first_col = computation("first_col", out_view(out<float, "Y">(r, c)),
                               md_hom([](auto x, auto s) { return x - s; }, cc, cc),
                               inp_view(in<float, "X">(r, 0), in<float, "S">(r)));
  auto narrow = fuse("narrow", rowsum, first_col);
  const std::vector<std::int64_t> n{8, 16};
  CHECK(error_of([&] {
          lower::check(lower::default_config(narrow.ir(), n), narrow.ir(), n, lower::h200_limits());
        }).find("buffer 'X' is [8,16] in 'rowsum' but [8,1] in 'first_col'") != std::string::npos);
  auto [i] = indices<1>();
  auto rank1 = computation("rank1", out_view(out<float, "Z">(i)),
                           md_hom([](auto m) { return m; }, cc), inp_view(in<float, "M">(i)));
  CHECK(error_of([&] { fuse("bad", ops::softmax_stats(), rank1); }).find("same dimensions") !=
        std::string::npos);
}

TEST_CASE("check: reductions inside blocks, one grid, one block shape") {
  auto sm = softmax_pair();
  const std::vector<std::int64_t> sizes{64, 128};
  const auto lim = lower::h200_limits();
  lower::fused_config c = lower::default_config(sm.ir(), sizes);
  CHECK_NOTHROW(lower::check(c, sm.ir(), sizes, lim));

  auto split = c;  // the row reduction over two blocks
  split.first.dims[1].blk = 2;
  split.second.dims[1].blk = 2;
  CHECK(error_of([&] {
          lower::check(split, sm.ir(), sizes, lim);
        }).find("reductions are not split over blocks") != std::string::npos);

  auto blocks = c;  // different row chunks
  blocks.second.dims[0].blk = c.first.dims[0].blk * 2;
  CHECK(error_of([&] { lower::check(blocks, sm.ir(), sizes, lim); }).find("same blocks") !=
        std::string::npos);

  auto shape = c;  // same blocks, other threads per block
  shape.second.dims[0].thr = c.first.dims[0].thr / 2;
  shape.second.dims[0].t_sm = shape.second.dims[0].thr;
  CHECK(error_of([&] {
          lower::check(shape, sm.ir(), sizes, lim);
        }).find("same grid and block shape") != std::string::npos);

  auto bad_stage = c;  // a stage's own rule, named with its stage
  bad_stage.second.vec = 3;
  CHECK(error_of([&] {
          lower::check(bad_stage, sm.ir(), sizes, lim);
        }).find("second stage (softmax_normalize)") != std::string::npos);

  // JSON round trip, and a missing stage named
  nlohmann::json j = c;
  CHECK(lower::config_from_json(j, sm.ir()) == c);
  j.erase("second");
  CHECK(error_of([&] { lower::config_from_json(j, sm.ir()); }).find("\"second\"") !=
        std::string::npos);
}

TEST_CASE("lower: one kernel, the stages' buffers renamed to its parameters") {
  auto ln = layernorm_pair(96);
  const std::vector<std::int64_t> sizes{19, 96};
  auto p =
      lower::lower(ln.ir(), sizes, lower::default_config(ln.ir(), sizes), lower::h200_limits());
  REQUIRE(p.kernels.size() == 1);
  REQUIRE(p.stages.size() == 2);
  CHECK(p.inputs.size() == 3);
  CHECK(p.outputs.size() == 3);
  // normalize reads X, S, Q, gamma, beta: the pair's in0, out0, out1, in1, in2; writes out2
  const auto& s2 = p.stages[1];
  CHECK(s2.inputs[0].name == "in0");
  CHECK(s2.inputs[1].name == "out0");
  CHECK(s2.inputs[2].name == "out1");
  CHECK(s2.inputs[3].name == "in1");
  CHECK(s2.inputs[4].name == "in2");
  CHECK(s2.outputs[0].name == "out2");
  CHECK(lower::to_string(p).find("stage 1") != std::string::npos);
}

TEST_CASE("the fused search space: shared dimensions, reductions in one block, s2_ stage") {
  auto sm = softmax_pair();
  const std::vector<std::int64_t> sizes{24576, 128};
  const auto lim = lower::h200_limits();
  auto space = tuning::make_search_space(sm.ir(), sizes, lim);
  std::set<std::string> names;
  for (auto& p : tuning::make_parameters(sm.ir(), sizes, lim)) names.insert(p.name());
  CHECK(names.count("blk_0"));
  CHECK(names.count("thr_1"));
  CHECK(names.count("vec_pw"));      // the first stage's loads along the row
  CHECK(names.count("s2_vec"));      // the second stage's stores along it
  CHECK(names.count("s2_cache_0"));  // the second stage reads X, M, S
  CHECK(names.count("s2_cache_2"));
  CHECK_FALSE(names.count("blk_combine"));
  CHECK_FALSE(names.count("s2_blk_1"));
  // every start configuration is a point of the space and maps back to itself
  auto starts = tuning::start_configurations(sm.ir(), sizes, lim);
  CHECK(starts.size() >= 10);
  for (auto& s : starts) {
    INFO(lower::to_string(s));
    CHECK(s.first.dims[1].blk == 1);
    auto a = tuning::to_space_configuration(s, sm.ir(), sizes);
    CHECK(space.contains(a));
    CHECK(tuning::to_config(a, sm.ir(), sizes) == s);
  }
}

#if MDH_WITH_OPENCL
namespace {
opencl::context& ctx() {
  static opencl::context c;
  return c;
}

template <class F>
// The default and `randoms` random configurations of f (the covering subset of them unless
// MDH_TEST_FULL: sweep_sample.hpp); returns how many ran, adds how many were drawn.
int sweep_opencl(const F& f, const std::vector<std::int64_t>& sizes, int randoms,
                 std::uint64_t seed, int* drawn_total) {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  std::vector<test::host_buffer> in, want;
  make_data(f, sizes, seed, in, want);
  const std::int64_t L = test::reduction_length(f.ir().first, sizes);
  std::mt19937_64 rng(seed);
  std::vector<lower::fused_config> drawn{lower::default_config(f.ir(), sizes)};
  for (int k = 0; k < randoms; ++k)
    drawn.push_back(lower::random_config(f.ir(), sizes, lim, rng, {64, 2000}));
  *drawn_total += int(drawn.size());
  const auto cfgs = test::sweep_sample(drawn, f.ir(), sizes, 1);
  int n = 0;
  for (auto& cfg : cfgs) {
    INFO(f.name(), " ", lower::to_string(cfg));
    auto plan = lower::lower(f.ir(), sizes, cfg, lim);
    auto src = opencl::emit(plan);
    // (PoCL runs a block's work items one after another between barriers, so a missing one
    // would rarely show in the results); none where the second stage reads every result of the
    // first from registers and uses no shared memory (keep_in_registers)
    CHECK(barrier_between_stages(src, "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);") ==
          plan.stages[1].barrier_before);
    CHECK(plan.stages[1].barrier_before == second_reads_results_from_memory(f, plan));
    auto o = test::check_opencl(ctx(), plan, in, want, L, 2);
    CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);
    ++n;
  }
  return n;
}
}  // namespace

TEST_CASE("fused softmax and layernorm on OpenCL match the reference of both stages") {
  int n = 0, drawn = 0;
  n += sweep_opencl(softmax_pair(), {37, 50}, 12, 11, &drawn);
  n += sweep_opencl(softmax_pair(), {8, 128}, 8, 12, &drawn);
  n += sweep_opencl(layernorm_pair(96), {19, 96}, 12, 13, &drawn);
  n += sweep_opencl(layernorm_pair(5), {64, 5}, 6, 14, &drawn);
  n += sweep_opencl(map_then_rowsum(), {29, 40}, 10, 15, &drawn);
  n += sweep_opencl(map_then_scan(), {23, 31}, 10, 16, &drawn);
  MESSAGE(n, " of ", drawn, " fused kernels drawn run on OpenCL");
  CHECK(drawn == 6 + 58);
  if (test::full_sweep()) CHECK(n == drawn);
  CHECK(n > 6);  // more than the six default configurations
}

// keep_in_registers (fuse.hpp): where both stages give each element of X to the same thread and
// register slot, the second stage reads X from the first's registers, not from memory again.
TEST_CASE("fused pairs keep the row the first stage read in registers for the second") {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  auto check_kept = [&](const auto& f, const std::vector<std::int64_t>& sizes, std::int64_t slots) {
    INFO(f.name());
    auto cfg = lower::default_config(f.ir(), sizes);
    auto plan = lower::lower(f.ir(), sizes, cfg, lim);
    REQUIRE(plan.stages[1].keeps.size() == 3);  // X, then the two results (the next test)
    CHECK_FALSE(plan.stages[0].keeps[0].result);
    CHECK(plan.stages[0].keeps[0].store);
    CHECK(plan.stages[0].keeps[0].input == 0);  // X
    CHECK_FALSE(plan.stages[1].keeps[0].store);
    CHECK(plan.stages[0].keep_slots == slots);
    CHECK(plan.stages[1].unroll_concat_steps);
    CHECK(lower::to_string(plan).find("from the first stage's registers (mdh_keep0)") !=
          std::string::npos);
    const std::string src = opencl::emit(plan);
    const auto second = src.find("{  // ---- stage ", src.find("{  // ---- stage ") + 1);
    REQUIRE(second != std::string::npos);
    CHECK(src.find("mdh_keep0[" + std::to_string(slots) + "];") < second);  // declared first
    CHECK(src.find("] = x0;  // for the next stage") < second);
    CHECK(src.find("in0[", second) == std::string::npos);  // X is not read again
    CHECK(src.find("= mdh_keep0[", second) != std::string::npos);
    std::vector<test::host_buffer> in, want;
    make_data(f, sizes, 21, in, want);
    auto o = test::check_opencl(ctx(), plan, in, want, test::reduction_length(f.ir().first, sizes));
    CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);

    // the second stage walking its rows with another thread mapping reads X itself (where
    // that mapping differs: with one thread or one slot per row, strided is blocked)
    cfg.second.dims[1].strided = !cfg.second.dims[1].strided;
    auto other = lower::lower(f.ir(), sizes, cfg, lim);
    const bool differs = other.stages[1].dims[1].elements != plan.stages[1].dims[1].elements;
    CHECK(differs == other.stages[1].keeps.empty());
    CHECK(differs == (opencl::emit(other).find("mdh_keep") == std::string::npos));
    return differs;
  };
  CHECK(check_kept(softmax_pair(), {8, 128}, 4));  // the other mapping differs here
  check_kept(layernorm_pair(5), {64, 5}, 5);
}

// The first stage's results the second reads (softmax's M and S, layernorm's S and Q) are kept
// too, as stored: every thread holds them after the shared-memory tree. The second stage then
// reads nothing the first wrote from memory and uses no shared memory: no barrier between them.
TEST_CASE("fused pairs keep the first stage's results in registers, without a barrier") {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  auto check_results_kept = [&](const auto& f, const std::vector<std::int64_t>& sizes) {
    INFO(f.name());
    auto cfg = lower::default_config(f.ir(), sizes);
    auto plan = lower::lower(f.ir(), sizes, cfg, lim);
    REQUIRE(plan.stages[0].keeps.size() == 3);
    for (std::size_t k = 1; k < 3; ++k) {
      const auto &a = plan.stages[0].keeps[k], &b = plan.stages[1].keeps[k];
      CHECK(a.result);
      CHECK(a.store);
      CHECK(a.input == k - 1);  // the first stage's outputs 0 and 1
      CHECK(b.result);
      CHECK_FALSE(b.store);
      CHECK(f.ir().second_inputs.at(b.input).from_first_output);
      CHECK(a.reduced == std::vector<bool>{false, true});  // the slot leaves out the row
    }
    CHECK_FALSE(plan.stages[1].barrier_before);
    const std::string dump = lower::to_string(plan);
    CHECK(dump.find("no barrier between them") != std::string::npos);
    CHECK(dump.find("(the first stage's result) from the first stage's registers (mdh_keep1)") !=
          std::string::npos);
    const std::string src = opencl::emit(plan);
    const auto second = src.find("{  // ---- stage ", src.find("{  // ---- stage ") + 1);
    REQUIRE(second != std::string::npos);
    CHECK(src.find("mdh_keep1[0] = ") < second);            // stored after the first stage's write
    CHECK(src.find("out0[", second) == std::string::npos);  // not read back from memory
    CHECK(src.find("out1[", second) == std::string::npos);
    CHECK(src.find("= mdh_keep1[0];", second) != std::string::npos);
    CHECK(src.find("barrier(", src.find("// no barrier: stage 1")) > second);
    std::vector<test::host_buffer> in, want;
    make_data(f, sizes, 22, in, want);
    auto o = test::check_opencl(ctx(), plan, in, want, test::reduction_length(f.ir().first, sizes));
    CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);
  };
  check_results_kept(softmax_pair(), {8, 128});
  check_results_kept(layernorm_pair(5), {64, 5});
}

// 16-bit rows far from zero, against the exact math on the same rounded inputs. The statistics
// are stored in float (layernorm_stats, softmax_stats), so each output carries one bf16 rounding
// (u = 2^-8 relative) plus float-sized errors. Stored in bf16 (before 2026-11-29), layernorm's
// Q/cols - mean^2 lost all its digits on these rows (mean 8, spread 1: Q rounds to steps of 256
// in 49,000; the variance came out 0 and the outputs 6e7 times the bound), and softmax's sum,
// rounded once more, added a second rounding to each output of its row (1.46 times the bound).
TEST_CASE("16-bit layernorm and softmax of rows far from zero: one rounding of the output") {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  const double u = std::ldexp(1.0, -8);  // bf16's unit roundoff
  std::mt19937_64 rng(31);
  // every drawn configuration (default first): some keep the statistics in registers, some
  // read them back from memory; all must meet the same bound
  auto configs = [&](const auto& f, const std::vector<std::int64_t>& sizes) {
    std::vector<lower::fused_config> c{lower::default_config(f.ir(), sizes)};
    for (int k = 0; k < 3; ++k)
      c.push_back(lower::random_config(f.ir(), sizes, lim, rng, {64, 2000}));
    return c;
  };
  auto run = [&](const auto& f, const std::vector<std::int64_t>& sizes,
                 const lower::fused_config& cfg, std::vector<test::host_buffer>& in) {
    auto plan = lower::lower(f.ir(), sizes, cfg, lim);
    std::vector<test::host_buffer> out;
    for (auto& b : f.ir().outputs) out.emplace_back(b.type, f.shape(b.name, sizes));
    std::vector<buffer_ref> ir, orf;
    for (auto& b : in) ir.push_back(b);
    for (auto& b : out) orf.push_back(b);
    opencl::program(ctx(), plan).run(ir, orf);
    return out.back();  // Y
  };
  SUBCASE("layernorm, rows of mean 8") {
    const std::int64_t R = 48, C = 768;
    auto f = fuse("layernorm", ops::layernorm_stats<bf16>(), ops::layernorm_normalize<bf16>(C));
    CHECK(f.ir().first.outputs[0].type == scalar_type::f32);  // S and Q
    std::vector<test::host_buffer> in;                        // X, gamma, beta
    in.emplace_back(scalar_type::bf16, shape_t{R, C});
    in.emplace_back(scalar_type::bf16, shape_t{C});
    in.emplace_back(scalar_type::bf16, shape_t{C});
    std::uniform_real_distribution<double> d(-1, 1);
    for (std::int64_t k = 0; k < R * C; ++k) in[0].set(k, 8 + d(rng));
    for (std::int64_t c = 0; c < C; ++c) in[1].set(c, 1 + d(rng) / 2), in[2].set(c, d(rng) / 2);
    for (auto& cfg : configs(f, {R, C})) {
      INFO(lower::to_string(cfg));
      const auto y = run(f, {R, C}, cfg, in);
      double worst = 0;  // error / bound
      for (std::int64_t r = 0; r < R; ++r) {
        double mean = 0, var = 0;
        for (std::int64_t c = 0; c < C; ++c) mean += in[0].get(r * C + c) / double(C);
        for (std::int64_t c = 0; c < C; ++c)
          var += (in[0].get(r * C + c) - mean) * (in[0].get(r * C + c) - mean) / double(C);
        for (std::int64_t c = 0; c < C; ++c) {
          const double want =
              (in[0].get(r * C + c) - mean) / std::sqrt(var + 1e-12) * in[1].get(c) + in[2].get(c);
          worst =
              std::max(worst, std::abs(y.get(r * C + c) - want) / (2 * u * (std::abs(want) + 1)));
        }
      }
      MESSAGE("layernorm: worst error ", worst, " of the bound 2u(|y| + 1)");
      CHECK(worst <= 1);
    }
  }
  SUBCASE("softmax, scores around 10") {
    const std::int64_t R = 64, C = 512;
    auto f = fuse("softmax", ops::softmax_stats<bf16>(), ops::softmax_normalize<bf16>());
    CHECK(f.ir().first.outputs[1].type == scalar_type::f32);  // M and S
    std::vector<test::host_buffer> in;
    in.emplace_back(scalar_type::bf16, shape_t{R, C});
    std::uniform_real_distribution<double> d(-4, 4);
    for (std::int64_t k = 0; k < R * C; ++k) in[0].set(k, 10 + d(rng));
    for (auto& cfg : configs(f, {R, C})) {
      INFO(lower::to_string(cfg));
      const auto y = run(f, {R, C}, cfg, in);
      double worst = 0;
      for (std::int64_t r = 0; r < R; ++r) {
        double m = -INFINITY, sum = 0;
        for (std::int64_t c = 0; c < C; ++c) m = std::max(m, in[0].get(r * C + c));
        for (std::int64_t c = 0; c < C; ++c) sum += std::exp(in[0].get(r * C + c) - m);
        for (std::int64_t c = 0; c < C; ++c) {
          const double want = std::exp(in[0].get(r * C + c) - m) / sum;
          worst = std::max(worst, std::abs(y.get(r * C + c) - want) / (1.25 * u * want));
        }
      }
      MESSAGE("softmax: worst error ", worst, " of the bound 1.25u|y|");
      CHECK(worst <= 1);
    }
  }
}

TEST_CASE("tuning a fused pair on OpenCL writes a usable parameter file") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("mdh_fused_tune_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sm = softmax_pair();
  const std::vector<std::int64_t> sizes{96, 64};
  tuning::opencl_target target(ctx());
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 16;
  opt.log = dir / "softmax.log.jsonl";
  opt.parameter_file = dir / "softmax.json";
  opt.progress = atf::progress_mode::off;
  auto r = tuning::tune(sm, sizes, target, opt);
  CHECK(r.run.evaluations >= 16);
  CHECK(r.record.work.computation == "softmax");
  CHECK(r.record.work.hash == sm.hash());
  auto rec = tuning::read_parameter_file(opt.parameter_file);
  auto cfg = lower::config_from_json(rec.configuration, sm.ir());
  CHECK(cfg == r.best);
  CHECK_NOTHROW(lower::check(cfg, sm.ir(), sizes, target.limits()));
  // the chosen kernel is right
  std::vector<test::host_buffer> in, want;
  make_data(sm, sizes, 99, in, want);
  auto plan = lower::lower(sm.ir(), sizes, cfg, target.limits());
  auto o = test::check_opencl(ctx(), plan, in, want, test::reduction_length(sm.ir().first, sizes));
  CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);
  fs::remove_all(dir);
}
#endif

#if MDH_WITH_CUDA
TEST_CASE("fused kernels compile with NVRTC for sm_90") {
  const auto lim = lower::h200_limits();
  std::mt19937_64 rng(5);
  int n = 0;
  auto sweep = [&](const auto& f, const std::vector<std::int64_t>& sizes) {
    std::vector<lower::fused_config> cfgs{lower::default_config(f.ir(), sizes)};
    for (int k = 0; k < 6; ++k)
      cfgs.push_back(lower::random_config(f.ir(), sizes, lim, rng, {1024, 2000}));
    for (auto& cfg : cfgs) {
      INFO(f.name(), " ", lower::to_string(cfg));
      auto plan = lower::lower(f.ir(), sizes, cfg, lim);
      auto src = cuda::emit(plan);
      // one kernel: the stages are blocks of its body
      CHECK(src.find("__global__") == src.rfind("__global__"));
      CHECK(barrier_between_stages(src, "__syncthreads();") == plan.stages[1].barrier_before);
      CHECK(plan.stages[1].barrier_before == second_reads_results_from_memory(f, plan));
      // the first stage's outputs that the second reads are not restrict (see the next test)
      for (auto& s : f.ir().second_inputs)
        if (s.from_first_output)
          CHECK(src.find("float* out" + std::to_string(s.index) + ",") != std::string::npos);
      cuda::module_cache cache("");  // memory only
      CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
      ++n;
    }
  };
  sweep(softmax_pair(), {24576, 128});
  sweep(layernorm_pair(768), {2048, 768});
  sweep(map_then_rowsum(), {1000, 300});
  sweep(map_then_scan(), {1000, 300});
  CHECK(n == 28);
}

// The BERT layer's bf16 layernorm at 2048x768 as first tuned on the H200 (2026-11-28): 128
// blocks of 16 rows, `thr_1` threads per row combining by warp shuffles, the first stage reading
// `vec_pw` elements of X at a time.
namespace {
lower::kernel_plan bf16_layernorm_plan(int thr_1, int vec_pw) {
  auto f = fuse("layernorm", ops::layernorm_stats<bf16>(), ops::layernorm_normalize<bf16>(768));
  const std::string common =
      "blk_0=128 blk_1=1 blk_combine=1 blk_map_0=0 blk_map_1=0 prefetch=0 strided_0=1 strided_1=0 "
      "t_rm_0=1 t_rm_1=4 t_sm_0=32 t_sm_1=768 thr_0=16 thr_1=" +
      std::to_string(thr_1) + " thr_map_0=0 thr_map_1=0 ";
  lower::fused_config cfg{
      lower::config_from_string(common +
                                    "cache_0=0 pad_0=0 thr_combine=1 transpose_0=0 vec=1 vec_pw=" +
                                    std::to_string(vec_pw),
                                f.ir().first),
      lower::config_from_string(
          common + "cache_0=0 cache_1=0 cache_2=0 cache_3=0 cache_4=0 pad_0=0 pad_1=0 pad_2=0 "
                   "pad_3=0 pad_4=0 thr_combine=0 transpose_0=0 transpose_1=0 transpose_2=0 "
                   "transpose_3=0 transpose_4=0 vec=4",
          f.ir().second)};
  return lower::lower(f.ir(), {2048, 768}, cfg, lower::h200_limits());
}
}  // namespace

// The BERT layer's bf16 layernorm as first tuned on the H200 (2026-11-28): 12 slots
// of X per thread kept between the stages, in registers (no local memory in the PTX), and X
// read once: the second stage's only loads from global are gamma, beta and the statistics (64
// threads a row: after the shuffles only the first warp holds the sums, so they are not kept).
TEST_CASE("fused bf16 layernorm keeps its row in registers (PTX)") {
  auto plan = bf16_layernorm_plan(64, 2);
  REQUIRE(plan.stages[1].keeps.size() == 1);
  CHECK(plan.stages[0].keep_slots == 12);  // 3 rm steps of 4 slots along the row
  const std::string src = cuda::emit(plan);
  CHECK(src.find("unsigned short mdh_keep0[12];") != std::string::npos);
  CHECK(src.find("mdh_keep0[q1 * 4 + r1] = x0;") != std::string::npos);
  auto mod = cuda::compile_uncached(src, plan.name, "compute_90");
  REQUIRE(!mod.ptx.empty());
  CHECK(mod.ptx.find(".local") == std::string::npos);
  const auto bar = mod.ptx.find("bar.sync");
  REQUIRE(bar != std::string::npos);
  int after = 0;
  for (auto at = mod.ptx.find("ld.global.", bar); at != std::string::npos;
       at = mod.ptx.find("ld.global.", at + 1))
    ++after;
  CHECK(after == 3 * 2 + 2);  // gamma and beta per rm step (4 elements each), S and Q
}

// The same layernorm with a warp-shuffle combine over the 32 threads of each row: every lane holds
// S and Q after the shuffles, the second stage takes them (and X) from registers, and the kernel
// has no barrier at all: the loads of gamma and beta need not wait for the first stage.
TEST_CASE("fused bf16 layernorm with a warp-shuffle combine has no barrier (PTX)") {
  auto plan = bf16_layernorm_plan(32, 4);
  REQUIRE(plan.stages[1].keeps.size() == 3);  // X, S, Q
  CHECK_FALSE(plan.stages[1].barrier_before);
  const std::string src = cuda::emit(plan);
  CHECK(src.find("__syncthreads();") == std::string::npos);
  CHECK(src.find("mdh_keep1[0] = acc0[r0];") != std::string::npos);  // S as stored: float
  auto mod = cuda::compile_uncached(src, plan.name, "compute_90");
  REQUIRE(!mod.ptx.empty());
  CHECK(mod.ptx.find(".local") == std::string::npos);
  CHECK(mod.ptx.find("bar.sync") == std::string::npos);
  // X (six 8-byte loads per thread), gamma and beta (six each); S and Q are not read back
  int loads = 0;
  for (auto at = mod.ptx.find("ld.global."); at != std::string::npos;
       at = mod.ptx.find("ld.global.", at + 1))
    ++loads;
  CHECK(loads == 6 + 2 * 6);
}

// Found on the H200: with the statistics M and S declared `__restrict__`, NVRTC hoisted the
// second stage's loads of them above the block barrier, so threads that had not written them
// read stale values (NaN in Y). A warp-shuffle combine keeps the first stage free of barriers:
// in the PTX, every load from global memory before the first `bar.sync` must be of the
// read-only input (ld.global.nc).
TEST_CASE("fused softmax: the second stage loads the statistics after the barrier (PTX)") {
  auto f = softmax_pair();
  const std::vector<std::int64_t> sizes{24576, 128};
  const std::string first =
      "blk_0=3072 blk_1=1 blk_combine=1 blk_map_0=0 blk_map_1=0 cache_0=0 pad_0=0 prefetch=0 "
      "strided_0=0 strided_1=1 t_rm_0=1 t_rm_1=4 t_sm_0=8 t_sm_1=128 thr_0=8 thr_1=32 "
      "thr_combine=1 thr_map_0=1 thr_map_1=0 transpose_0=0 vec=1";
  // (the second stage walks its rows blocked, the first strided: nothing is kept in registers)
  const std::string second =
      "blk_0=3072 blk_1=1 blk_combine=1 blk_map_0=0 blk_map_1=0 cache_0=0 cache_1=0 cache_2=0 "
      "pad_0=0 pad_1=0 pad_2=0 prefetch=0 strided_0=0 strided_1=0 t_rm_0=1 t_rm_1=4 t_sm_0=8 "
      "t_sm_1=128 thr_0=8 thr_1=32 thr_combine=0 thr_map_0=1 thr_map_1=0 transpose_0=0 "
      "transpose_1=0 transpose_2=0 vec=1";
  lower::fused_config cfg{lower::config_from_string(first, f.ir().first),
                          lower::config_from_string(second, f.ir().second)};
  auto plan = lower::lower(f.ir(), sizes, cfg, lower::h200_limits());
  REQUIRE(plan.stages[1].keeps.empty());
  REQUIRE(plan.stages[1].barrier_before);
  auto mod = cuda::compile_uncached(cuda::emit(plan), plan.name, "compute_90");
  REQUIRE(!mod.ptx.empty());
  const auto bar = mod.ptx.find("bar.sync");
  REQUIRE(bar != std::string::npos);
  int before = 0;
  for (auto at = mod.ptx.find("ld.global."); at < bar; at = mod.ptx.find("ld.global.", at + 1)) {
    INFO(mod.ptx.substr(at, mod.ptx.find('\n', at) - at));
    CHECK(mod.ptx.compare(at, 13, "ld.global.nc.") == 0);
    ++before;
  }
  CHECK(before == 4);                                              // X, four columns per thread
  CHECK(mod.ptx.find("ld.global.f32", bar) != std::string::npos);  // M and S, after it
}
#endif
