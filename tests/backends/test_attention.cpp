// SPDX-License-Identifier: MIT
// Attention as one kernel (expressions/attention.hpp, mdh/lower/producer_passes.hpp):
// - the lowering on the CPU: the plan's roles and tiles, and the errors for bad sizes, bad
//   configurations and pairs the lowering cannot take;
// - on OpenCL (PoCL): the kernel against mdh::reference on random non-zero inputs with a padding
//   mask, fp32 and bf16, the default and random valid configurations, sequence lengths and head
//   dims that no tile divides; relative L2 error <= tuning::tolerance(type, L) with L the
//   reduction_length of the pair, (sqrt(D) + sqrt(S) + 10)^2: the f32 bounds of the two
//   reductions in sequence (the scores over the head dim, the keys over the sequence) added;
// - the tensor-core kernel (mma = 1): its plan, copies and rules; NVRTC compiles its starts and
//   random draws for sm_90 (and f16 for sm_80) at BERT-base and odd shapes.
// - NVRTC compiles every generated CUDA kernel for sm_90 (BERT-base sizes and the small ones).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <expressions/attention.hpp>
#include <mdh/lower/c_printer.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/producer_passes.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/producer_space.hpp>
#if MDH_WITH_OPENCL
#include <backends/opencl/emit.hpp>
#include <backends/opencl/runtime.hpp>
#endif
#if MDH_WITH_CUDA
#include <backends/cuda/emit.hpp>
#include <backends/cuda/program.hpp>
#endif

using namespace mdh;

namespace {

// Small shapes: seq 13 and 7 (no tile divides them), head dims 16 and 12.
const ops::bert_shape shapes[] = {{2, 13, 64, 4, 8}, {1, 7, 36, 3, 8}};

template <class T>
struct attention_data {
  ops::bert_shape s;
  host_tensor<T> qkv, mask;
  std::vector<std::int64_t> sizes;

  attention_data(const ops::bert_shape& shape, std::uint64_t seed)
      : s(shape),
        qkv({shape.tokens(), 3 * shape.hidden}),
        mask({shape.batch, shape.seq}, T(1)),
        sizes(ops::attention_sizes(shape)) {
    qkv.randomize(seed, -1, 1);
    // the last key of every sequence but the first is padding
    for (std::int64_t b = 1; b < s.batch; ++b) mask.data()[b * s.seq + s.seq - 1] = T(0);
  }
  template <class A>
  std::vector<buffer_ref> inputs(const A& att) {
    auto view = [&](const char* name) {
      buffer_ref r = qkv;
      r.shape = att.shape(name, sizes);
      return r;
    };
    return {view("Q"), view("K"), buffer_ref(mask), view("V")};
  }
  // two reductions in sequence (tuning::reduction_length of a with_producer pair)
  std::int64_t reduction_length() const {
    return tuning::reduction_length(ops::attention<T>(s).ir(), sizes);
  }
};

}  // namespace

TEST_CASE("attention lowers to one kernel: roles, tiles, launch") {
  const ops::bert_shape s{2, 13, 64, 4, 8};
  auto att = ops::attention<float>(s);
  const auto n = ops::attention_sizes(s);
  auto plan = lower::lower(att.ir(), n, lower::producer_config{}, lower::h200_limits());
  const auto& p = plan.producer;
  CHECK(p.on);
  CHECK(plan.kernels.size() == 1);
  CHECK(p.row_dim == 2);
  CHECK(p.key_dim == 4);
  CHECK(p.value_dim == 3);
  CHECK(p.batch_dims == std::vector<std::size_t>{0, 1});
  CHECK(p.depth == 16);
  REQUIRE(p.operands.size() == 2);
  CHECK(p.operands[0].row);
  CHECK(!p.operands[1].row);
  CHECK(plan.blocks == 2 * 4 * 1);  // batch x heads x ceil(13 / 32)
  CHECK(plan.threads == 128);
  CHECK(plan.inputs.size() == 4);
  CHECK(plan.outputs.size() == 1);
  CHECK(plan.outputs[0].shape == std::vector<std::int64_t>{26, 64});
  CHECK(lower::to_string(plan).find("with_producer plan") != std::string::npos);
}

