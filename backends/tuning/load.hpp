// SPDX-License-Identifier: MIT
// Picking the configuration to run: the parameter-file record for this workload and device, or,
// when there is none, the documented default configuration with a one-line warning that names the
// command to tune it. A record that exists but no longer passes the checks is an error.
#pragma once

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/tensor.hpp>
#include <mdh/tuning/parameter_file.hpp>

namespace mdh::tuning {

template <class Config>
struct basic_configuration_choice {
  Config config;
  std::optional<parameter_record> record;  // empty: the default configuration
  std::string origin;                      // the parameter file, or "default configuration"
};
using configuration_choice = basic_configuration_choice<lower::config>;
using fused_configuration_choice = basic_configuration_choice<lower::fused_config>;

inline std::string sizes_arg(const std::vector<std::int64_t>& sizes) {
  std::string s;
  for (auto n : sizes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

// `params` is a parameter file or a folder of them (may not exist). Warnings go to `warn`
// (nullptr: silent).
namespace detail {
inline void check_configuration(const lower::config& cfg, const ir::computation& c,
                                const std::vector<std::int64_t>& sizes,
                                const lower::device_limits& limits) {
  lower::check(cfg, c, sizes, limits);
}
inline void check_configuration(const lower::fused_config& cfg, const ir::fused& f,
                                const std::vector<std::int64_t>& sizes,
                                const lower::device_limits& limits) {
  lower::check_fused(cfg, f, sizes, limits);
}
inline lower::config configuration_from_json(const nlohmann::json& j, const ir::computation& c) {
  return lower::config_from_json(j, c);
}
inline lower::fused_config configuration_from_json(const nlohmann::json& j, const ir::fused& f) {
  return lower::fused_config_from_json(j, f);
}
inline lower::config default_configuration(const ir::computation& c,
                                           const std::vector<std::int64_t>& sizes) {
  return lower::default_config(c, sizes);
}
inline lower::fused_config default_configuration(const ir::fused& f,
                                                 const std::vector<std::int64_t>& sizes) {
  return lower::default_fused_config(f, sizes);
}
}  // namespace detail

// `c` is an ir::computation or an ir::fused pair (then the choice holds a lower::fused_config).
template <class IR>
auto choose_configuration(const IR& c, const std::vector<std::int64_t>& sizes,
                          const std::filesystem::path& params, const device_id& dev,
                          const lower::device_limits& limits, std::ostream* warn = &std::cerr) {
  workload w = workload::of(c, sizes);
  basic_configuration_choice<decltype(detail::default_configuration(c, sizes))> choice;
  choice.record = find_parameters(params, w, dev);
  if (choice.record) {
    choice.origin = params.string();
    try {
      choice.config = detail::configuration_from_json(choice.record->configuration, c);
      detail::check_configuration(choice.config, c, sizes, limits);
    } catch (const error& e) {
      throw error("parameter file in '" + params.string() + "' for " + c.name + " " +
                  mdh::to_string(sizes) +
                  ": field 'configuration' is not usable here: " + e.what());
    }
    return choice;
  }
  choice.config = detail::default_configuration(c, sizes);
  choice.origin = "default configuration";
  if (warn)
    *warn << "mdh: no parameter file for " << c.name << " " << mdh::to_string(sizes) << " on "
          << dev.name << " (" << dev.backend << ") in '" << params.string()
          << "': using the default configuration; tune it with: mdh-tune tune " << c.name
          << " --sizes " << sizes_arg(sizes) << " --out " << params.string() << "\n";
  return choice;
}

}  // namespace mdh::tuning
