// SPDX-License-Identifier: MIT
// A whole BERT encoder layer from mdh computations: QKV projection, masked attention (one
// md_hom and one kernel, reading the projection in place), output projection + bias +
// residual, layernorm, FFN up + bias + GELU, FFN down + bias + residual, layernorm - seven
// kernels, each with its parameter file from PARAMS_DIR (mdh-tune tune-layer writes them) or the
// default configuration. Checks the output against an independent double-precision CPU
// reference, prints per-stage and total times; on a CUDA device also the whole layer captured
// as one CUDA graph and replayed. --type tf32x3: fp32, the four weight products as three TF32
// products each on the tensor cores (near-fp32 accuracy, held to fp32's bound); both: f32 and bf16.
//   08_bert_layer [--type f32|bf16|tf32x3|both] [--params DIR=params] [--batch N] [--seq N]
//                 [--hidden N] [--heads N] [--ffn N] [--reps N]
// Sizes default to BERT-base at batch 16, seq 128 on a GPU and to batch 2, seq 13, hidden 64,
// 4 heads, FFN 128 without one (OpenCL on the CPU).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <backends/bert_layer.hpp>
#include <expressions/bert_layer.hpp>
#include <expressions/bert_layer_reference.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/any_target.hpp>
#if MDH_WITH_CUDA
#include <backends/cuda/graph.hpp>
#endif

using namespace mdh;

namespace {

struct options {
  std::string type = "both", params = "params";
  ops::bert_shape shape;
  bool sizes_given = false;
  int reps = 0;  // 0: 20 on a GPU, 2 on the CPU
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "08_bert_layer: %s\nusage: 08_bert_layer [--type f32|bf16|tf32x3|both] [--params DIR] "
      "[--batch N] [--seq N] [--hidden N] [--heads N] [--ffn N] [--reps N]\n",
      why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv, bool gpu) {
  options o;
  o.shape = gpu ? ops::bert_shape{16, 128, 768, 12, 3072} : ops::bert_shape{2, 13, 64, 4, 128};
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (k + 1 >= argc) usage(a + " needs a value");
    std::string v = argv[++k];
    auto number = [&] {
      try {
        std::size_t end = 0;
        long long n = std::stoll(v, &end);
        if (end != v.size() || n < 1) throw 0;
        return std::int64_t(n);
      } catch (...) {
        usage(a + " '" + v + "' is not a whole number >= 1");
      }
    };
    if (a == "--type")
      o.type = v;
    else if (a == "--params")
      o.params = v;
    else if (a == "--batch")
      o.shape.batch = number();
    else if (a == "--seq")
      o.shape.seq = number();
    else if (a == "--hidden")
      o.shape.hidden = number();
    else if (a == "--heads")
      o.shape.heads = number();
    else if (a == "--ffn")
      o.shape.ffn = number();
    else if (a == "--reps")
      o.reps = int(number());
    else
      usage("unknown option '" + a + "'");
  }
  if (o.type != "f32" && o.type != "bf16" && o.type != "tf32x3" && o.type != "both")
    usage("--type must be f32, bf16, tf32x3 or both, not '" + o.type + "'");
  try {
    o.shape.check();
  } catch (const error& e) {
    usage(e.what());
  }
  if (o.reps == 0) o.reps = gpu ? 20 : 2;
  return o;
}

std::string tune_command(const options& o, const std::string& type) {
  const auto& s = o.shape;
  return "mdh-tune tune-layer bert --batch " + std::to_string(s.batch) + " --seq " +
         std::to_string(s.seq) + " --hidden " + std::to_string(s.hidden) + " --heads " +
         std::to_string(s.heads) + " --ffn " + std::to_string(s.ffn) + " --type " + type +
         " --out " + o.params;
}

// Loads, runs once, checks against the reference; then `time_stage(k)` (ms of stage k) and
// `time_layer()` (ms of the whole layer) for the table. Returns false when the output differs.
template <class T, class Seq, class TimeStage, class TimeLayer>
bool run_and_report(Seq& layer, const attention_form_choice& form, const options& o,
                    const std::string& type, TimeStage&& time_stage, TimeLayer&& time_layer) {
  namespace ref = ops::bert_reference;
  std::printf("  attention: %s (%s)\n", ops::to_string(form.form), form.why.c_str());
  if (auto d = default_configured_stages(layer); !d.empty()) {
    std::string list;
    for (auto& n : d) list += (list.empty() ? "" : ", ") + n;
    std::fprintf(stderr,
                 "mdh: no parameter file in '%s' for %zu of %zu stages (%s): using the default "
                 "configuration; tune them with: %s\n",
                 o.params.c_str(), d.size(), layer.size(), list.c_str(),
                 tune_command(o, type).c_str());
  }
  auto inputs = ref::random_inputs<T>(o.shape, 42);
  for (auto& [name, t] : inputs) layer.upload(name, t);
  layer.launch();
  layer.finish();
  const auto want = ref::layer(ref::as_doubles(inputs), o.shape);
  const double err = ref::relative_l2(ref::to_double(layer.download("Y")), want.at("Y"));
  const std::int64_t longest = std::max({o.shape.hidden, o.shape.ffn, o.shape.seq});
  const double bound = 9 * tuning::tolerance(scalar_type_of<T>(), longest);
  std::printf(
      "%s: output vs the double-precision CPU reference: relative L2 error %.3g (bound %.3g)%s\n",
      type.c_str(), err, bound, err <= bound ? ", matches" : ", DIFFERS");
  std::printf("  %-10s %12s  %s\n", "stage", "ms", "configuration");
  double sum = 0;
  for (std::size_t k = 0; k < layer.size(); ++k) {
    const double ms = time_stage(k);
    sum += ms;
    std::printf("  %-10s %12.4f  %s\n", layer.at(k).name.c_str(), ms, layer.at(k).origin.c_str());
  }
  std::printf("  %-10s %12.4f  (sum of the stages)\n", "stages", sum);
  time_layer();
  return err <= bound;
}

