// SPDX-License-Identifier: MIT
// Our side of the layer benchmark (issue 20): the BERT encoder layer (backends/bert_layer.hpp)
// at the given shapes and types, each stage's configuration from its parameter file in
// DIR/<type> (mdh-tune tune-layer) or the default one (said so). Times every stage (the
// stage "attention" is the one-kernel attention alone, on the layer's QKV: compare it with
// bench/peers/layer.py's eager_sdpa stage "attention", scaled_dot_product_attention on the same
// data and precision; also in the JSON as "attention_alone") and the whole layer as mdh_bench times
// a case - per call (L2 flushed by a 256 MB memset, events around the launches) and by CUDA-graph
// replay - and writes the inputs and our output to DUMP/<case>/ (raw little-endian tensors +
// manifest.json) so that bench/peers/layer.py runs the peers on the same data and checks ours
// against a float64 reference. Type tf32x3: fp32 tensors, the four weight products as three
// TF32 products each (near-fp32 accuracy; the peers run it as f32).
//   layer_bench [--params DIR=params/h200/bert_layer] [--out FILE=ours_layer.json]
//               [--dump DIR=layer_data] [--shapes 16x128,8x512] [--types f32,bf16,tf32x3]
//               [--reps N=30]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <backends/bert_layer.hpp>
#include <backends/cuda/graph.hpp>
#include <expressions/bert_layer.hpp>
#include <expressions/bert_layer_reference.hpp>
#include <tuning/cuda_target.hpp>

#include "bench_args.hpp"
#include "l2_flush.hpp"

using namespace mdh;
namespace fs = std::filesystem;

