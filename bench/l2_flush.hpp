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
#include <backends/cuda/l2_read.hpp>

namespace bench {

class l2_flush {
 public:
  l2_flush(std::string mode, const std::string& arch, std::size_t bytes = std::size_t(256) << 20)
      : mode_(std::move(mode)), buf_(bytes) {
    if (mode_ != "memset" && mode_ != "read")
      throw mdh::error("--flush must be 'memset' or 'read', not '" + mode_ + "'");
    if (mode_ == "read") {
      MDH_CU(cuMemsetD8, buf_.get(), 0, buf_.bytes());  // xors to 0, never the kernel's constant
      MDH_CU(cuCtxSynchronize);  // done before a read on a non-blocking stream (legacy-ordered)
      read_ = std::make_unique<mdh::cuda::l2_read>(arch);
    }
  }

  const std::string& mode() const { return mode_; }

  // Enqueues the flush of repetition k on stream s.
  void operator()(CUstream s, int k) {
    if (mode_ == "memset")
      MDH_CU(cuMemsetD8Async, buf_.get(), (unsigned char)(k), buf_.bytes(), s);
    else
      (*read_)(buf_.get(), buf_.bytes(), s);
  }

 private:
  std::string mode_;
  mdh::cuda::device_buffer<unsigned char> buf_;
  std::unique_ptr<mdh::cuda::l2_read> read_;
};

}  // namespace bench
