// SPDX-License-Identifier: MIT
// mdh::tuning::tune: tunes one computation at given sizes on one target (a CUDA GPU, or an
// OpenCL device such as PoCL) with atf, and writes the best configuration as a parameter file.
//
// Per evaluation: the prepare stage (CPU threads, in parallel) maps the atf configuration to a
// lower::config, checks it, lowers it and compiles the kernel; the measure stage (one worker per
// device) loads it, checks its first run against the CPU reference (on fresh random non-zero
// inputs, outputs poisoned) and times it. Every failure becomes an invalid configuration with its
// reason in the log; the run goes on. The log makes an interrupted run resumable. When a time
// budget (or an interrupt) stops the run, compiles still in flight are not waited for: they finish
// unmeasured in the background, and the last copy of the result's run.background waits for them,
// so the target must outlive it.
//
// A Target provides:
//   tuning::device_id id() const;  lower::device_limits limits() const;  std::size_t workers()
//   const; void set_data(const ir::computation&, sizes, span<const buffer_ref> in, span<const
//   buffer_ref> want); std::any prepare(const lower::kernel_plan&);        // thread-safe
//   (compiles) double measure(std::any& prepared, std::size_t worker);  // µs; throws on failure
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <atf/atf.hpp>
#include <mdh/fused.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/kernel_generation.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/reference.hpp>
#include <mdh/tensor.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <tuning/nearest_shape_start.hpp>
#include <tuning/producer_space.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>
#include <tuning/workload_memory.hpp>

