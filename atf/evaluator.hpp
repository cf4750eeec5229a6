// SPDX-License-Identifier: MIT
// atf::evaluator: how a configuration is scored. A *prepare* stage (e.g. compiling) runs on a pool
// of CPU threads; a *measure* stage runs serially on each measuring worker (e.g. one per GPU).
// Either stage may throw to mark the configuration invalid; each has an optional time-out.
#pragma once

#include <atf/background.hpp>
#include <atf/configuration.hpp>
#include <atf/error.hpp>

#include <algorithm>
#include <any>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace atf {

// Throw this from a stage to give the T4 invalidity category yourself ("compile", "runtime",
// "correctness", ...); any other exception counts as "compile" in prepare and "runtime" in measure.
class invalid_configuration : public std::runtime_error {
 public:
  invalid_configuration(std::string category, const std::string& reason)
      : std::runtime_error(reason), category_(std::move(category)) {}
  const std::string& category() const { return category_; }

 private:
  std::string category_;
};

// Throw this from a stage when the failure is not the configuration's: a compiler process out of
// resources, a kernel cache that lost a race, a device that went away. The evaluation is neither
// logged nor counted: its point stays unseen (a later ask may evaluate it again), the tuner
// reports the failure (tuning_result::infrastructure_failures) and stops after
// tuner::max_infrastructure_failures of them in a row.
class infrastructure_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct evaluator {
  using prepare_fn = std::function<std::any(const configuration&)>;
  using measure_fn = std::function<double(const configuration&, std::any&, std::size_t worker)>;

  prepare_fn prepare;  // optional
  measure_fn measure;
  std::size_t prepare_threads = 0;  // 0 = hardware concurrency
  std::size_t measure_workers = 1;
  std::chrono::duration<double> prepare_timeout{0};  // 0 = none
  std::chrono::duration<double> measure_timeout{0};

  evaluator() = default;
  // A plain cost function: configuration -> cost.
  template <class F>
  requires std::is_invocable_r_v<double, F&, const configuration&> evaluator(
      F cost)  // NOLINT: implicit so tune(space, lambda) works
      : measure([f = std::move(cost)](const configuration& c, std::any&, std::size_t) {
          return f(c);
        }) {}
  // Two stages; measure may take (cfg, artefact) or (cfg, artefact, worker index).
  template <class P, class M>
  evaluator(P prep, M meas, std::size_t threads = 0, std::size_t workers = 1)
      : prepare_threads(threads), measure_workers(workers) {
    prepare = [p = std::move(prep)](const configuration& c) -> std::any {
      if constexpr (std::is_void_v<std::invoke_result_t<P&, const configuration&>>) {
        p(c);
        return {};
      } else {
        return std::any(p(c));
      }
    };
    if constexpr (std::is_invocable_v<M&, const configuration&, std::any&, std::size_t>)
      measure = std::move(meas);
    else
      measure = [m = std::move(meas)](const configuration& c, std::any& a, std::size_t) {
        return m(c, a);
      };
  }
};

// One finished evaluation.
struct evaluation {
  std::uint64_t id = 0;  // submission number within the session
  configuration config;
  bool valid = false;
  double cost = 0;
  std::string invalidity = "correct";  // T4 category
  std::string error;                   // reason when invalid
  bool infrastructure = false;         // failed for a reason not the configuration's: not logged
  double prepare_s = 0, measure_s = 0;
  std::size_t worker = 0;
};

namespace detail {

struct stage_outcome {
  bool ok = false, timed_out = false;
  std::string error, category;
  double seconds = 0;
};

// Runs f with an optional time-out. A call that overruns is abandoned on its own thread (C++
// cannot stop it); its result is dropped. Process-based cost functions kill their child instead.
template <class R, class F>
stage_outcome run_stage(F f, std::chrono::duration<double> timeout, R& out) {
  stage_outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&] {
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto classify = [&](std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const invalid_configuration& e) {
      o.error = e.what(), o.category = e.category();
    } catch (const infrastructure_failure& e) {
      o.error = e.what(), o.category = "infrastructure";
    } catch (const std::exception& e) {
      o.error = e.what();
    } catch (...) {
      o.error = "unknown exception";
    }
  };
  if (timeout.count() <= 0) {
    try {
      out = f();
      o.ok = true;
    } catch (...) {
      classify(std::current_exception());
    }
    finish();
    return o;
  }
  struct shared {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    R result{};
    std::exception_ptr ep;
  };
  auto st = std::make_shared<shared>();
  std::thread([st, f = std::move(f)]() mutable {
    R r{};
    std::exception_ptr ep;
    try {
      r = f();
    } catch (...) {
      ep = std::current_exception();
    }
    std::lock_guard lock(st->m);
    st->result = std::move(r);
    st->ep = ep;
    st->done = true;
    st->cv.notify_all();
  }).detach();
  std::unique_lock lock(st->m);
  if (!st->cv.wait_for(lock, timeout, [&] { return st->done; })) {
    o.timed_out = true;
    o.error = "time-out after " + std::to_string(timeout.count()) + " s";
    o.category = "timeout";
    finish();
    return o;
  }
  if (st->ep)
    classify(st->ep);
  else
    out = std::move(st->result), o.ok = true;
  finish();
  return o;
}

