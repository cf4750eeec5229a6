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
// [--seed n] [--backend auto|cuda|opencl] [--out dir] [--log file] [--threads n]
// [--type f32|bf16|f16|tf32|tf32x3]; run OPERATOR --sizes ... [--params dir_or_file] [--type ...].
// CUDA is used when MDH_WITH_CUDA is set and a GPU is present, OpenCL (MDH_WITH_OPENCL) otherwise.
// `mdh-tune COMMAND --help` says what each option accepts.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <expressions/catalog.hpp>
#include <mdh/ir/print.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>
#include <tuning/workload_memory.hpp>
#if MDH_WITH_CUDA
#include <tuning/cuda_target.hpp>
#endif
#if MDH_WITH_OPENCL
#include <tuning/opencl_target.hpp>
#endif

namespace mdh::tuning::cli {

inline std::atomic<bool> interrupted{false};

inline const char* usage_list =
    "usage: mdh-tune list [--type T]\n"
    "  Lists the operators with their dimensions and example sizes (of element type T).\n";

inline const char* usage_tune =
    "usage: mdh-tune tune OPERATOR --sizes N,N,... [options]\n"
    "  Tunes OPERATOR for these sizes and writes DIR/<operator>_<hash>_<sizes>.json; every\n"
    "  evaluation goes to a JSON-lines log, and the same command again resumes from it.\n"
    "  --sizes N,N,...   one whole number >= 1 per dimension (mdh-tune list shows them)\n"
    "  --time S          seconds over every session of the log (a number > 0; default 60)\n"
    "  --more S          S seconds more in this session, whatever the log holds (> 0); alone,\n"
    "                    it replaces the default --time\n"
    "  --evaluations N   at most N evaluations (a whole number >= 1); alone, no time limit\n"
    "  --technique T     auc_bandit (default), surrogate (the bandit's moves ranked by a kNN\n"
    "                    cost model before compiling), random, exhaustive, annealing, de,\n"
    "                    pattern, torczon\n"
    "  --seed N          a whole number >= 0 (default 1)\n"
    "  --backend B       auto (default), cuda or opencl\n"
    "  --out DIR         where the parameter file goes (default params)\n"
    "  --log FILE        the log (default DIR/<parameter file>.log.jsonl); one tuner at a time\n"
    "  --threads N       compile threads (a whole number >= 1; default: all cores)\n"
    "  --start-from DIR  a folder of parameter files tuned before (e.g. params/h100; searched\n"
    "                    recursively, repeatable): the search starts from the nearest tuned\n"
    "                    shape of this operator, or of its bare product, carried over\n"
    "  --type T          f32 (default), bf16, f16, tf32: f32 with the inputs of a\n"
    "                    contraction read at TF32 precision, or tf32x3: f32 with each product\n"
    "                    of a contraction as three TF32 products on the tensor cores\n"
    "                    (near-fp32 accuracy)\n"
    "  --edge-split E    auto (default), on or off: whether the search space has edge_split\n"
    "                    (edge tiles for sizes no tile divides; auto: where a size is odd, >= 32)\n"
    "  --warm-inputs A,B input buffers that are in L2 when the operator runs in your graph (an\n"
    "                    earlier kernel wrote or read them): read back into L2 after each\n"
    "                    flush, before the timed launch (CUDA); the others start from DRAM\n"
    "  Several budgets: whichever ends first. Ctrl-C stops after the measurements in progress\n"
    "  and writes the best so far; before tuning starts (and a second Ctrl-C) it exits at once.\n";

inline const char* usage_run =
    "usage: mdh-tune run OPERATOR --sizes N,N,... [--params DIR_OR_FILE] [--backend B]\n"
    "  Runs OPERATOR with the configuration of its parameter file (or the default one) and\n"
    "  checks the result against the CPU reference.\n"
    "  --sizes N,N,...      one whole number >= 1 per dimension\n"
    "  --params DIR|FILE    a folder of parameter files (default params) or one file; a path\n"
    "                       given here must exist\n"
    "  --backend B          auto (default), cuda or opencl\n"
    "  --type T             f32 (default), bf16, f16, tf32 or tf32x3: as the record was tuned\n"
    "  Exit codes: 0 ran and matched; 1 an error; 2 a usage error; 3 ran and matched with the\n"
    "  default configuration because a parameter file for this workload could not be used\n"
    "  (the warning names it and says why).\n";

// Commands a program adds in front of cli::main (mdh-tune: tune-layer, tools/tune_layer.hpp):
// their names for the "unknown command" message, their usage lines for usage().
inline std::vector<std::string> extra_commands;
inline std::string extra_usage;

inline std::string usage() {
  return std::string("usage: mdh-tune list [--type T]\n") + extra_usage +
         "       mdh-tune tune OPERATOR --sizes N,N,... [--time S] [--more S] [--evaluations N]\n"
         "                [--technique T] [--seed N] [--backend B] [--out DIR] [--log FILE]\n"
         "                [--threads N] [--start-from DIR] [--type T]\n"
         "       mdh-tune run OPERATOR --sizes N,N,... [--params DIR_OR_FILE] [--backend B]\n"
         "                [--type T]\n"
         "       mdh-tune COMMAND --help   (what each option accepts)\n";
}

inline std::string usage_of(const std::string& command) {
  if (command == "list") return usage_list;
  if (command == "tune") return usage_tune;
  if (command == "run") return usage_run;
  return usage();
}

// True once tune's search has begun: from then on a first Ctrl-C stops the run after the
// measurements in progress and the best so far is written.
inline std::atomic<bool> searching{false};

// SIGINT/SIGTERM. Before the search (parsing, the search space, the CPU reference - minutes at
// large sizes - and in `run`) there is nothing to keep: exit at once. During the search the
// first one stops it cleanly; a second exits at once (the log keeps every finished evaluation).
inline void on_signal(int sig) {
  if (searching.load() && !interrupted.exchange(true)) return;
  static const char before[] = "\nmdh-tune: interrupted\n";
  static const char during[] =
      "\nmdh-tune: interrupted again: exiting now; the log keeps every finished evaluation\n";
  if (searching.load())
    (void)!::write(STDERR_FILENO, during, sizeof during - 1);
  else
    (void)!::write(STDERR_FILENO, before, sizeof before - 1);
  ::_exit(128 + sig);
}

// Set by parse(): the usage printed after an error.
inline std::string current_command;

// Set by a command cli::parse does not know (tune-layer): its usage, printed after an error.
inline std::string current_usage;

[[noreturn]] inline void fail_usage(const std::string& why) {
  std::cerr << "mdh-tune: " << why << "\n"
            << (current_usage.empty() ? usage_of(current_command) : current_usage);
  std::exit(2);
}

// The exit code of `run` when it ran with the default configuration because a parameter file
// for this workload exists but cannot be used (documented in docs/parameter-files.md).
inline constexpr int exit_unusable_parameter_file = 3;

struct options {
  std::string command, op, backend = "auto", technique = "auc_bandit";
  std::string type = "f32";  // f32, bf16, f16, tf32 or tf32x3
  bool type_given = false;
  std::vector<std::int64_t> sizes;
  double seconds = 60, more_seconds = 0;
  std::uint64_t evaluations = 0, seed = 1;
  std::size_t threads = 0;
  std::filesystem::path out = "params", log, params = "params";
  std::vector<std::filesystem::path> start_from;  // --start-from DIR (repeatable)
  int edge_split = -1;  // --edge-split: -1 auto, 1 on, 0 off (tuning::space_options::edge_split)
  std::vector<std::string> warm_inputs;  // --warm-inputs: input names (tune_options::warm_inputs)
  bool seconds_given = false, params_given = false;
};

// A whole number: digits only (no sign, point or exponent), within [min, max].
inline std::uint64_t parse_whole(const std::string& flag, const std::string& s, std::uint64_t min,
                                 std::uint64_t max, const std::string& what) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  const bool digits =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits || end != s.data() + s.size()) fail_usage(flag + " '" + s + "' is not " + what);
  if (ec == std::errc::result_out_of_range || n > max)
    fail_usage(flag + " '" + s + "' is too large (at most " + std::to_string(max) + ")");
  if (n < min) fail_usage(flag + " '" + s + "' is not " + what);
  return n;
}

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""} (each caller says what an empty part is).
inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = s.find(',', pos);
    parts.push_back(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) return parts;
    pos = comma + 1;
  }
}

