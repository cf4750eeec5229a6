// SPDX-License-Identifier: MIT
// Parameter files: the tuned configuration of one workload (computation hash, sizes, element
// types) on one device, with the measured cost and how it was tuned. A record made for another
// expression, size or device is never used silently: lookups skip it, explicit loads reject it
// naming the file and the field.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/ir/with_producer.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/version.hpp>

namespace mdh::tuning {

inline constexpr const char* parameter_format = "mdh-parameters/1";

// What a record is for: which computation at which sizes.
struct workload {
  std::string computation;  // the name (informative)
  std::string hash;         // ir::structural_hash_hex (what must match)
  std::vector<std::int64_t> sizes;
  std::vector<std::string> types;  // element types of inputs then outputs (short names)
  // How f32 inputs are read: "ieee", "tf32" or "tf32x3" (computation::with_precision). A record
  // of one precision is never used for a workload of another. Written to the file when not "ieee".
  std::string precision = "ieee";

  // A pair's precision: the one of its computations that is not ieee.
  static std::string pair_precision(const ir::computation& a, const ir::computation& b) {
    return ir::to_string(a.input_precision != ir::precision::ieee ? a.input_precision
                                                                  : b.input_precision);
  }
  static workload of(const ir::computation& c, const std::vector<std::int64_t>& sizes) {
    workload w{c.name, ir::structural_hash_hex(c), sizes, {}, ir::to_string(c.input_precision)};
    for (auto& bufs : {ir::kernel_inputs(c), ir::kernel_outputs(c)})  // an epilogue's included
      for (auto& b : bufs) w.types.emplace_back(short_name(b.type));
    return w;
  }
  // A fused pair (mdh::fuse): its name, the hash of both stages, the pair's buffers.
  static workload of(const ir::fused& f, const std::vector<std::int64_t>& sizes) {
    workload w{f.name, ir::structural_hash_hex(f), sizes, {}, "ieee"};
    w.precision = pair_precision(f.first, f.second);
    for (auto* bufs : {&f.inputs, &f.outputs})
      for (auto& b : *bufs) w.types.emplace_back(short_name(b.type));
    return w;
  }
  // A with_producer pair (attention): its name, the hash of both computations, its buffers.
  static workload of(const ir::produced& x, const std::vector<std::int64_t>& sizes) {
    workload w{x.name, ir::structural_hash_hex(x), sizes, {}, "ieee"};
    w.precision = pair_precision(x.producer, x.consumer);
    for (auto* bufs : {&x.inputs, &x.outputs})
      for (auto& b : *bufs) w.types.emplace_back(short_name(b.type));
    return w;
  }
  friend bool operator==(const workload&, const workload&) = default;
};

// Which device: backend ("cuda", "opencl"), the device's name and compute capability.
struct device_id {
  std::string backend;
  std::string name;
  std::string compute_capability;  // "9.0"; empty for OpenCL
  friend bool operator==(const device_id&, const device_id&) = default;
};

// The id of the device with `limits` on `backend` ("cuda": with its compute capability).
inline device_id device_id_of(const std::string& backend, const lower::device_limits& limits) {
  return {backend, limits.name,
          backend == "cuda"
              ? std::to_string(limits.cc_major) + "." + std::to_string(limits.cc_minor)
              : std::string()};
}

struct parameter_record {
  workload work;
  device_id device;
  nlohmann::json configuration;  // the backend's configuration object
  double cost = 0;               // measured cost of `configuration`
  std::string cost_unit = "us";
  nlohmann::json tuning = nlohmann::json::object();  // technique, seed, evaluations, duration...
  std::string library_version = MDH_VERSION_STRING;
};

inline nlohmann::json to_json(const parameter_record& r) {
  nlohmann::json j;
  j["format"] = parameter_format;
  j["library_version"] = r.library_version;
  j["workload"] = {{"computation", r.work.computation},
                   {"hash", r.work.hash},
                   {"sizes", r.work.sizes},
                   {"types", r.work.types}};
  if (r.work.precision != "ieee") j["workload"]["precision"] = r.work.precision;
  j["device"] = {{"backend", r.device.backend},
                 {"name", r.device.name},
                 {"compute_capability", r.device.compute_capability}};
  j["configuration"] = r.configuration;
  j["cost"] = {{"value", r.cost}, {"unit", r.cost_unit}};
  j["tuning"] = r.tuning;
  return j;
}

// Parses a record; `origin` (a file name) is named in every error with the offending field.
inline parameter_record record_from_json(const nlohmann::json& j, const std::string& origin) {
  auto field = [&](const nlohmann::json& obj, const char* key, const std::string& path) {
    if (!obj.is_object() || !obj.contains(key))
      throw error("parameter file '" + origin + "': missing field '" + path + "'");
    return obj.at(key);
  };
  try {
    std::string fmt = field(j, "format", "format").get<std::string>();
    if (fmt != parameter_format)
      throw error("parameter file '" + origin + "': field 'format' is '" + fmt + "', expected '" +
                  parameter_format + "'");
    parameter_record r;
    r.library_version = field(j, "library_version", "library_version").get<std::string>();
    auto w = field(j, "workload", "workload");
    r.work.computation = field(w, "computation", "workload.computation").get<std::string>();
    r.work.hash = field(w, "hash", "workload.hash").get<std::string>();
    r.work.sizes = field(w, "sizes", "workload.sizes").get<std::vector<std::int64_t>>();
    r.work.types = field(w, "types", "workload.types").get<std::vector<std::string>>();
    r.work.precision = w.value("precision", std::string("ieee"));
    if (r.work.precision != "ieee" && r.work.precision != "tf32" && r.work.precision != "tf32x3")
      throw error("parameter file '" + origin + "': field 'workload.precision' is '" +
                  r.work.precision + "', expected 'ieee', 'tf32' or 'tf32x3'");
    auto d = field(j, "device", "device");
    r.device.backend = field(d, "backend", "device.backend").get<std::string>();
    r.device.name = field(d, "name", "device.name").get<std::string>();
    r.device.compute_capability =
        field(d, "compute_capability", "device.compute_capability").get<std::string>();
    r.configuration = field(j, "configuration", "configuration");
    if (!r.configuration.is_object())
      throw error("parameter file '" + origin + "': field 'configuration' must be an object");
    auto c = field(j, "cost", "cost");
    r.cost = field(c, "value", "cost.value").get<double>();
    r.cost_unit = field(c, "unit", "cost.unit").get<std::string>();
    if (j.contains("tuning")) r.tuning = j.at("tuning");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw error("parameter file '" + origin + "': malformed field: " + e.what());
  }
}

inline parameter_record read_parameter_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw error("parameter file '" + p.string() + "': cannot be opened");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw error("parameter file '" + p.string() + "': not valid JSON: " + e.what());
  }
  return record_from_json(j, p.string());
}

