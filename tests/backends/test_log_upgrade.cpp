// SPDX-License-Identifier: MIT
// Files written before the configuration vocabulary was unified (issue 17):
//   - a tuning log of format 1 (sm_mult_d, atf's space hash with an offset basis a digit short;
//     tests/backends/data/dot_16777216.v1.log.jsonl, the head of the committed H200 dot log) is
//     upgraded for its own space, the original kept, and refused with a message for another;
//   - every committed parameter file (params/h200) still loads and passes check() for its
//     workload, and its configuration is the point of today's space that its tuning record
//     named in the old coordinates (space_parameters, sm_mult_d) translated today.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <expressions/benchmark_cases.hpp>
#include <expressions/dot.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <tuning/search_space.hpp>
#include <tuning/tune.hpp>

using namespace mdh;
namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
  const char* src = std::getenv("MDH_SOURCE_DIR");
  return src ? fs::path(src) : fs::path(".");
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh copy of the fixture in its own folder.
fs::path fixture_copy(const std::string& folder) {
  const fs::path dir = fs::temp_directory_path() / ("mdh_log_upgrade_" + folder);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path log = dir / "dot.log.jsonl";
  fs::copy_file(source_dir() / "tests/backends/data/dot_16777216.v1.log.jsonl", log);
  return log;
}

}  // namespace

TEST_CASE("a format-1 tuning log of the same space is upgraded, the original kept") {
  const auto dot = ops::dot();
  const std::vector<std::int64_t> sizes{1 << 24};
  const auto space = tuning::make_search_space(mdh::describe(dot), sizes, lower::h200_limits());
  const fs::path log = fixture_copy("same");
  const std::string original = slurp(log);
  CHECK_THROWS_WITH_AS(atf::read_log(log, space.hash()), doctest::Contains("format 1"), atf::error);

  REQUIRE(tuning::upgrade_tuning_log(log, space));
  fs::path backup = log;
  backup += ".v1";
  CHECK(slurp(backup) == original);  // nothing measured is lost
  const atf::log_contents lc = atf::read_log(log, space.hash());
  CHECK(lc.header["atf_log"] == 2);
  CHECK(lc.header["upgraded_from"]["atf_log"] == 1);
  CHECK(lc.header["upgraded_from"]["space_hash"] == "f88f5e57e172d279");
  REQUIRE(lc.records.size() == 6);
  for (auto& r : lc.records) {
    const auto a = atf::configuration::from_json(r["configuration"]);
    INFO(a.to_string());
    CHECK(a.contains("t_sm_steps_0"));
    CHECK_FALSE(a.contains("sm_mult_0"));
    CHECK(space.find(a).has_value());
    const auto cfg = tuning::to_config(a, mdh::describe(dot), sizes);
    if (r["valid"].get<bool>())
      CHECK_NOTHROW(lower::check(cfg, mdh::describe(dot), sizes, lower::h200_limits()));
  }
  CHECK_FALSE(tuning::upgrade_tuning_log(log, space));  // format 2 already: nothing to do

  // the best of a format-1 log (one set aside for another space) in today's names
  const fs::path v1 = fixture_copy("best");
  auto best = tuning::best_of_log(v1, 3);
  REQUIRE(best.size() == 3);
  for (auto& b : best) CHECK(space.find(b).has_value());
}

TEST_CASE("a format-1 tuning log of another space is left untouched and refused with a way on") {
  const auto dot = ops::dot();
  const auto other = tuning::make_search_space(mdh::describe(dot), {1 << 20}, lower::h200_limits());
  const fs::path log = fixture_copy("other");
  const std::string original = slurp(log);
  CHECK_FALSE(tuning::upgrade_tuning_log(log, other));
  CHECK(slurp(log) == original);
  fs::path backup = log;
  backup += ".v1";
  CHECK_FALSE(fs::exists(backup));
  CHECK_THROWS_WITH_AS(atf::read_log(log, other.hash()),
                       doctest::Contains("move it away to start a new log"), atf::error);
}

TEST_CASE("every committed parameter file loads, passes check() and is its tuned point") {
  const fs::path dir = source_dir() / "params/h200";
  const tuning::device_id h200{"cuda", "NVIDIA H200", "9.0"};
  const auto lim = lower::h200_limits();
  int loaded = 0, tuned = 0;
  ops::for_each_benchmark_case([&](std::string_view name, const auto& op, const auto& sizes) {
    INFO(name);
    auto visit = [&](const auto& ir) {
      auto rec = tuning::find_parameters(dir, tuning::workload::of(ir, sizes), h200);
      if (!rec) return;
      ++loaded;
      const auto cfg = lower::config_from_json(rec->configuration, ir);
      CHECK_NOTHROW(lower::check(cfg, ir, sizes, lim));
      if (!rec->tuning.contains("space_parameters")) return;
      ++tuned;
      // the record's point in the old coordinates, renamed, is the configuration (t_sm_d from
      // t_sm_steps_d as from sm_mult_d; the space has two points for a tile that is one step
      // and the whole chunk, so the comparison is of configurations, not of points)
      atf::configuration old;
      for (auto& [n, v] : rec->tuning["space_parameters"].items())
        old.set(tuning::upgraded_parameter_name(n), v.template get<std::int64_t>());
      for (const char* n : {"vec_pw", "s2_vec_pw"})  // files from before vec_pw: 1
        if (!old.contains(n) && (n[0] == 'v' || old.contains("s2_vec")))
          old.set(n, std::int64_t{1});
      CHECK(tuning::to_config(old, ir, sizes) == cfg);
    };
    if constexpr (is_fused_v<std::decay_t<decltype(op)>>)
      visit(op.ir());
    else
      visit(mdh::describe(op));
  });
  MESSAGE(loaded, " committed parameter files loaded, ", tuned, " of them tuned points");
  CHECK(loaded >= 20);
  CHECK(tuned >= 15);
}