// {"a", "b"} -> "a, b": names listed in an error message.
inline std::string join_commas(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

inline std::vector<std::int64_t> parse_sizes(const std::string& s) {
  std::vector<std::int64_t> v;
  for (const std::string& part : split_commas(s))
    v.push_back(std::int64_t(parse_whole("--sizes", part, 1,
                                         std::uint64_t(std::numeric_limits<std::int64_t>::max()),
                                         "a whole number >= 1 (in '" + s + "')")));
  return v;
}

// Seconds: a finite number > 0 ("0", "nan", "inf" and negatives are rejected).
inline double parse_seconds(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(x) || x <= 0)
    fail_usage(flag + " '" + s +
               "' is not a number of seconds > 0 (e.g. 60 or 0.5); for no time limit give "
               "--evaluations N without --time");
  return x;
}

// Options each command takes; the others are an error naming the command they belong to.
inline bool option_of(const std::string& command, const std::string& flag) {
  static const std::vector<std::string> tune_only = {
      "--time", "--more",    "--evaluations", "--technique",  "--seed",       "--out",
      "--log",  "--threads", "--start-from",  "--edge-split", "--warm-inputs"};
  if (flag == "--type") return true;  // list, tune and run
  if (command == "list") return false;
  if (flag == "--sizes" || flag == "--backend") return true;
  if (command == "run") return flag == "--params";
  return std::find(tune_only.begin(), tune_only.end(), flag) != tune_only.end();
}

