// SPDX-License-Identifier: MIT
// atf::tuner: runs a search technique over a search space with an evaluator until an abort
// condition holds, logging every evaluation; a run restarted on the same log resumes without
// measuring anything twice. Start configurations, if given, are evaluated before the search. At
// the stop, what has not started measuring is dropped (tuning_result::background).
#pragma once

#include <atf/abort/condition.hpp>
#include <atf/background.hpp>
#include <atf/error.hpp>
#include <atf/evaluator.hpp>
#include <atf/log.hpp>
#include <atf/log_lock.hpp>
#include <atf/log_upgrade.hpp>
#include <atf/progress.hpp>
#include <atf/search/auc_bandit.hpp>
#include <atf/search/technique.hpp>
#include <atf/search_space.hpp>
#include <atf/status.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace atf {

struct tuning_result {
  configuration best;
  double best_cost = std::numeric_limits<double>::infinity();
  bool found = false;             // some valid configuration was evaluated
  std::uint64_t evaluations = 0;  // unique, including those read back from the log
  std::uint64_t valid = 0, invalid = 0;
  std::uint64_t resumed = 0;   // evaluations read back from the log
  std::uint64_t measured = 0;  // evaluations run in this session
  double seconds = 0;          // wall time of this session
  double total_seconds = 0;    // including earlier sessions of the same log
  double resumed_seconds = 0;  // what the log held before this session
  std::string technique, abort_condition, stop_reason;
  std::uint64_t seed = 0;
  index_t space_size = 0;
  std::string space_hash;
  std::vector<std::pair<std::uint64_t, double>> improvements;  // (evaluations, best cost)
  std::uint64_t filled = 0;            // points given to idle compile threads and GPUs (see tune())
  std::uint64_t starts_evaluated = 0;  // start configurations measured in this session
  std::uint64_t starts_skipped = 0;    // start configurations not in the search space
  std::vector<std::string> skipped_starts;  // "{configuration}: reason" for each of those
  // Evaluations that failed for reasons not the configuration's (infrastructure_failure): never
  // logged nor counted above; the last one's reason.
  std::uint64_t infrastructure_failures = 0;
  std::string last_infrastructure_failure;
  // Compiles the stop left running: they finish unmeasured; the last copy of this waits for them.
  background_work background;

  // The "tuning" object of a parameter file.
  nlohmann::json tuning_json() const {
    return {{"technique", technique},
            {"seed", seed},
            {"evaluations", evaluations},
            {"valid", valid},
            {"invalid", invalid},
            {"duration_s", total_seconds},
            {"abort", abort_condition},
            {"stop_reason", stop_reason},
            {"space_size", to_string(space_size)},
            {"space_hash", space_hash}};
  }
};

// An evaluation that failed for a reason not the configuration's (infrastructure_failure) is
// tried again this many times; after max_infrastructure_failures of them in a row (nothing else
// finished between them) the run stops: the machinery is broken, not the configurations.
inline constexpr int max_infrastructure_retries = 2;
inline constexpr std::uint64_t max_infrastructure_failures = 5;

class tuner {
 public:
  tuner() = default;

  tuner& technique(std::unique_ptr<search::technique> t) {
    technique_ = std::move(t);
    return *this;
  }
  template <std::derived_from<search::technique> T>
  tuner& technique(T t) {
    return technique(std::make_unique<T>(std::move(t)));
  }
  tuner& abort_when(abort::condition c) {
    abort_ = std::move(c);
    return *this;
  }
  tuner& seed(std::uint64_t s) {
    seed_ = s;
    return *this;
  }
  // The run takes the log's lock (atf::log_lock) for its whole length: a second tuner on the same
  // log fails at once. `held`: the caller has taken it already (e.g. to move an old log aside).
  tuner& log_file(std::filesystem::path p, std::shared_ptr<const log_lock> held = nullptr) {
    log_ = std::move(p);
    held_lock_ = std::move(held);
    return *this;
  }
  // Fields the user adds to the header of a new log (e.g. which generator made the evaluated
  // programs), beside atf's own; a log being resumed keeps its header.
  tuner& log_header_fields(nlohmann::json fields) {
    header_fields_ = std::move(fields);
    return *this;
  }
  tuner& progress(progress_mode m) {
    progress_ = m;
    return *this;
  }
  // The cost's unit ("us"), shown with the best cost on the progress line.
  tuner& cost_unit(std::string unit) {
    unit_ = std::move(unit);
    return *this;
  }
  // Known-good configurations, evaluated first (unless already in the log); the technique then
  // starts from the best point seen so far. Those not in the search space are skipped and listed
  // in the result.
  tuner& start_with(std::vector<configuration> starts) {
    starts_ = std::move(starts);
    return *this;
  }
  // With a prepare stage and room for several evaluations in flight, slots left idle while a
  // batch waits for its slowest member get unseen neighbours of the best point (default on).
  tuner& fill_idle(bool on) {
    fill_idle_ = on;
    return *this;
  }
  // Called on the tuning thread after each evaluation is recorded.
  tuner& on_evaluation(std::function<void(const evaluation&)> f) {
    on_eval_ = std::move(f);
    return *this;
  }

