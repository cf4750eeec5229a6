// SPDX-License-Identifier: MIT
// The BERT encoder layer (expressions/bert_layer.hpp, backends/bert_layer.hpp):
// - the attention's computations (views into the [batch, seq, 3, heads, d] projection) against
//   plain loops, through mdh::reference;
// - the whole layer on OpenCL (PoCL) at batch 2, seq 13 (no tile divides it), hidden 64, 4
//   heads, FFN 128, with a padding mask, fp32, bf16 and fp32 with tf32x3 weight products,
//   default and random valid configurations, against the independent double-precision reference
//   (expressions/bert_layer_reference.hpp). Each kernel is checked on the inputs the previous
//   kernels produced (relative L2 error <= tuning::tolerance(type, its reduction length)), and
//   the layer's output against the reference of the whole layer (<= 9 x the tolerance of the
//   longest reduction: seven kernels, nine reductions, each within its own bound);
// - the attention in its two forms (one kernel, three), and the loader's choice between them
//   from the costs in a folder of parameter files;
// - the tf32x3 layer's stages: the four weight products at precision tf32x3, the rest ieee;
// - every stage compiled by NVRTC for sm_90 at BERT-base sizes (default, random SIMT and, for
//   bf16 and tf32x3 products, tensor-core configurations).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <backends/bert_layer.hpp>
#include <expressions/bert_layer.hpp>
#include <expressions/bert_layer_reference.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/tuning/verify.hpp>
#if MDH_WITH_CUDA
#include <backends/cuda/program.hpp>
#include <mdh/lower/mma.hpp>
#include <mdh/lower/mma_support.hpp>
#endif

using namespace mdh;
namespace ref = mdh::ops::bert_reference;

namespace {

const ops::bert_shape small{2, 13, 64, 4, 128};

// buffer_ref of `t`'s memory seen with another shape of no more elements (the attention's views).
template <class T>
buffer_ref view(const host_tensor<T>& t, shape_t shape) {
  REQUIRE(element_count(shape) <= t.size());
  return buffer_ref{const_cast<T*>(t.data()), scalar_type_of<T>(), std::move(shape)};
}

}  // namespace

TEST_CASE("attention views: shapes, and scores and context against plain loops") {
  const ops::bert_shape s{2, 5, 12, 3, 16};
  const std::int64_t T = s.tokens(), N = s.hidden;
  auto scores = ops::attention_scores(s);
  auto context = ops::attention_context(s);
  const std::vector<std::int64_t> ns{s.batch, s.heads, s.seq, s.seq, s.head_dim()};
  const std::vector<std::int64_t> nc{s.batch, s.heads, s.seq, s.head_dim(), s.seq};
  // Q, K, V are rows 3t, 3t+1, 3t+2 of the projection seen as [3T, hidden]; only the outermost
  // extent of each view differs from the buffer's (the rows after the last one it reads).
  CHECK(scores.shape("Q", ns) == shape_t{3 * T - 2, N});
  CHECK(scores.shape("K", ns) == shape_t{3 * T - 1, N});
  CHECK(scores.shape("mask", ns) == shape_t{s.batch, s.seq});
  CHECK(context.shape("V", nc) == shape_t{3 * T, N});
  CHECK(context.shape("P", nc) == shape_t{s.batch, s.heads, s.seq, s.seq});
  CHECK(context.shape("ctx", nc) == shape_t{T, N});

  auto in = ref::random_inputs<float>(s, 3);
  host_tensor<float> qkv({T, 3 * N});
  qkv.randomize(11);
  host_tensor<float> y({s.batch, s.heads, s.seq, s.seq});
  std::vector<buffer_ref> sin{view(qkv, {3 * T - 2, N}), view(qkv, {3 * T - 1, N}), in.at("mask")};
  std::vector<buffer_ref> sout{y};
  reference(scores, ns, sin, sout);
  auto want_s = ref::scores(ref::to_double(qkv), ref::to_double(in.at("mask")), s);
  CHECK(ref::relative_l2(ref::to_double(y), want_s) < 1e-6);

  host_tensor<float> p({s.batch, s.heads, s.seq, s.seq}), ctx({T, N});
  p.randomize(12, 0.0, 1.0);
  std::vector<buffer_ref> cin{p, view(qkv, {3 * T, N})}, cout{ctx};
  reference(context, nc, cin, cout);
  auto want_c = ref::context(ref::to_double(p), ref::to_double(qkv), s);
  CHECK(ref::relative_l2(ref::to_double(ctx), want_c) < 1e-6);

  // the masked keys get -10000 added: far below every kept score
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t j = 0; j < s.seq; ++j)
      CHECK((y.at({b, 0, 0, j}) < -9000.0f) == (j >= ref::valid_keys(s, b)));
}