// The tuning flags 'tune' and 'tune-layer' share: applies `flag`'s value `v` to `o` and returns
// true, or returns false for a flag that is not one of them.
inline bool parse_tune_flag(options& o, const std::string& flag, const std::string& v) {
  const std::uint64_t max_count = std::uint64_t(std::numeric_limits<std::int64_t>::max());
  if (flag == "--time")
    o.seconds = parse_seconds(flag, v), o.seconds_given = true;
  else if (flag == "--more")
    o.more_seconds = parse_seconds(flag, v);
  else if (flag == "--evaluations")
    o.evaluations = parse_whole(flag, v, 1, max_count, "a whole number >= 1");
  else if (flag == "--technique")
    o.technique = v;
  else if (flag == "--seed")
    o.seed =
        parse_whole(flag, v, 0, std::numeric_limits<std::uint64_t>::max(), "a whole number >= 0");
  else if (flag == "--backend")
    o.backend = v;
  else if (flag == "--out")
    o.out = v;
  else if (flag == "--threads")
    o.threads = std::size_t(parse_whole(flag, v, 1, 4096, "a whole number >= 1"));
  else if (flag == "--start-from") {
    std::error_code ec;
    if (!std::filesystem::is_directory(v, ec))
      fail_usage("--start-from '" + v + "' is not a folder (of parameter files tuned before)");
    o.start_from.emplace_back(v);
  } else if (flag == "--edge-split") {
    if (v != "auto" && v != "on" && v != "off")
      fail_usage("--edge-split '" + v + "' is not auto, on or off");
    o.edge_split = v == "auto" ? -1 : v == "on" ? 1 : 0;
  } else
    return false;
  return true;
}

// What a 'tune' or 'tune-layer' command line asks of mdh::tuning::tune (the parameter file and
// log are the command's to name).
inline mdh::tuning::tune_options to_tune_options(const options& o) {
  mdh::tuning::tune_options t;
  t.technique = o.technique;
  t.seed = o.seed;
  t.seconds = o.seconds;
  t.more_seconds = o.more_seconds;
  t.evaluations = o.evaluations;
  t.prepare_threads = o.threads;
  t.start_from = o.start_from;
  t.space.edge_split = o.edge_split;
  t.interrupt = &interrupted;
  t.on_search_start = [] { searching = true; };
  return t;
}

