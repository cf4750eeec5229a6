// SPDX-License-Identifier: MIT
// device_limits: what a device allows a kernel (threads, grid, shared memory, registers), by name.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <mdh/error.hpp>

namespace mdh::lower {

struct device_limits {
  std::string name = "generic";
  int cc_major = 0, cc_minor = 0;  // compute capability (0.0 for non-CUDA devices)
  std::int64_t max_threads_per_block = 1024;
  std::int64_t max_block[3] = {1024, 1024, 64};
  std::int64_t max_grid[3] = {2147483647, 65535, 65535};
  std::int64_t shared_per_block = 48 * 1024;        // without opt-in
  std::int64_t shared_per_block_optin = 48 * 1024;  // dynamic shared memory after opt-in
  std::int64_t regs_per_block = 65536;
  std::int64_t regs_per_thread = 255;
  int warp_size = 32;
  int sm_count = 1;
  bool cuda = false;  // a CUDA device (warp shuffles, atomics on 64-bit types)
  // A CPU (an OpenCL device of type CL_DEVICE_TYPE_CPU, e.g. PoCL): a work-group runs as a loop
  // on one core, so what makes a fast kernel differs from a GPU's (tuning/start_configurations).
  bool cpu = false;

  std::string arch() const {  // "sm_90" for CUDA devices
    return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  }
};

// Hopper H200 (SXM, 132 SMs, 227 KB dynamic shared memory per block after opt-in).
inline device_limits h200_limits() {
  device_limits l;
  l.name = "NVIDIA H200";
  l.cc_major = 9, l.cc_minor = 0;
  l.shared_per_block_optin = 227 * 1024;
  l.sm_count = 132;
  l.cuda = true;
  return l;
}

// Hopper H100 (SXM5, 132 SMs).
inline device_limits h100_limits() {
  device_limits l = h200_limits();
  l.name = "NVIDIA H100";
  return l;
}

// PoCL on a CPU: large work-groups are allowed but slow; local memory is ordinary memory.
inline device_limits pocl_cpu_limits() {
  device_limits l;
  l.name = "pocl-cpu";
  l.max_threads_per_block = 4096;
  l.max_block[0] = l.max_block[1] = l.max_block[2] = 4096;
  l.max_grid[0] = l.max_grid[1] = l.max_grid[2] = 2147483647;
  l.shared_per_block = l.shared_per_block_optin = 4 * 1024 * 1024;
  l.warp_size = 1;
  l.sm_count = 2;
  l.cpu = true;
  return l;
}

// Named descriptions: "h200", "h100", "pocl-cpu".
inline device_limits named_limits(const std::string& name) {
  if (name == "h200") return h200_limits();
  if (name == "h100") return h100_limits();
  if (name == "pocl-cpu") return pocl_cpu_limits();
  throw error("unknown device name '" + name + "' (known: h200, h100, pocl-cpu)");
}

inline void to_json(nlohmann::json& j, const device_limits& l) {
  j = {{"name", l.name},
       {"cc", std::to_string(l.cc_major) + "." + std::to_string(l.cc_minor)},
       {"max_threads_per_block", l.max_threads_per_block},
       {"max_block", {l.max_block[0], l.max_block[1], l.max_block[2]}},
       {"max_grid", {l.max_grid[0], l.max_grid[1], l.max_grid[2]}},
       {"shared_per_block", l.shared_per_block},
       {"shared_per_block_optin", l.shared_per_block_optin},
       {"regs_per_block", l.regs_per_block},
       {"regs_per_thread", l.regs_per_thread},
       {"warp_size", l.warp_size},
       {"sm_count", l.sm_count},
       {"cuda", l.cuda},
       {"cpu", l.cpu}};
}

}  // namespace mdh::lower
