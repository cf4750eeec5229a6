// SPDX-License-Identifier: MIT
// A CUDA device: its primary context (made current on use) and its limits read from the driver.
#pragma once

#include <string>

#include <mdh/lower/device_limits.hpp>

#include <backends/cuda/driver.hpp>

namespace mdh::cuda {

class device {
 public:
  // Throws mdh::error("no CUDA device ...") when there is no driver or no device `ordinal`.
  explicit device(int ordinal = 0) : ordinal_(ordinal) {
    const auto& d = driver();
    int n = 0;
    check(d.cuDeviceGetCount(&n), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= n)
      throw error("no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(n) +
                  " present)");
    check(d.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    make_current();
  }
  ~device() {
    if (ctx_) driver_table().cuDevicePrimaryCtxRelease(dev_);
  }
  device(const device&) = delete;
  device& operator=(const device&) = delete;

  void make_current() const { MDH_CU(cuCtxSetCurrent, ctx_); }
  void synchronize() const {
    make_current();
    MDH_CU(cuCtxSynchronize);
  }
  CUdevice get() const { return dev_; }
  int ordinal() const { return ordinal_; }

  int attribute(CUdevice_attribute a) const {
    int v = 0;
    MDH_CU(cuDeviceGetAttribute, &v, a, dev_);
    return v;
  }

  // The architecture NVRTC compiles for ("sm_90").
  std::string arch() const {
    return "sm_" + std::to_string(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) +
           std::to_string(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  }

  // The device's limits, read from the driver (name, compute capability, SMs, shared memory).
  lower::device_limits limits() const {
    lower::device_limits l;
    char name[256] = {};
    MDH_CU(cuDeviceGetName, name, int(sizeof name - 1), dev_);
    l.name = name;
    l.cuda = true;
    l.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    l.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    l.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    l.max_block[0] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    l.max_block[1] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    l.max_block[2] = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    l.max_grid[0] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    l.max_grid[1] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    l.max_grid[2] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    l.shared_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    l.shared_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    l.regs_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    l.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    l.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    return l;
  }

 private:
  int ordinal_ = 0;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

// A stream (RAII) on the current context.
class stream {
 public:
  stream() { MDH_CU(cuStreamCreate, &s_, CU_STREAM_NON_BLOCKING); }
  ~stream() {
    if (s_) driver_table().cuStreamDestroy(s_);
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  CUstream get() const { return s_; }
  void synchronize() const { MDH_CU(cuStreamSynchronize, s_); }

 private:
  CUstream s_ = nullptr;
};

}  // namespace mdh::cuda
