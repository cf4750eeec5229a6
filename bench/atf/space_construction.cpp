// SPDX-License-Identifier: MIT
// Times atf's construction of the published search spaces (parse the constraint strings, group,
// order and generate the chain of trees, so that every valid configuration is reachable by index),
// on one thread and on two, each exactly --repeats times (the peers in construction_peers.py run
// the same number of times): best and median of those runs.
// Usage: atf_space_construction [SPACES_DIR] [--repeats N] [--json]; SPACES_DIR defaults to the
// repository's tests/atf/spaces. Prints one line per space.
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

struct timing {
  double best = 0, median = 0;
};

timing repeat(const nlohmann::json& doc, const std::string& name, unsigned threads, int repeats,
              atf::index_t& size) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) t.push_back(time_once(doc, name, threads, size));
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return {t.front(), n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool json = false;
  int repeats = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 1 || v > 100000) {
        std::fprintf(stderr, "--repeats takes a whole number from 1 to 100000, not '%s'\n",
                     argv[i]);
        return 2;
      }
      repeats = int(v);
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "usage: %s [SPACES_DIR] [--repeats N] [--json]\n", argv[0]);
      return 2;
    } else {
      dir = argv[i];
    }
  }
  if (dir.empty()) dir = MDH_SPACES_DIR;
  const char* names[] = {"dedispersion", "hotspot", "atf_prl_2x2", "atf_prl_4x4", "atf_prl_8x8"};
  if (!json)
    std::printf("%-14s %10s %12s %22s %22s   (%d runs each)\n", "space", "valid", "expected",
                "atf 1 thread best/med", "atf 2 threads best/med", repeats);
  for (const char* n : names) {
    const auto path = std::filesystem::path(dir) / (std::string(n) + ".json");
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "missing %s\n", path.c_str());
      return 1;
    }
    const auto doc = nlohmann::json::parse(in);
    atf::index_t size = 0;
    const timing one = repeat(doc, path.string(), 1, repeats, size);
    const timing two = repeat(doc, path.string(), 2, repeats, size);
    const auto expected = doc.value("valid_count", std::uint64_t{0});
    if (json) {
      std::printf(
          "{\"space\": \"%s\", \"count\": %s, \"expected\": %llu, \"runs\": %d, "
          "\"seconds_1thread\": %.9f, \"median_1thread\": %.9f, \"seconds_2threads\": %.9f, "
          "\"median_2threads\": %.9f}\n",
          n, atf::to_string(size).c_str(), static_cast<unsigned long long>(expected), repeats,
          one.best, one.median, two.best, two.median);
    } else {
      std::printf("%-14s %10s %12llu %10.3f/%8.3f ms %10.3f/%8.3f ms\n", n,
                  atf::to_string(size).c_str(), static_cast<unsigned long long>(expected),
                  one.best * 1e3, one.median * 1e3, two.best * 1e3, two.median * 1e3);
    }
    if (size != atf::index_t(expected)) {
      std::fprintf(stderr, "%s: count %s differs from the published %llu\n", n,
                   atf::to_string(size).c_str(), static_cast<unsigned long long>(expected));
      return 1;
    }
  }
  return 0;
}
