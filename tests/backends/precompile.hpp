// SPDX-License-Identifier: MIT
// The GPU tests compile a case's configurations side by side before running them one by one:
// NVRTC, not the GPU, is most of a sweep's time, and one compile at a time leaves the device
// machine's other cores idle once the shorter test parts have finished.
#pragma once

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include <backends/cuda/compile_all.hpp>

namespace mdh::test {

// The plans, compiled into the default module cache for `dev` (cuda::compile_all); a plan that
// did not compile is compiled again where its program is built, and fails there with its whole
// NVRTC log and the test's context.
// A quarter of the hardware threads each: `ctest -j` runs a dozen GPU test parts at once, and
// a dozen processes with a thread per core would hold that many NVRTC instances (some hundred MB
// each) at a time.
inline std::vector<lower::kernel_plan> precompiled(std::vector<lower::kernel_plan> plans,
                                                   const cuda::device& dev) {
  cuda::compile_all(plans, dev.arch(), std::max(2u, std::thread::hardware_concurrency() / 4));
  return plans;
}

}  // namespace mdh::test
