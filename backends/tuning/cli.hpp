// SPDX-License-Identifier: MIT
// The mdh-tune command line as a library: mdh-tune itself (over expressions/catalog.hpp) and the
// same tool for your own expression:
//
//   int main(int argc, char** argv) {
//     return mdh::tuning::cli::main(argc, argv, mdh::tuning::cli::one_operator(
//         {"my_op", "what it computes", "i,j", {1024, 1024}}, [](const auto& sizes) { return
//         my_op(); }));
//   }
//
// Commands: list; tune OPERATOR --sizes ... [--time s] [--more s] [--evaluations n] [--technique t]
// [--seed n] [--backend auto|cuda|opencl] [--out dir] [--log file] [--threads n]; run OPERATOR
// --sizes ... [--params dir_or_file]. CUDA is used when MDH_WITH_CUDA is set and a GPU is present,
// OpenCL (MDH_WITH_OPENCL) otherwise.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <backends/tuning/any_target.hpp>
#include <backends/tuning/load.hpp>
#include <backends/tuning/tune.hpp>
#include <expressions/catalog.hpp>
#include <mdh/ir/print.hpp>
#if MDH_WITH_CUDA
#include <backends/tuning/cuda_target.hpp>
#endif
#if MDH_WITH_OPENCL
#include <backends/tuning/opencl_target.hpp>
#endif

namespace mdh::tuning::cli {

inline std::atomic<bool> interrupted{false};

inline const char* usage =
    "usage: mdh-tune list\n"
    "       mdh-tune tune OPERATOR --sizes N,N,... [--time SECONDS] [--more SECONDS]\n"
    "                [--evaluations N]\n"
    "                [--technique auc_bandit|random|exhaustive|annealing|de|pattern|torczon]\n"
    "                [--seed N] [--backend auto|cuda|opencl] [--out DIR] [--log FILE] [--threads "
    "N]\n"
    "       mdh-tune run OPERATOR --sizes N,N,... [--params DIR_OR_FILE] [--backend ...]\n"
    "Tuning writes DIR/<operator>_<hash>_<sizes>.json (default DIR: params) and logs every\n"
    "evaluation to a JSON-lines file; running the same command again resumes from that log.\n"
    "--time counts the log's earlier sessions too (default 60); --more S tunes S seconds more in\n"
    "this session, whatever the log holds (alone, it replaces the default --time).\n";

[[noreturn]] inline void fail_usage(const std::string& why) {
  std::cerr << "mdh-tune: " << why << "\n" << usage;
  std::exit(2);
}

struct options {
  std::string command, op, backend = "auto", technique = "auc_bandit";
  std::vector<std::int64_t> sizes;
  double seconds = 60, more_seconds = 0;
  std::uint64_t evaluations = 0, seed = 1;
  std::size_t threads = 0;
  std::filesystem::path out = "params", log, params = "params";
  bool seconds_given = false;
};

inline std::vector<std::int64_t> parse_sizes(const std::string& s) {
  std::vector<std::int64_t> v;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t comma = s.find(',', pos);
    std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long long n = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || n < 1)
      fail_usage("malformed --sizes '" + s + "': '" + part + "' is not a positive integer");
    v.push_back(n);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

template <class T>
T parse_number(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || x < 0) fail_usage("malformed " + flag + " '" + s + "'");
  return T(x);
}

inline options parse(int argc, char** argv) {
  options o;
  if (argc < 2) fail_usage("no command");
  o.command = argv[1];
  if (o.command == "-h" || o.command == "--help") {
    std::cout << usage;
    std::exit(0);
  }
  if (o.command != "list" && o.command != "tune" && o.command != "run")
    fail_usage("unknown command '" + o.command + "'");
  int k = 2;
  if (o.command != "list") {
    if (argc < 3 || argv[2][0] == '-') fail_usage("'" + o.command + "' needs an OPERATOR");
    o.op = argv[k++];
  }
  for (; k < argc; ++k) {
    std::string a = argv[k];
    auto value = [&]() -> std::string {
      if (k + 1 >= argc) fail_usage(a + " needs a value");
      return argv[++k];
    };
    if (a == "--sizes")
      o.sizes = parse_sizes(value());
    else if (a == "--time")
      o.seconds = parse_number<double>(a, value()), o.seconds_given = true;
    else if (a == "--more")
      o.more_seconds = parse_number<double>(a, value());
    else if (a == "--evaluations")
      o.evaluations = parse_number<std::uint64_t>(a, value());
    else if (a == "--technique")
      o.technique = value();
    else if (a == "--seed")
      o.seed = parse_number<std::uint64_t>(a, value());
    else if (a == "--backend")
      o.backend = value();
    else if (a == "--out")
      o.out = value();
    else if (a == "--log")
      o.log = value();
    else if (a == "--params")
      o.params = value();
    else if (a == "--threads")
      o.threads = parse_number<std::size_t>(a, value());
    else
      fail_usage("unknown option '" + a + "'");
  }
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "opencl")
    fail_usage("--backend must be auto, cuda or opencl, not '" + o.backend + "'");
  // --evaluations or --more without --time: no limit on the total time
  if ((o.evaluations > 0 || o.more_seconds > 0) && !o.seconds_given) o.seconds = 0;
  return o;
}