// Prepare pool + measuring workers. submit() queues a configuration; next() returns finished ones
// in completion order. Without a prepare stage, one worker and no time-out, everything runs inline.
// The threads share one state with a copy of the evaluator, so that preparations dropped at a stop
// can finish after the pipeline is gone (finish()).
class pipeline {
 public:
  explicit pipeline(const evaluator& ev) : s_(std::make_shared<state>(ev)) {
    if (!ev.measure) throw error("evaluator: no measure/cost function given");
    workers_ = std::max<std::size_t>(1, ev.measure_workers);
    inline_ = !ev.prepare && workers_ == 1 && ev.measure_timeout.count() <= 0;
    if (inline_) return;
    if (ev.prepare)
      for (std::size_t i = 0; i < prepare_threads(); ++i)
        prepare_threads_.emplace_back(prepare_loop, s_);
    for (std::size_t w = 0; w < workers_; ++w) measure_threads_.emplace_back(measure_loop, s_, w);
  }
  ~pipeline() { finish(); }  // the background_work it returns waits for running preparations
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  // How many evaluations may usefully be in flight at once.
  std::size_t capacity() const {
    if (inline_) return 1;
    return (s_->ev.prepare ? prepare_threads() : 0) + workers_;
  }

  void submit(std::uint64_t id, configuration cfg) {
    job j{id, std::move(cfg), {}, {}};
    ++in_flight_;
    if (inline_) {
      inline_queue_.push_back(std::move(j));
      return;
    }
    {
      std::lock_guard lock(s_->m);
      (s_->ev.prepare ? s_->prepare_q : s_->measure_q).push_back(std::move(j));
    }
    s_->cv.notify_all();
  }

  std::size_t in_flight() const { return in_flight_; }

  // The run has stopped: drops every job that has not started measuring, queued or being
  // prepared (those preparations finish on their threads and are dropped too); returns how many.
  // What is measuring or finished still comes from next(). Takes no more work after this.
  std::size_t drop_unmeasured() {
    std::deque<job> queued = std::move(inline_queue_);
    inline_queue_.clear();
    std::size_t n = queued.size();
    {
      std::lock_guard lock(s_->m);
      // Those being prepared count once: a second call finds them dropped already.
      n += s_->prepare_q.size() + s_->measure_q.size() + (s_->dropping ? 0 : s_->preparing);
      std::move(s_->prepare_q.begin(), s_->prepare_q.end(), std::back_inserter(queued));
      std::move(s_->measure_q.begin(), s_->measure_q.end(), std::back_inserter(queued));
      s_->prepare_q.clear();
      s_->measure_q.clear();
      s_->dropping = true;
    }
    in_flight_ -= n;
    return n;  // artefacts of `queued` are released here, outside the lock
  }

  // Blocks until one evaluation has finished.
  evaluation next() {
    if (inline_) {
      job j = std::move(inline_queue_.front());
      inline_queue_.pop_front();
      --in_flight_;
      return run_measure(s_->ev, j, 0);
    }
    std::unique_lock lock(s_->m);
    s_->cv.wait(lock, [&] { return !s_->done.empty(); });
    return pop_done();
  }
  // Waits at most `timeout` for one evaluation to finish (inline: runs the next one).
  std::optional<evaluation> next_for(std::chrono::duration<double> timeout) {
    if (inline_) return next();
    std::unique_lock lock(s_->m);
    if (!s_->cv.wait_for(lock, timeout, [&] { return !s_->done.empty(); })) return std::nullopt;
    return pop_done();
  }