namespace mdh::tuning {

struct tune_options {
  std::string technique = "auc_bandit";  // or exhaustive, random, annealing, de, pattern, torczon
  std::uint64_t seed = 1;
  double seconds = 60;  // wall-time budget over every session of the log (0: none)
  // Wall-time budget of this session alone, however much the log already holds (0: none): a
  // resumed run tunes this many seconds more. With `seconds` too, whichever ends first.
  double more_seconds = 0;
  std::uint64_t evaluations = 0;         // evaluation budget (0: none)
  std::filesystem::path log;             // JSON-lines log; an existing one is resumed
  std::filesystem::path parameter_file;  // where the best configuration goes (empty: not written)
  std::size_t prepare_threads = 0;       // compile threads (0: all cores)
  atf::progress_mode progress = atf::progress_mode::automatic;
  space_options space;
  std::uint64_t data_seed = 7;  // seed of the random inputs
  // Inputs (indices into the computation's kernel inputs) that an earlier kernel has just written
  // where the computation runs, e.g. a stage of the BERT layer reading the previous stage's
  // output: a target that flushes the L2 before each timed repetition (CUDA) reads them back into
  // L2 after the flush. Empty: every input starts from a flushed L2, the computation timed alone.
  // Recorded in the log's header and the parameter file; a log timed with other warm inputs is
  // set aside (its best configurations start the search).
  std::vector<std::size_t> warm_inputs;
  // Measure first, and search from the best of them: the configuration of an existing
  // `parameter_file` for this workload, the 8 best of a log set aside for another search space,
  // then start_configurations().
  bool start_configurations = true;
  // Folders of parameter files tuned before (searched recursively; e.g. a device's committed
  // parameter folder) that starts are taken from too: the bare product's configuration of a
  // product with an epilogue, and the nearest other shape's (tuning/nearest_shape_start.hpp).
  std::vector<std::filesystem::path> start_from;
  const std::atomic<bool>* interrupt =
      nullptr;  // set (e.g. by SIGINT) to stop after the current step
  // Called once the set-up (search space, inputs, CPU reference, the default configuration's
  // measurement) is done and the search begins: only from then on is there something to keep
  // at an interrupt (mdh-tune exits at once on a Ctrl-C before it).
  std::function<void()> on_search_start;
};

template <class Config>
struct basic_tune_result {
  parameter_record record;
  atf::tuning_result run;
  Config best;
};
using tune_result = basic_tune_result<lower::config>;
using fused_tune_result = basic_tune_result<lower::fused_config>;

inline std::unique_ptr<atf::search::technique> make_technique(const std::string& name) {
  namespace s = atf::search;
  if (name == "auc_bandit" || name == "default") return std::make_unique<s::auc_bandit>();
  if (name == "exhaustive") return std::make_unique<s::exhaustive>();
  if (name == "random") return std::make_unique<s::random>();
  if (name == "annealing") return std::make_unique<s::simulated_annealing>();
  if (name == "de") return std::make_unique<s::differential_evolution>();
  if (name == "pattern") return std::make_unique<s::pattern_search>();
  if (name == "torczon") return std::make_unique<s::torczon>();
  if (name == "surrogate") return std::make_unique<s::surrogate>();  // ranks the bandit's moves
  throw error("unknown search technique '" + name +
              "' (known: auc_bandit, surrogate, exhaustive, random, annealing, de, pattern, "
              "torczon)");
}

// Random inputs and the reference outputs for a computation at `sizes`.
struct workload_data {
  std::vector<host_buffer> inputs, expected;
  std::vector<buffer_ref> input_refs() const { return {inputs.begin(), inputs.end()}; }
  std::vector<buffer_ref> expected_refs() const { return {expected.begin(), expected.end()}; }
};

template <class Comp>
workload_data make_workload_data(const Comp& comp, const std::vector<std::int64_t>& sizes,
                                 std::uint64_t seed) {
  // a computation's (with an epilogue: its own inputs and outputs too), or a fused pair's buffers
  const auto inputs = ir::kernel_inputs(comp.ir());
  workload_data d;
  for (std::size_t b = 0; b < inputs.size(); ++b)
    d.inputs.emplace_back(inputs[b].type, comp.shape(inputs[b].name, sizes)).randomize(seed + b);
  for (auto& o : ir::kernel_outputs(comp.ir()))
    d.expected.emplace_back(o.type, comp.shape(o.name, sizes));
  auto in = d.input_refs();
  auto out = d.expected_refs();
  reference(comp, sizes, std::span<const buffer_ref>(in), std::span<const buffer_ref>(out));
  return d;
}

// The kernel generation a tuning log's costs were measured with (mdh/kernel_generation.hpp): its
// header's "mdh_kernels"; 0 for logs written before logs recorded it.
inline int log_kernel_generation(const nlohmann::json& header) {
  const auto it = header.find("mdh_kernels");
  return it != header.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// The warm inputs a tuning log's costs were timed with (tune_options::warm_inputs): its header's
// "warm_inputs"; none for logs that do not name any.
inline std::vector<std::size_t> log_warm_inputs(const nlohmann::json& header) {
  std::vector<std::size_t> warm;
  const auto it = header.find("warm_inputs");
  if (it != header.end() && it->is_array())
    for (auto& k : *it)
      if (k.is_number_unsigned()) warm.push_back(k.get<std::size_t>());
  return warm;
}

// "0,3": the warm inputs as a file-name suffix.
inline std::string warm_inputs_key(const std::vector<std::size_t>& warm) {
  std::string key;
  for (std::size_t k : warm) key += (key.empty() ? "" : ",") + std::to_string(k);
  return key;
}

inline std::string describe_warm_inputs(const std::vector<std::size_t>& warm) {
  return warm.empty() ? "every input flushed from L2"
                      : "inputs " + warm_inputs_key(warm) + " in L2";
}

// A log that cannot be resumed as it is - written for another search space (an older mdh, whose
// parameters differed), or measured with another generation of kernels (its costs are those of
// programs mdh no longer prints), or timed with other inputs in L2 - is renamed to
// <log>.space-<its hash>, <log>.kernels-<its generation> or <log>.warm-<its warm inputs> (never
// over an existing file), so that the run starts a fresh
// log and nothing measured is lost; its best configurations start the search. Logs atf cannot
// read are left for atf to report. Returns where it went, if it was set aside.
inline std::optional<std::filesystem::path> set_aside_stale_log(
    const std::filesystem::path& log, const std::string& hash,
    const std::vector<std::size_t>& warm_inputs = {}) {
  const std::optional<nlohmann::json> header = atf::log_header(log);
  if (!header || !header->contains("space_hash") || !(*header)["space_hash"].is_string())
    return std::nullopt;
  const std::string old = (*header)["space_hash"].get<std::string>();
  const int generation = log_kernel_generation(*header);
  std::string why, suffix;
  if (old != hash) {
    why = "was written for another search space";
    suffix = ".space-" + old;
  } else if (generation != kernel_generation) {
    why = "was measured with kernels of generation " + std::to_string(generation) +
          " (this mdh prints generation " + std::to_string(kernel_generation) + ")";
    suffix = ".kernels-" + std::to_string(generation);
  } else if (const auto logged = log_warm_inputs(*header); logged != warm_inputs) {
    why = "was timed with " + describe_warm_inputs(logged) +
          " (this run: " + describe_warm_inputs(warm_inputs) + ")";
    suffix = ".warm-" + (logged.empty() ? std::string("none") : warm_inputs_key(logged));
  } else {
    return std::nullopt;
  }
  std::filesystem::path aside = log;
  aside += suffix;
  std::error_code ec;
  for (int n = 2; std::filesystem::exists(aside, ec); ++n) {
    aside = log;
    aside += suffix + "." + std::to_string(n);
  }
  std::filesystem::rename(log, aside);
  std::fprintf(stderr,
               "mdh: %s %s; kept as %s, tuning starts a new log from its best configurations\n",
               log.string().c_str(), why.c_str(), aside.string().c_str());
  return aside;
}

// The `k` cheapest distinct valid configurations of a JSON-lines tuning log, cheapest first, in
// today's parameter names (a log of format 1 has the old ones). Lines that are not valid
// evaluations (the header, failures, a line cut short by an interrupted run) are passed over.
inline std::vector<atf::configuration> best_of_log(const std::filesystem::path& log,
                                                   std::size_t k) {
  std::vector<std::pair<double, nlohmann::json>> valid;
  const auto header = atf::log_header(log);
  const bool v1 = header && header->value("atf_log", 0) == 1;
  for (nlohmann::json& j : atf::log_records(log)) {  // named, whatever the format
    if (v1)
      j["configuration"] =
          atf::detail::renamed_configuration(j["configuration"], upgraded_parameter_name);
    if (!j.value("valid", false) || !j.contains("cost") || !j["cost"].is_number()) continue;
    valid.emplace_back(j["cost"].get<double>(), j["configuration"]);
  }
  std::stable_sort(valid.begin(), valid.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<atf::configuration> best;
  std::set<std::string> keys;
  for (auto& [cost, j] : valid) {
    if (best.size() >= k) break;
    try {
      auto c = atf::configuration::from_json(j);
      if (keys.insert(c.key()).second) best.push_back(std::move(c));
    } catch (const std::exception&) {  // a value atf cannot read: not a start
    }
  }
  return best;
}

// The configuration of an existing parameter file for this workload, as a point of the current
// space's parameters (none when there is no such file, or it is for another workload).
template <class IR>
std::optional<atf::configuration> parameter_file_start(const std::filesystem::path& file,
                                                       const IR& c,
                                                       const std::vector<std::int64_t>& sizes,
                                                       const lower::device_limits& limits,
                                                       const space_options& space = {}) {
  std::error_code ec;
  if (file.empty() || !std::filesystem::exists(file, ec)) return std::nullopt;
  try {
    parameter_record r = read_parameter_file(file);
    if (!(r.work == workload::of(c, sizes))) return std::nullopt;
    if constexpr (std::is_same_v<IR, ir::computation>)  // with or without edge_split
      return to_space_configuration(lower::config_from_json(r.configuration, c), c, sizes, limits,
                                    space);
    else
      return to_space_configuration(lower::config_from_json(r.configuration, c), c, sizes, limits);
  } catch (const std::exception& e) {  // the run overwrites it at the end: say so, go on
    std::fprintf(stderr, "mdh: %s is not a usable parameter file (%s); not a start\n",
                 file.string().c_str(), e.what());
    return std::nullopt;
  }
}

// A computation with an epilogue has the product's parameters: the product's own tuned
// configuration at these sizes (a parameter file in the folder of `file`, else under a folder of
// `elsewhere`), where it is valid with the epilogue too, is where its search starts (none
// otherwise).
inline std::optional<atf::configuration> product_start(
    const std::filesystem::path& file, const ir::computation& c,
    const std::vector<std::int64_t>& sizes, const device_id& dev,
    const lower::device_limits& limits, const std::vector<std::filesystem::path>& elsewhere = {},
    const space_options& space = {}) {
  if (!c.epilogue || (file.empty() && elsewhere.empty())) return std::nullopt;
  ir::computation product = c;
  product.epilogue.reset();
  try {
    std::vector<std::filesystem::path> folders;
    if (!file.empty()) folders.push_back(file.parent_path().empty() ? "." : file.parent_path());
    folders.insert(folders.end(), elsewhere.begin(), elsewhere.end());
    std::optional<parameter_record> rec;
    for (std::size_t i = 0; i < folders.size() && !rec; ++i)
      rec = find_parameters(folders[i], workload::of(product, sizes), dev);
    if (!rec) return std::nullopt;
    auto cfg = lower::config_from_json(rec->configuration, c);
    lower::check(cfg, c, sizes, limits);  // atomics across blocks are not
    return to_space_configuration(cfg, c, sizes, limits, space);
  } catch (const error&) {
    return std::nullopt;
  }
}

// Which configuration a parameter file's "tuning" object kept and why, in words: "the best
// evaluated configuration (40.10 us; the default configuration: 49.90 us)" or "the default
// configuration: none of the 20 evaluated configurations beat it (49.90 us; the best evaluated:
// 55.20 us)".
inline std::string chosen_because(const nlohmann::json& tuning) {
  auto us = [](double x) {
    char b[64];
    std::snprintf(b, sizeof b, "%.2f us", x);
    return std::string(b);
  };
  const double def = tuning.value("default_cost", std::numeric_limits<double>::infinity());
  const std::string def_s = std::isfinite(def) ? us(def) : "failed";
  const auto n = tuning.value("evaluations", std::uint64_t(0));
  if (tuning.value("chosen", "") == "tuned")
    return "the best evaluated configuration (" +
           us(tuning.value("best_evaluated_cost", std::numeric_limits<double>::infinity())) +
           "; the default configuration: " + def_s + ")";
  if (!tuning.contains("best_evaluated_cost"))
    return "the default configuration: none of the " + std::to_string(n) +
           " evaluated configurations was valid (" + def_s + ")";
  return "the default configuration: none of the " + std::to_string(n) +
         " evaluated configurations beat it (" + def_s +
         "; the best evaluated: " + us(tuning["best_evaluated_cost"].get<double>()) + ")";
}

// `comp`: a computation, or a pair of mdh::fuse (tuned as one kernel; the result's and the
// parameter file's configuration is then a lower::fused_config: {"first": ..., "second": ...}).
template <class Target, class Comp>
auto tune(const Comp& comp, const std::vector<std::int64_t>& sizes, Target& target,
          const tune_options& opt) {
  const auto& c = comp.ir();
  comp.check_sizes(sizes);
  check_workload_memory(comp, sizes, memory_of(target));  // before anything is allocated
  // One tuner per log, from the start (before an old log is moved aside) to the end of the run:
  // a second one fails here, before it computes anything.
  std::shared_ptr<const atf::log_lock> lock;
  if (!opt.log.empty()) {
    if (opt.log.has_parent_path()) std::filesystem::create_directories(opt.log.parent_path());
    lock = std::make_shared<const atf::log_lock>(opt.log);
  }
  const lower::device_limits limits = target.limits();
  atf::search_space space = make_search_space(c, sizes, limits, opt.space);

  workload_data data = make_workload_data(comp, sizes, opt.data_seed);
  auto in = data.input_refs();
  auto want = data.expected_refs();
  target.set_data(c, sizes, in, want);
  std::vector<std::size_t> warm = opt.warm_inputs;  // one order, for the log header's comparison
  std::sort(warm.begin(), warm.end());
  warm.erase(std::unique(warm.begin(), warm.end()), warm.end());
  // Targets without an L2 flush (OpenCL) time every input as it is left in their caches.
  if constexpr (requires { target.set_warm_inputs(warm); })
    target.set_warm_inputs(warm);
  else
    for (std::size_t k : warm)
      if (k >= in.size())
        throw error("warm input " + std::to_string(k) + " of a computation with " +
                    std::to_string(in.size()) + " inputs");

  // A time stop does not wait for compiles in flight: they finish after tune() has returned
  // (tune_result::run.background), so the prepare stage holds copies of what it reads; only the
  // target is shared.
  atf::evaluator ev;
  ev.prepare = [c, sizes, limits, &target](const atf::configuration& a) -> std::any {
    auto cfg = to_config(a, c, sizes);
    try {
      lower::check(cfg, c, sizes, limits);
    } catch (const error& e) {
      throw atf::invalid_configuration("constraint", e.what());
    }
    return target.prepare(lower::lower(c, sizes, cfg, limits));
  };
  // Points of the space that configure the same kernel (kernel_key: e.g. any SIMT coordinates
  // under mma = 1, which the tensor-core kernel does not read; t_sm_steps 0 and 1 where one step
  // is the whole chunk) are measured once; the search gets the same cost again at no device time.
  struct measured_costs {
    std::mutex lock;
    std::map<std::string, double> us;
  };
  auto measured = std::make_shared<measured_costs>();
  ev.measure = [&, measured](const atf::configuration& a, std::any& prepared, std::size_t worker) {
    const std::string key = kernel_key(to_config(a, c, sizes));
    {
      std::lock_guard<std::mutex> g(measured->lock);
      if (auto it = measured->us.find(key); it != measured->us.end()) return it->second;
    }
    const double us = target.measure(prepared, worker);
    std::lock_guard<std::mutex> g(measured->lock);
    measured->us.emplace(key, us);
    return us;
  };
  ev.prepare_threads = opt.prepare_threads;
  ev.measure_workers = target.workers();

  atf::abort::condition stop = atf::abort::evaluations(atf::abort::unlimited);
  bool limited = false;
  if (opt.seconds > 0) {
    stop = atf::abort::duration(std::chrono::duration<double>(opt.seconds));
    limited = true;
  }
  if (opt.more_seconds > 0) {
    auto more = atf::abort::session_duration(std::chrono::duration<double>(opt.more_seconds));
    stop = limited ? (stop || more) : more;
    limited = true;
  }
  if (opt.evaluations > 0) {
    auto n = atf::abort::evaluations(opt.evaluations);
    stop = limited ? (stop || n) : n;
    limited = true;
  }
  if (opt.interrupt) {
    auto flag = opt.interrupt;
    auto interrupted =
        atf::abort::when("interrupted", [flag](const auto&) { return flag->load(); });
    stop = limited ? (stop || interrupted) : interrupted;
    limited = true;
  }
  atf::tuner t;
  t.technique(make_technique(opt.technique)).seed(opt.seed).progress(opt.progress).cost_unit("us");
  std::optional<std::filesystem::path> aside;
  if (!opt.log.empty()) {
    if (upgrade_tuning_log(opt.log, space))
      std::fprintf(stderr, "mdh: %s upgraded to today's log format (the original kept as .v1)\n",
                   opt.log.string().c_str());
    aside = set_aside_stale_log(opt.log, space.hash(), warm);
    t.log_file(opt.log, std::move(lock));
    nlohmann::json fields = {{"mdh_kernels", kernel_generation}};
    if (!warm.empty()) fields["warm_inputs"] = warm;
    t.log_header_fields(std::move(fields));
  }
  if (opt.start_configurations) {
    // what earlier runs found first (the parameter file; for a product with an epilogue, the
    // product's; the nearest other shape's, carried over; the best of a log set aside for another
    // space: those still in this space), then the generic starts
    std::vector<atf::configuration> starts;
    if (auto f = parameter_file_start(opt.parameter_file, c, sizes, limits, opt.space))
      starts.push_back(*f);
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, ir::computation>) {
      if (auto p = product_start(opt.parameter_file, c, sizes, target.id(), limits, opt.start_from,
                                 opt.space))
        starts.push_back(*p);
      if (auto n = nearest_shape_start(opt.parameter_file, c, sizes, target.id(), limits,
                                       opt.start_from, opt.space))
        starts.push_back(*n);
    }
    if (aside)
      for (auto& b : best_of_log(*aside, 8)) {
        // a log of the space without edge_split (before it, or other space options): its
        // points are those with edge_split = 0 in a space that has it
        if constexpr (std::is_same_v<std::decay_t<decltype(c)>, ir::computation>)
          if (has_edge_split_parameter(c, sizes, opt.space) && !b.contains("edge_split"))
            b.set("edge_split", std::int64_t{0});
        // a with_producer log of the space before the tensor-core kernel: its SIMT points;
        // one before split keys: one block a row tile
        if constexpr (std::is_same_v<std::decay_t<decltype(c)>, ir::produced>) {
          if (!b.contains("mma")) b.set("mma", std::int64_t{0}), b.set("stages", std::int64_t{1});
          if (!b.contains("split")) b.set("split", std::int64_t{1});
        }
        starts.push_back(std::move(b));
      }
    // Edge tiles on the tile shapes earlier runs found: the first of those starts again with
    // edge_split 1 and 2 (where that is a point of the space), so that a search of a few seconds
    // compares the edge tiles on a tuned shape instead of on a generic start's.
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, ir::computation>)
      if (has_edge_split_parameter(c, sizes, opt.space)) {
        const std::size_t earned = std::min<std::size_t>(starts.size(), 4);
        for (std::size_t k = 0; k < earned; ++k)
          for (std::int64_t v : {1, 2}) {
            auto e = starts[k];
            if (e.contains("edge_split") && e.get<std::int64_t>("edge_split") == v) continue;
            e.set("edge_split", v);
            if (space.find(e)) starts.push_back(std::move(e));  // e.g. 2 needs a vector group
          }
      }
    for (auto& s : start_configurations(c, sizes, limits)) {
      if constexpr (std::is_same_v<std::decay_t<decltype(c)>, ir::computation>)
        starts.push_back(to_space_configuration(s, c, sizes, limits, opt.space));  // edge_split
      else
        starts.push_back(to_space_configuration(s, c, sizes, limits));
    }
    t.start_with(std::move(starts));
  }
  if (limited) t.abort_when(stop);
  // The default configuration is measured too, so a tuned record is never worse than running
  // untuned (short runs on some devices, e.g. CPUs through PoCL, may not beat it).
  double default_cost = std::numeric_limits<double>::infinity();
  std::string default_error;
  const auto fallback = lower::default_config(c, sizes);
  try {
    std::any prepared = target.prepare(lower::lower(c, sizes, fallback, limits));
    default_cost = target.measure(prepared, 0);
  } catch (const std::exception& e) {
    default_error = e.what();
  }

  basic_tune_result<std::remove_const_t<decltype(fallback)>> result;
  if (opt.on_search_start) opt.on_search_start();
  result.run = t.tune(space, ev);
  if (opt.seconds > 0 && result.run.measured == 0 && result.run.resumed_seconds >= opt.seconds)
    std::fprintf(stderr,
                 "mdh: nothing tuned: %s already holds %.1f s of tuning, the whole %.1f s budget "
                 "(it counts earlier sessions); to tune S seconds more, use --more S "
                 "(tune_options::more_seconds)\n",
                 opt.log.string().c_str(), result.run.resumed_seconds, opt.seconds);
  if (!result.run.found && !(default_cost < std::numeric_limits<double>::infinity()))
    throw error("tuning " + c.name + ": no valid configuration among " +
                std::to_string(result.run.evaluations) +
                " evaluations (see the log for reasons), and the default configuration failed: " +
                default_error);
  nlohmann::json tuning = result.run.tuning_json();
  tuning["date"] = utc_now();
  tuning["default_cost"] = default_cost;
  if (!warm.empty()) tuning["warm_inputs"] = warm;
  double cost = result.run.best_cost;
  if (result.run.found) tuning["best_evaluated_cost"] = result.run.best_cost;
  if (result.run.found && result.run.best_cost <= default_cost) {
    result.best = to_config(result.run.best, c, sizes);
    tuning["space_parameters"] = result.run.best.to_json();
    tuning["chosen"] = "tuned";
  } else {
    result.best = fallback;
    cost = default_cost;
    tuning["chosen"] = "default";
  }
  tuning["chosen_because"] = chosen_because(tuning);
  nlohmann::json cfg_json = result.best;
  result.record = {workload::of(c, sizes), target.id(), cfg_json, cost, "us", tuning};
  if (!opt.parameter_file.empty()) write_parameter_file(opt.parameter_file, result.record);
  return result;
}

}  // namespace mdh::tuning