inline options parse(int argc, char** argv) {
  options o;
  if (argc < 2) fail_usage("no command");
  o.command = argv[1];
  if (o.command == "-h" || o.command == "--help" || o.command == "help") {
    std::cout << usage() << "\n" << usage_tune << "\n" << usage_run;
    if (!extra_commands.empty())
      std::cout << "\n(mdh-tune " << extra_commands.front() << " --help: what it accepts)\n";
    std::exit(0);
  }
  if (o.command != "list" && o.command != "tune" && o.command != "run") {
    std::string known = "list, tune";
    for (auto& c : extra_commands) known += ", " + c;
    fail_usage("unknown command '" + o.command + "' (" + known + " or run)");
  }
  current_command = o.command;
  for (int k = 2; k < argc; ++k)
    if (std::string a = argv[k]; a == "--help" || a == "-h") {
      std::cout << usage_of(o.command);
      std::exit(0);
    }
  int k = 2;
  if (o.command != "list") {
    if (argc < 3 || argv[2][0] == '-') fail_usage("'" + o.command + "' needs an OPERATOR");
    o.op = argv[k++];
  }
  for (; k < argc; ++k) {
    std::string a = argv[k];
    if (a.rfind("--", 0) != 0) fail_usage("unexpected argument '" + a + "'");
    static const std::vector<std::string> known = {
        "--sizes",   "--time",    "--more",       "--evaluations", "--technique",
        "--seed",    "--backend", "--out",        "--log",         "--params",
        "--threads", "--type",    "--start-from", "--edge-split",  "--warm-inputs"};
    if (std::find(known.begin(), known.end(), a) == known.end())
      fail_usage("unknown option '" + a + "'");
    if (!option_of(o.command, a))
      fail_usage(a + " is not an option of '" + o.command + "'" +
                 (o.command == "run" ? " (it is one of 'tune')"
                  : a == "--params"  ? " (it is one of 'run'; tune writes to --out DIR)"
                                     : ""));
    if (k + 1 >= argc) fail_usage(a + " needs a value");
    const std::string v = argv[++k];
    if (a == "--sizes")
      o.sizes = parse_sizes(v);
    else if (parse_tune_flag(o, a, v))
      continue;
    else if (a == "--log")
      o.log = v;
    else if (a == "--params")
      o.params = v, o.params_given = true;
    else if (a == "--type")
      o.type = v, o.type_given = true;
    else if (a == "--warm-inputs")
      for (std::string& name : split_commas(v)) {
        if (name.empty()) fail_usage("--warm-inputs '" + v + "' has an empty name");
        o.warm_inputs.push_back(std::move(name));
      }
  }
  if (o.type != "f32" && o.type != "bf16" && o.type != "f16" && o.type != "tf32" &&
      o.type != "tf32x3")
    fail_usage("--type must be f32, bf16, f16, tf32 or tf32x3, not '" + o.type + "'");
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
  double b =
      0;  // the kernel's buffers: with an epilogue, its own and not the computation's outputs
  for (auto& bufs : {mdh::ir::kernel_inputs(c), mdh::ir::kernel_outputs(c)})
    for (auto& x : bufs)
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
  mdh::tuning::tune_options t = to_tune_options(o);
  auto w = mdh::tuning::workload::of(c, o.sizes);
  auto file = o.out / mdh::tuning::file_name(w);
  t.parameter_file = file;
  t.log = o.log.empty() ? std::filesystem::path(file.string() + ".log.jsonl") : o.log;
  const auto inputs = mdh::ir::kernel_inputs(c);
  for (auto& name : o.warm_inputs) {
    const auto it = std::find_if(inputs.begin(), inputs.end(),
                                 [&](const mdh::ir::buffer& b) { return b.name == name; });
    if (it == inputs.end()) {
      std::vector<std::string> names;
      for (auto& b : inputs) names.push_back(b.name);
      fail_usage("--warm-inputs: '" + name + "' is not an input of '" + c.name +
                 "' (its inputs: " + join_commas(names) + ")");
    }
    t.warm_inputs.push_back(std::size_t(it - inputs.begin()));
  }
  mdh::tuning::check_workload_memory(comp, o.sizes, mdh::tuning::memory_of(target));
  std::filesystem::create_directories(o.out);
  auto space = mdh::tuning::make_search_space(c, o.sizes, target.limits(), t.space);
  std::printf("tuning %s %s on %s (%s): search space of %s configurations, log %s\n",
              c.name.c_str(), mdh::to_string(o.sizes).c_str(), target.id().name.c_str(),
              target.id().backend.c_str(), atf::to_string(space.size()).c_str(),
              t.log.string().c_str());
  std::fflush(stdout);
  auto r = mdh::tuning::tune(comp, o.sizes, target, t);
  std::printf(
      "\nkept configuration of %s %s (%llu evaluations, %llu valid, %llu resumed from the log, "
      "%.1f s%s):\n",
      c.name.c_str(), mdh::to_string(o.sizes).c_str(), (unsigned long long)r.run.evaluations,
      (unsigned long long)r.run.valid, (unsigned long long)r.run.resumed, r.run.seconds,
      interrupted ? ", interrupted: run the same command to resume" : "");
  print_rates(c, o.sizes, r.record.cost);
  std::printf("  kept        %s\n  config      %s\n  written to  %s\n",
              r.record.tuning.value("chosen_because", "").c_str(),
              mdh::lower::to_string(r.best).c_str(), file.string().c_str());
  if (r.run.infrastructure_failures > 0) {
    std::fprintf(stderr,
                 "mdh-tune: %llu evaluations failed for reasons that are not the "
                 "configuration's (not logged: a later run measures them); last: %s\n",
                 (unsigned long long)r.run.infrastructure_failures,
                 r.run.last_infrastructure_failure.c_str());
    if (r.run.stop_reason.rfind("infrastructure", 0) == 0) return 1;
  }
  return 0;
}