inline bool cuda_present() { return cuda_device_present(); }

inline std::string backend_of(const options& o) {
  if (o.backend != "auto") return o.backend;
  return cuda_present() ? "cuda" : "opencl";
}

// Arithmetic operations per iteration point, counted from the scalar function (+1 per result
// for the combine of a reduction); the basis of the Gop/s figure.
inline double ops_per_point(const mdh::ir::computation& c) {
  double n = 0;
  for (auto& x : c.f.nodes)
    if (mdh::ir::arity(x.kind) > 0 && x.kind != mdh::ir::op::cast) n += 1;
  if (c.has_reduction()) n += double(c.outputs.size());
  return n;
}
inline double bytes_moved(const mdh::ir::computation& c, const std::vector<std::int64_t>& sizes) {
  double b = 0;
  for (auto* bufs : {&c.inputs, &c.outputs})
    for (auto& x : *bufs)
      b += double(mdh::element_count(mdh::ir::buffer_shape(c, x, sizes))) * double(size_of(x.type));
  return b;
}

// A fused pair: both stages' operations; the pair's buffers, each moved once.
inline double ops_per_point(const mdh::ir::fused& f) {
  return ops_per_point(f.first) + ops_per_point(f.second);
}
inline double bytes_moved(const mdh::ir::fused& f, const std::vector<std::int64_t>& sizes) {
  double b = bytes_moved(f.first, sizes);
  const std::size_t shared = f.first.inputs.size();
  for (std::size_t k = shared; k < f.inputs.size(); ++k)
    b += double(mdh::element_count(mdh::ir::buffer_shape(f.second, f.inputs[k], sizes))) *
         double(size_of(f.inputs[k].type));
  for (auto& x : f.second.outputs)
    b += double(mdh::element_count(mdh::ir::buffer_shape(f.second, x, sizes))) *
         double(size_of(x.type));
  return b;
}

template <class IR>
void print_rates(const IR& c, const std::vector<std::int64_t>& sizes, double us) {
  double points = 1;
  for (auto n : sizes) points *= double(n);
  std::printf(
      "  time        %.2f us\n  bandwidth   %.2f GB/s (bytes moved once: %.3g)\n"
      "  arithmetic  %.2f Gop/s (%.3g ops counted from the scalar function)\n",
      us, bytes_moved(c, sizes) / us * 1e-3, bytes_moved(c, sizes),
      ops_per_point(c) * points / us * 1e-3, ops_per_point(c) * points);
}

template <class Target, class Comp>
int tune_on(Target& target, const Comp& comp, const options& o) {
  const auto& c = comp.ir();
  mdh::tuning::tune_options t;
  t.technique = o.technique;
  t.seed = o.seed;
  t.seconds = o.seconds;
  t.more_seconds = o.more_seconds;
  t.evaluations = o.evaluations;
  t.prepare_threads = o.threads;
  auto w = mdh::tuning::workload::of(c, o.sizes);
  auto file = o.out / mdh::tuning::file_name(w);
  t.parameter_file = file;
  t.log = o.log.empty() ? std::filesystem::path(file.string() + ".log.jsonl") : o.log;
  t.interrupt = &interrupted;
  std::filesystem::create_directories(o.out);
  auto space = mdh::tuning::make_search_space(c, o.sizes, target.limits());
  std::printf("tuning %s %s on %s (%s): search space of %s configurations, log %s\n",
              c.name.c_str(), mdh::to_string(o.sizes).c_str(), target.id().name.c_str(),
              target.id().backend.c_str(), atf::to_string(space.size()).c_str(),
              t.log.string().c_str());
  std::fflush(stdout);
  auto r = mdh::tuning::tune(comp, o.sizes, target, t);
  std::printf(
      "\nbest configuration of %s %s (%llu evaluations, %llu valid, %llu resumed from the log, "
      "%.1f s%s):\n",
      c.name.c_str(), mdh::to_string(o.sizes).c_str(), (unsigned long long)r.run.evaluations,
      (unsigned long long)r.run.valid, (unsigned long long)r.run.resumed, r.run.seconds,
      interrupted ? ", interrupted: run the same command to resume" : "");
  print_rates(c, o.sizes, r.record.cost);
  std::printf("  chosen      %s\n  config      %s\n  written to  %s\n",
              r.record.tuning.value("chosen", "tuned").c_str(),
              mdh::lower::to_string(r.best).c_str(), file.string().c_str());
  return 0;
}