// The layer of element type T, its weight products at precision `products`.
template <class T>
bool run_type(const options& o, const std::string& type,
              ir::precision products = ir::precision::ieee) {
#if MDH_WITH_CUDA
  if (tuning::cuda_device_present()) {
    static cuda::device dev(0);
    attention_form_choice form;
    auto layer = load_bert_layer<T>(cuda_sequence_backend{&dev}, o.shape, o.params, &std::cerr,
                                    &form, products);
    cuda::stream s;
    auto events_ms = [&](auto&& enqueue) {
      enqueue();  // warm-up
      CUevent a, b;
      MDH_CU(cuEventCreate, &a, CU_EVENT_DEFAULT);
      MDH_CU(cuEventCreate, &b, CU_EVENT_DEFAULT);
      MDH_CU(cuEventRecord, a, s.get());
      for (int r = 0; r < o.reps; ++r) enqueue();
      MDH_CU(cuEventRecord, b, s.get());
      MDH_CU(cuEventSynchronize, b);
      float ms = 0;
      MDH_CU(cuEventElapsedTime, &ms, a, b);
      cuda::driver_table().cuEventDestroy(a);
      cuda::driver_table().cuEventDestroy(b);
      return double(ms) / o.reps;
    };
    std::printf("BERT layer (%s) on %s (cuda), %s, mean of %d back-to-back launches:\n",
                o.shape.str().c_str(), dev.limits().name.c_str(), type.c_str(), o.reps);
    return run_and_report<T>(
        layer, form, o, type,
        [&](std::size_t k) { return events_ms([&] { layer.launch_step(k, s.get()); }); },
        [&] {
          const double per_call = events_ms([&] { layer.launch(s.get()); });
          cuda::graph g(s.get(), [&](CUstream st) { layer.launch(st); });
          const double replay = events_ms([&] { g.launch(s.get()); });
          std::printf("  %-10s %12.4f  (one launch per stage)\n  %-10s %12.4f  (one CUDA graph)\n",
                      "layer", per_call, "graph", replay);
          // the same graph with programmatic dependent launch between the stages (sm_90 on):
          // each stage's blocks start while the previous stage finishes; where no stage
          // combines blocks by atomics (whose order varies) the output must not change by a bit
          if (!layer.at(0).program->overlap_supported()) return;
          const host_buffer serial = layer.download("Y");
          layer.backend().overlap = true;
          cuda::graph go(s.get(), [&](CUstream st) { layer.launch(st); });
          const double overlapped = events_ms([&] { go.launch(s.get()); });
          layer.backend().overlap = false;
          const host_buffer y = layer.download("Y");
          const bool atomics = layer.combines_by_atomics();
          const bool same = std::memcmp(serial.data(), y.data(), y.bytes()) == 0;
          namespace ref = ops::bert_reference;
          const double diff = ref::relative_l2(ref::to_double(y), ref::to_double(serial));
          const double bound = tuning::tolerance(scalar_type_of<T>(), o.shape.hidden);
          if (atomics ? diff > bound : !same)
            throw error(
                "the layer's output differs between serial and overlapped launches "
                "(relative L2 " +
                std::to_string(diff) + ")");
          std::printf(
              "  %-10s %12.4f  (one CUDA graph, programmatic dependent launch; output "
              "%s)\n",
              "graph pdl", overlapped, same ? "identical" : "within the atomic combines' rounding");
        });
  }
#endif
#if MDH_WITH_OPENCL
  static opencl::context ctx;
  attention_form_choice form;
  auto layer = load_bert_layer<T>(opencl_sequence_backend{&ctx}, o.shape, o.params, &std::cerr,
                                  &form, products);
  auto wall_ms = [&](auto&& enqueue) {
    enqueue();
    layer.finish();
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < o.reps; ++r) enqueue();
    layer.finish();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
               .count() /
           o.reps;
  };
  std::printf("BERT layer (%s) on %s (opencl), %s, mean of %d runs:\n", o.shape.str().c_str(),
              ctx.limits().name.c_str(), type.c_str(), o.reps);
  return run_and_report<T>(
      layer, form, o, type, [&](std::size_t k) { return wall_ms([&] { layer.launch_step(k); }); },
      [&] {
        std::printf("  %-10s %12.4f  (one launch per stage)\n", "layer",
                    wall_ms([&] { layer.launch(); }));
      });
#else
  (void)o, (void)type, (void)products;
  throw error("this example was built without a backend that can run here");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv, tuning::cuda_device_present());
    bool ok = true;
    if (o.type == "f32" || o.type == "both") ok = run_type<float>(o, "f32") && ok;
    if (o.type == "bf16" || o.type == "both") ok = run_type<bf16>(o, "bf16") && ok;
    if (o.type == "tf32x3") ok = run_type<float>(o, "tf32x3", ir::precision::tf32x3) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "08_bert_layer: %s\n", e.what());
    return 1;
  }
}
