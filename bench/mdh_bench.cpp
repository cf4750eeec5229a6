// SPDX-License-Identifier: MIT
// Times our kernels for every case of bench/cases.json on the GPU: loads each case's parameter
// file (or the default configuration, said in the output), checks the kernel against the CPU
// reference, and times it the way the peers are timed: per call (L2 flushed by a 256 MB memset,
// events around the launches) and by CUDA-graph replay (kernel time only); medians.
// The bf16 and tf32 variants (issue 18) read their files from DIR/bf16 and DIR/tf32, the tf32x3
// ones (the float32 products at precision tf32x3: near-fp32 accuracy, three TF32 tensor-core
// products per product; checked against the IEEE fp32 reference like their float32 case) from
// DIR/tf32x3.
//   mdh_bench [--params DIR=params/h200] [--out FILE=ours.json] [--cases a,b,...] [--reps N=50]
//             [--flush memset|read]   (bench/l2_flush.hpp: read is a diagnostic; memset is the
//             method) [--list]   (--list: the cases, of --cases, and exit; no GPU needed)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <backends/cuda/program.hpp>
#include <backends/load_kernel.hpp>
#include <expressions/benchmark_cases.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/cuda_target.hpp>
#include <tuning/tune.hpp>

#include "bench_args.hpp"
#include "l2_flush.hpp"

using namespace mdh;

