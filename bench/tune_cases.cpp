// SPDX-License-Identifier: MIT
// Tunes the benchmark cases on this machine's GPUs (one measuring worker per visible GPU, NVRTC
// compiles on all CPU cores) and writes their parameter files; a case whose log exists resumes.
//   tune_cases [--seconds S=60] [--more S] [--params DIR=params/h200] [--cases a,b,...]
//              [--start-from DIR]... [--threads N] [--technique T] [--list]
// --start-from as mdh-tune's: folders of parameter files whose nearest shapes (of this device,
// else of another of the same architecture) start the searches; device.sh passes params/.
// --list prints the cases (of --cases) and exits; it needs no GPU. Float32 cases write to DIR,
// the bf16 and tf32 variants (issue 18) to DIR/bf16 and DIR/tf32, the tf32x3 ones (fp32 at
// near-fp32 accuracy, three TF32 tensor-core products per product) to DIR/tf32x3
// (bench::params_folder).
// --seconds is each case's budget over every session of its log (a log that already holds S
// seconds tunes nothing more); --more S tunes each case S seconds more in this run, whatever its
// log holds (alone, it replaces the default --seconds; with it, whichever ends first).
// --threads N: N compile threads (default: every core of the machine), as mdh-tune's --threads;
// device.sh's convergence mode gives each of the cases it tunes side by side its share of cores.
// --technique T: the search technique, as mdh-tune's (default auc_bandit; e.g. surrogate).
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <expressions/benchmark_cases.hpp>
#include <tuning/cuda_target.hpp>
#include <tuning/tune.hpp>

#include "bench_args.hpp"

using namespace mdh;

int main(int argc, char** argv) {
  double seconds = 60, more = 0;
  bool seconds_given = false;
  std::string params = "params/h200";
  std::set<std::string> only;
  std::vector<std::filesystem::path> start_from;  // as mdh-tune's --start-from
  std::size_t threads = 0;                        // compile threads (0: every core)
  bool list = false;
  std::string technique = "auc_bandit";
  for (int k = 1; k < argc; k += 2) {
    std::string a = argv[k];
    if (a == "--list") {
      list = true, --k;
      continue;
    }
    if (k + 1 >= argc) {
      std::fprintf(stderr, "tune_cases: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[k + 1];
    if (a == "--seconds")
      seconds = std::stod(v), seconds_given = true;
    else if (a == "--more")
      more = std::stod(v);
    else if (a == "--params")
      params = v;
    else if (a == "--cases")
      only = bench::split_list(v);
    else if (a == "--start-from")
      start_from.emplace_back(v);
    else if (a == "--threads")
      threads = std::stoul(v);
    else if (a == "--technique")
      technique = v;
    else {
      std::fprintf(stderr,
                   "usage: tune_cases [--seconds S] [--more S] [--params DIR] [--cases a,b] "
                   "[--start-from DIR]... [--threads N] [--technique T] [--list]\n");
      return 2;
    }
  }
  try {
    (void)tuning::make_technique(technique);  // an unknown name: refused before any case
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_cases: %s\n", e.what());
    return 2;
  }
  if (auto bad = bench::unknown_cases(only); !bad.empty()) {
    std::fprintf(stderr, "tune_cases: no such case: %s (tune_cases --list shows them)\n",
                 bad.c_str());
    return 2;
  }
  if (list) {
    bench::list_cases(only);
    return 0;
  }
  if (more > 0 && !seconds_given) seconds = 0;
  if (!cuda::device_available()) {
    std::fprintf(stderr, "tune_cases: no CUDA device: skipped\n");
    return 77;
  }
  tuning::cuda_target target;
  // Compiles that a case's time stop left running finish while the next case tunes; they use the
  // target, so they are waited for before it goes (declared after it: destroyed first).
  std::vector<atf::background_work> compiling;
  std::printf("%-28s %8s %8s %8s %10s %12s %12s  %s\n", "case", "evals", "valid", "resumed",
              "evals/s", "best us", "default us", "chosen");
  ops::for_each_benchmark_case_of_every_type(
      [&](std::string_view full, const auto& comp, const auto& sizes) {
        std::string name(full), base = name.substr(0, name.find('/'));
        if (!only.empty() && !only.count(base)) return;
        tuning::tune_options opt;
        opt.seconds = seconds;
        opt.more_seconds = more;
        opt.progress = atf::progress_mode::off;
        opt.prepare_threads = threads;
        opt.technique = technique;
        auto w = tuning::workload::of(comp.ir(), sizes);
        auto folder = bench::params_folder(params, w);  // params/h200, params/h200/bf16, .../tf32x3
        opt.parameter_file = folder / tuning::file_name(w);
        opt.log = folder / "logs" / (tuning::file_name(w) + ".log.jsonl");
        opt.start_from = start_from;
        try {
          auto r = tuning::tune(comp, sizes, target, opt);
          compiling.push_back(r.run.background);
          std::printf("%-28s %8llu %8llu %8llu %10.1f %12.2f %12.2f  %s\n", name.c_str(),
                      (unsigned long long)r.run.evaluations, (unsigned long long)r.run.valid,
                      (unsigned long long)r.run.resumed,
                      r.run.seconds > 0 ? double(r.run.measured) / r.run.seconds : 0.0,
                      r.record.cost, r.record.tuning.value("default_cost", 0.0),
                      r.record.tuning.value("chosen", "").c_str());
        } catch (const std::exception& e) {
          std::printf("%-28s failed: %s\n", name.c_str(), e.what());
        }
        std::fflush(stdout);
      });
  return 0;
}
