// SPDX-License-Identifier: MIT
// Epilogues (mdh::with_epilogue): the IR rules, the configuration rule, the plan and printed
// kernel, and - on OpenCL (PoCL) and through NVRTC where built - generated kernels of GEMM + bias,
// + bias + GELU, + bias + residual (plain, B transposed, batched) against the plain composition
// (mdh::reference: the product, then the point-wise computation) on fresh random non-zero
// inputs. Tolerance: test::compare's, |got - want| <= 1e-5 * max(1, K / 8) * max(1, |want|).
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <expressions/gemm_epilogues.hpp>
#include <mdh/epilogue.hpp>
#include <mdh/fused.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>
#include <tuning/search_space.hpp>
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

#include "naive_reference.hpp"
#include "sweep_sample.hpp"

using namespace mdh;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// Inputs (fresh random non-zero values) and the plain composition's outputs.
template <class Op>
void make_data(const Op& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed,
               std::vector<test::host_buffer>& in, std::vector<test::host_buffer>& want) {
  in = test::make_inputs(op.ir(), sizes, seed);
  want = test::make_outputs(op.ir(), sizes);
  std::vector<buffer_ref> ir, orf;
  for (auto& b : in) ir.push_back(b);
  for (auto& b : want) orf.push_back(b);
  reference(op, sizes, std::span<const buffer_ref>(ir), std::span<const buffer_ref>(orf));
}

// The write paths an epilogue must follow: the product's reduction in one thread, over the
// threads of a block, over blocks combined by a second kernel or by the last block, and the
// vectorised write loop.
enum path { in_thread, over_threads, second_kernel, last_block, vector_write, paths };
const char* path_name[] = {"in one thread", "over threads", "second kernel", "last block",
                           "vector write"};
path path_of(const lower::kernel_plan& p) {
  if (p.blk_combine == lower::block_combine_kind::second_kernel) return second_kernel;
  if (p.blk_combine == lower::block_combine_kind::last_block) return last_block;
  if (p.vector_write) return vector_write;
  return p.thread_combine_needed ? over_threads : in_thread;
}

// The default configuration, then random valid ones until every path has `per_path` (or
// `attempts` were drawn).
std::vector<lower::config> configs_on_every_path(const ir::computation& c,
                                                 const std::vector<std::int64_t>& sizes,
                                                 const lower::device_limits& lim,
                                                 std::uint64_t seed, int per_path,
                                                 std::array<int, paths>& found) {
  std::mt19937_64 rng(seed);
  std::vector<lower::config> out{lower::default_config(c, sizes)};
  found.fill(0);
  found[path_of(lower::lower(c, sizes, out[0], lim))]++;
  for (int a = 0; a < 3000; ++a) {
    bool done = true;
    for (int n : found) done = done && n >= per_path;
    if (done) break;
    auto cfg = lower::random_config(c, sizes, lim, rng, {256, 2000});
    const path q = path_of(lower::lower(c, sizes, cfg, lim));
    if (found[q] >= per_path) continue;
    found[q]++;
    out.push_back(cfg);
  }
  return out;
}

}  // namespace

TEST_CASE("with_epilogue: one computation with the product's parameters and the kernel's buffers") {
  auto op = ops::matmul_bias_gelu();
  const ir::computation& c = op.ir();
  CHECK(c.name == "matmul_bias_gelu");
  REQUIRE(c.epilogue);
  CHECK(c.epilogue->name == "bias_gelu");
  CHECK(c.inputs.size() == 2);  // the product's: A, B
  auto ins = ir::kernel_inputs(c);
  REQUIRE(ins.size() == 3);
  CHECK(ins[2].name == "b");
  REQUIRE(ir::kernel_outputs(c).size() == 1);
  CHECK(ir::kernel_outputs(c)[0].name == "Y");
  CHECK(c.epilogue->result_of == std::vector<int>{0, -1});
  // b(j) over (i, j, k): coefficient 1 on j only
  CHECK(c.epilogue->inputs[1].accesses[0].index[0].coeff == std::vector<std::int64_t>{0, 1, 0});
  // the product alone keeps its hash; every epilogue has its own
  CHECK(ops::matmul().hash() == ir::structural_hash_hex(ops::matmul().ir()));
  std::set<std::string> hashes{ops::matmul().hash(),         op.hash(),
                               ops::matmul_bias().hash(),    ops::matmul_bias_residual().hash(),
                               ops::matmul_nt_bias().hash(), ops::matmul_nt_bias_gelu().hash()};
  CHECK(hashes.size() == 6);
  CHECK(op.str().find("then bias_gelu = out_view<f32>(Y") != std::string::npos);
  CHECK(op.shape("b", {64, 48, 16}) == shape_t{48});
  CHECK(op.shape("Y", {64, 48, 16}) == shape_t{64, 48});
  CHECK(ops::batch_matmul_bias().shape("b", {2, 3, 5, 7, 11}) == shape_t{7});
  // one search space: the epilogue adds no parameter
  const std::vector<std::int64_t> n{2048, 3072, 768};
  const auto lim = lower::h200_limits();
  std::set<std::string> plain, fused;
  for (auto& p : tuning::make_parameters(ops::matmul().ir(), n, lim)) plain.insert(p.name());
  for (auto& p : tuning::make_parameters(c, n, lim)) fused.insert(p.name());
  CHECK(plain == fused);
}

