// SPDX-License-Identifier: MIT
// Many plans compiled side by side. NVRTC compiles one program per call and takes seconds for a
// tensor-core kernel, so whatever builds programs for many configurations one after another (a
// test sweep, the stages of a layer) waits for the sum of the compiles; compile_all runs them on
// several threads into the module cache, and programs built from the plans afterwards only load.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <backends/cuda/program.hpp>

namespace mdh::cuda {

// What compile_all found, in the order of the plans: "" where a plan compiled, else its error.
struct compile_report {
  std::vector<std::string> errors;

  std::size_t failed() const {
    return std::size_t(std::count_if(errors.begin(), errors.end(),
                                     [](const std::string& e) { return !e.empty(); }));
  }

  // "" when every plan compiled, else which did not and why (each error's first line).
  std::string summary(std::span<const lower::kernel_plan> plans) const {
    if (failed() == 0) return "";
    std::string s = std::to_string(failed()) + " of " + std::to_string(errors.size()) +
                    " plans did not compile:";
    for (std::size_t k = 0; k < errors.size(); ++k)
      if (!errors[k].empty())
        s += "\n  " + (k < plans.size() ? plans[k].name : "plan " + std::to_string(k)) + ": " +
             errors[k].substr(0, errors[k].find('\n'));
    return s;
  }
};

// Compiles every plan for `arch` (as compile() does: a wgmma plan for "sm_90" as "sm_90a") into
// `cache` on `threads` threads (0: one per hardware thread). A failing plan does not stop the
// others; its error is in the report, and building its program later throws it again in full.
inline compile_report compile_all(std::span<const lower::kernel_plan> plans,
                                  const std::string& arch, unsigned threads = 0,
                                  module_cache& cache = default_module_cache()) {
  compile_report report;
  report.errors.resize(plans.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k; (k = next++) < plans.size();) {
      try {
        if (compile(plans[k], arch, cache)->cubin.empty()) report.errors[k] = "empty cubin";
      } catch (const std::exception& e) {
        report.errors[k] = e.what();
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<std::size_t>(threads, plans.size()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();  // this thread too
  for (auto& t : pool) t.join();
  return report;
}

}  // namespace mdh::cuda