namespace {

std::string case_name(const ops::bert_shape& s, const std::string& type) {
  return "bert_b" + std::to_string(s.batch) + "_s" + std::to_string(s.seq) + "_" + type;
}

void write_tensor(const fs::path& dir, const std::string& name, const buffer_ref& b,
                  nlohmann::json& manifest) {
  const auto bytes = std::size_t(b.size()) * size_of(b.type);
  std::ofstream(dir / (name + ".bin"), std::ios::binary)
      .write(static_cast<const char*>(b.data), std::streamsize(bytes));
  manifest["tensors"][name] = {
      {"dtype", std::string(short_name(b.type))}, {"shape", b.shape}, {"file", name + ".bin"}};
}

template <class T>
nlohmann::json bench_one(const cuda::device& dev, const ops::bert_shape& s, const std::string& type,
                         const fs::path& params, const fs::path& dump, bench::l2_flush& flush,
                         const tuning::cuda_timing& timing,
                         ir::precision products = ir::precision::ieee) {
  nlohmann::json j;
  attention_form_choice form;
  auto layer =
      load_bert_layer<T>(cuda_sequence_backend{&dev}, s, params, &std::cerr, &form, products);
  j["attention_form"] = ops::to_string(form.form);
  j["attention_form_why"] = form.why;
  auto inputs = ops::bert_reference::random_inputs<T>(s, 42);
  for (auto& [name, t] : inputs) layer.upload(name, t);
  cuda::stream st;
  layer.launch(st.get());
  layer.finish(st.get());
  // the data for the peers: inputs, weights and our output
  const fs::path dir = dump / case_name(s, type);
  fs::create_directories(dir);
  nlohmann::json manifest;
  manifest["shape"] = {{"batch", s.batch},      {"seq", s.seq}, {"hidden", s.hidden},
                       {"heads", s.heads},      {"ffn", s.ffn}, {"layernorm_eps", 1e-12},
                       {"mask_value", -10000.0}};
  manifest["type"] = type;
  for (auto& [name, t] : inputs) write_tensor(dir, name, t, manifest);
  auto y = layer.download("Y");
  write_tensor(dir, "ours_Y", y, manifest);
  std::ofstream(dir / "manifest.json") << manifest.dump(2) << "\n";
  j["dump"] = dir.string();

  auto per_call = [&](auto&& enqueue) {
    return tuning::time_with_events_flushed(enqueue, flush, timing, st.get());
  };
  auto graph = [&](auto&& enqueue) {
    cuda::graph g(st.get(), enqueue);
    return tuning::time_with_events_flushed([&](CUstream q) { g.launch(q); }, flush, timing,
                                            st.get());
  };
  bool tuned = true;
  for (std::size_t k = 0; k < layer.size(); ++k) {
    auto one = [&](CUstream q) { layer.launch_step(k, q); };
    nlohmann::json e;
    e["per_call_us"] = per_call(one);
    e["graph_us"] = graph(one);
    e["origin"] = layer.at(k).origin;
    tuned = tuned && layer.at(k).origin != "default configuration";
    j["stages"][layer.at(k).name] = e;
    j["stage_order"].push_back(layer.at(k).name);  // the object's keys come back sorted
  }
  if (j["stages"].contains("attention")) j["attention_alone"] = j["stages"]["attention"];
  auto all = [&](CUstream q) { layer.launch(q); };
  j["per_call_us"] = per_call(all);
  j["graph_us"] = graph(all);
  // programmatic dependent launch between the stages (sm_90 on): the same graph, each stage's
  // blocks starting while the previous stage finishes
  if (layer.at(0).program->overlap_supported()) {
    layer.backend().overlap = true;
    j["per_call_overlap_us"] = per_call(all);
    j["graph_overlap_us"] = graph(all);
    layer.backend().overlap = false;
  }
  j["tuned"] = tuned;
  j["ok"] = true;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::string params = "params/h200/bert_layer", out_path = "ours_layer.json", dump = "layer_data";
  std::string shapes = "16x128,8x512", types = "f32,bf16";
  int reps = 30;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (k + 1 >= argc) {
      std::fprintf(stderr, "layer_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[++k];
    if (a == "--params")
      params = v;
    else if (a == "--out")
      out_path = v;
    else if (a == "--dump")
      dump = v;
    else if (a == "--shapes")
      shapes = v;
    else if (a == "--types")
      types = v;
    else if (a == "--reps")
      reps = std::stoi(v);
    else {
      std::fprintf(stderr,
                   "usage: layer_bench [--params DIR] [--out FILE] [--dump DIR] "
                   "[--shapes BxS,...] [--types f32,bf16,tf32x3] [--reps N]\n");
      return 2;
    }
  }
  std::vector<ops::bert_shape> cases;
  for (auto& sh : bench::split_list(shapes)) {
    auto x = sh.find('x');
    if (x == std::string::npos) {
      std::fprintf(stderr, "layer_bench: --shapes '%s' is not BATCHxSEQ\n", sh.c_str());
      return 2;
    }
    ops::bert_shape s;
    s.batch = std::stoll(sh.substr(0, x)), s.seq = std::stoll(sh.substr(x + 1));
    cases.push_back(s);
  }
  auto type_list = bench::split_list(types);
  for (auto& t : type_list)
    if (t != "f32" && t != "bf16" && t != "tf32x3") {
      std::fprintf(stderr, "layer_bench: --types takes f32, bf16 and tf32x3, not '%s'\n",
                   t.c_str());
      return 2;
    }
  if (!cuda::device_available()) {
    std::fprintf(stderr, "layer_bench: no CUDA device: skipped\n");
    return 77;
  }
  cuda::device dev(0);
  const auto lim = dev.limits();
  bench::l2_flush flush("memset", lim.arch());
  tuning::cuda_timing timing;
  timing.warmups = 3;
  timing.repetitions = reps;
  nlohmann::json out;
  out["device"] = lim.name;
  out["compute_capability"] = std::to_string(lim.cc_major) + "." + std::to_string(lim.cc_minor);
  out["params"] = params;
  out["method"] = "median of " + std::to_string(reps) +
                  " repetitions; per call: 256 MB memset flush, events around the launches; "
                  "graph: the launches captured once, replayed after the flush";
  std::printf("%-22s %-10s %12s %12s  %s\n", "case", "stage", "per call us", "graph us",
              "configuration");
  for (auto& s : cases)
    for (auto& type : {std::string("f32"), std::string("bf16"), std::string("tf32x3")}) {
      if (!type_list.count(type)) continue;
      const std::string name = case_name(s, type);
      nlohmann::json j;
      try {
        const fs::path folder = fs::path(params) / type;
        if (type == "bf16")
          j = bench_one<bf16>(dev, s, type, folder, dump, flush, timing);
        else
          j = bench_one<float>(dev, s, type, folder, dump, flush, timing,
                               type == "tf32x3" ? ir::precision::tf32x3 : ir::precision::ieee);
        for (auto& stage : j["stage_order"]) {
          const auto& e = j["stages"][stage.get<std::string>()];
          std::printf("%-22s %-10s %12.2f %12.2f  %s\n", name.c_str(),
                      stage.get<std::string>().c_str(), e["per_call_us"].get<double>(),
                      e["graph_us"].get<double>(), e["origin"].get<std::string>().c_str());
        }
        std::printf("%-22s %-10s %12.2f %12.2f  %s\n", name.c_str(), "LAYER",
                    j["per_call_us"].get<double>(), j["graph_us"].get<double>(),
                    j["tuned"].get<bool>() ? "tuned" : "some stages default");
      } catch (const std::exception& e) {
        j["ok"] = false;
        j["error"] = e.what();
        std::printf("%-22s failed: %s\n", name.c_str(), e.what());
      }
      j["shape"] = {{"batch", s.batch},
                    {"seq", s.seq},
                    {"hidden", s.hidden},
                    {"heads", s.heads},
                    {"ffn", s.ffn}};
      j["type"] = type;
      out["cases"][name] = j;
      std::fflush(stdout);
    }
  std::ofstream(out_path) << out.dump(2) << "\n";
  return 0;
}