  tuning_result tune(const search_space& space, const evaluator& ev);

 private:
  std::unique_ptr<search::technique> technique_;
  std::optional<abort::condition> abort_;
  std::optional<std::uint64_t> seed_;
  std::optional<std::filesystem::path> log_;
  std::shared_ptr<const log_lock> held_lock_;
  nlohmann::json header_fields_ = nlohmann::json::object();
  progress_mode progress_ = progress_mode::automatic;
  std::string unit_;
  std::function<void(const evaluation&)> on_eval_;
  std::vector<configuration> starts_;
  bool fill_idle_ = true;
};

namespace detail {

// Why a configuration is not in the space, for the report of skipped start configurations.
inline std::string why_not_in(const search_space& space, const configuration& c) {
  for (const auto& n : space.names()) {
    const value* v = c.find(n);
    if (!v) return "no value for parameter '" + n + "'";
    const auto& vals = space.values_of(n);
    if (std::find(vals.begin(), vals.end(), *v) == vals.end())
      return n + "=" + atf::to_string(*v) + " is not in its range";
  }
  for (const auto& [n, v] : c)
    if (std::find(space.names().begin(), space.names().end(), n) == space.names().end())
      return "unknown parameter '" + n + "'";
  return "violates a constraint";
}

}  // namespace detail