  // Ends the pipeline: joins the measuring workers (idle once everything in flight has been
  // received) and hands over the prepare threads, which may still run dropped preparations.
  background_work finish() {
    {
      std::lock_guard lock(s_->m);
      s_->stopping = true;
    }
    s_->cv.notify_all();
    for (auto& t : measure_threads_) t.join();
    measure_threads_.clear();
    return background_work(std::exchange(prepare_threads_, {}));
  }

 private:
  struct job {
    std::uint64_t id;
    configuration cfg;
    std::any artefact;
    evaluation partial;
  };
  struct state {
    explicit state(const evaluator& e) : ev(e) {}
    const evaluator ev;
    std::mutex m;
    std::condition_variable cv;
    std::deque<job> prepare_q, measure_q;
    std::deque<evaluation> done;
    std::size_t preparing = 0;  // jobs in the prepare stage now
    bool dropping = false;      // the run has stopped: preparations that finish are dropped
    bool stopping = false;      // threads exit
  };

  std::size_t prepare_threads() const {
    return std::max<std::size_t>(
        1, s_->ev.prepare_threads ? s_->ev.prepare_threads : std::thread::hardware_concurrency());
  }

  evaluation pop_done() {  // with the lock held
    evaluation e = std::move(s_->done.front());
    s_->done.pop_front();
    --in_flight_;
    return e;
  }

  static void prepare_loop(std::shared_ptr<state> s) {
    for (;;) {
      job j;
      {
        std::unique_lock lock(s->m);
        s->cv.wait(lock, [&] { return s->stopping || !s->prepare_q.empty(); });
        if (s->stopping) return;
        j = std::move(s->prepare_q.front());
        s->prepare_q.pop_front();
        ++s->preparing;
      }
      std::shared_ptr<std::any> art;
      auto f = [p = s->ev.prepare, c = j.cfg] { return std::make_shared<std::any>(p(c)); };
      auto o = run_stage(f, s->ev.prepare_timeout, art);
      j.partial.prepare_s = o.seconds;
      std::lock_guard lock(s->m);
      --s->preparing;
      if (s->dropping) continue;  // never measured; the artefact is released on this thread
      if (o.ok) {
        j.artefact = std::move(*art);
        s->measure_q.push_back(std::move(j));
      } else {
        s->done.push_back(failed(j, o, "compile", "prepare"));
      }
      s->cv.notify_all();
    }
  }

  static void measure_loop(std::shared_ptr<state> s, std::size_t w) {
    for (;;) {
      job j;
      {
        std::unique_lock lock(s->m);
        s->cv.wait(lock, [&] { return s->stopping || !s->measure_q.empty(); });
        if (s->stopping) return;
        j = std::move(s->measure_q.front());
        s->measure_q.pop_front();
      }
      evaluation e = run_measure(s->ev, j, w);
      std::lock_guard lock(s->m);
      s->done.push_back(std::move(e));
      s->cv.notify_all();
    }
  }

  static evaluation run_measure(const evaluator& ev, job& j, std::size_t w) {
    double cost = 0;
    auto art = std::make_shared<std::any>(std::move(j.artefact));
    auto f = [m = ev.measure, c = j.cfg, art, w] { return m(c, *art, w); };
    auto o = run_stage(f, ev.measure_timeout, cost);
    if (o.ok && std::isnan(cost)) o.ok = false, o.error = "cost is NaN";
    evaluation e;
    if (!o.ok) {
      e = failed(j, o, "runtime", "measure");
    } else {
      e.id = j.id;
      e.config = std::move(j.cfg);
      e.valid = true;
      e.cost = cost;
      e.prepare_s = j.partial.prepare_s;
    }
    e.measure_s = o.seconds;
    e.worker = w;
    return e;
  }

  static evaluation failed(job& j, const stage_outcome& o, const char* category,
                           const char* stage) {
    evaluation e;
    e.id = j.id;
    e.config = std::move(j.cfg);
    e.valid = false;
    e.cost = std::numeric_limits<double>::infinity();
    e.invalidity = o.category.empty() ? category : o.category;
    e.infrastructure = o.category == "infrastructure";
    e.error = std::string(stage) + ": " + o.error;
    e.prepare_s = j.partial.prepare_s;
    return e;
  }

  std::shared_ptr<state> s_;
  std::size_t workers_ = 1;
  bool inline_ = false;
  std::deque<job> inline_queue_;
  std::vector<std::thread> prepare_threads_, measure_threads_;
  std::size_t in_flight_ = 0;  // submitted, not yet returned by next() nor dropped
};

}  // namespace detail

}  // namespace atf
