// SPDX-License-Identifier: MIT
// mdh-tune tune-layer: every computation of a model layer tuned in one command, each distinct
// workload (computation and sizes) once, all parameter files in one folder - the folder
// load_bert_layer and examples/08_bert_layer read.
//   mdh-tune tune-layer bert --batch 16 --seq 128 [--hidden 768] [--heads 12] [--ffn 3072]
//                       [--type f32|bf16|f16|tf32x3] [--time S] [--more S] [--evaluations N]
//                       [--technique T] [--seed N] [--backend B] [--out DIR] [--threads N]
//                       [--stages attention,qkv,...] [--stage-timing layer|alone]
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <backends/bert_attention_form.hpp>
#include <expressions/bert_layer.hpp>
#include <tools/cli.hpp>

namespace mdh::tuning::cli {

inline const char* usage_tune_layer =
    "usage: mdh-tune tune-layer bert --batch N --seq N [options]\n"
    "  Tunes every computation of a BERT encoder layer (expressions/bert_layer.hpp: QKV\n"
    "  projection, the attention as one kernel and as three - scores, softmax, context -,\n"
    "  output projection, layernorm, FFN up, FFN down), each distinct computation and size\n"
    "  once, and writes all parameter files to DIR (logs in DIR/logs; the same command again\n"
    "  resumes from them). The layer then runs the attention form that tuned faster.\n"
    "  --batch N, --seq N  whole numbers >= 1 (required)\n"
    "  --hidden N          default 768 (a multiple of --heads)\n"
    "  --heads N           default 12\n"
    "  --ffn N             default 3072\n"
    "  --type T            f32 (default), bf16 or f16: the element type of every tensor;\n"
    "                      or tf32x3: f32, the four weight products (qkv, attn_out, ffn_up,\n"
    "                      ffn_down) as three TF32 products each on the tensor cores\n"
    "                      (near-fp32 accuracy), the other stages IEEE f32\n"
    "  --time S            seconds per computation over every session of its log (> 0;\n"
    "                      default 60)\n"
    "  --more S            S seconds more per computation in this session\n"
    "  --evaluations N     at most N evaluations per computation\n"
    "  --technique T, --seed N, --backend B, --threads N, --start-from DIR   as for 'tune'\n"
    "                      (--start-from params/h100: each computation starts from the\n"
    "                      nearest tuned shape of itself or of its bare product)\n"
    "  --out DIR           where the parameter files go (default params)\n"
    "  --stages S,S,...    only these stages (qkv, attention, scores, softmax, context,\n"
    "                      attn_out, ln1, ffn_up, ffn_down, ln2; default all): e.g. more time\n"
    "                      for the attention alone; the other files in DIR are kept\n"
    "  --stage-timing M    layer (default): each repetition after an L2 flush, the tensors an\n"
    "                      earlier stage wrote or read then read back into L2, as in the\n"
    "                      layer's graph; alone: every input flushed, the computation alone\n"
    "  Then: 08_bert_layer --params DIR --type T, or mdh::load_bert_layer<T>(backend, shape,\n"
    "  DIR) (tf32x3: <float>, with products mdh::ir::precision::tf32x3).\n";

struct layer_options {
  options tune;  // the budget, technique, seed, backend, out, threads of 'tune'
  std::string layer;
  ops::bert_shape shape;
  bool batch_given = false, seq_given = false;
  std::vector<std::string> stages;  // --stages: only these (empty: every stage)
  bool layer_timing = true;         // --stage-timing layer (true) or alone
};

// For each stage of the layer (both attention forms), by name: its kernel inputs (indices into
// the stage's inputs) that an earlier stage has written or read, so that they are in L2 when the
// stage runs in the layer's graph (the graph starts from a flushed L2; an H200's holds 50 MB, a
// stage's tensors at BERT-base sizes 2-25 MB). The mask and the weights, read by one stage only,
// come from DRAM.
template <class T>
std::map<std::string, std::vector<std::size_t>> layer_warm_inputs(const ops::bert_shape& shape) {
  std::map<std::string, std::vector<std::size_t>> warm;
  for (auto form : {ops::attention_form::one_kernel, ops::attention_form::three_kernels}) {
    std::set<std::string> touched;
    ops::for_each_bert_stage<T>(
        shape,
        [&](const ops::bert_stage& st, const auto&) {
          std::vector<std::size_t> w;
          for (std::size_t k = 0; k < st.inputs.size(); ++k)
            if (touched.count(st.inputs[k])) w.push_back(k);
          touched.insert(st.inputs.begin(), st.inputs.end());
          touched.insert(st.outputs.begin(), st.outputs.end());
          warm[st.name] = std::move(w);
        },
        form);
  }
  return warm;
}

// The stage names of the BERT layer, both attention forms (expressions/bert_layer.hpp).
inline const std::vector<std::string>& bert_stage_names() {
  static const std::vector<std::string> names = {"qkv",      "attention", "scores", "softmax",
                                                 "context",  "attn_out",  "ln1",    "ffn_up",
                                                 "ffn_down", "ln2"};
  return names;
}

inline layer_options parse_tune_layer(int argc, char** argv) {
  current_command = "tune-layer";
  current_usage = usage_tune_layer;
  for (int k = 2; k < argc; ++k)
    if (std::string a = argv[k]; a == "--help" || a == "-h") {
      std::cout << usage_tune_layer;
      std::exit(0);
    }
  layer_options o;
  o.tune.command = "tune";
  if (argc < 3 || argv[2][0] == '-') fail_usage("'tune-layer' needs a LAYER (bert)");
  o.layer = argv[2];
  if (o.layer != "bert") fail_usage("unknown layer '" + o.layer + "' (bert)");
  const std::uint64_t big = 1u << 30;
  for (int k = 3; k < argc; ++k) {
    std::string a = argv[k];
    if (a.rfind("--", 0) != 0) fail_usage("unexpected argument '" + a + "'");
    static const std::vector<std::string> known = {
        "--batch", "--seq",     "--hidden",      "--heads",     "--ffn",         "--type",
        "--time",  "--more",    "--evaluations", "--technique", "--seed",        "--backend",
        "--out",   "--threads", "--start-from",  "--stages",    "--stage-timing"};
    if (std::find(known.begin(), known.end(), a) == known.end())
      fail_usage("unknown option '" + a + "'" +
                 (a == "--sizes" ? " (tune-layer derives every size from --batch, --seq, "
                                   "--hidden, --heads and --ffn)"
                                 : ""));
    if (k + 1 >= argc) fail_usage(a + " needs a value");
    const std::string v = argv[++k];
    auto whole = [&] { return std::int64_t(parse_whole(a, v, 1, big, "a whole number >= 1")); };
    if (a == "--batch")
      o.shape.batch = whole(), o.batch_given = true;
    else if (a == "--seq")
      o.shape.seq = whole(), o.seq_given = true;
    else if (a == "--hidden")
      o.shape.hidden = whole();
    else if (a == "--heads")
      o.shape.heads = whole();
    else if (a == "--ffn")
      o.shape.ffn = whole();
    else if (a == "--type")
      o.tune.type = v, o.tune.type_given = true;
    else if (a == "--stage-timing") {
      if (v != "layer" && v != "alone")
        fail_usage("--stage-timing must be layer or alone, not '" + v + "'");
      o.layer_timing = v == "layer";
    } else if (a == "--stages") {
      const auto& known_stages = bert_stage_names();
      for (std::string& name : split_commas(v)) {
        if (std::find(known_stages.begin(), known_stages.end(), name) == known_stages.end()) {
          fail_usage("--stages: unknown stage '" + name +
                     "' (the stages: " + join_commas(known_stages) + ")");
        }
        o.stages.push_back(std::move(name));
      }
    } else
      parse_tune_flag(o.tune, a, v);  // the flags 'tune' has (known above)
  }
  if (!o.batch_given || !o.seq_given)
    fail_usage("'tune-layer bert' needs --batch and --seq (e.g. --batch 16 --seq 128)");
  if (o.shape.hidden % o.shape.heads != 0)
    fail_usage("--hidden " + std::to_string(o.shape.hidden) + " is not a multiple of --heads " +
               std::to_string(o.shape.heads));
  if (o.tune.type != "f32" && o.tune.type != "bf16" && o.tune.type != "f16" &&
      o.tune.type != "tf32x3")
    fail_usage("--type must be f32, bf16, f16 or tf32x3 for a layer, not '" + o.tune.type + "'");
  if (o.tune.backend != "auto" && o.tune.backend != "cuda" && o.tune.backend != "opencl")
    fail_usage("--backend must be auto, cuda or opencl, not '" + o.tune.backend + "'");
  if ((o.tune.evaluations > 0 || o.tune.more_seconds > 0) && !o.tune.seconds_given)
    o.tune.seconds = 0;
  return o;
}

// Tunes the stages of element type T, the weight products at precision `products`, on
// `target`; returns the exit code.
template <class T, class Target>
int tune_layer_on(Target& target, const layer_options& lo,
                  ir::precision products = ir::precision::ieee) {
  const options& o = lo.tune;
  std::filesystem::create_directories(o.out / "logs");
  // the distinct workloads, in stage order, with the stages that run each
  struct item {
    std::string stages, file;
  };
  std::vector<item> items;
  // every stage of the one-kernel layer, then the attention stages of the three-kernel one
  auto each_stage = [&](auto&& visit) {
    ops::for_each_bert_stage<T>(lo.shape, visit, ops::attention_form::one_kernel, products);
    ops::for_each_bert_stage<T>(
        lo.shape,
        [&](const ops::bert_stage& st, const auto& comp) {
          if (st.attention) visit(st, comp);
        },
        ops::attention_form::three_kernels, products);
  };
  each_stage([&](const ops::bert_stage& st, const auto& comp) {
    if (!lo.stages.empty() &&
        std::find(lo.stages.begin(), lo.stages.end(), st.name) == lo.stages.end())
      return;
    const auto file = file_name(workload::of(comp.ir(), st.sizes));
    for (auto& it : items)
      if (it.file == file) return void(it.stages += "," + st.name);
    items.push_back({st.name, file});
  });
  std::printf("tuning the BERT layer (%s, %s) on %s (%s): %zu computations, into %s; %s\n",
              lo.shape.str().c_str(), o.type.c_str(), target.id().name.c_str(),
              target.id().backend.c_str(), items.size(), o.out.string().c_str(),
              lo.layer_timing ? "each stage timed with what earlier stages touched in L2"
                              : "each stage timed alone, every input flushed from L2");
  std::printf("%-18s %-20s %-22s %7s %7s %12s %12s  %s\n", "stages", "computation", "sizes",
              "evals", "valid", "best us", "default us", "chosen");
  std::fflush(stdout);
  std::set<std::string> done;
  const auto warm_inputs = layer_warm_inputs<T>(lo.shape);
  std::vector<atf::background_work> compiling;  // waited for before the target goes
  int rc = 0;
  double layer_us = 0;  // the stages both forms have
  each_stage([&](const ops::bert_stage& st, const auto& comp) {
    const auto w = workload::of(comp.ir(), st.sizes);
    const auto file = file_name(w);
    const auto it =
        std::find_if(items.begin(), items.end(), [&](auto& x) { return x.file == file; });
    if (it == items.end() || done.count(file) || interrupted)
      return;  // not in --stages  // a workload of an earlier stage (ln2)
    done.insert(file);
    tune_options t = to_tune_options(o);
    t.parameter_file = o.out / file;
    t.log = o.out / "logs" / (file + ".log.jsonl");
    t.progress = atf::progress_mode::off;
    if (lo.layer_timing) t.warm_inputs = warm_inputs.at(st.name);
    try {
      check_workload_memory(comp, st.sizes, memory_of(target));
      auto r = tune(comp, st.sizes, target, t);
      compiling.push_back(r.run.background);
      const auto uses = std::count(it->stages.begin(), it->stages.end(), ',') + 1;
      if (!st.attention) layer_us += r.record.cost * double(uses);
      std::printf("%-18s %-20s %-22s %7llu %7llu %12.2f %12.2f  %s\n", it->stages.c_str(),
                  comp.ir().name.c_str(), mdh::to_string(st.sizes).c_str(),
                  (unsigned long long)r.run.evaluations, (unsigned long long)r.run.valid,
                  r.record.cost, r.record.tuning.value("default_cost", 0.0),
                  r.record.tuning.value("chosen", "").c_str());
    } catch (const std::exception& e) {
      std::printf("%-18s %-20s %-22s failed: %s\n", it->stages.c_str(), comp.ir().name.c_str(),
                  mdh::to_string(st.sizes).c_str(), e.what());
      rc = 1;
    }
    searching = false;
    std::fflush(stdout);
  });
  if (interrupted) {
    std::printf("interrupted: run the same command to resume (the logs are in %s)\n",
                (o.out / "logs").string().c_str());
    return 130;
  }
  const auto form = choose_attention_form<T>(lo.shape, o.out, target.id(), products);
  const double attention_us = form.cost[int(form.form)];
  std::printf("the attention: %s (%s)\n", ops::to_string(form.form), form.why.c_str());
  if (lo.stages.empty())
    std::printf("the layer's kernels, one after the other: %.2f us (each stage's best time)\n",
                layer_us + std::max(attention_us, 0.0));
  std::printf(
      "parameter files in %s; run the layer with: 08_bert_layer --params %s --type %s "
      "--batch %lld --seq %lld --hidden %lld --heads %lld --ffn %lld\n",
      o.out.string().c_str(), o.out.string().c_str(), o.type.c_str(), (long long)lo.shape.batch,
      (long long)lo.shape.seq, (long long)lo.shape.hidden, (long long)lo.shape.heads,
      (long long)lo.shape.ffn);
  return rc;
}

template <class Target>
int tune_layer_typed(Target& target, const layer_options& lo) {
  if (lo.tune.type == "bf16") return tune_layer_on<bf16>(target, lo);
  if (lo.tune.type == "f16") return tune_layer_on<f16>(target, lo);
  if (lo.tune.type == "tf32x3") return tune_layer_on<float>(target, lo, ir::precision::tf32x3);
  return tune_layer_on<float>(target, lo);
}

// `mdh-tune tune-layer ...` (argv[1] is "tune-layer").
inline int tune_layer_main(int argc, char** argv) {
  layer_options lo = parse_tune_layer(argc, argv);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    const std::string backend = backend_of(lo.tune);
    if (backend == "cuda") {
#if MDH_WITH_CUDA
      cuda_target target;
      return tune_layer_typed(target, lo);
#else
      throw error("this mdh-tune was built without the CUDA backend");
#endif
    }
#if MDH_WITH_OPENCL
    static opencl::context ctx;
    opencl_target target(ctx);
    return tune_layer_typed(target, lo);
#else
    throw error("this mdh-tune was built without the OpenCL backend");
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mdh-tune: %s\n", e.what());
    return 1;
  }
}

}  // namespace mdh::tuning::cli