TEST_CASE("attention: errors name the rule and the parameter") {
  const ops::bert_shape s{2, 13, 64, 4, 8};
  auto att = ops::attention<float>(s);
  const auto n = ops::attention_sizes(s);
  const auto lim = lower::h200_limits();
  lower::producer_config c;
  c.thr_i = 3;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, c, lim),
                       doctest::Contains("'thr_i divides t_i (each thread owns t_i / thr_i rows)' "
                                         "(parameter thr_i)"),
                       error);
  c = {};
  c.thr_i = 32, c.thr_j = 64, c.t_j = 64;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, c, lim),
                       doctest::Contains("threads per block <= 1024"), error);
  c = {};
  c.t_i = 1024, c.thr_i = 1;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, c, lim), doctest::Contains("registers"), error);
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), {2, 4, 13, 16, 13}, lower::producer_config{}, lim),
                       doctest::Contains("5 sizes given, expected 6"), error);
  // a head dim whose tiles do not fit in shared memory
  const ops::bert_shape big{1, 8, 2048, 1, 8};
  auto att_big = ops::attention<float>(big);
  c = {};
  c.t_i = 4, c.thr_i = 4, c.t_j = 64, c.thr_j = 64;
  CHECK_THROWS_WITH_AS(lower::lower(att_big.ir(), ops::attention_sizes(big), c, lim),
                       doctest::Contains("shared memory <= "), error);
  // a consumer that is not (s, 1, v) under online_softmax: plain attention_context-like sum
  auto [b, h, i, e, j] = indices<5>();
  auto sum = computation("sum_v",
                         out_view(out<float, "m">(b, h, i, e), out<float, "l">(b, h, i, e),
                                  out<float, "acc">(b, h, i, e)),
                         md_hom([](auto sc, auto v) { return std::make_tuple(sc, sc, v); }, cc, cc,
                                cc, cc, pw(ops::online_softmax())),
                         inp_view(in<float, "S">(b, h, i, j),
                                  in<float, "V">(3 * 13 * b + 3 * j + 2, 16 * h + e)))
                 .with_dim_names({"b", "h", "i", "e", "j"});
  auto bad = with_producer("bad", ops::attention_scores_produced<float>(s), sum);
  CHECK_THROWS_WITH_AS(lower::lower(bad.ir(), n, lower::producer_config{}, lim),
                       doctest::Contains("f(s, v) = (s, 1, v)"), error);
}

