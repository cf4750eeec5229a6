// SPDX-License-Identifier: MIT
// The tuning log: JSON lines, a header identifying the search space and then one record per
// evaluation, appended (and flushed to the OS) the moment it finishes, so a killed run resumes.
#pragma once

#include <atf/error.hpp>
#include <atf/evaluator.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace atf {

namespace detail {

inline std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

}  // namespace detail

// 2: the space hash with the real FNV-1a 64-bit offset basis (1 had one a digit short; such logs
// are upgraded by atf::upgrade_log, atf/log_upgrade.hpp).
// 3: a record's configuration is the array of its values in the header's "parameters" order
// instead of an object naming each (the names were three quarters of a log's bytes). Logs of
// format 2 are read as before, and a run that resumes one appends to it in format 2.
inline constexpr int log_format_version = 3;

// A record's configuration as an object: as stored (format 2, or a format-1 log upgraded in
// place), or the values of format 3 named by the header's parameters. Throws atf::error when an
// array does not have one value per parameter.
inline nlohmann::json named_configuration(const nlohmann::json& header,
                                          const nlohmann::json& configuration) {
  if (!configuration.is_array()) return configuration;
  const nlohmann::json& names =
      header.contains("parameters") ? header["parameters"] : nlohmann::json::array();
  if (!names.is_array() || names.size() != configuration.size())
    throw error("a configuration with " + std::to_string(configuration.size()) +
                " value(s) where the log header names " + std::to_string(names.size()) +
                " parameter(s)");
  nlohmann::json object = nlohmann::json::object();
  for (std::size_t i = 0; i < names.size(); ++i)
    object[names[i].get<std::string>()] = configuration[i];
  return object;
}

struct log_contents {
  nlohmann::json header;
  std::vector<nlohmann::json> records;
  std::uintmax_t good_bytes = 0;  // up to the end of the last complete line
  bool torn_tail = false;         // a last line cut off by a kill
};

// Reads and checks a log. Throws atf::error (and never touches the file) when it is not an atf
// log, belongs to another search space (hash differs), or has a corrupt record.
inline log_contents read_log(const std::filesystem::path& path, const std::string& space_hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot read tuning log " + path.string());
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  log_contents lc;
  std::size_t pos = 0, line_no = 0;
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    const bool complete = nl != std::string::npos;
    std::string line = all.substr(pos, complete ? nl - pos : std::string::npos);
    ++line_no;
    nlohmann::json j;
    bool parsed = true;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      parsed = false;
    }
    if (!complete && (!parsed || line_no == 1)) {
      if (line_no == 1)
        throw error(path.string() +
                    " is not an atf tuning log (no complete header line); left untouched");
      lc.torn_tail = true;  // cut off mid-write by a kill: the only damage a crash can do
      break;
    }
    if (line_no == 1) {
      if (!parsed || !j.is_object() || !j.contains("atf_log"))
        throw error(path.string() +
                    " is not an atf tuning log (first line is not an atf header); left untouched");
      if (j.value("atf_log", 0) == 1)
        throw error(path.string() +
                    " is a tuning log of format 1 (written before atf fixed its space hash): "
                    "atf::upgrade_log(path, space) rewrites it as format 2 when it is the log of "
                    "that space (the tuner does so itself, so a log it reports is another "
                    "space's); otherwise move it away to start a new log; left untouched");
      if (j.value("atf_log", 0) != 2 && j.value("atf_log", 0) != log_format_version)
        throw error(path.string() + ": unsupported log format version " + j["atf_log"].dump() +
                    " (this atf reads 2 and " + std::to_string(log_format_version) + ")");
      const std::string h = j.value("space_hash", std::string());
      if (h != space_hash)
        throw error(path.string() + " was written for another search space (space hash " + h +
                    ", this space " + space_hash + "); use another log file; left untouched");
      lc.header = std::move(j);
    } else {
      if (!parsed || !j.is_object() || !j.contains("configuration") || !j.contains("valid"))
        throw error(path.string() + ":" + std::to_string(line_no) +
                    ": corrupt record: " + line.substr(0, 120) + "; the log was left untouched");
      try {  // the records as format 2 has them, whatever the log's format
        j["configuration"] = named_configuration(lc.header, j["configuration"]);
      } catch (const error& e) {
        throw error(path.string() + ":" + std::to_string(line_no) + ": corrupt record (" +
                    e.what() + "); the log was left untouched");
      }
      lc.records.push_back(std::move(j));
    }
    pos = complete ? nl + 1 : all.size();
    if (complete) lc.good_bytes = pos;
  }
  if (line_no == 0) throw error(path.string() + " is empty, not an atf tuning log; left untouched");
  return lc;
}

