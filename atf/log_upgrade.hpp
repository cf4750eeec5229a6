// SPDX-License-Identifier: MIT
// Upgrading a tuning log of format 1 to format 2. Format 1 hashed its search space with an FNV-1a
// offset basis a digit short (1469598103934665603 instead of 14695981039346656037), so no
// format-1 hash equals the hash of any space today, though the log's evaluations are still good.
// A format-1 log is the log of `space` when its header lists the space's parameters (after
// `rename`: old name -> today's name) and the space's size, and every record's configuration
// (renamed) is a point of the space; it is then rewritten as format 2 with today's hash and
// names. The original is kept beside it as <log>.v1, so nothing measured is lost.
#pragma once

#include <atf/error.hpp>
#include <atf/log.hpp>
#include <atf/search_space.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace atf {

using parameter_rename = std::function<std::string(const std::string&)>;

namespace detail {
inline nlohmann::json renamed_configuration(const nlohmann::json& c,
                                            const parameter_rename& rename) {
  if (!rename || !c.is_object()) return c;
  nlohmann::json out = nlohmann::json::object();
  for (auto it = c.begin(); it != c.end(); ++it) out[rename(it.key())] = it.value();
  return out;
}
}  // namespace detail

// Rewrites the format-1 log at `path` for `space` as format 2 (see above). Returns true when it
// did; false, leaving the file untouched, when it is no format-1 log (none, format 2, not a log)
// or the log of another space (then tuning with it stops with read_log's message).
inline bool upgrade_log(const std::filesystem::path& path, const search_space& space,
                        const parameter_rename& rename = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const bool last_complete = [&] {
    in.clear();
    in.seekg(-1, std::ios::end);
    char c = 0;
    return in.get(c) && c == '\n';
  }();
  if (lines.empty()) return false;
  nlohmann::json header = nlohmann::json::parse(lines[0], nullptr, false);
  if (!header.is_object() || header.value("atf_log", 0) != 1) return false;
  // the same space: its parameters and size
  if (!header.contains("parameters") || !header["parameters"].is_array()) return false;
  std::vector<std::string> logged, today = space.names();
  for (auto& n : header["parameters"]) {
    if (!n.is_string()) return false;
    logged.push_back(rename ? rename(n.get<std::string>()) : n.get<std::string>());
  }
  std::sort(logged.begin(), logged.end());
  std::sort(today.begin(), today.end());
  if (logged != today || header.value("space_size", std::string()) != to_string(space.size()))
    return false;
  // and every evaluation one of its points (a torn last line, cut off by a kill, is dropped)
  std::vector<nlohmann::json> records;
  for (std::size_t k = 1; k < lines.size(); ++k) {
    nlohmann::json r = nlohmann::json::parse(lines[k], nullptr, false);
    if (r.is_discarded() && k + 1 == lines.size() && !last_complete) break;
    if (!r.is_object() || !r.contains("configuration")) return false;
    r["configuration"] = detail::renamed_configuration(r["configuration"], rename);
    try {
      if (!space.find(configuration::from_json(r["configuration"]))) return false;
    } catch (const std::exception&) {
      return false;
    }
    records.push_back(std::move(r));
  }
  header["upgraded_from"] = {{"atf_log", 1}, {"space_hash", header.value("space_hash", "")}};
  header["atf_log"] = 2;  // its records stay objects: format 2 (format 3 reads them too)
  header["space_hash"] = space.hash();
  header["parameters"] = space.names();
  std::filesystem::path backup = path, tmp = path;
  backup += ".v1";
  tmp += ".upgrading";
  if (std::filesystem::exists(backup))
    throw error("cannot upgrade " + path.string() + ": " + backup.string() +
                " (where the original goes) exists; move it away and run again");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << header.dump() << "\n";
    for (auto& r : records) out << r.dump() << "\n";
    if (!out.flush()) throw error("cannot write " + tmp.string());
  }
  std::filesystem::rename(path, backup);
  std::filesystem::rename(tmp, path);
  return true;
}

}  // namespace atf
