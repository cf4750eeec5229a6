// SPDX-License-Identifier: MIT
// Whether a workload's buffers fit in memory, checked before anything is allocated. Tuning and
// running hold on the host the inputs, the reference outputs and one read-back copy of each
// output; the device holds the inputs and the outputs (on an OpenCL CPU device such as PoCL that
// is host memory too). Sizes that cannot fit fail here, naming the buffers and their bytes,
// instead of ending in std::bad_alloc after minutes or in the allocator's swap storm.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <mdh/error.hpp>
#include <mdh/ir/with_producer.hpp>
#include <mdh/tensor.hpp>

namespace mdh::tuning {

// One buffer of a workload; `bytes` in long double, so that sizes whose element count overflows
// 64 bits are still measured (and rejected).
struct buffer_size {
  std::string role;  // "input" or "output"
  std::string name;
  scalar_type type;
  shape_t shape;
  long double bytes = 0;
};

// What a device can hold (0: unknown).
struct device_memory {
  std::uint64_t total = 0;       // global memory
  std::uint64_t max_buffer = 0;  // the largest single allocation
  bool is_host = false;          // the device's memory is this machine's (a CPU device)
};

inline std::string format_bytes(long double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char s[64];
  if (b >= 1e6L)  // beyond EiB: the exponent says more than the digits
    std::snprintf(s, sizeof s, "%.3Lg %s", b, unit[u]);
  else
    std::snprintf(s, sizeof s, u == 0 ? "%.0Lf %s" : "%.1Lf %s", b, unit[u]);
  return s;
}

// The memory this machine can give without swapping: MemAvailable of /proc/meminfo, else the
// free physical pages; nothing when neither is known.
inline std::optional<std::uint64_t> available_host_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return kib * 1024;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return std::uint64_t(pages) * std::uint64_t(page);
  return std::nullopt;
}

// The buffers of `comp` (a computation or a fused pair) at `sizes`, inputs then outputs.
template <class Comp>
std::vector<buffer_size> workload_buffers(const Comp& comp,
                                          const std::vector<std::int64_t>& sizes) {
  const auto& c = comp.ir();
  std::vector<buffer_size> v;
  auto add = [&](const char* role, const auto& b) {
    buffer_size s{role, b.name, b.type, comp.shape(b.name, sizes), 0};
    long double n = 1;
    for (auto e : s.shape) n *= (long double)e;
    s.bytes = n * (long double)size_of(b.type);
    v.push_back(std::move(s));
  };
  for (auto& b : ir::kernel_inputs(c)) add("input", b);  // an epilogue's buffers included
  for (auto& b : ir::kernel_outputs(c)) add("output", b);
  return v;
}

// A target's device memory, where it reports it (`device_memory memory() const`).
template <class Target>
device_memory memory_of(const Target& target) {
  if constexpr (requires { target.memory(); })
    return target.memory();
  else
    return {};
}

// Throws mdh::error, before anything is allocated, when the buffers of `comp` at `sizes` cannot
// fit: in the host's available memory (or `host_limit` bytes, when given), in `device`'s memory,
// or one buffer over the device's largest allocation. The message names the buffers and bytes.
template <class Comp>
void check_workload_memory(const Comp& comp, const std::vector<std::int64_t>& sizes,
                           const device_memory& device = {},
                           std::optional<std::uint64_t> host_limit = std::nullopt) {
  std::vector<buffer_size> bufs = workload_buffers(comp, sizes);
  long double in = 0, out = 0;
  for (auto& b : bufs) (b.role == "input" ? in : out) += b.bytes;
  std::sort(bufs.begin(), bufs.end(), [](auto& a, auto& b) { return a.bytes > b.bytes; });
  auto listing = [&] {
    std::string s;
    for (auto& b : bufs)
      s += std::string(s.empty() ? "" : ", ") + b.role + " '" + b.name + "' " +
           std::string(short_name(b.type)) + to_string(b.shape) + " " + format_bytes(b.bytes);
    return s;
  };
  const std::string what = "'" + comp.ir().name + "' at sizes " + mdh::to_string(sizes);
  const char* hint = "; choose smaller sizes";

  // Per buffer: element counts the 64-bit indexing of host buffers can address.
  for (auto& b : bufs)
    if (b.bytes > (long double)std::numeric_limits<std::int64_t>::max())
      throw error(what + ": " + b.role + " '" + b.name + "' would take " + format_bytes(b.bytes) +
                  ", more than 64-bit sizes can address (" + listing() + ")" + hint);
  if (device.max_buffer > 0)
    for (auto& b : bufs)
      if (b.bytes > (long double)device.max_buffer)
        throw error(what + ": " + b.role + " '" + b.name + "' takes " + format_bytes(b.bytes) +
                    ", the device allocates at most " + format_bytes(device.max_buffer) +
                    " per buffer (" + listing() + ")" + hint);
  if (device.total > 0 && in + out > (long double)device.total)
    throw error(what + " needs " + format_bytes(in + out) + " of device memory, the device has " +
                format_bytes(device.total) + " (" + listing() + ")" + hint);
  // host: inputs, reference outputs, read-back outputs; plus the device copies on a CPU device
  const long double host = in + 2 * out + (device.is_host ? in + out : 0);
  const std::optional<std::uint64_t> avail = host_limit ? host_limit : available_host_memory();
  if (avail && host > (long double)*avail)
    throw error(what + " needs " + format_bytes(host) + " of host memory (the inputs, the " +
                "reference outputs and a read-back copy" +
                (device.is_host ? std::string(", and the device copies of a CPU device") : "") +
                "), this machine has " + format_bytes(*avail) + " available (" + listing() + ")" +
                hint);
}

}  // namespace mdh::tuning
