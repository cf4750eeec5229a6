// SPDX-License-Identifier: MIT
// Command-line helpers shared by the benchmark drivers.
#pragma once

#include <set>
#include <string>

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

}  // namespace bench
