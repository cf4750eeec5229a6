// SPDX-License-Identifier: MIT
// The search spaces of the 25 benchmark cases, pinned: a refactoring of how the space is
// declared (parameter names, where a rule is written) must leave the same valid configurations.
// tests/backends/data/benchmark_spaces.json holds, per case and device, the exact number of valid
// configurations and 24 configurations sampled uniformly from the space (in lower::config
// vocabulary, which does not depend on the space's coordinates: the parameter names once per
// case, then each sample's values) with whether check() accepts them.
// Today's space must have the same size, hold every sample, and check() must judge each sample as
// before. MDH_WRITE_BENCHMARK_SPACES=<file> writes the file from the current code instead.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <expressions/benchmark_cases.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/fuse.hpp>
#include <tuning/search_space.hpp>
#include <tuning/start_configurations.hpp>

using namespace mdh;

namespace {

using sizes_t = std::vector<std::int64_t>;

std::string data_file() {
  const char* src = std::getenv("MDH_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/backends/data/benchmark_spaces.json";
}

constexpr int samples = 24;

// A configuration's JSON ({name: int} or a fused pair's {"first": {...}, "second": {...}}) as
// names and values, and back.
void flatten(const nlohmann::json& j, const std::string& prefix, nlohmann::json& names,
             nlohmann::json& values) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_object()) {
      flatten(it.value(), prefix + it.key() + "/", names, values);
    } else {
      names.push_back(prefix + it.key());
      values.push_back(it.value());
    }
  }
}
nlohmann::json unflatten(const nlohmann::json& names, const nlohmann::json& values) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string n = names[k].get<std::string>();
    const std::size_t slash = n.find('/');
    if (slash == std::string::npos)
      j[n] = values.at(k);
    else
      j[n.substr(0, slash)][n.substr(slash + 1)] = values.at(k);
  }
  return j;
}

// vec_pw is written only when it is not 1; every sample gets it, so all have the same names.
nlohmann::json with_vec_pw(nlohmann::json j) {
  if (j.contains("first")) {
    for (const char* stage : {"first", "second"}) j[stage] = with_vec_pw(j[stage]);
  } else if (!j.contains("vec_pw")) {
    j["vec_pw"] = 1;
  }
  return j;
}

template <class IR, class Config>
bool passes_check(const Config& cfg, const IR& ir, const sizes_t& sizes,
                  const lower::device_limits& lim) {
  try {
    lower::check(cfg, ir, sizes, lim);
    return true;
  } catch (const error&) {
    return false;
  }
}

// The facts of one case on one device: {"size": "...", "samples": [{"config", "valid"}]}.
template <class IR>
nlohmann::json space_facts(const IR& ir, const sizes_t& sizes, const lower::device_limits& lim) {
  auto space = tuning::make_search_space(ir, sizes, lim);
  nlohmann::json j;
  j["size"] = atf::to_string(space.size());
  std::mt19937_64 rng(11);
  for (int k = 0; k < samples; ++k) {
    auto cfg = tuning::to_config(space.to_configuration(space.random_point(rng)), ir, sizes);
    nlohmann::json names = nlohmann::json::array(), values = nlohmann::json::array();
    flatten(with_vec_pw(nlohmann::json(cfg)), "", names, values);
    j["names"] = names;  // the same for every sample
    j["samples"].push_back({{"values", values}, {"valid", passes_check(cfg, ir, sizes, lim)}});
  }
  return j;
}

template <class IR>
void compare(const nlohmann::json& want, const IR& ir, const sizes_t& sizes,
             const lower::device_limits& lim) {
  auto space = tuning::make_search_space(ir, sizes, lim);
  CHECK(atf::to_string(space.size()) == want.at("size").get<std::string>());
  int valid = 0;
  for (auto& s : want.at("samples")) {
    const auto cfg = lower::config_from_json(unflatten(want.at("names"), s.at("values")), ir);
    INFO(lower::to_string(cfg));
    CHECK(space.find(tuning::to_space_configuration(cfg, ir, sizes, lim)).has_value());
    CHECK(passes_check(cfg, ir, sizes, lim) == s.at("valid").get<bool>());
    valid += s.at("valid").get<bool>();
  }
  CHECK(want.at("samples").size() == samples);
  MESSAGE(lim.name, ": size ", want.at("size").get<std::string>(), ", ", valid, " of ", samples,
          " samples pass check()");
}

const std::vector<lower::device_limits>& devices() {
  static const std::vector<lower::device_limits> d{lower::h200_limits(), lower::pocl_cpu_limits()};
  return d;
}

}  // namespace

TEST_CASE("the benchmark cases' search spaces hold the same configurations as before") {
  const char* write = std::getenv("MDH_WRITE_BENCHMARK_SPACES");
  nlohmann::json all = nlohmann::json::object();
  if (!write) {
    std::ifstream in(data_file());
    REQUIRE_MESSAGE(bool(in), "cannot read ", data_file());
    all = nlohmann::json::parse(in);
  }
  int cases = 0;
  ops::for_each_benchmarks_md_case(
      [&](std::string_view name, const auto& op, const sizes_t& sizes) {
        const std::string key(name);
        INFO(key);
        ++cases;
        for (auto& lim : devices()) {
          INFO(lim.name);
          auto visit = [&](const auto& ir) {
            if (write)
              all[key][lim.name] = space_facts(ir, sizes, lim);
            else
              compare(all.at(key + "@" + lim.name), ir, sizes, lim);
          };
          if constexpr (is_fused_v<std::decay_t<decltype(op)>>)
            visit(op.ir());
          else
            visit(mdh::describe(op));
        }
      });
  CHECK(cases == 25);
  if (write) {
    std::ofstream out(write);  // one line per case and device: small diffs
    std::string sep = "{\n";
    for (auto& [key, per_device] : all.items())
      for (auto& [dev, facts] : per_device.items()) {
        out << sep << " " << nlohmann::json(key + "@" + dev).dump() << ": " << facts.dump();
        sep = ",\n";
      }
    out << "\n}\n";
    MESSAGE("wrote ", write);
  } else {
    CHECK(all.size() == devices().size() * std::size_t(cases));
  }
}