TEST_CASE("bert_shape and the stage table") {
  CHECK_THROWS_WITH_AS(ops::bert_shape({1, 8, 64, 5, 128}).check(),
                       doctest::Contains("multiple of heads"), error);
  CHECK_THROWS_WITH_AS(ops::bert_shape({0, 8, 64, 4, 128}).check(), doctest::Contains("batch"),
                       error);
  for (auto form : {ops::attention_form::one_kernel, ops::attention_form::three_kernels}) {
    std::vector<std::string> names;
    ops::for_each_bert_stage<float>(
        small,
        [&](const ops::bert_stage& st, const auto& comp) {
          names.push_back(st.name);
          // every tensor a stage names exists, with room for the stage's view of it
          auto tensors = ops::bert_layer_tensors(small, form);
          auto find = [&](const std::string& n) {
            auto it =
                std::find_if(tensors.begin(), tensors.end(), [&](auto& t) { return t.name == n; });
            REQUIRE(it != tensors.end());
            return it->shape;
          };
          const auto& c = comp.ir();
          auto ins = ir::kernel_inputs(c), outs = ir::kernel_outputs(c);
          if constexpr (is_fused_v<std::decay_t<decltype(comp)>>) {
            (void)ins, (void)outs;
          } else {
            REQUIRE(ins.size() == st.inputs.size());
            REQUIRE(outs.size() == st.outputs.size());
            for (std::size_t k = 0; k < ins.size(); ++k)
              CHECK(element_count(comp.shape(ins[k].name, st.sizes)) <=
                    element_count(find(st.inputs[k])));
            for (std::size_t k = 0; k < outs.size(); ++k)
              CHECK(element_count(comp.shape(outs[k].name, st.sizes)) ==
                    element_count(find(st.outputs[k])));
          }
        },
        form);
    if (form == ops::attention_form::one_kernel)
      CHECK(names == std::vector<std::string>{"qkv", "attention", "attn_out", "ln1", "ffn_up",
                                              "ffn_down", "ln2"});
    else
      CHECK(names == std::vector<std::string>{"qkv", "scores", "softmax", "context", "attn_out",
                                              "ln1", "ffn_up", "ffn_down", "ln2"});
  }
}

// A 16-bit layer holds the row statistics (layernorm's sums, softmax's max and sum) in float,
// as the stages write and read them (expressions/layernorm.hpp, softmax.hpp): every buffer of
// every stage, in both attention forms, has its tensor's type.
TEST_CASE("the BERT layer's tensors have the types its stages read and write") {
  auto check = [&]<class T>(T) {
    for (auto form : {ops::attention_form::one_kernel, ops::attention_form::three_kernels}) {
      const auto tensors = ops::bert_layer_tensors(small, form);
      auto type_of = [&](const std::string& n) {
        auto it =
            std::find_if(tensors.begin(), tensors.end(), [&](auto& t) { return t.name == n; });
        REQUIRE(it != tensors.end());
        return it->statistic ? scalar_type_of<compute_type_t<T>>() : scalar_type_of<T>();
      };
      int statistics = 0;
      ops::for_each_bert_stage<T>(
          small,
          [&](const ops::bert_stage& st, const auto& comp) {
            INFO(st.name, " (", ops::to_string(form), ")");
            const auto& ins = ir::kernel_inputs(comp.ir());
            const auto& outs = ir::kernel_outputs(comp.ir());
            REQUIRE(ins.size() == st.inputs.size());
            REQUIRE(outs.size() == st.outputs.size());
            for (std::size_t k = 0; k < ins.size(); ++k)
              CHECK(ins[k].type == type_of(st.inputs[k]));
            for (std::size_t k = 0; k < outs.size(); ++k) {
              CHECK(outs[k].type == type_of(st.outputs[k]));
              statistics +=
                  outs[k].type == scalar_type::f32 && scalar_type_of<T>() != scalar_type::f32;
            }
          },
          form);
      // ln1's and ln2's two sums, and with three kernels the softmax's max and sum
      if (scalar_type_of<T>() != scalar_type::f32)
        CHECK(statistics == (form == ops::attention_form::one_kernel ? 4 : 6));
    }
  };
  check(float{});
  check(bf16{});
  check(f16{});
}