// The space hash in the header of the atf log at `path`; nothing when there is no readable atf
// header (no file, an empty file, another format).
inline std::optional<std::string> log_space_hash(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(first, nullptr, false);
  if (!j.is_object() || !j.contains("atf_log") || !j.contains("space_hash") ||
      !j["space_hash"].is_string())
    return std::nullopt;
  return j["space_hash"].get<std::string>();
}

// The header of the atf log at `path`; nothing when there is no readable atf header (no file, an
// empty file, another format).
inline std::optional<nlohmann::json> log_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(first, nullptr, false);
  if (!j.is_object() || !j.contains("atf_log")) return std::nullopt;
  return j;
}

// The records of the log at `path`, each configuration named (any format), for readers without
// its search space (atf::read_log checks the space); the header and lines that are not JSON
// objects with a configuration (a torn last line) are passed over, as is a record whose values
// the header does not name.
inline std::vector<nlohmann::json> log_records(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  nlohmann::json header;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("atf_log")) {
      header = std::move(j);
      continue;
    }
    if (!j.contains("configuration")) continue;
    try {
      j["configuration"] = named_configuration(header, j["configuration"]);
    } catch (const error&) {
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// The record of one evaluation; `parameters` (the header's, in order) given: format 3, the
// configuration as the array of its values; else format 2, as an object.
inline nlohmann::json log_record(const evaluation& e, double elapsed_s,
                                 const std::vector<std::string>* parameters = nullptr) {
  nlohmann::json j;
  j["configuration"] = e.config.to_json();
  if (parameters) {
    nlohmann::json values = nlohmann::json::array();
    for (const std::string& name : *parameters) values.push_back(j["configuration"].at(name));
    j["configuration"] = std::move(values);
  }
  j["valid"] = e.valid;
  j["cost"] = e.valid ? nlohmann::json(e.cost) : nlohmann::json(nullptr);
  j["invalidity"] = e.invalidity;
  if (!e.valid) j["error"] = e.error;
  j["prepare_s"] = e.prepare_s;
  j["measure_s"] = e.measure_s;
  j["worker"] = e.worker;
  j["elapsed_s"] = elapsed_s;
  j["timestamp"] = detail::utc_timestamp();
  return j;
}

// Appends lines with one write() each, so a kill leaves at most a torn last line.
class log_writer {
 public:
  log_writer() = default;
  log_writer(const std::filesystem::path& path, std::uintmax_t truncate_to, bool truncate)
      : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw error("cannot open tuning log " + path.string() + ": " + std::strerror(errno));
    if (truncate && ::ftruncate(fd_, static_cast<off_t>(truncate_to)) != 0)
      throw error("cannot trim the torn last line of " + path.string());
  }
  log_writer(const log_writer&) = delete;
  log_writer& operator=(const log_writer&) = delete;
  ~log_writer() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool is_open() const { return fd_ >= 0; }

  void append(const nlohmann::json& j) {
    if (fd_ < 0) return;
    std::string line = j.dump() + "\n";
    const char* p = line.data();
    std::size_t left = line.size();
    while (left) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw error("cannot append to tuning log " + path_.string() + ": " + std::strerror(errno));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace atf