#if MDH_WITH_CUDA
TEST_CASE("attention on tensor cores: the plan, the copies, the rules") {
  const auto lim = lower::h200_limits();
  lower::producer_config c{64, 64, 4, 32, 8, 1, 1, 2};
  {  // BERT-base: 16-byte copies of every tile row, two stages
    const ops::bert_shape s{2, 128};
    auto att = ops::attention<bf16>(s);
    auto plan = lower::lower(att.ir(), ops::attention_sizes(s), c, lim);
    const auto& p = plan.producer;
    CHECK(plan.threads == 128);
    CHECK(plan.blocks == 2 * 12 * 2);
    CHECK(p.depth_padded == 64);
    CHECK(p.values_padded == 64);
    CHECK(p.operand_chunks);
    CHECK(p.value_chunks);
    CHECK(p.operands[1].stage_bytes == 64 * 72 * 2);
    CHECK(p.value_stage_bytes == 64 * 72 * 2);
    CHECK(plan.shared_bytes == 64 * 72 * 2 * 5);  // Q once, K and V twice
    const std::string src = lower::print_c(plan, cuda::dialect{});
    CHECK(src.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
    CHECK(src.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
    CHECK(src.find("mdh_c_combine(&mm, &ll, &r,") != std::string::npos);
    CHECK(src.find("cvt.rn.bf16x2.f32") != std::string::npos);
    // the step's column operands and values are two groups: the scores wait for the first
    // (three groups may still be in flight: this step's values, the next step's two), p V for
    // both
    const auto scores = src.find("// the producer: scores");
    CHECK(src.rfind("cp.async.wait_group 3", scores) != std::string::npos);
    CHECK(src.find("cp.async.wait_group 2", scores) < src.find("// acc += p V", scores));
    // the results through each warp's rows of shared memory [16][64 + 8], then 16-byte stores
    CHECK(p.results_chunks);
    CHECK(p.results_stride == 72);
    CHECK(lower::to_string(plan).find("results: each warp's rows [16][72] through shared memory") !=
          std::string::npos);
    CHECK(src.find("st.shared.b32") != std::string::npos);
    CHECK(src.find("st.global.v4.u32") != std::string::npos);
    CHECK(src.find("out0[") == std::string::npos);  // no element stores
    // one stage: the operands' group, then the values'
    auto one = c;
    one.stages = 1;
    const std::string src1 =
        lower::print_c(lower::lower(att.ir(), ops::attention_sizes(s), one, lim), cuda::dialect{});
    const auto scores1 = src1.find("// the producer: scores");
    CHECK(src1.rfind("cp.async.wait_group 1", scores1) != std::string::npos);
    CHECK(src1.find("cp.async.wait_group 0", scores1) < src1.find("// acc += p V", scores1));
  }
  {  // head dim 40: depth and values padded to 48, still 16-byte rows; f16
    const ops::bert_shape s{2, 77, 120, 3, 8};
    auto att = ops::attention<f16>(s);
    auto plan = lower::lower(att.ir(), ops::attention_sizes(s), c, lim);
    CHECK(plan.producer.depth_padded == 48);
    CHECK(plan.producer.values_padded == 48);
    CHECK(plan.producer.operand_chunks);
    const std::string src = lower::print_c(plan, cuda::dialect{});
    CHECK(src.find("zeros in the depth's padding columns (40 to 48)") != std::string::npos);
    CHECK(src.find("f32.f16.f16.f32") != std::string::npos);
    // 5 chunks a row of 40 values; the 77 rows end inside a tile: the last rows stay unwritten
    CHECK(plan.producer.results_chunks);
    CHECK(src.find("f < 80; f += 32") != std::string::npos);  // 16 rows x 5 chunks a warp
    CHECK(src.find("if (i < 77 && e < 40) {") != std::string::npos);
    CHECK(src.find("if (i < 77) {") != std::string::npos);
  }
  {  // head dim 12 (rows of 36 elements): element copies, so one stage only
    const ops::bert_shape s{2, 19, 36, 3, 8};
    auto att = ops::attention<bf16>(s);
    const auto n = ops::attention_sizes(s);
    CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, c, lim),
                         doctest::Contains("stages = 2 needs 16-byte copies"), error);
    c.stages = 1;
    auto plan = lower::lower(att.ir(), n, c, lim);
    CHECK(!plan.producer.operand_chunks);
    CHECK(!plan.producer.value_chunks);
    CHECK(!plan.producer.results_chunks);  // rows of 36 elements: not on the 16-byte grid
    const std::string src = lower::print_c(plan, cuda::dialect{});
    CHECK(src.find("cp.async") == std::string::npos);
    CHECK(src.find("st.global.v4") == std::string::npos);
    c.stages = 2;
  }
  const ops::bert_shape s{2, 128};
  const auto n = ops::attention_sizes(s);
  auto att = ops::attention<bf16>(s);
  auto att32 = ops::attention<float>(s);
  CHECK_THROWS_WITH_AS(lower::lower(att32.ir(), n, c, lim),
                       doctest::Contains("the values are f32 (tensor cores need bf16 or f16)"),
                       error);
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, c, lower::pocl_cpu_limits()),
                       doctest::Contains("(parameter mma): device pocl-cpu"), error);
  auto bad = c;
  bad.thr_i = 1;  // 64 rows a warp
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter thr_i): t_i=64 thr_i=1"), error);
  bad = c, bad.t_i = 128, bad.t_j = 128;  // 32 rows a warp: two m16 tiles of 144 registers
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("288 registers (2 m16 tiles, t_j=128"), error);
  bad = c, bad.thr_j = 16;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter thr_j): thr_j=16"), error);
  bad = c, bad.pad = 4;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter pad): pad=4"), error);
  bad = {}, bad.stages = 2;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter stages): stages=2, mma=0"), error);
  // a product whose other factor is not the operand: no tensor cores, the SIMT kernel still
  auto [b, h, i, j, d] = indices<5>();
  auto qk2 =
      computation("qk2", out_view(out<float, "S">(b, h, i, j)),
                  md_hom([](auto q, auto k) { return q * k * 2.0f; }, cc, cc, cc, cc, pw(add)),
                  inp_view(in<bf16, "Q">(3 * 128 * b + 3 * i, 64 * h + d),
                           in<bf16, "K">(3 * 128 * b + 3 * j + 1, 64 * h + d)))
          .with_dim_names({"b", "h", "i", "j", "d"});
  auto doubled = with_producer("doubled", qk2, ops::attention_softmax_v<bf16>(s));
  CHECK_THROWS_WITH_AS(lower::lower(doubled.ir(), n, c, lim),
                       doctest::Contains("not the product of its operands"), error);
  CHECK_NOTHROW(lower::lower(doubled.ir(), n, lower::producer_config{}, lim));
  bad = {}, bad.split = 2;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter split): split=2, mma=0"), error);
  bad = c, bad.split = 4;  // 128 keys in steps of 64: two steps, not four shares
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter split): split=4 with 2 key steps"), error);
  bad = c, bad.split = 3;
  CHECK_THROWS_WITH_AS(lower::lower(att.ir(), n, bad, lim),
                       doctest::Contains("(parameter split): split=3"), error);
  {  // split keys: twice the blocks, each half the steps; the last of a tile's two combines
    auto sc = c;
    sc.split = 2;
    auto plan = lower::lower(att.ir(), n, sc, lim);
    CHECK(plan.blocks == 2 * 12 * 2 * 2);
    REQUIRE(plan.partials.size() == 1);
    REQUIRE(plan.counters.size() == 1);
    CHECK(plan.counters[0].elements == 2 * 12 * 2);  // one per row tile
    // a thread's share: m and l of its 2 rows, 8 n8 fragments of 4 acc
    CHECK(plan.partials[0].elements == 2 * 12 * 2 * 2 * 128 * (4 + 8 * 4));
    const std::string src = lower::print_c(plan, cuda::dialect{});
    CHECK(src.find("const int step0 = zs * 2 / 2, step1 = (zs + 1) * 2 / 2;") != std::string::npos);
    CHECK(src.find("for (int step = step0; step < step1; ++step)") != std::string::npos);
    CHECK(src.find("atomicAdd(&cnt[tile], 1)") != std::string::npos);
    CHECK(src.find("mdh_c_combine(&m2, &l2, &a[n][c], zm, zl, za);") != std::string::npos);
    nlohmann::json file = sc;
    CHECK(file.at("split") == 2);
    CHECK(lower::config_from_json(file, att.ir()) == sc);
  }
  {  // edges: 128 rows and keys in tiles of 64 test no bounds; 77 keys in steps of 64 do
    auto plan = lower::lower(att.ir(), n, c, lim);
    CHECK(!plan.producer.rows_partial);
    CHECK(!plan.producer.keys_partial);
    const std::string src = lower::print_c(plan, cuda::dialect{});
    CHECK(src.find("j < 128") == std::string::npos);
    CHECK(src.find("i < 128") == std::string::npos);
    const ops::bert_shape odd{2, 77};
    auto att77 = ops::attention<bf16>(odd);
    auto plan77 = lower::lower(att77.ir(), ops::attention_sizes(odd), c, lim);
    CHECK(plan77.producer.rows_partial);
    CHECK(plan77.producer.keys_partial);
    const std::string src77 = lower::print_c(plan77, cuda::dialect{});
    CHECK(src77.find("j < 77 ? (i < 77 ? y : (float)0) : (-__int_as_float(0x7f800000))") !=
          std::string::npos);
  }
  // files: mma, stages and split only where mma is on
  CHECK(lower::to_map(lower::producer_config{}).count("mma") == 0);
  CHECK(lower::to_map(lower::producer_config{}).count("split") == 0);
  nlohmann::json file = c;
  CHECK(file.at("mma") == 1);
  CHECK(file.at("stages") == 2);
  CHECK(file.at("split") == 1);
  CHECK(lower::config_from_json(file, att.ir()) == c);
  file.erase("split");  // a file from before split keys: one block a row tile
  CHECK(lower::config_from_json(file, att.ir()) == c);
}
#endif