template <class Target, class Comp>
int run_on(Target& target, const Comp& comp, const options& o) {
  const auto& c = comp.ir();
  std::error_code ec;
  if (o.params_given && !std::filesystem::exists(o.params, ec))
    throw mdh::error("--params '" + o.params.string() + "': no such file or folder");
  mdh::tuning::check_workload_memory(comp, o.sizes, mdh::tuning::memory_of(target));
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
  if (!choice.record && !choice.unusable.empty()) {
    std::fprintf(stderr,
                 "mdh-tune: ran the default configuration: a parameter file for this workload "
                 "cannot be used (above); exit code %d\n",
                 exit_unusable_parameter_file);
    return exit_unusable_parameter_file;
  }
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

// The element type of the buffers an operator is built with for --type (tf32, tf32x3 are f32).
inline std::string element_type_of(const options& o) {
  return o.type == "tf32" || o.type == "tf32x3" ? "f32" : o.type;
}

// The operator as --type asks for it: checked to have buffers of the element type when --type
// was given, and at precision tf32 or tf32x3 for those (a contraction only: otherwise an error).
template <class Comp>
Comp typed(const options& o, const Comp& comp) {
  const std::string element = element_type_of(o);
  if (o.type_given) {
    bool found = false;
    auto scan = [&](const mdh::ir::computation& c) {
      for (auto* bufs : {&c.inputs, &c.outputs})
        for (auto& b : *bufs) found = found || mdh::short_name(b.type) == element;
    };
    if constexpr (mdh::is_fused_v<Comp>)
      scan(comp.first().ir()), scan(comp.second().ir());
    else
      scan(comp.ir());
    if (!found)
      throw mdh::error("--type " + o.type + ": '" + o.op + "' has no " + element +
                       " buffers (it is defined with other element types)");
  }
  if (o.type != "tf32" && o.type != "tf32x3") return comp;
  if constexpr (mdh::is_fused_v<Comp>)
    throw mdh::error("--type " + o.type + " applies to contractions; '" + o.op +
                     "' is a fused pair of two computations");
  else
    return comp.with_precision(o.type == "tf32" ? mdh::ir::precision::tf32
                                                : mdh::ir::precision::tf32x3);
}

// Calls for_each(element_type, visit) when the catalog takes an element type (f32, bf16, f16:
// mdh::ops::for_each_operator), for_each(visit) when it has one type (one_operator).
template <class ForEach, class Visit>
void for_each_typed(ForEach& for_each, const std::string& element, Visit&& visit) {
  if constexpr (std::is_invocable_v<ForEach&, std::string_view, Visit&>)
    for_each(std::string_view(element), visit);
  else
    for_each(visit);
}

// The whole command line: `for_each(visit)` calls visit(catalog_entry, make) per operator
// (or `for_each(element_type, visit)`, for catalogs of several element types).
template <class ForEach>
int main(int argc, char** argv, ForEach&& for_each_operator) {
  options o = parse(argc, argv);
  auto for_each = [&](auto&& visit) {
    for_each_typed(for_each_operator, element_type_of(o), visit);
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
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
      rc = dispatch(o, typed(o, make(o.sizes)));
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
