// SPDX-License-Identifier: MIT
// atf::evaluator: how a configuration is scored. A *prepare* stage (e.g. compiling) runs on a pool
// of CPU threads; a *measure* stage runs serially on each measuring worker (e.g. one per GPU).
// Either stage may throw to mark the configuration invalid; each has an optional time-out.
#pragma once

#include <atf/configuration.hpp>
#include <atf/error.hpp>

#include <any>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
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
class pipeline {
 public:
  explicit pipeline(const evaluator& ev) : ev_(ev) {
    if (!ev_.measure) throw error("evaluator: no measure/cost function given");
    workers_ = std::max<std::size_t>(1, ev_.measure_workers);
    inline_ = !ev_.prepare && workers_ == 1 && ev_.measure_timeout.count() <= 0;
    if (inline_) return;
    if (ev_.prepare) {
      std::size_t n = ev_.prepare_threads ? ev_.prepare_threads
                                          : std::max(1u, std::thread::hardware_concurrency());
      for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { prepare_loop(); });
    }
    for (std::size_t w = 0; w < workers_; ++w)
      threads_.emplace_back([this, w] { measure_loop(w); });
  }
  ~pipeline() {
    {
      std::lock_guard lock(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  // How many evaluations may usefully be in flight at once.
  std::size_t capacity() const {
    if (inline_) return 1;
    return (ev_.prepare ? std::max<std::size_t>(1, ev_.prepare_threads
                                                       ? ev_.prepare_threads
                                                       : std::thread::hardware_concurrency())
                        : 0) +
           workers_;
  }

  void submit(std::uint64_t id, configuration cfg) {
    job j{id, std::move(cfg), {}, {}};
    ++in_flight_;
    if (inline_) {
      inline_queue_.push_back(std::move(j));
      return;
    }
    {
      std::lock_guard lock(m_);
      (ev_.prepare ? prepare_q_ : measure_q_).push_back(std::move(j));
    }
    cv_.notify_all();
  }

  std::size_t in_flight() const { return in_flight_; }

  // Drops queued work that has not started; returns how many were dropped.
  std::size_t cancel_pending() {
    std::size_t n = inline_queue_.size();
    inline_queue_.clear();
    {
      std::lock_guard lock(m_);
      n += prepare_q_.size() + measure_q_.size();
      prepare_q_.clear();
      measure_q_.clear();
    }
    in_flight_ -= n;
    return n;
  }

  // Blocks until one evaluation has finished.
  evaluation next() {
    if (inline_) {
      job j = std::move(inline_queue_.front());
      inline_queue_.pop_front();
      --in_flight_;
      return run_measure(j, 0);
    }
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return !done_.empty(); });
    evaluation e = std::move(done_.front());
    done_.pop_front();
    --in_flight_;
    return e;
  }

 private:
  struct job {
    std::uint64_t id;
    configuration cfg;
    std::any artefact;
    evaluation partial;
  };

  void prepare_loop() {
    for (;;) {
      job j;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stopping_ || !prepare_q_.empty(); });
        if (stopping_) return;
        j = std::move(prepare_q_.front());
        prepare_q_.pop_front();
      }
      std::shared_ptr<std::any> art;
      auto f = [p = ev_.prepare, c = j.cfg] { return std::make_shared<std::any>(p(c)); };
      auto o = run_stage(f, ev_.prepare_timeout, art);
      j.partial.prepare_s = o.seconds;
      std::lock_guard lock(m_);
      if (o.ok) {
        j.artefact = std::move(*art);
        measure_q_.push_back(std::move(j));
      } else {
        done_.push_back(failed(j, o, "compile", "prepare"));
      }
      cv_.notify_all();
    }
  }

  void measure_loop(std::size_t w) {
    for (;;) {
      job j;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stopping_ || !measure_q_.empty(); });
        if (stopping_) return;
        j = std::move(measure_q_.front());
        measure_q_.pop_front();
      }
      evaluation e = run_measure(j, w);
      std::lock_guard lock(m_);
      done_.push_back(std::move(e));
      cv_.notify_all();
    }
  }

  evaluation run_measure(job& j, std::size_t w) {
    double cost = 0;
    auto art = std::make_shared<std::any>(std::move(j.artefact));
    auto f = [m = ev_.measure, c = j.cfg, art, w] { return m(c, *art, w); };
    auto o = run_stage(f, ev_.measure_timeout, cost);
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
    e.error = std::string(stage) + ": " + o.error;
    e.prepare_s = j.partial.prepare_s;
    return e;
  }

  const evaluator& ev_;
  std::size_t workers_ = 1;
  bool inline_ = false;
  std::deque<job> inline_queue_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<job> prepare_q_, measure_q_;
  std::deque<evaluation> done_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
  std::size_t in_flight_ = 0;
};

}  // namespace detail

}  // namespace atf