TEST_CASE("tf32x3 products: the four weight products split TF32, the other stages IEEE") {
  const std::set<std::string> products{"qkv", "attn_out", "ffn_up", "ffn_down"};
  for (auto form : {ops::attention_form::one_kernel, ops::attention_form::three_kernels}) {
    int split = 0;
    ops::for_each_bert_stage<float>(
        small,
        [&](const ops::bert_stage& st, const auto& comp) {
          const auto w = tuning::workload::of(comp.ir(), st.sizes);
          INFO(st.name);
          CHECK(w.precision == (products.count(st.name) ? "tf32x3" : "ieee"));
          split += w.precision == "tf32x3";
        },
        form, ir::precision::tf32x3);
    CHECK(split == 4);
  }
  // ieee, the default, leaves the products as built: the f32 layer's parameter files still fit
  ops::for_each_bert_stage<float>(small, [&](const ops::bert_stage& st, const auto& comp) {
    if (st.name == "qkv")
      CHECK(ir::structural_hash_hex(comp.ir()) == ops::matmul_bias<float>().hash());
  });
  // a 16-bit layer's products have no fp32 operands to split
  CHECK_THROWS_WITH_AS(ops::for_each_bert_stage<bf16>(
                           small, [](const auto&, const auto&) {}, ops::attention_form::one_kernel,
                           ir::precision::tf32x3),
                       doctest::Contains("precision tf32x3 applies to fp32 contractions"), error);
}

