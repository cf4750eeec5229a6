// SPDX-License-Identifier: MIT
// The tuning target for CUDA GPUs: NVRTC compiles in the prepare stage (CPU threads), one
// measuring worker per GPU. Each configuration's first run is checked against the reference
// (outputs poisoned with NaN first); then it is timed with CUDA events, the L2 flushed before
// every repetition (a 256 MB memset), and the median is the cost in microseconds. Inputs named
// warm (set_warm_inputs: in a graph of kernels, an earlier kernel has just written them) are read
// back into L2 after each flush.
#pragma once

#include <algorithm>
#include <any>
#include <atomic>
#include <limits>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <atf/evaluator.hpp>
#include <backends/cuda/l2_read.hpp>
#include <backends/cuda/program.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <mdh/tuning/verify.hpp>

namespace mdh::tuning {

struct cuda_timing {
  int warmups = 2;
  int repetitions = 10;
  std::size_t flush_bytes = std::size_t(256) << 20;
};

// Times `launch` with events, `flush(stream)` run before each repetition (outside the events);
// returns the median in µs.
template <class Launch, class Flush>
double time_with_events_flushed(Launch&& launch, Flush&& flush, const cuda_timing& t,
                                CUstream s = nullptr) {
  for (int k = 0; k < t.warmups; ++k) launch(s);
  CUevent a, b;
  MDH_CU(cuEventCreate, &a, CU_EVENT_DEFAULT);
  MDH_CU(cuEventCreate, &b, CU_EVENT_DEFAULT);
  std::vector<double> us;
  for (int k = 0; k < t.repetitions; ++k) {
    flush(s, k);
    MDH_CU(cuEventRecord, a, s);
    launch(s);
    MDH_CU(cuEventRecord, b, s);
    MDH_CU(cuEventSynchronize, b);
    float ms = 0;
    MDH_CU(cuEventElapsedTime, &ms, a, b);
    us.push_back(double(ms) * 1000.0);
  }
  cuda::driver_table().cuEventDestroy(a);
  cuda::driver_table().cuEventDestroy(b);
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

class cuda_target {
 public:
  // One measuring worker per listed device (default: every visible GPU).
  explicit cuda_target(std::vector<int> ordinals = {}, cuda_timing timing = {}) : timing_(timing) {
    if (ordinals.empty()) {
      int n = 0;
      cuda::check(cuda::driver().cuDeviceGetCount(&n), "cuDeviceGetCount");
      for (int k = 0; k < n; ++k) ordinals.push_back(k);
    }
    if (ordinals.empty()) throw error("no CUDA device present");
    for (int o : ordinals) workers_.push_back(std::make_unique<worker>(o, timing_.flush_bytes));
    limits_ = workers_[0]->dev.limits();
    arch_ = "sm_" + std::to_string(limits_.cc_major) + std::to_string(limits_.cc_minor);
  }

  device_id id() const { return device_id_of("cuda", limits_); }
  lower::device_limits limits() const { return limits_; }
  std::size_t workers() const { return workers_.size(); }

  // `c`: the computation, or a fused pair (its tolerance follows the first stage's reduction).
  template <class IR>
  void set_data(const IR& c, const std::vector<std::int64_t>& sizes,
                std::span<const buffer_ref> inputs, std::span<const buffer_ref> expected) {
    reduction_length_ = reduction_length(c, sizes);
    expected_.assign(expected.begin(), expected.end());
    best_us_ = std::numeric_limits<double>::infinity();
    for (auto& w : workers_) {
      w->dev.make_current();
      w->inputs.clear(), w->outputs.clear();
      for (auto& r : inputs) {
        auto bytes = std::size_t(r.size()) * size_of(r.type);
        w->inputs.emplace_back(
            std::span<const unsigned char>(static_cast<const unsigned char*>(r.data), bytes));
      }
      for (auto& r : expected) w->outputs.emplace_back(std::size_t(r.size()) * size_of(r.type));
    }
    warm_.clear();
  }

  // Kernel inputs (indices into set_data's inputs) that are in L2 when the computation runs, as
  // in a graph where an earlier kernel has just written them: read after each flush, before the
  // timed launch. The others (weights, the graph's own inputs) start from a flushed L2. Call
  // after set_data.
  void set_warm_inputs(const std::vector<std::size_t>& warm) {
    for (std::size_t k : warm)
      if (workers_.empty() || k >= workers_[0]->inputs.size())
        throw error("warm input " + std::to_string(k) + " of a computation with " +
                    std::to_string(workers_.empty() ? 0 : workers_[0]->inputs.size()) + " inputs");
    warm_ = warm;
    if (!warm_.empty())
      for (auto& w : workers_)
        if (!w->read) {
          w->dev.make_current();
          w->read = std::make_unique<cuda::l2_read>(arch_);
        }
  }

  // NVRTC compilation (thread-safe; cached in memory and on disk).
  std::any prepare(lower::kernel_plan plan) {
    try {
      cuda::compile(plan, arch_);
    } catch (const infrastructure_error& e) {  // not the configuration's: never logged invalid
      throw atf::infrastructure_failure(e.what());
    } catch (const error& e) {
      throw atf::invalid_configuration("compile", e.what());
    }
    return std::make_shared<lower::kernel_plan>(std::move(plan));
  }

  double measure(std::any& prepared, std::size_t w_index) {
    worker& w = *workers_.at(w_index);
    const auto& plan = *std::any_cast<std::shared_ptr<lower::kernel_plan>&>(prepared);
    try {
      cuda::program prog(w.dev, plan);
      std::vector<CUdeviceptr> in, out;
      for (auto& b : w.inputs) in.push_back(b.get());
      for (auto& b : w.outputs) out.push_back(b.get());
      for (auto& b : w.outputs) MDH_CU(cuMemsetD8, b.get(), 0xFF, b.bytes());  // NaN poison
      double first_us = time_with_events_flushed([&](CUstream s) { prog.launch(in, out, s); },
                                                 [](CUstream, int) {}, cuda_timing{0, 1, 0});
      MDH_CU(cuCtxSynchronize);
      for (std::size_t r = 0; r < w.outputs.size(); ++r) {
        host_buffer got(expected_[r].type, expected_[r].shape);
        w.outputs[r].download(
            std::span<unsigned char>(static_cast<unsigned char*>(got.data()), got.bytes()));
        if (auto why = compare(got, expected_[r], reduction_length_); !why.empty())
          throw atf::invalid_configuration("correctness",
                                           "output '" + plan.outputs[r].name + "' wrong: " + why);
      }
      // Far slower than the best so far: it cannot win, so skip the repetitions (a bad
      // configuration can take seconds per run).
      double best = best_us_.load();
      if (first_us > 1000 && first_us > 20 * best) return first_us;
      double us =
          time_with_events_flushed([&](CUstream s) { prog.launch(in, out, s); },
                                   [&](CUstream s, int k) { flush_then_warm(w, s, k); }, timing_);
      while (us < best && !best_us_.compare_exchange_weak(best, us)) {
      }
      return us;
    } catch (const error& e) {
      throw atf::invalid_configuration("runtime", e.what());
    }
  }

 private:
  struct worker;
  // Before timed repetition k: the L2 flushed by a memset (a different byte each time), then the
  // warm inputs read back into it.
  void flush_then_warm(worker& w, CUstream s, int k) const {
    if (w.flush.bytes())
      MDH_CU(cuMemsetD8Async, w.flush.get(), (unsigned char)(k), w.flush.bytes(), s);
    for (std::size_t i : warm_) (*w.read)(w.inputs[i].get(), w.inputs[i].bytes(), s);
  }
  struct worker {
    worker(int ordinal, std::size_t flush_bytes) : dev(ordinal), flush(flush_bytes) {}
    cuda::device dev;
    cuda::device_buffer<unsigned char> flush;
    std::unique_ptr<cuda::l2_read> read;  // with warm inputs
    std::vector<cuda::device_buffer<unsigned char>> inputs, outputs;
  };
  cuda_timing timing_;
  std::vector<std::unique_ptr<worker>> workers_;
  lower::device_limits limits_;
  std::string arch_;
  std::int64_t reduction_length_ = 1;
  std::vector<buffer_ref> expected_;
  std::vector<std::size_t> warm_;
  std::atomic<double> best_us_{std::numeric_limits<double>::infinity()};
};

}  // namespace mdh::tuning