TEST_CASE("attention's search space: every point lowers, the starts are in it") {
  for (auto lim : {lower::h200_limits(), lower::pocl_cpu_limits()}) {
    const ops::bert_shape s{8, 512};
    auto att = ops::attention<bf16>(s);
    const auto n = ops::attention_sizes(s);
    const auto space = tuning::make_search_space(att.ir(), n, lim);
    const auto size = std::uint64_t(space.size());
    INFO(lim.name, ": ", size, " points");
    REQUIRE(size > 100);
    for (std::uint64_t k = 0; k < size; k += std::max<std::uint64_t>(1, size / 97)) {
      const auto cfg = tuning::to_config(space.at(k), att.ir(), n);
      INFO(lower::to_string(cfg));
      CHECK_NOTHROW(lower::lower(att.ir(), n, cfg, lim));
      CHECK(space.contains(tuning::to_space_configuration(cfg, att.ir(), n)));
    }
    for (auto& c : tuning::start_configurations(att.ir(), n, lim))
      CHECK(space.contains(tuning::to_space_configuration(c, att.ir(), n)));
    // a parameter file's configuration object, back and forth
    lower::producer_config c{64, 32, 16, 8, 1};
    nlohmann::json j = c;
    CHECK(lower::config_from_json(j, att.ir()) == c);
    j["t_k"] = 4;
    CHECK_THROWS_WITH_AS(lower::config_from_json(j, att.ir()),
                         doctest::Contains("unknown parameter 't_k'"), error);
  }
}