TEST_CASE("with_epilogue refuses what one kernel cannot do, saying which rule") {
  auto [i, j] = indices<2>();
  // reads C at another point than the thread holds it (transposed)
  auto transposed =
      computation("transposed", out_view(out<float, "Y">(i, j)),
                  md_hom([](auto x) { return x; }, cc, cc), inp_view(in<float, "C">(j, i)));
  CHECK(error_of([&] {
          with_epilogue("bad", ops::matmul(), transposed);
        }).find("through the index function 'matmul' writes it with") != std::string::npos);
  // reads C twice (a stencil of the results)
  auto twice = computation("twice", out_view(out<float, "Y">(i, j)),
                           md_hom([](auto x, auto y) { return x + y; }, cc, cc),
                           inp_view(in<float, "C">(i, j), in<float, "C">(i, j + 1)));
  CHECK(error_of([&] { with_epilogue("bad", ops::matmul(), twice); }).find("must read 'C' once") !=
        std::string::npos);
  // the IR rules hold for IR built otherwise: rank, a second epilogue, a fused stage
  auto bias = ops::add_bias<float, "C">();
  ir::computation row = ops::row_sum().ir();  // results span one dimension
  CHECK(error_of([&] {
          ir::with_epilogue("bad", row, bias.ir());
        }).find("shape mismatch: 'add_bias' has 2 dimensions") != std::string::npos);
  auto once = ir::with_epilogue("once", ops::matmul().ir(), bias.ir());
  auto bias2 =
      computation("again", out_view(out<float, "Z">(i, j)),
                  md_hom([](auto y) { return y; }, cc, cc), inp_view(in<float, "Y">(i, j)));
  CHECK(error_of([&] { ir::with_epilogue("twice", once, bias2.ir()); }).find("already has") !=
        std::string::npos);
  CHECK(error_of([&] { ir::make_fused("pair", once, bias2.ir()); }).find("has the epilogue") !=
        std::string::npos);
  ir::computation no_result = bias.ir();
  no_result.inputs[0].name = "D";
  CHECK(error_of([&] {
          ir::with_epilogue("bad", ops::matmul().ir(), no_result);
        }).find("reads no output of 'matmul'") != std::string::npos);
}

TEST_CASE("rules: an epilogue has a last combining step, so no atomics across blocks") {
  auto op = ops::matmul_bias();
  const std::vector<std::int64_t> sizes{64, 64, 512};
  const auto lim = lower::h200_limits();
  lower::config c = lower::default_config(op.ir(), sizes);
  c.dims[2].blk = 4;
  c.blk_combine = lower::block_combine::atomic;
  CHECK(error_of([&] {
          lower::check(c, op.ir(), sizes, lim);
        }).find("an epilogue needs a last combining step") != std::string::npos);
  CHECK_NOTHROW(lower::check(c, ops::matmul().ir(), sizes, lim));  // the product alone may
  for (auto k : {lower::block_combine::second_kernel, lower::block_combine::last_block}) {
    c.blk_combine = k;
    CHECK_NOTHROW(lower::check(c, op.ir(), sizes, lim));
    auto p = lower::lower(op.ir(), sizes, c, lim);
    CHECK(p.red_blocks == 4);
    CHECK(p.inputs.size() == 3);  // A, B, b
    REQUIRE(p.outputs.size() == 1);
    CHECK(p.outputs[0].shape == std::vector<std::int64_t>{64, 64});
    CHECK(lower::to_string(p).find("epilogue add_bias") != std::string::npos);
  }
}

#if MDH_WITH_OPENCL
namespace {
opencl::context& ctx() {
  static opencl::context c;
  return c;
}

// Runs op's configurations on every write path against the plain composition; returns how many.
template <class Op>
int sweep_opencl(const Op& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
  auto lim = ctx().limits();
  lim.name = "pocl-cpu";
  std::vector<test::host_buffer> in, want;
  make_data(op, sizes, seed, in, want);
  const std::int64_t L = test::reduction_length(op.ir(), sizes);
  std::array<int, paths> found{};
  auto cfgs = configs_on_every_path(op.ir(), sizes, lim, seed, 2, found);
  for (int q = 0; q < paths; ++q) {
    INFO(op.name(), ": ", path_name[q]);
    CHECK(found[q] >= 1);
  }
  int n = 0;
  for (auto& cfg : cfgs) {
    auto plan = lower::lower(op.ir(), sizes, cfg, lim);
    INFO(op.name(), " ", path_name[path_of(plan)], " ", lower::to_string(cfg));
    const int launches = plan.blk_combine == lower::block_combine_kind::last_block ? 2 : 1;
    auto o = test::check_opencl(ctx(), plan, in, want, L, launches);
    CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);
    ++n;
  }
  return n;
}
}  // namespace