template <class Target, class Comp>
int run_on(Target& target, const Comp& comp, const options& o) {
  const auto& c = comp.ir();
  auto choice =
      mdh::tuning::choose_configuration(c, o.sizes, o.params, target.id(), target.limits());
  auto plan = mdh::lower::lower(c, o.sizes, choice.config, target.limits());
  std::any prepared = target.prepare(plan);
  auto data = mdh::tuning::make_workload_data(comp, o.sizes, 7);
  auto in = data.input_refs();
  auto want = data.expected_refs();
  target.set_data(c, o.sizes, in, want);
  double us = target.measure(prepared, 0);  // checks against the reference first
  std::printf("%s %s on %s (%s), configuration from %s: matches the CPU reference\n",
              c.name.c_str(), mdh::to_string(o.sizes).c_str(), target.id().name.c_str(),
              target.id().backend.c_str(), choice.origin.c_str());
  print_rates(c, o.sizes, us);
  return 0;
}

template <class Comp>
int dispatch(const options& o, const Comp& comp) {
  std::string backend = backend_of(o);
  if (backend == "cuda") {
#if MDH_WITH_CUDA
    mdh::tuning::cuda_target target;
    if (o.command == "tune") return tune_on(target, comp, o);
    return run_on(target, comp, o);
#else
    throw mdh::error("this mdh-tune was built without the CUDA backend");
#endif
  }
#if MDH_WITH_OPENCL
  static mdh::opencl::context ctx;
  mdh::tuning::opencl_target target(ctx);
  if (o.command == "tune") return tune_on(target, comp, o);
  return run_on(target, comp, o);
#else
  throw mdh::error("this mdh-tune was built without the OpenCL backend");
#endif
}

// The whole command line: `for_each(visit)` calls visit(catalog_entry, make) per operator.
template <class ForEach>
int main(int argc, char** argv, ForEach&& for_each) {
  options o = parse(argc, argv);
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });
  try {
    if (o.command == "list") {
      std::printf("%-20s %-16s %-22s %s\n", "operator", "dimensions", "example sizes", "what");
      for_each([](const mdh::ops::catalog_entry& e, auto) {
        std::printf("%-20.*s %-16.*s %-22s %.*s\n", int(e.name.size()), e.name.data(),
                    int(e.dims.size()), e.dims.data(),
                    mdh::tuning::sizes_arg(e.example_sizes).c_str(), int(e.description.size()),
                    e.description.data());
      });
      return 0;
    }
    int rc = -1;
    std::vector<std::string> names;
    for_each([&](const mdh::ops::catalog_entry& e, auto make) {
      names.emplace_back(e.name);
      if (e.name != o.op) return;
      if (o.sizes.empty())
        fail_usage("'" + o.op + "' needs --sizes with " + std::to_string(e.example_sizes.size()) +
                   " values (" + std::string(e.dims) + "), e.g. --sizes " +
                   mdh::tuning::sizes_arg(e.example_sizes));
      if (o.sizes.size() != e.example_sizes.size())
        fail_usage("'" + o.op + "' has " + std::to_string(e.example_sizes.size()) +
                   " dimensions (" + std::string(e.dims) + "), --sizes gave " +
                   std::to_string(o.sizes.size()));
      rc = dispatch(o, make(o.sizes));
    });
    if (rc < 0) {
      std::string known;
      for (auto& n : names) known += " " + n;
      fail_usage("unknown operator '" + o.op + "' (mdh-tune list shows them:" + known + ")");
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mdh-tune: %s\n", e.what());
    return 1;
  }
}

// A catalog of one user-defined operator, for cli::main.
template <class Make>
auto one_operator(mdh::ops::catalog_entry entry, Make make) {
  return [entry, make](auto&& visit) { visit(entry, make); };
}

}  // namespace mdh::tuning::cli
