// SPDX-License-Identifier: MIT
// The tuning target for an OpenCL device (PoCL on a machine without a GPU): builds in the prepare
// stage, checks the first run of each configuration against the reference, times the kernels on
// the device with profiling events (median of several runs; program::launch_and_time).
#pragma once

#include <algorithm>
#include <any>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include <atf/evaluator.hpp>
#include <backends/opencl/runtime.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/workload_memory.hpp>

namespace mdh::tuning {

class opencl_target {
 public:
  explicit opencl_target(opencl::context& ctx, int repetitions = 5)
      : ctx_(&ctx), limits_(ctx.limits()), repetitions_(repetitions) {}

  device_id id() const { return device_id_of("opencl", limits_); }
  lower::device_limits limits() const { return limits_; }
  std::size_t workers() const { return 1; }
  device_memory memory() const {
    cl_ulong global = 0, max_alloc = 0;
    cl_device_type type = 0;
    clGetDeviceInfo(ctx_->device(), CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, nullptr);
    clGetDeviceInfo(ctx_->device(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc,
                    nullptr);
    clGetDeviceInfo(ctx_->device(), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    return {std::uint64_t(global), std::uint64_t(max_alloc), (type & CL_DEVICE_TYPE_CPU) != 0};
  }

  // `c`: the computation, or a fused pair (its tolerance follows the first stage's reduction).
  template <class IR>
  void set_data(const IR& c, const std::vector<std::int64_t>& sizes,
                std::span<const buffer_ref> inputs, std::span<const buffer_ref> expected) {
    reduction_length_ = reduction_length(c, sizes);
    inputs_.clear(), outputs_.clear(), expected_.assign(expected.begin(), expected.end());
    for (auto& r : inputs)
      inputs_.emplace_back(*ctx_, std::size_t(r.size()) * size_of(r.type), r.data);
    for (auto& r : expected) outputs_.emplace_back(*ctx_, std::size_t(r.size()) * size_of(r.type));
  }

  std::any prepare(lower::kernel_plan plan) {
    try {
      return std::make_shared<opencl::program>(*ctx_, std::move(plan));
    } catch (const infrastructure_error& e) {  // not the configuration's: never logged invalid
      throw atf::infrastructure_failure(e.what());
    } catch (const error& e) {
      throw atf::invalid_configuration("compile", e.what());
    }
  }

  double measure(std::any& prepared, std::size_t /*worker*/) {
    auto& prog = *std::any_cast<std::shared_ptr<opencl::program>&>(prepared);
    std::vector<cl_mem> in, out;
    for (auto& b : inputs_) in.push_back(b.get());
    for (auto& b : outputs_) out.push_back(b.get());
    // First run: poisoned outputs, compared with the reference.
    for (std::size_t r = 0; r < outputs_.size(); ++r) {
      std::vector<unsigned char> poison(outputs_[r].bytes(), 0xFF);  // NaN for floats
      MDH_CL(clEnqueueWriteBuffer(ctx_->queue(), outputs_[r].get(), CL_TRUE, 0, poison.size(),
                                  poison.data(), 0, nullptr, nullptr));
    }
    const double first_us = prog.launch_and_time(in, out);
    for (std::size_t r = 0; r < outputs_.size(); ++r) {
      host_buffer got(expected_[r].type, expected_[r].shape);
      outputs_[r].download(*ctx_, got.data());
      if (auto why = compare(got, expected_[r], reduction_length_); !why.empty())
        throw atf::invalid_configuration(
            "correctness", "output '" + prog.plan().outputs[r].name + "' wrong: " + why);
    }
    // Far slower than the best so far: it cannot win, so skip the repetitions (as the CUDA
    // target does; a random configuration ran 8.5 s per launch on PoCL).
    if (first_us > 1000 && first_us > 20 * best_us_) return first_us;
    std::vector<double> us;
    for (int k = 0; k < repetitions_; ++k) us.push_back(prog.launch_and_time(in, out));
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    best_us_ = std::min(best_us_, us[us.size() / 2]);
    return us[us.size() / 2];
  }

 private:
  opencl::context* ctx_;
  lower::device_limits limits_;
  int repetitions_;
  double best_us_ = std::numeric_limits<double>::infinity();  // the fastest measured so far
  std::int64_t reduction_length_ = 1;
  std::vector<opencl::buffer> inputs_, outputs_;
  std::vector<buffer_ref> expected_;
};

}  // namespace mdh::tuning
