// SPDX-License-Identifier: MIT
// mdh::load_kernel: a tuned kernel, ready to call, on either backend: the configuration of the
// parameter-file record for the workload and device (or the default configuration, with a
// one-line warning naming the mdh-tune command), lowered, compiled and loaded. Running a tuned
// kernel needs mdh::mdh and the backend (mdh::cuda or mdh::opencl) only, not the tuner.
//
//   cuda::device dev(0);          auto k = mdh::load_kernel(op, sizes, "params", dev);
//   opencl::context ctx;          auto k = mdh::load_kernel(op, sizes, "params", ctx);
//   k(inputs, outputs);           // host buffers (inputs then outputs, computation order)
//   k.launch(...);                // device buffers: the backend program's launch
#pragma once

#include <filesystem>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mdh/lower/lower.hpp>
#include <mdh/tensor.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <mdh/tuning/parameter_file.hpp>
#if MDH_WITH_CUDA
#include <backends/cuda/program.hpp>
#endif
#if MDH_WITH_OPENCL
#include <backends/opencl/runtime.hpp>
#endif

namespace mdh {

// `Choice`: the configuration and where it came from (tuning::basic_configuration_choice);
// `Program`: the backend's loaded kernel (cuda::program, opencl::program).
template <class Choice, class Program>
struct loaded_kernel {
  Choice choice;
  std::unique_ptr<Program> program;

  // Host buffers (inputs then outputs, computation order): copies in, runs, copies out.
  void operator()(std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs) const {
    program->run(inputs, outputs);
  }
  // Device buffers, as the backend takes them (CUDA: CUdeviceptr spans and a stream, asynchronous;
  // OpenCL: cl_mem spans).
  template <class... Args>
  void launch(Args&&... args) const {
    program->launch(std::forward<Args>(args)...);
  }
};

namespace detail {
// The one body of load_kernel: `make(plan)` builds the backend's program.
template <class Comp, class Make>
auto load_kernel(const Comp& comp, const std::vector<std::int64_t>& sizes,
                 const std::filesystem::path& params, const std::string& backend,
                 const lower::device_limits& limits, Make&& make, std::ostream* warn) {
  const auto& c = comp.ir();
  comp.check_sizes(sizes);
  auto choice = tuning::choose_configuration(c, sizes, params,
                                             tuning::device_id_of(backend, limits), limits, warn);
  auto program = make(lower::lower(c, sizes, choice.config, limits));
  return loaded_kernel<decltype(choice), typename decltype(program)::element_type>{
      std::move(choice), std::move(program)};
}
}  // namespace detail

// `comp`: a computation, or a pair of mdh::fuse (one kernel; buffers in the pair's order).
// `params`: a parameter file or a folder of them (may not exist). Warnings go to `warn`
// (nullptr: silent).
#if MDH_WITH_CUDA
template <class Comp>
auto load_kernel(const Comp& comp, const std::vector<std::int64_t>& sizes,
                 const std::filesystem::path& params, const cuda::device& dev,
                 std::ostream* warn = &std::cerr) {
  return detail::load_kernel(
      comp, sizes, params, "cuda", dev.limits(),
      [&](lower::kernel_plan plan) {
        return std::make_unique<cuda::program>(dev, std::move(plan));
      },
      warn);
}
#endif
#if MDH_WITH_OPENCL
template <class Comp>
auto load_kernel(const Comp& comp, const std::vector<std::int64_t>& sizes,
                 const std::filesystem::path& params, opencl::context& ctx,
                 std::ostream* warn = &std::cerr) {
  return detail::load_kernel(
      comp, sizes, params, "opencl", ctx.limits(),
      [&](lower::kernel_plan plan) {
        return std::make_unique<opencl::program>(ctx, std::move(plan));
      },
      warn);
}
#endif

}  // namespace mdh
