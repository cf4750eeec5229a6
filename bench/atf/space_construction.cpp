// SPDX-License-Identifier: MIT
// Times atf's construction of the published search spaces (parse the constraint strings, group,
// order and generate the chain of trees, so that every valid configuration is reachable by index).
// Usage: atf_space_construction [spaces-dir] [--json]; prints one line per space.
#include <atf/atf.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

double time_once(const nlohmann::json& doc, const std::string& name, unsigned threads,
                 atf::index_t& size) {
  const auto t0 = std::chrono::steady_clock::now();
  auto d = atf::parse_space_json(doc, name);
  atf::space_options o;
  o.threads = threads;
  auto s = atf::make_space(d, o);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size = s.size();
  // Touch the last configuration so the space is really usable by index.
  if (s.at(s.size() - 1).empty()) std::abort();
  return dt;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      json = true;
    else
      dir = argv[i];
  }
  if (dir.empty()) {
    const char* env = std::getenv("MDH_SHARED_DIR");
    if (!env) {
      std::fprintf(stderr, "usage: %s SPACES_DIR [--json]  (or set MDH_SHARED_DIR)\n", argv[0]);
      return 2;
    }
    dir = std::string(env) + "/spaces";
  }
  const char* names[] = {"dedispersion", "hotspot", "atf_prl_2x2", "atf_prl_4x4", "atf_prl_8x8"};
  if (!json)
    std::printf("%-14s %10s %12s %14s %14s\n", "space", "valid", "expected", "atf 1 thread",
                "atf all threads");
  for (const char* n : names) {
    const auto path = std::filesystem::path(dir) / (std::string(n) + ".json");
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "missing %s\n", path.c_str());
      return 1;
    }
    const auto doc = nlohmann::json::parse(in);
    double best[2] = {1e300, 1e300};
    atf::index_t size = 0;
    for (int t = 0; t < 2; ++t) {
      double total = 0;
      for (int rep = 0; rep < 200 && (rep < 5 || total < 0.5); ++rep) {  // best of several runs
        const double dt = time_once(doc, path.string(), t == 0 ? 1 : 0, size);
        best[t] = std::min(best[t], dt);
        total += dt;
      }
    }
    const auto expected = doc.value("valid_count", std::uint64_t{0});
    if (json) {
      std::printf(
          "{\"space\": \"%s\", \"count\": %s, \"expected\": %llu, \"seconds_1thread\": %.9f, "
          "\"seconds\": %.9f}\n",
          n, atf::to_string(size).c_str(), static_cast<unsigned long long>(expected), best[0],
          best[1]);
    } else {
      std::printf("%-14s %10s %12llu %11.3f ms %11.3f ms\n", n, atf::to_string(size).c_str(),
                  static_cast<unsigned long long>(expected), best[0] * 1e3, best[1] * 1e3);
    }
    if (size != atf::index_t(expected)) {
      std::fprintf(stderr, "%s: count %s differs from the published %llu\n", n,
                   atf::to_string(size).c_str(), static_cast<unsigned long long>(expected));
      return 1;
    }
  }
  return 0;
}