#if MDH_WITH_OPENCL
namespace {

// Per stage, the reference of that stage on the kernels' own inputs; then the whole layer.
template <class T, class Seq>
void check_layer(Seq& layer, const std::map<std::string, host_tensor<T>>& inputs,
                 const ref::tensors& whole, const std::string& what) {
  const ops::bert_shape& s = small;
  const scalar_type t = scalar_type_of<T>();
  auto got = [&](const char* n) { return ref::to_double(layer.download(n)); };
  auto given = ref::as_doubles(inputs);
  const std::int64_t Tk = s.tokens(), N = s.hidden, F = s.ffn;
  auto qkv = got("QKV"), ctx = got("ctx"), attn = got("attn");
  auto h1 = got("H1"), f1 = got("F1"), f2 = got("F2"), y = got("Y");
  struct stage_check {
    const char* name;
    const ref::vec& got;
    ref::vec want;
    std::int64_t k;
  };
  std::vector<stage_check> checks;
  checks.push_back(
      {"qkv", qkv, ref::linear(given["X"], given["Wqkv"], given["bqkv"], Tk, N, 3 * N), N});
  // the attention, one kernel: scores over the head dim, then softmax and P V over the keys
  const auto p = ref::softmax(ref::scores(qkv, given["mask"], s), s.batch * s.heads * s.seq, s.seq);
  checks.push_back({"attention", ctx, ref::context(p, qkv, s),
                    tuning::reduction_length(ops::attention<T>(s).ir(), ops::attention_sizes(s))});
  checks.push_back({"attn_out", attn,
                    ref::plus(ref::linear(ctx, given["Wo"], given["bo"], Tk, N, N), given["X"]),
                    N});
  checks.push_back({"ln1", h1, ref::layernorm(attn, given["gamma1"], given["beta1"], Tk, N), N});
  checks.push_back(
      {"ffn_up", f1, ref::gelu(ref::linear(h1, given["W1"], given["b1"], Tk, N, F)), N});
  checks.push_back(
      {"ffn_down", f2, ref::plus(ref::linear(f1, given["W2"], given["b2"], Tk, F, N), h1), F});
  checks.push_back({"ln2", y, ref::layernorm(f2, given["gamma2"], given["beta2"], Tk, N), N});
  for (auto& c : checks) {
    const double err = ref::relative_l2(c.got, c.want), tol = tuning::tolerance(t, c.k);
    INFO(what, ": stage ", c.name, " relative L2 error ", err, " (bound ", tol, ")");
    CHECK(err <= tol);
  }
  const double tol = 9 * tuning::tolerance(t, std::max({N, F, s.seq}));
  const double err = ref::relative_l2(y, whole.at("Y"));
  INFO(what, ": the layer's output, relative L2 error ", err, " (bound ", tol, ")");
  CHECK(err <= tol);
  MESSAGE(what << ": layer output relative L2 error " << err << " (bound " << tol << ")");
}

template <class T>
void run_layer_sweep(int random_configs, std::uint64_t seed,
                     ir::precision products = ir::precision::ieee) {
  static opencl::context ctx;
  const auto lim = ctx.limits();
  auto inputs = ref::random_inputs<T>(small, seed);
  const auto whole = ref::layer(ref::as_doubles(inputs), small);
  for (int round = 0; round <= random_configs; ++round) {
    std::mt19937_64 rng(seed * 1000 + std::uint64_t(round));
    auto layer = load_bert_layer<T>(
        opencl_sequence_backend{&ctx}, small,
        [&](const ops::bert_stage& st, const auto& comp) {
          const auto& c = comp.ir();
          auto cfg = round == 0 ? lower::default_config(c, st.sizes)
                                : lower::random_config(c, st.sizes, lim, rng, {64, 2000});
          return stage_plan{lower::lower(c, st.sizes, cfg, lim),
                            round == 0 ? "default" : "random " + lower::to_string(cfg)};
        },
        ops::attention_form::one_kernel, products);
    for (auto& [name, t] : inputs) layer.upload(name, t);
    layer.launch();
    layer.finish();
    std::string what = std::string(products == ir::precision::ieee ? short_name(scalar_type_of<T>())
                                                                   : ir::to_string(products)) +
                       (round == 0 ? " default configurations"
                                   : " random configurations #" + std::to_string(round));
    for (std::size_t k = 0; k < layer.size(); ++k) INFO(layer.at(k).name, ": ", layer.at(k).origin);
    check_layer<T>(layer, inputs, whole, what);
  }
}

}  // namespace

TEST_CASE("the BERT layer on OpenCL, fp32: default and random configurations") {
  run_layer_sweep<float>(2, 1);
}

TEST_CASE("the BERT layer on OpenCL, bf16: default and random configurations") {
  run_layer_sweep<bf16>(1, 2);
}

// Without tensor cores tf32x3 computes as IEEE fp32: held to fp32's bounds.
TEST_CASE(
    "the BERT layer on OpenCL, fp32 with tf32x3 products: default and random configurations") {
  run_layer_sweep<float>(1, 3, ir::precision::tf32x3);
}