#if MDH_WITH_OPENCL
namespace {
template <class T>
void run_on_opencl(int random_configs, std::uint64_t seed) {
  static opencl::context ctx;
  const auto lim = ctx.limits();
  std::mt19937_64 rng(seed);
  for (const auto& s : shapes) {
    attention_data<T> data(s, seed + std::uint64_t(s.seq));
    auto att = ops::attention<T>(s);
    host_tensor<T> want({s.tokens(), s.hidden});
    const auto ins = data.inputs(att);
    const std::vector<buffer_ref> outs{buffer_ref(want)};
    reference(att, data.sizes, std::span<const buffer_ref>(ins), std::span<const buffer_ref>(outs));
    std::vector<lower::producer_config> cfgs{lower::producer_config{}};
    lower::producer_config tiny;  // one thread, one row, one key per step
    tiny.t_i = 1, tiny.t_j = 1, tiny.thr_i = 1, tiny.thr_j = 1, tiny.pad = 0;
    cfgs.push_back(tiny);
    for (int k = 0; k < random_configs; ++k)
      cfgs.push_back(lower::random_config(att.ir(), data.sizes, lim, rng));
    for (auto& cfg : cfgs) {
      INFO(short_name(scalar_type_of<T>()), " ", s.str(), " ", lower::to_string(cfg));
      auto plan = lower::lower(att.ir(), data.sizes, cfg, lim);
      opencl::program prog(ctx, plan);
      host_tensor<T> got({s.tokens(), s.hidden}, T(1234));  // every element must be written
      const auto in = data.inputs(att);
      std::vector<buffer_ref> out{buffer_ref(got)};
      prog.run(in, out);
      const std::string why = tuning::compare(got, want, data.reduction_length());
      CHECK_MESSAGE(why.empty(), why);
    }
  }
}
}  // namespace

TEST_CASE("attention on OpenCL, fp32: default, one-thread and random configurations") {
  run_on_opencl<float>(6, 11);
}
TEST_CASE("attention on OpenCL, bf16: default, one-thread and random configurations") {
  run_on_opencl<bf16>(3, 12);
}
#endif

#if MDH_WITH_CUDA
namespace {
template <class T>
int compile_all(const ops::bert_shape& s, int random_configs, std::uint64_t seed) {
  const auto lim = lower::h200_limits();
  std::mt19937_64 rng(seed);
  auto att = ops::attention<T>(s);
  const auto n = ops::attention_sizes(s);
  std::vector<lower::producer_config> cfgs{lower::producer_config{}};
  for (int k = 0; k < random_configs; ++k)
    cfgs.push_back(lower::random_config(att.ir(), n, lim, rng));
  int compiled = 0;
  for (auto& cfg : cfgs) {
    INFO(short_name(scalar_type_of<T>()), " ", s.str(), " ", lower::to_string(cfg));
    auto plan = lower::lower(att.ir(), n, cfg, lim);
    cuda::module_cache cache("");  // memory only
    CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
    ++compiled;
  }
  return compiled;
}
}  // namespace

TEST_CASE("every generated attention kernel compiles with NVRTC for sm_90") {
  CHECK(compile_all<float>({16, 128}, 4, 21) == 5);
  CHECK(compile_all<bf16>({8, 512}, 4, 22) == 5);
  CHECK(compile_all<float>(shapes[1], 2, 23) == 3);
}

