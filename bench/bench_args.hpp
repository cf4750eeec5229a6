// SPDX-License-Identifier: MIT
// Command-line helpers shared by the benchmark drivers.
#pragma once

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <expressions/benchmark_cases.hpp>
#include <mdh/tensor.hpp>
#include <mdh/tuning/parameter_file.hpp>

namespace bench {

// "a,b,c" -> {a, b, c}
inline std::set<std::string> split_list(const std::string& v) {
  std::set<std::string> out;
  for (std::size_t p = 0; p <= v.size();) {
    auto c = v.find(',', p);
    out.insert(v.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return out;
}

// The type a case runs in, as bench/cases.json's "type" and the suites name it: "tf32" (f32 read
// at TF32 precision), "tf32x3" (f32 at near-fp32 accuracy, each product three TF32 tensor-core
// products of split operands), "bf16" or "f16" (16-bit buffers), else "f32".
inline std::string type_of(const mdh::tuning::workload& w) {
  if (w.precision == "tf32" || w.precision == "tf32x3") return w.precision;
  for (auto& t : w.types)
    if (t == "bf16" || t == "f16") return t;
  return "f32";
}

// Where a case's parameter file lives: float32 cases in `root` itself (params/h200), the others
// in a folder named after their type (params/h200/bf16, params/h200/tf32, params/h200/tf32x3),
// logs in its logs/.
inline std::filesystem::path params_folder(const std::filesystem::path& root,
                                           const mdh::tuning::workload& w) {
  std::string t = type_of(w);
  return t == "f32" ? root : root / t;
}

// --list: the benchmark cases (all, or those of `only`), one a line with their sizes and what
// each computes, so the names for --cases can be checked on a machine without a GPU.
inline void list_cases(const std::set<std::string>& only) {
  mdh::ops::for_each_benchmark_case_of_every_type(
      [&](std::string_view name, const auto& comp, const std::vector<std::int64_t>& sizes) {
        if (!only.empty() && !only.count(std::string(name))) return;
        auto w = mdh::tuning::workload::of(comp.ir(), sizes);
        std::printf("%-28.*s %-6s %-24s %s\n", int(name.size()), name.data(), type_of(w).c_str(),
                    mdh::to_string(sizes).c_str(), comp.name().c_str());
      });
}

// The names of `only` that are no benchmark case ("" when all are): a typo in --cases would
// otherwise select nothing and the run would look like a success.
inline std::string unknown_cases(const std::set<std::string>& only) {
  std::set<std::string> left = only;
  mdh::ops::for_each_benchmark_case_of_every_type(
      [&](std::string_view name, const auto&, const auto&) { left.erase(std::string(name)); });
  std::string out;
  for (auto& n : left) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace bench
