// SPDX-License-Identifier: MIT
// A kernel that reads a device buffer through the L2 and writes nothing: after a flush, it leaves
// the buffer in L2 (as a kernel that has just written it would), and over a large scratch
// buffer it is a flush that leaves only clean lines behind (bench/l2_flush.hpp, mode read).
#pragma once

#include <cstddef>
#include <string>

#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/nvrtc.hpp>

namespace mdh::cuda {

class l2_read {
 public:
  // Compiles the kernel for `arch` (e.g. "sm_90") in the current context.
  explicit l2_read(const std::string& arch) : sink_(1) {
    auto m = compile_uncached(source(), "mdh_l2_read", arch);
    MDH_CU(cuModuleLoadData, &mod_, m.cubin.data());
    MDH_CU(cuModuleGetFunction, &fn_, mod_, "mdh_l2_read");
  }
  ~l2_read() {
    if (mod_) driver_table().cuModuleUnload(mod_);
  }
  l2_read(const l2_read&) = delete;
  l2_read& operator=(const l2_read&) = delete;

  // Enqueues a read of `bytes` bytes at `p` (a device allocation: 16-byte aligned) on stream `s`,
  // `blocks` blocks of 256 threads striding over it.
  void operator()(CUdeviceptr p, std::size_t bytes, CUstream s, unsigned blocks = 1056) const {
    if (bytes == 0) return;
    CUdeviceptr sink = sink_.get();
    unsigned long long n = bytes;
    void* args[] = {&p, &n, &sink};
    MDH_CU(cuLaunchKernel, fn_, blocks, 1, 1, 256, 1, 1, 0, s, args, nullptr);
  }

  static std::string source() {
    // 16-byte loads cached in L2 only (ld.global.cg), the tail byte by byte; the xor of what was
    // read is stored only if it equals a constant, so the loads stay live and nothing is written.
    return R"(extern "C" __global__ void mdh_l2_read(const unsigned char* p, unsigned long long n,
                                            unsigned* sink) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const uint4* q = reinterpret_cast<const uint4*>(p);
  unsigned acc = 0u;
  for (unsigned long long i = first; i < n / 16; i += stride) {
    const uint4 v = __ldcg(q + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (unsigned long long i = n / 16 * 16 + first; i < n; i += stride) acc ^= __ldcg(p + i);
  if (acc == 0x6d64684cu) *sink = acc;
}
)";
  }

 private:
  device_buffer<unsigned> sink_;
  CUmodule mod_ = nullptr;
  CUfunction fn_ = nullptr;
};

}  // namespace mdh::cuda