// Writes atomically (temporary file, then rename): a crash never leaves half a file.
inline void write_parameter_file(const std::filesystem::path& p, const parameter_record& r) {
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  auto tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw error("parameter file '" + p.string() + "': cannot be written");
    out << to_json(r).dump(2) << "\n";
    if (!out) throw error("parameter file '" + p.string() + "': write failed");
  }
  std::filesystem::rename(tmp, p);
}

// Why a record does not fit (empty when it does): names the first mismatching field.
inline std::string mismatch(const parameter_record& r, const workload& w, const device_id& d) {
  if (r.work.precision != w.precision)
    return "workload.precision is " + r.work.precision + ", expected " + w.precision +
           " (tuned with the inputs read at another precision)";
  if (r.work.hash != w.hash)
    return "workload.hash is " + r.work.hash + ", expected " + w.hash + " (another expression)";
  if (r.work.sizes != w.sizes) return "workload.sizes differ (tuned for other sizes)";
  if (r.work.types != w.types) return "workload.types differ";
  if (r.device.backend != d.backend)
    return "device.backend is '" + r.device.backend + "', expected '" + d.backend + "'";
  if (r.device.name != d.name)
    return "device.name is '" + r.device.name + "', expected '" + d.name + "'";
  if (r.device.compute_capability != d.compute_capability)
    return "device.compute_capability is '" + r.device.compute_capability + "', expected '" +
           d.compute_capability + "'";
  return {};
}

// A canonical file name for a workload on a device: <computation>_<hash8>_<sizes>.json.
inline std::string file_name(const workload& w) {
  std::string s = w.computation + "_" + w.hash.substr(0, 8);
  for (auto n : w.sizes) s += "_" + std::to_string(n);
  return s + ".json";
}

// Whether the file at `p` says it is a parameter file ("format": "mdh-parameters/..."), whatever
// else it holds.
inline bool declares_parameter_format(const std::filesystem::path& p) {
  std::ifstream in(p);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get<std::string>().rfind("mdh-parameters", 0) == 0;
}

// Whether the record's cost was measured with some inputs read back into L2 before each launch
// (mdh-tune --warm-inputs; the BERT layer's files, tuned in the layer's cache context).
inline bool measured_warm(const parameter_record& r) {
  auto it = r.tuning.find("warm_inputs");
  return it != r.tuning.end() && it->is_array() && !it->empty();
}

// Finds the record for (workload, device) in a file or a folder of *.json files. A folder is
// searched and records for other workloads/devices are skipped; an explicit file that does not
// fit, cannot be read or does not exist (a path ending in .json) is an error naming the file and
// the field. A folder that does not exist holds nothing. In a folder, a file that is meant to be
// a parameter file - it has this workload's file name (file_name) or declares the parameter
// format - but cannot be read is passed over with its reason added to `unusable` (when given):
// other JSON (logs, notes) may share the folder and is passed over silently.
// Among several records of the workload, one measured cold is taken before one measured with
// some inputs kept in L2 (measured_warm): the warm cost is lower for the same kernel, so the two
// do not compare; among the same kind, the lowest cost.
inline std::optional<parameter_record> find_parameters(
    const std::filesystem::path& where, const workload& w, const device_id& d,
    std::vector<std::string>* unusable = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(where, ec)) {
    if (where.extension() == ".json")
      throw error("parameter file '" + where.string() + "' does not exist");
    return std::nullopt;
  }
  if (!fs::is_directory(where, ec)) {
    auto r = read_parameter_file(where);
    if (auto why = mismatch(r, w, d); !why.empty())
      throw error("parameter file '" + where.string() + "' does not fit: " + why);
    return r;
  }
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(where))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());  // deterministic choice
  std::optional<parameter_record> best;
  for (auto& f : files) {
    parameter_record r;
    try {
      r = read_parameter_file(f);
    } catch (const error& e) {
      if (unusable && (f.filename() == file_name(w) || declares_parameter_format(f)))
        unusable->push_back(e.what());
      continue;
    }
    if (mismatch(r, w, d).empty() && (!best || std::pair(measured_warm(r), r.cost) <
                                                   std::pair(measured_warm(*best), best->cost)))
      best = r;
  }
  return best;
}

inline std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace mdh::tuning