namespace {

struct step {
  std::unique_ptr<cuda::program> prog;
  std::vector<cuda::device_buffer<unsigned char>> in, out;
  std::vector<CUdeviceptr> in_ptr, out_ptr;
  nlohmann::json config;
  std::string origin;
};

struct group {
  std::vector<std::unique_ptr<step>> steps;
  std::string error;
  void launch(CUstream s) {
    for (auto& st : steps) st->prog->launch(st->in_ptr, st->out_ptr, s);
  }
};

// Graph replay: the group's launches captured once, replayed with the L2 flushed in between.
double time_graph(group& g, bench::l2_flush& flush, const tuning::cuda_timing& timing) {
  cuda::stream s;
  CUgraph graph;
  CUgraphExec exec;
  MDH_CU(cuStreamBeginCapture, s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL);
  g.launch(s.get());
  MDH_CU(cuStreamEndCapture, s.get(), &graph);
  MDH_CU(cuGraphInstantiate, &exec, graph, 0);
  double us = tuning::time_with_events_flushed(
      [&](CUstream st) { MDH_CU(cuGraphLaunch, exec, st); }, flush, timing, s.get());
  cuda::driver_table().cuGraphExecDestroy(exec);
  cuda::driver_table().cuGraphDestroy(graph);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  std::string params = "params/h200", out_path = "ours.json", flush_mode = "memset";
  std::set<std::string> only;
  int reps = 50;
  bool list = false;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto value = [&] {
      if (k + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return std::string(argv[++k]);
    };
    if (a == "--params")
      params = value();
    else if (a == "--out")
      out_path = value();
    else if (a == "--reps")
      reps = std::stoi(value());
    else if (a == "--cases")
      only = bench::split_list(value());
    else if (a == "--flush")
      flush_mode = value();
    else if (a == "--list")
      list = true;
    else {
      std::fprintf(stderr,
                   "usage: mdh_bench [--params DIR] [--out FILE] [--cases a,b] [--reps N] "
                   "[--flush memset|read] [--list]\n");
      return 2;
    }
  }
  if (auto bad = bench::unknown_cases(only); !bad.empty()) {
    std::fprintf(stderr, "mdh_bench: no such case: %s (mdh_bench --list shows them)\n",
                 bad.c_str());
    return 2;
  }
  if (list) {
    bench::list_cases(only);
    return 0;
  }
  if (!cuda::device_available()) {
    std::fprintf(stderr, "mdh_bench: no CUDA device: skipped\n");
    return 77;
  }
  cuda::device dev(0);
  auto lim = dev.limits();
  tuning::device_id id{"cuda", lim.name,
                       std::to_string(lim.cc_major) + "." + std::to_string(lim.cc_minor)};
  std::map<std::string, group> groups;
  std::vector<std::string> order;
  ops::for_each_benchmark_case_of_every_type(
      [&](std::string_view full, const auto& comp, const auto& sizes) {
        std::string name(full), base = name.substr(0, name.find('/'));
        if (!only.empty() && !only.count(base)) return;
        if (!groups.count(base)) order.push_back(base);
        group& g = groups[base];
        if (!g.error.empty()) return;
        try {
          const auto& c = comp.ir();  // a computation, or a fused pair (softmax, layernorm)
          auto folder = bench::params_folder(params, tuning::workload::of(c, sizes));
          auto kernel = mdh::load_kernel(comp, sizes, folder, dev);
          auto st = std::make_unique<step>();
          st->prog = std::move(kernel.program);
          st->config = kernel.choice.config;
          st->origin = kernel.choice.origin;
          auto data = tuning::make_workload_data(comp, sizes, 1234);
          for (auto& b : data.inputs) {
            st->in.emplace_back(std::span<const unsigned char>(
                static_cast<const unsigned char*>(b.data()), b.bytes()));
            st->in_ptr.push_back(st->in.back().get());
          }
          for (auto& b : data.expected) {
            st->out.emplace_back(b.bytes());
            MDH_CU(cuMemsetD8, st->out.back().get(), 0xFF, b.bytes());  // NaN poison
            st->out_ptr.push_back(st->out.back().get());
          }
          st->prog->launch(st->in_ptr, st->out_ptr);
          MDH_CU(cuCtxSynchronize);
          std::int64_t L = tuning::reduction_length(c, sizes);
          for (std::size_t r = 0; r < data.expected.size(); ++r) {
            host_buffer got(data.expected[r].type(), data.expected[r].shape());
            st->out[r].download(
                std::span<unsigned char>(static_cast<unsigned char*>(got.data()), got.bytes()));
            if (auto why = tuning::compare(got, data.expected[r], L); !why.empty())
              throw error(name + ": output '" + ir::kernel_outputs(c)[r].name +
                          "' differs from the reference: " + why);
          }
          g.steps.push_back(std::move(st));
        } catch (const std::exception& e) {
          g.error = e.what();
        }
      });

  bench::l2_flush flush(flush_mode, lim.arch());
  tuning::cuda_timing timing;
  timing.warmups = 3;
  timing.repetitions = reps;
  nlohmann::json out;
  out["device"] = lim.name;
  out["compute_capability"] = id.compute_capability;
  out["params"] = params;
  out["flush"] = flush.mode();
  std::printf("%-28s %12s %12s  %s\n", "case", "per call us", "graph us", "configuration");
  for (auto& name : order) {
    group& g = groups[name];
    nlohmann::json j;
    j["ok"] = g.error.empty();
    if (g.error.empty()) {
      try {
        j["per_call_us"] =
            tuning::time_with_events_flushed([&](CUstream s) { g.launch(s); }, flush, timing);
        j["graph_us"] = time_graph(g, flush, timing);
        nlohmann::json cfgs = nlohmann::json::array(), origins = nlohmann::json::array();
        for (auto& st : g.steps) cfgs.push_back(st->config), origins.push_back(st->origin);
        j["config"] = g.steps.size() == 1 ? cfgs[0] : cfgs;
        j["origin"] = origins;
        j["tuned"] = std::all_of(g.steps.begin(), g.steps.end(),
                                 [](auto& st) { return st->origin != "default configuration"; });
      } catch (const std::exception& e) {
        j["ok"] = false;
        g.error = e.what();
      }
    }
    if (!g.error.empty()) j["error"] = g.error;
    out["cases"][name] = j;
    if (j["ok"].get<bool>())
      std::printf("%-28s %12.2f %12.2f  %s\n", name.c_str(), j["per_call_us"].get<double>(),
                  j["graph_us"].get<double>(), j["tuned"].get<bool>() ? "tuned" : "default");
    else
      std::printf("%-28s %12s %12s  %s\n", name.c_str(), "-", "-", g.error.substr(0, 200).c_str());
  }
  std::ofstream(out_path) << out.dump(2) << "\n";
  return 0;
}