inline tuning_result tuner::tune(const search_space& space, const evaluator& ev) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!technique_) technique_ = std::make_unique<search::auc_bandit>();
  tuning_result res;
  res.technique = technique_->name();
  res.space_size = space.size();
  res.space_hash = space.hash();
  res.abort_condition = abort_ ? abort_->describe() : "whole space";

  std::unordered_map<point, double, point_hash> seen;
  std::vector<double> improvement_times;
  point best_point;
  tuning_status st;
  st.space_size = space.size();
  st.improvements = &res.improvements;
  st.improvement_times = &improvement_times;
  double elapsed_offset = 0;

  // What the technique has not observed yet (technique::observe): the resumed log's records,
  // handed over once the technique is initialised, in log order.
  std::vector<std::pair<point, double>> unobserved;
  bool observing = false;
  auto record = [&](const configuration& cfg, const point& p, bool valid, double cost) {
    const double known = valid ? cost : search::invalid_cost;
    seen.emplace(p, known);
    if (observing)
      technique_->observe(p, known);
    else
      unobserved.emplace_back(p, known);
    ++st.evaluations;
    (valid ? st.valid : st.invalid) += 1;
    if (valid && cost < st.best_cost) {
      st.best_cost = cost;
      res.best = cfg;
      best_point = p;
      res.improvements.emplace_back(st.evaluations, cost);
      improvement_times.push_back(st.elapsed_s);
    }
  };

  // Resume: read the whole log first; a bad log throws before anything is written.
  std::unique_ptr<log_writer> writer;
  // format 3 records in this order (a resumed log's header's); none: a resumed format-2 log,
  // which stays format 2
  std::optional<std::vector<std::string>> log_parameters = space.names();
  std::optional<std::uint64_t> logged_seed;
  std::shared_ptr<const log_lock> lock = held_lock_;
  if (log_ && !lock) lock = std::make_shared<const log_lock>(*log_);
  if (log_) {
    std::error_code ec;
    const bool exists =
        std::filesystem::exists(*log_, ec) && std::filesystem::file_size(*log_, ec) > 0;
    if (exists) {
      upgrade_log(*log_, space);  // a format-1 log of this space: rewritten as format 2
      log_contents lc = read_log(*log_, space.hash());
      if (lc.header.value("atf_log", 0) >= 3)
        log_parameters = lc.header.at("parameters").get<std::vector<std::string>>();
      else
        log_parameters.reset();
      if (lc.header.contains("seed")) logged_seed = lc.header["seed"].get<std::uint64_t>();
      std::size_t line = 1;
      for (const auto& r : lc.records) {
        ++line;
        configuration cfg;
        try {
          cfg = configuration::from_json(r.at("configuration"));
        } catch (const std::exception& e) {
          throw error(log_->string() + ":" + std::to_string(line) + ": corrupt record (" +
                      e.what() + "); the log was left untouched");
        }
        auto p = space.find(cfg);
        if (!p)
          throw error(log_->string() + ":" + std::to_string(line) + ": configuration " +
                      cfg.to_string() + " is not in this search space; the log was left untouched");
        if (seen.count(*p)) continue;
        const bool valid = r.at("valid").get<bool>();
        const double cost = valid ? r.at("cost").get<double>() : search::invalid_cost;
        st.elapsed_s = r.value("elapsed_s", st.elapsed_s);
        record(cfg, *p, valid, cost);
      }
      elapsed_offset = st.elapsed_s;
      res.resumed = st.evaluations;
      res.resumed_seconds = elapsed_offset;
      writer = std::make_unique<log_writer>(*log_, lc.good_bytes, lc.torn_tail);
    }
  }
  res.seed = seed_ ? *seed_ : logged_seed ? *logged_seed : std::random_device{}();
  if (log_ && !writer) {
    writer = std::make_unique<log_writer>(*log_, 0, false);
    nlohmann::json h = {{"atf_log", log_format_version},
                        {"space_hash", space.hash()},
                        {"space_size", to_string(space.size())},
                        {"parameters", space.names()},
                        {"technique", res.technique},
                        {"seed", res.seed},
                        {"created", detail::utc_timestamp()}};
    for (auto& [k, v] : header_fields_.items())
      if (!h.contains(k)) h[k] = v;  // atf's own fields are not the caller's to change
    writer->append(h);
  }

  detail::pipeline pipe(ev);
  detail::progress_line bar(progress_, unit_);
  technique_->initialize(space, res.seed);
  for (const auto& [p, cost] : unobserved) technique_->observe(p, cost);
  unobserved = {};
  observing = true;
  std::mt19937_64 escape_rng(res.seed ^ 0x9e3779b97f4a7c15ull);
  const std::size_t cap = std::max<std::size_t>(1, pipe.capacity());
  std::uint64_t submitted = 0;
  index_t scan = 0;
  int stuck = 0;

  // Brings the status clocks up to now.
  auto tick = [&] {
    st.session_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.elapsed_s = elapsed_offset + st.session_s;
  };
  auto show = [&](bool force = false) {
    bar.update(st, abort_ ? abort_->progress(st) : -1, abort_ ? abort_->seconds_left(st) : -1,
               force);
  };
  bool stopped = false;  // should_stop() has said so
  std::uint64_t infrastructure_in_a_row = 0;
  auto should_stop = [&] {
    tick();
    if (infrastructure_in_a_row >= max_infrastructure_failures)
      res.stop_reason = "infrastructure failures: " + std::to_string(infrastructure_in_a_row) +
                        " evaluations in a row failed for reasons not the configuration's (last: " +
                        res.last_infrastructure_failure + ")";
    else if (abort_ && abort_->stop(st))
      res.stop_reason = "abort condition " + abort_->describe();
    else if (index_t(st.evaluations) >= space.size())
      res.stop_reason = "search space exhausted";
    else
      return false;
    return stopped = true;
  };
  auto remaining = [&]() -> std::uint64_t {
    std::uint64_t r = abort_ ? abort_->remaining(st) : abort::unlimited;
    const index_t left = space.size() - index_t(st.evaluations);
    return left < index_t(r) ? static_cast<std::uint64_t>(left) : r;
  };

  // Every job in the pipeline: a technique's point or a filler (below), by submission id.
  std::unordered_map<std::uint64_t, point> jobs;
  std::unordered_set<point, point_hash> pending;  // their points
  auto submit = [&](const point& p) {
    jobs.emplace(submitted, p);
    pending.insert(p);
    pipe.submit(submitted++, space.to_configuration(p));
  };
  // Records and logs a finished evaluation; returns its point. An infrastructure failure is
  // not recorded: its point is submitted again (nothing returned) or, after its retries, returned
  // unseen.
  std::unordered_map<point, int, point_hash> infrastructure_tries;
  auto take = [&](evaluation e) -> std::optional<point> {
    tick();
    auto it = jobs.find(e.id);
    point p = std::move(it->second);
    jobs.erase(it);
    pending.erase(p);
    if (e.infrastructure) {
      ++res.infrastructure_failures, ++infrastructure_in_a_row;
      res.last_infrastructure_failure = e.error;
      const bool again = !stopped && ++infrastructure_tries[p] <= max_infrastructure_retries &&
                         infrastructure_in_a_row < max_infrastructure_failures;
      std::fprintf(stderr, "\natf: %s\natf: not the configuration's failure: not logged, %s\n",
                   e.error.c_str(), again ? "trying again" : "not counted");
      show();
      if (!again) return p;
      submit(p);
      return std::nullopt;
    }
    infrastructure_in_a_row = 0;
    record(e.config, p, e.valid, e.cost);
    ++res.measured;
    if (writer)
      writer->append(log_record(e, st.elapsed_s, log_parameters ? &*log_parameters : nullptr));
    if (on_eval_) on_eval_(e);
    show();
    return p;
  };
  // Waits for the next finished evaluation and takes it; nothing when the abort condition holds
  // first. The condition is checked while waiting, so a time budget ends on time rather than
  // when the next compile happens to finish.
  auto receive = [&]() -> std::optional<point> {
    for (;;) {
      if (auto e = pipe.next_for(std::chrono::milliseconds(20)))
        if (auto p = take(std::move(*e))) return p;
      if (should_stop()) return std::nullopt;
      show();
    }
  };
  // The run stops: what has not started measuring is dropped, not measured (compiles in flight
  // finish in the background: res.background); measurements in progress are waited for and
  // logged. An evaluations(n) budget has nothing in flight when it stops, so it stays exact.
  auto cut = [&] {
    pipe.drop_unmeasured();
    while (pipe.in_flight() > 0) take(pipe.next());
    jobs.clear();
    pending.clear();
  };
  // Waits for everything in flight, unless the abort condition holds first.
  auto drain = [&] {
    while (pipe.in_flight() > 0)
      if (!receive()) return cut();
  };
  // A batch goes back to the technique only when all of it has been measured, so compile threads
  // and GPUs would idle while it waits for its slowest compile. Idle slots get unseen neighbours
  // of the best point so far (random points before any is valid): logged and counted like any
  // other, and known when the technique asks for them. Neighbours rather than random points: a
  // random configuration can run for seconds (a convolution on one thread) and hold a GPU.
  const bool fill = fill_idle_ && ev.prepare && cap > 1;
  std::mt19937_64 fill_rng(res.seed ^ 0x5851f42d4c957f2dull);
  auto filler = [&]() -> std::optional<point> {
    auto fresh = [&](const point& r) { return !seen.count(r) && !pending.count(r); };
    if (st.valid > 0) {
      point from = best_point;
      for (int step = 0; step < 4; ++step) {  // the best's neighbours, then theirs
        auto near = space.neighbours(from);
        if (near.empty()) break;
        std::shuffle(near.begin(), near.end(), fill_rng);
        for (auto& r : near)
          if (fresh(r)) return std::move(r);
        from = near.front();
      }
      return std::nullopt;
    }
    for (int i = 0; i < 16; ++i)
      if (point r = space.random_point(fill_rng); fresh(r)) return r;
    return std::nullopt;
  };
  auto top_up = [&] {
    while (fill && pipe.in_flight() < cap && remaining() > pipe.in_flight() && !should_stop()) {
      auto q = filler();
      if (!q) return;
      ++res.filled;
      submit(*q);
    }
  };

  // Evaluates the given new points; returns false when the run must stop (in flight: cut).
  auto evaluate = [&](const std::vector<point>& pts, bool allow_fill) -> bool {
    std::unordered_set<point, point_hash> want(pts.begin(), pts.end());
    for (const auto& p : pts)
      if (!pending.count(p)) submit(p);  // a filler may already be measuring it
    std::size_t waiting = want.size();
    while (waiting > 0) {
      if (allow_fill) top_up();
      auto p = receive();
      if (!p) return cut(), false;
      if (want.count(*p)) --waiting;
      if (waiting > 0 && should_stop()) return cut(), false;
    }
    return true;
  };
  // Evaluates `todo` in chunks that fit the remaining budget (with valid_evaluations(n), invalid
  // ones leave room for more); false when the run stops before all of them were evaluated.
  auto evaluate_within_budget = [&](const std::vector<point>& todo, bool allow_fill) -> bool {
    for (std::size_t next = 0; next < todo.size();) {
      if (next > 0 && should_stop()) return false;
      // Fillers in flight hold part of the budget: wait for them until room is left.
      while (pipe.in_flight() > 0 && remaining() <= pipe.in_flight())
        if (!receive() || should_stop()) return cut(), false;
      const std::uint64_t room = remaining() - pipe.in_flight();
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(room, todo.size() - next));
      if (n == 0) {
        if (!should_stop()) res.stop_reason = "evaluation budget reached";
        return false;
      }
      const auto first = todo.begin() + static_cast<std::ptrdiff_t>(next);
      if (!evaluate({first, first + static_cast<std::ptrdiff_t>(n)}, allow_fill)) return false;
      next += n;
    }
    return true;
  };

  // Start configurations first, in the order given; those already logged are not measured again.
  if (!starts_.empty()) {
    std::vector<point> todo;
    std::unordered_map<point, char, point_hash> queued;
    for (const auto& cfg : starts_) {
      auto p = space.find(cfg);
      if (!p) {
        ++res.starts_skipped;
        res.skipped_starts.push_back(cfg.to_string() + ": " + detail::why_not_in(space, cfg));
        continue;
      }
      if (!seen.count(*p) && queued.emplace(*p, 1).second) todo.push_back(std::move(*p));
    }
    const std::uint64_t before = res.measured;
    if (!should_stop()) evaluate_within_budget(todo, false);  // in order, nothing beside them
    res.starts_evaluated = res.measured - before;
    if (st.valid > 0) technique_->suggest_start(best_point);
  }

  while (!should_stop()) {
    if (technique_->finished()) {
      res.stop_reason = "technique finished";
      break;
    }
    std::vector<point> batch = technique_->ask(cap);
    if (batch.empty()) {
      res.stop_reason = "technique finished";
      break;
    }
    std::vector<point> todo;
    std::unordered_map<point, char, point_hash> queued;
    for (const auto& p : batch)
      if (!seen.count(p) && queued.emplace(p, 1).second) todo.push_back(p);
    if (!evaluate_within_budget(todo, true)) break;
    std::vector<double> costs;
    costs.reserve(batch.size());
    for (const auto& p : batch) {  // a point lost to an infrastructure failure: invalid for now
      auto known = seen.find(p);
      costs.push_back(known != seen.end() ? known->second : search::invalid_cost);
    }
    technique_->tell(costs);
    // A technique that only re-proposes known points gets help: one unseen point at random.
    if (todo.empty() && ++stuck >= 50) {
      stuck = 0;
      if (should_stop()) break;
      std::optional<point> q;
      for (int i = 0; i < 64 && !q; ++i) {
        point r = space.random_point(escape_rng);
        if (!seen.count(r)) q = std::move(r);
      }
      for (; !q && scan < space.size(); ++scan) {
        point r = space.point_at(scan);
        if (!seen.count(r)) q = std::move(r);
      }
      if (q && !evaluate({*q}, true)) break;
    } else if (!todo.empty()) {
      stuck = 0;
    }
  }
  if (stopped)
    cut();
  else
    drain();  // the technique has finished: fillers in flight are still evaluated
  res.background = pipe.finish();
  tick();
  show(true);
  bar.finish();

  res.evaluations = st.evaluations;
  res.valid = st.valid;
  res.invalid = st.invalid;
  res.best_cost = st.best_cost;
  res.found = st.valid > 0;
  res.seconds = st.session_s;
  res.total_seconds = st.elapsed_s;
  return res;
}

}  // namespace atf