TEST_CASE("every tensor-core attention kernel compiles with NVRTC for sm_80 and sm_90") {
  const ops::bert_shape cases[] = {
      {16, 128}, {8, 512}, {3, 13, 64, 4, 8}, {2, 77, 120, 3, 8}, {2, 19, 36, 3, 8}};
  const auto lim = lower::h200_limits();
  std::mt19937_64 rng(24);
  int compiled = 0;
  for (const auto& s : cases) {
    auto att = ops::attention<bf16>(s);
    auto att16 = ops::attention<f16>(s);
    const auto n = ops::attention_sizes(s);
    std::vector<lower::producer_config> cfgs;
    for (auto& c : tuning::start_configurations(att.ir(), n, lim))
      if (c.mma) cfgs.push_back(c);
    for (int k = 0; k < 3; ++k) cfgs.push_back(lower::random_mma_config(att.ir(), n, lim, rng));
    for (auto& cfg : cfgs) {
      INFO(s.str(), " ", lower::to_string(cfg));
      cuda::module_cache cache("");  // memory only
      CHECK_NOTHROW(cuda::compile(lower::lower(att.ir(), n, cfg, lim), "sm_90", cache));
      ++compiled;
    }
    INFO(s.str(), " f16 on sm_80 ", lower::to_string(cfgs.back()));
    cuda::module_cache cache("");
    CHECK_NOTHROW(cuda::compile(lower::lower(att16.ir(), n, cfgs.back(), lim), "sm_80", cache));
  }
  CHECK(compiled >= 5 * 4);
}

// An attention whose consumer epilogue also reads a tensor (a residual R added to the context):
// the results still leave through shared memory in 16-byte stores, the epilogue reading R at
// each result's row and value before the store; rows past the sizes (77 = 64 + 13) run no
// epilogue, so R is never read past its end.
TEST_CASE("tensor-core attention with an epilogue that reads a residual: 16-byte results") {
  const auto lim = lower::h200_limits();
  for (const std::int64_t seq : {128, 77}) {
    const ops::bert_shape s{2, seq};
    const std::int64_t S = s.seq, D = s.head_dim();
    auto [b, h, i, e, j] = indices<5>();
    auto sv =
        computation(
            "softmax_v",
            out_view(out<float, "m">(b, h, i, e), out<float, "l">(b, h, i, e),
                     out<float, "acc">(b, h, i, e)),
            md_hom([](auto sc, auto v) { return std::make_tuple(sc, 1.0f, mdh::cast<float>(v)); },
                   cc, cc, cc, cc, pw(ops::online_softmax())),
            inp_view(in<float, "S">(b, h, i, j), in<bf16, "V">(3 * S * b + 3 * j + 2, D * h + e)))
            .with_dim_names({"b", "h", "i", "e", "j"});
    auto [b2, h2, i2, e2] = indices<4>();
    auto norm =
        computation("normalize_residual", out_view(out<bf16, "ctx">(S * b2 + i2, D * h2 + e2)),
                    md_hom([](auto l, auto a, auto r) { return a / l + r; }, cc, cc, cc, cc),
                    inp_view(in<float, "l">(b2, h2, i2, e2), in<float, "acc">(b2, h2, i2, e2),
                             in<bf16, "R">(S * b2 + i2, D * h2 + e2)))
            .with_dim_names({"b", "h", "i", "e"});
    auto att = with_producer("attention_residual", ops::attention_scores_produced<bf16>(s),
                             with_epilogue("softmax_v_residual", sv, norm));
    const auto n = ops::attention_sizes(s);
    lower::producer_config c{64, 64, 4, 32, 8, 1, 1, 2};
    auto plan = lower::lower(att.ir(), n, c, lim);
    INFO("seq ", seq);
    CHECK(plan.producer.results_chunks);
    CHECK(plan.producer.rows_partial == (seq == 77));
    const std::string src = lower::print_c(plan, cuda::dialect{});
    const auto staged = src.find("into the warp's rows of shared memory");
    REQUIRE(staged != std::string::npos);
    CHECK(src.find("in4[", staged) < src.find("st.shared.b32", staged));  // R, per result
    CHECK(src.find("st.global.v4.u32", staged) != std::string::npos);
    if (seq == 77) CHECK(src.find("if (i < 77) {", staged) < src.find("in4[", staged));
    cuda::module_cache cache("");
    CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
  }
}
#endif