TEST_CASE("the printed kernel applies the epilogue where the final values are written") {
  auto op = ops::matmul_bias_residual();
  const std::vector<std::int64_t> sizes{32, 48, 40};
  const auto lim = lower::h200_limits();
  lower::config c = lower::default_config(op.ir(), sizes);
  c.dims[2].blk = 2;
  c.blk_combine = lower::block_combine::second_kernel;
  auto p = lower::lower(op.ir(), sizes, c, lim);
  const std::string src = opencl::emit(p);
  // the main kernel writes partials only; the second kernel applies it and writes out0 (Y)
  const auto final_kernel = src.find(p.name + "_final(");
  REQUIRE(final_kernel != std::string::npos);
  CHECK(src.find("mdh_epilogue(acc0, in2[") > final_kernel);
  CHECK(src.find("mdh_epilogue(") < final_kernel);  // the function itself, before
  CHECK(src.find("out0[") > final_kernel);
}

TEST_CASE("GEMM epilogues on OpenCL match the product followed by the point-wise computation") {
  int n = 0;
  // sizes that divide no tile
  n += sweep_opencl(ops::matmul_bias(), {37, 45, 70}, 21);
  n += sweep_opencl(ops::matmul_bias_gelu(), {33, 52, 61}, 22);
  n += sweep_opencl(ops::matmul_bias_residual(), {29, 40, 77}, 23);
  n += sweep_opencl(ops::matmul_nt_bias_gelu(), {31, 36, 50}, 24);
  n += sweep_opencl(ops::matmul_nt_bias_residual(), {26, 44, 63}, 25);
  n += sweep_opencl(ops::batch_matmul_bias(), {2, 3, 9, 20, 33}, 26);
  MESSAGE(n, " epilogue kernels checked on OpenCL");
  CHECK(n >= 6 * 6);
}

TEST_CASE("tuning GEMM + bias + GELU on OpenCL writes a usable parameter file") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("mdh_epilogue_tune_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto op = ops::matmul_bias_gelu();
  const std::vector<std::int64_t> sizes{64, 96, 48};
  tuning::opencl_target target(ctx());
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 12;
  opt.progress = atf::progress_mode::off;
  // the plain product first: its tuned configuration is where the epilogue's search starts
  opt.log = dir / "mm.log.jsonl";
  opt.parameter_file = dir / "mm.json";
  auto plain = tuning::tune(ops::matmul(), sizes, target, opt);
  opt.log = dir / "mbg.log.jsonl";
  opt.parameter_file = dir / "mbg.json";
  auto start =
      tuning::product_start(opt.parameter_file, op.ir(), sizes, target.id(), target.limits());
  const bool valid_with_epilogue =
      error_of([&] { lower::check(plain.best, op.ir(), sizes, target.limits()); }).empty();
  CHECK(start.has_value() == valid_with_epilogue);
  if (start) CHECK(tuning::to_config(*start, op.ir(), sizes) == plain.best);
  CHECK_FALSE(tuning::product_start(opt.parameter_file, ops::matmul().ir(), sizes, target.id(),
                                    target.limits()));  // no epilogue: no product start
  auto r = tuning::tune(op, sizes, target, opt);
  CHECK(r.run.evaluations >= 12);
  CHECK(r.record.work.computation == "matmul_bias_gelu");
  CHECK(r.record.work.hash == op.hash());
  auto rec = tuning::read_parameter_file(opt.parameter_file);
  auto cfg = lower::config_from_json(rec.configuration, op.ir());
  CHECK(cfg == r.best);
  std::vector<test::host_buffer> in, want;
  make_data(op, sizes, 99, in, want);
  auto plan = lower::lower(op.ir(), sizes, cfg, target.limits());
  auto o = test::check_opencl(ctx(), plan, in, want, test::reduction_length(op.ir(), sizes), 2);
  CHECK_MESSAGE(o.mismatch.empty(), o.mismatch);
  fs::remove_all(dir);
}
#endif

#if MDH_WITH_CUDA
TEST_CASE("GEMM epilogue kernels compile with NVRTC for sm_90 on every write path") {
  const auto lim = lower::h200_limits();
  int n = 0;
  auto sweep = [&](const auto& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
    std::array<int, paths> found{};
    for (auto& cfg : configs_on_every_path(op.ir(), sizes, lim, seed, 1, found)) {
      INFO(op.name(), " ", lower::to_string(cfg));
      auto plan = lower::lower(op.ir(), sizes, cfg, lim);
      cuda::module_cache cache("");  // memory only
      CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
      ++n;
    }
  };
  sweep(ops::matmul_bias_gelu(), {2048, 3072, 768}, 31);
  sweep(ops::matmul_bias_residual(), {2048, 768, 3072}, 32);
  sweep(ops::matmul_nt_bias_gelu(), {2048, 3072, 768}, 33);
  sweep(ops::batch_matmul_bias(), {16, 12, 128, 64, 128}, 34);
  sweep(with_epilogue("bf16_bias_gelu", ops::matmul<bf16>(), ops::bias_gelu<bf16, "C">()),
        {2048, 3072, 768}, 35);
  CHECK(n >= 5 * 5);
}
#endif
