// SPDX-License-Identifier: MIT
// Export of a tuning log in the community T4 results format (schema_version 1.0.0).
#pragma once

#include <atf/error.hpp>
#include <atf/log.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace atf {

// Converts one log record into a T4 result.
inline nlohmann::json t4_result(const nlohmann::json& r, const std::string& objective = "time",
                                const std::string& unit = "s") {
  const bool valid = r.value("valid", false);
  std::string inv = r.value("invalidity", std::string(valid ? "correct" : "runtime"));
  nlohmann::json measurements = nlohmann::json::array();
  nlohmann::json runtimes = nlohmann::json::array();
  if (valid) {
    measurements.push_back({{"name", objective}, {"value", r.at("cost")}, {"unit", unit}});
    runtimes.push_back(r.at("cost"));
  }
  return {{"timestamp", r.value("timestamp", std::string())},
          {"configuration", r.at("configuration")},
          {"objectives", nlohmann::json::array({objective})},
          {"times",
           {{"compilation_time", r.value("prepare_s", 0.0)},
            {"runtimes", runtimes},
            {"framework", 0.0},
            {"search_algorithm", 0.0},
            {"validation", 0.0}}},
          {"invalidity", inv},
          {"correctness", valid ? 1 : 0},
          {"measurements", measurements}};
}

// The T4 document for a whole log.
inline nlohmann::json t4_results(const log_contents& log, const std::string& objective = "time",
                                 const std::string& unit = "s") {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : log.records) results.push_back(t4_result(r, objective, unit));
  return {{"schema_version", "1.0.0"}, {"results", results}};
}

inline void export_t4(const std::filesystem::path& log_path, const std::string& space_hash,
                      const std::filesystem::path& out_path, const std::string& objective = "time",
                      const std::string& unit = "s") {
  nlohmann::json j = t4_results(read_log(log_path, space_hash), objective, unit);
  std::ofstream out(out_path, std::ios::trunc);
  if (!out) throw error("cannot write T4 file " + out_path.string());
  out << j.dump(2) << '\n';
}

}  // namespace atf
