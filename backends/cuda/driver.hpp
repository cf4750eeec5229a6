// SPDX-License-Identifier: MIT
// The CUDA driver API, loaded at run time (dlopen) so that programs start on machines without a
// driver, and checked calls: every failure is an mdh::error naming the call and the CUresult.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include <mdh/error.hpp>

namespace mdh::cuda {

#define MDH_CUDA_STR2(x) #x
#define MDH_CUDA_STR(x) MDH_CUDA_STR2(x)  // expands cuMemAlloc -> "cuMemAlloc_v2" first

// Function pointers of the driver API calls mdh uses.
struct driver_api {
#define MDH_CUDA_FN(name) decltype(&::name) name = nullptr;
#define MDH_CUDA_FNS(X)                                                                           \
  X(cuInit)                                                                                       \
  X(cuDriverGetVersion)                                                                           \
  X(cuDeviceGetCount)                                                                             \
  X(cuDeviceGet)                                                                                  \
  X(cuDeviceGetName)                                                                              \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)                \
      X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload)                \
          X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel)    \
              X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync)     \
                  X(cuMemcpyDtoHAsync) X(cuMemsetD8) X(cuMemsetD8Async) X(cuStreamCreate)         \
                      X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord) \
                          X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)           \
                              X(cuGetErrorName) X(cuGetErrorString) X(cuStreamBeginCapture)       \
                                  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch)    \
                                      X(cuGraphExecDestroy) X(cuGraphDestroy)
  MDH_CUDA_FNS(MDH_CUDA_FN)
#undef MDH_CUDA_FN
  // Optional (CUDA 12 drivers on): tensor maps for TMA (mma_tma); null where the driver lacks it.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  // Optional (CUDA 11.8 drivers on): launches with attributes (programmatic dependent launch).
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;
  std::string load_error;  // why the driver could not be loaded ("" when it was)
};

// The process-wide driver table; load_error is set when libcuda.so.1 is missing.
inline const driver_api& driver_table() {
  static driver_api api = [] {
    driver_api a;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      a.load_error = std::string("cannot load the CUDA driver libcuda.so.1: ") + (e ? e : "?");
      return a;
    }
#define MDH_CUDA_LOAD(name)                                                    \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, MDH_CUDA_STR(name))); \
  if (!a.name && a.load_error.empty())                                         \
    a.load_error = std::string("the CUDA driver lacks ") + MDH_CUDA_STR(name);
    MDH_CUDA_FNS(MDH_CUDA_LOAD)
#undef MDH_CUDA_LOAD
    a.cuTensorMapEncodeTiled =
        reinterpret_cast<decltype(a.cuTensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
    a.cuLaunchKernelEx = reinterpret_cast<decltype(a.cuLaunchKernelEx)>(
        dlsym(lib, MDH_CUDA_STR(cuLaunchKernelEx)));
    return a;
  }();
  return api;
}

inline std::string result_string(CUresult rc) {
  const auto& d = driver_table();
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(rc, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(rc, &text);
  return std::string(name ? name : "CUDA_ERROR_?") + " (" + std::to_string(int(rc)) +
         "): " + (text ? text : "unknown error");
}

inline void check(CUresult rc, const char* call) {
  if (rc != CUDA_SUCCESS) throw error(std::string(call) + " failed: " + result_string(rc));
}

// The driver, initialised; throws mdh::error("no CUDA device ...") when there is none.
inline const driver_api& driver() {
  const auto& d = driver_table();
  if (!d.load_error.empty()) throw error("no CUDA device: " + d.load_error);
  static std::once_flag once;
  static CUresult init_rc = CUDA_SUCCESS;
  std::call_once(once, [&] { init_rc = d.cuInit(0); });
  if (init_rc != CUDA_SUCCESS)
    throw error("no CUDA device: cuInit failed: " + result_string(init_rc));
  int n = 0;
  check(d.cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (n == 0) throw error("no CUDA device: cuDeviceGetCount reports 0 devices");
  return d;
}

// True when a CUDA device can be used (for tests that skip without one).
inline bool device_available() {
  try {
    driver();
    return true;
  } catch (const error&) {
    return false;
  }
}

}  // namespace mdh::cuda

// MDH_CU(cuCall(args)): calls through the loaded driver and checks the result.
#define MDH_CU(fn, ...) ::mdh::cuda::check(::mdh::cuda::driver().fn(__VA_ARGS__), #fn)
