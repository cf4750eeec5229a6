// SPDX-License-Identifier: MIT
// Parameter files: the tuned configuration as a JSON object {"configuration", "cost", "tuning",
// "meta"} that a program loads instead of re-tuning; "meta" is the caller's (workload, device...).
#pragma once

#include <atf/configuration.hpp>
#include <atf/error.hpp>
#include <atf/tuner.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace atf {

inline constexpr const char* parameter_file_format = "atf-parameters/1";

struct parameter_file {
  configuration config;
  double cost = 0;
  nlohmann::json tuning;
  nlohmann::json meta;
};

// Written to a temporary file and renamed, so readers never see half a file.
inline void write_parameter_file(const std::filesystem::path& path, const configuration& best,
                                 double cost, const nlohmann::json& tuning,
                                 const nlohmann::json& meta = nlohmann::json::object()) {
  nlohmann::json j = {{"format", parameter_file_format},
                      {"configuration", best.to_json()},
                      {"cost", cost},
                      {"tuning", tuning},
                      {"meta", meta.is_null() ? nlohmann::json::object() : meta}};
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw error("cannot write parameter file " + tmp);
    out << j.dump(2) << '\n';
    if (!out) throw error("cannot write parameter file " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw error("cannot move " + tmp + " to " + path.string() + ": " + ec.message());
}

inline void write_parameter_file(const std::filesystem::path& path, const tuning_result& r,
                                 const nlohmann::json& meta = nlohmann::json::object()) {
  if (!r.found) throw error("write_parameter_file: the tuning found no valid configuration");
  write_parameter_file(path, r.best, r.best_cost, r.tuning_json(), meta);
}

inline parameter_file read_parameter_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw error("cannot open parameter file " + path.string());
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("format", std::string()) != parameter_file_format)
      throw error(path.string() + " is not an atf parameter file (format is not " +
                  std::string(parameter_file_format) + ")");
    return {configuration::from_json(j.at("configuration")), j.at("cost").get<double>(),
            j.value("tuning", nlohmann::json::object()), j.value("meta", nlohmann::json::object())};
  } catch (const nlohmann::json::exception& e) {
    throw error(path.string() + ": malformed parameter file: " + e.what());
  }
}

}  // namespace atf
