// SPDX-License-Identifier: MIT
// Picking the configuration to run: the parameter-file record for this workload and device, or,
// when there is none, the documented default configuration with a one-line warning that names the
// command to tune it. A record that exists but no longer passes the checks is an error.
#pragma once

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/lower/producer_passes.hpp>
#include <mdh/tensor.hpp>
#include <mdh/tuning/parameter_file.hpp>

namespace mdh::tuning {

template <class Config>
struct basic_configuration_choice {
  Config config;
  std::optional<parameter_record> record;  // empty: the default configuration
  std::string origin;                      // the parameter file, or "default configuration"
  // Files in the folder meant for this workload that could not be used, each with its reason
  // (find_parameters); when not empty and `record` is, the default configuration replaced them.
  std::vector<std::string> unusable;
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
// `c` is an ir::computation or an ir::fused pair (then the choice holds a lower::fused_config).
template <class IR>
auto choose_configuration(const IR& c, const std::vector<std::int64_t>& sizes,
                          const std::filesystem::path& params, const device_id& dev,
                          const lower::device_limits& limits, std::ostream* warn = &std::cerr) {
  workload w = workload::of(c, sizes);
  basic_configuration_choice<decltype(lower::default_config(c, sizes))> choice;
  choice.record = find_parameters(params, w, dev, &choice.unusable);
  if (choice.record) {
    choice.origin = params.string();
    try {
      choice.config = lower::config_from_json(choice.record->configuration, c);
      lower::check(choice.config, c, sizes, limits);
    } catch (const error& e) {
      throw error("parameter file in '" + params.string() + "' for " + c.name + " " +
                  mdh::to_string(sizes) +
                  ": field 'configuration' is not usable here: " + e.what());
    }
    return choice;
  }
  choice.config = lower::default_config(c, sizes);
  choice.origin = "default configuration";
  if (warn && !choice.unusable.empty()) {
    for (auto& why : choice.unusable) *warn << why << "\n";  // "mdh: parameter file '...': ..."
    *warn << "mdh: no usable parameter file for " << c.name << " " << mdh::to_string(sizes)
          << " on " << dev.name << " (" << dev.backend << ") in '" << params.string() << "' ("
          << (choice.unusable.size() == 1 ? "the file above cannot" : "the files above cannot")
          << " be used): using the default configuration; tune again with: mdh-tune tune " << c.name
          << " --sizes " << sizes_arg(sizes) << " --out " << params.string() << "\n";
  } else if (warn)
    *warn << "mdh: no parameter file for " << c.name << " " << mdh::to_string(sizes) << " on "
          << dev.name << " (" << dev.backend << ") in '" << params.string()
          << "': using the default configuration; tune it with: mdh-tune tune " << c.name
          << " --sizes " << sizes_arg(sizes) << " --out " << params.string() << "\n";
  return choice;
}

}  // namespace mdh::tuning