TEST_CASE("the attention form: the one whose tuned stages add up to less time runs") {
  static opencl::context ctx;
  const auto lim = ctx.limits();
  const auto dev = tuning::device_id_of("opencl", lim);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mdh_attention_form_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  // a record of the default configuration for each attention stage of `form`, costing `us`
  auto write_records = [&](ops::attention_form form, double us) {
    ops::for_each_bert_stage<float>(
        small,
        [&](const ops::bert_stage& st, const auto& comp) {
          if (!st.attention) return;
          const auto w = tuning::workload::of(comp.ir(), st.sizes);
          nlohmann::json cfg = lower::default_config(comp.ir(), st.sizes);
          tuning::write_parameter_file(dir / tuning::file_name(w), {w, dev, cfg, us});
        },
        form);
  };
  auto form_of = [&] { return choose_attention_form<float>(small, dir, dev); };
  CHECK(form_of().form == ops::attention_form::one_kernel);  // nothing tuned
  CHECK(form_of().why.find("neither") != std::string::npos);
  write_records(ops::attention_form::three_kernels, 10);  // three stages: 30 us
  CHECK(form_of().form == ops::attention_form::three_kernels);
  CHECK(form_of().cost[1] == doctest::Approx(30));
  write_records(ops::attention_form::one_kernel, 50);
  CHECK(form_of().form == ops::attention_form::three_kernels);
  CHECK(form_of().why == "tuned: one kernel 50 us, three kernels 30 us");
  write_records(ops::attention_form::one_kernel, 20);
  CHECK(form_of().form == ops::attention_form::one_kernel);
  write_records(ops::attention_form::three_kernels, 5);

  // the loader runs the three kernels from those files, and the layer still matches
  auto inputs = ref::random_inputs<float>(small, 3);
  const auto whole = ref::layer(ref::as_doubles(inputs), small);
  attention_form_choice chosen;
  auto layer = load_bert_layer<float>(opencl_sequence_backend{&ctx}, small, dir, nullptr, &chosen);
  CHECK(chosen.form == ops::attention_form::three_kernels);
  REQUIRE(layer.size() == 9);
  CHECK(layer.at(1).name == "scores");
  CHECK(layer.at(1).origin == dir.string());
  for (auto& [name, t] : inputs) layer.upload(name, t);
  layer.launch();
  layer.finish();
  check_layer<float>(layer, inputs, whole, "three-kernel attention from parameter files");
  // the scores and P in memory match the reference's
  CHECK(ref::relative_l2(ref::to_double(layer.download("P")), whole.at("P")) <=
        tuning::tolerance(scalar_type::f32, small.head_dim()));
  std::filesystem::remove_all(dir);
}
#endif

#if MDH_WITH_CUDA
namespace {
template <class T>
int compile_stages(const ops::bert_shape& s, std::uint64_t seed,
                   ir::precision products = ir::precision::ieee) {
  const auto lim = lower::h200_limits();
  std::mt19937_64 rng(seed);
  int n = 0;
  auto visit = [&](const ops::bert_stage& st, const auto& comp) {
    const auto& c = comp.ir();
    std::vector<decltype(lower::default_config(c, st.sizes))> cfgs{
        lower::default_config(c, st.sizes), lower::random_config(c, st.sizes, lim, rng)};
    if constexpr (!is_fused_v<std::decay_t<decltype(comp)>> &&
                  !is_produced_v<std::decay_t<decltype(comp)>>)
      if (lower::mma_supported(c)) cfgs.push_back(lower::random_mma_config(c, st.sizes, lim, rng));
    for (auto& cfg : cfgs) {
      INFO(st.name, " ", to_string(st.sizes), " ", lower::to_string(cfg));
      auto plan = lower::lower(c, st.sizes, cfg, lim);
      cuda::module_cache cache("");  // memory only
      CHECK_NOTHROW(cuda::compile(plan, "sm_90", cache));
      ++n;
    }
  };
  ops::for_each_bert_stage<T>(s, visit, ops::attention_form::one_kernel, products);
  return n;
}
}  // namespace

TEST_CASE("every stage of the layer compiles with NVRTC for sm_90 (BERT-base sizes)") {
  const ops::bert_shape base{16, 128, 768, 12, 3072};
  CHECK(compile_stages<float>(base, 5) >= 14);
  // bf16: the four products also with a tensor-core configuration (the one-kernel attention has
  // no tensor-core path yet)
  CHECK(compile_stages<bf16>(base, 6) >= 14 + 4);
  // tf32x3: the four products also with a tensor-core configuration (three m16n8k8.tf32 each)
  CHECK(compile_stages<float>(base, 8, ir::precision::tf32x3) >= 14 + 4);
  CHECK(compile_stages<float>(small, 7) >= 14);
}
#endif
