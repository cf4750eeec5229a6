// SPDX-License-Identifier: MIT
// with_target(f): calls f(target) with the CUDA target when a GPU is present (and mdh::cuda is
// linked), otherwise with the OpenCL target (PoCL on a machine without a GPU).
#pragma once

#include <string>

#include <mdh/error.hpp>
#if MDH_WITH_CUDA
#include <tuning/cuda_target.hpp>
#endif
#if MDH_WITH_OPENCL
#include <tuning/opencl_target.hpp>
#endif

namespace mdh::tuning {

// True when the CUDA backend is built in and the driver reports at least one GPU.
inline bool cuda_device_present() {
#if MDH_WITH_CUDA
  return cuda::device_available();
#else
  return false;
#endif
}

// backend: "auto", "cuda" or "opencl".
template <class F>
decltype(auto) with_target(F&& f, const std::string& backend = "auto") {
  if (backend != "auto" && backend != "cuda" && backend != "opencl")
    throw error("unknown backend '" + backend + "' (auto, cuda or opencl)");
  bool use_cuda = backend == "cuda" || (backend == "auto" && cuda_device_present());
#if MDH_WITH_CUDA
  if (use_cuda) {
    cuda_target target;
    return f(target);
  }
#endif
#if MDH_WITH_OPENCL
  if (!use_cuda) {
    static opencl::context ctx;
    opencl_target target(ctx);
    return f(target);
  }
#endif
  throw error(use_cuda ? "this program was built without the CUDA backend (link mdh::cuda)"
                       : "this program was built without the OpenCL backend (link mdh::opencl)");
}

}  // namespace mdh::tuning
