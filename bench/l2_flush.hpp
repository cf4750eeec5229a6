// SPDX-License-Identifier: MIT
// The two ways mdh_bench empties the L2 before a timed repetition:
//   memset - write 256 MB (what the peers' harnesses and our tuner do). It leaves the L2 full of
//            dirty lines, so the timed kernel also pays for writing them back to DRAM.
//   read   - a kernel reads 256 MB and writes nothing: the L2 is left holding clean lines that the
//            timed kernel may drop. A diagnostic, to measure how much of a streaming kernel's
//            time is the memset's write-back rather than its own traffic.
#pragma once

#include <memory>
#include <string>

#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/nvrtc.hpp>

namespace bench {

class l2_flush {
 public:
  l2_flush(std::string mode, const std::string& arch, std::size_t bytes = std::size_t(256) << 20)
      : mode_(std::move(mode)), buf_(bytes), sink_(1) {
    if (mode_ != "memset" && mode_ != "read")
      throw mdh::error("--flush must be 'memset' or 'read', not '" + mode_ + "'");
    if (mode_ == "read") {
      MDH_CU(cuMemsetD8, buf_.get(), 0, buf_.bytes());  // sums to 0, never the sink's sentinel
      auto m = mdh::cuda::compile_uncached(read_kernel_source(), "mdh_flush_read", arch);
      MDH_CU(cuModuleLoadData, &mod_, m.cubin.data());
      MDH_CU(cuModuleGetFunction, &fn_, mod_, "mdh_flush_read");
    }
  }
  ~l2_flush() {
    if (mod_) mdh::cuda::driver_table().cuModuleUnload(mod_);
  }
  l2_flush(const l2_flush&) = delete;
  l2_flush& operator=(const l2_flush&) = delete;

  const std::string& mode() const { return mode_; }

  // Enqueues the flush of repetition k on stream s.
  void operator()(CUstream s, int k) {
    if (mode_ == "memset") {
      MDH_CU(cuMemsetD8Async, buf_.get(), (unsigned char)(k), buf_.bytes(), s);
      return;
    }
    CUdeviceptr p = buf_.get(), sink = sink_.get();
    unsigned long long n = buf_.bytes() / 16;
    void* args[] = {&p, &n, &sink};
    MDH_CU(cuLaunchKernel, fn_, 132 * 8, 1, 1, 256, 1, 1, 0, s, args, nullptr);
  }

 private:
  static std::string read_kernel_source() {
    // The sum is stored only if it equals a value it never takes, so the loads stay live.
    return R"(extern "C" __global__ void mdh_flush_read(const float4* p, unsigned long long n,
                                               float* sink) {
  float acc = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    float4 v = __ldcg(p + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;
}
)";
  }

  std::string mode_;
  mdh::cuda::device_buffer<unsigned char> buf_;
  mdh::cuda::device_buffer<float> sink_;
  CUmodule mod_ = nullptr;
  CUfunction fn_ = nullptr;
};

}  // namespace bench
