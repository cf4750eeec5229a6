// SPDX-License-Identifier: MIT
// NVRTC compilation (CUDA source -> cubin + PTX) with a module cache in memory and on disk.
#pragma once

#include <nvrtc.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/lower/dump.hpp>

namespace mdh::cuda {

struct compiled_module {
  std::string name;         // kernel-plan name, for messages
  std::string arch;         // "sm_90"
  std::vector<char> cubin;  // what cuModuleLoadData takes
  std::string ptx;          // for dumps and inspection ("" when NVRTC gives none)
  std::string log;          // NVRTC's log (warnings)
  bool from_cache = false;
};

inline std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

// The options mdh compiles with (architecture first).
inline std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-default-device", "--std=c++17"};
}

namespace detail {
inline void check_nvrtc(nvrtcResult rc, const char* call) {
  if (rc != NVRTC_SUCCESS) throw error(std::string(call) + " failed: " + nvrtcGetErrorString(rc));
}

inline std::string cache_dir() {
  if (const char* d = std::getenv("MDH_CACHE_DIR"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/mdh";
  return (std::filesystem::temp_directory_path() / "mdh-cache").string();
}

inline std::string cache_key(const std::string& source, const std::vector<std::string>& options,
                             const std::string& arch) {
  ir::fnv1a h;
  h.str("mdh-nvrtc-1");
  h.str(source);
  for (auto& o : options) h.str(o);
  h.str(arch);
  h.str(nvrtc_version());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h.value()));
  return buf;
}
}  // namespace detail

// Compiles without any cache. Errors carry NVRTC's full log and the paths of the dumped
// source and log.
inline compiled_module compile_uncached(const std::string& source, const std::string& name,
                                        const std::string& arch) {
  using detail::check_nvrtc;
  nvrtcProgram prog;
  check_nvrtc(
      nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram");
  struct guard {
    nvrtcProgram* p;
    ~guard() { nvrtcDestroyProgram(p); }
  } g{&prog};
  auto opts = nvrtc_options(arch);
  std::vector<const char*> copts;
  for (auto& o : opts) copts.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(prog, int(copts.size()), copts.data());
  std::size_t n = 0;
  check_nvrtc(nvrtcGetProgramLogSize(prog, &n), "nvrtcGetProgramLogSize");
  std::string log(n, '\0');
  if (n) check_nvrtc(nvrtcGetProgramLog(prog, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    std::string dir = lower::dump_dir().empty()
                          ? (std::filesystem::temp_directory_path() / "mdh").string()
                          : lower::dump_dir();
    std::string src_path = lower::write_text_file(dir, name + ".cu", source);
    std::string log_path = lower::write_text_file(dir, name + ".nvrtc.log", log);
    std::string opt_text;
    for (auto& o : opts) opt_text += " " + o;
    const std::string what = "NVRTC compilation of " + name + " failed (" +
                             nvrtcGetErrorString(rc) + ", options" + opt_text + "); log in " +
                             log_path + ", source in " + src_path + ":\n" + log;
    if (rc == NVRTC_ERROR_OUT_OF_MEMORY)  // the compiler's resources, not the program
      throw infrastructure_error(what);
    throw error(what);
  }
  compiled_module m;
  m.name = name, m.arch = arch, m.log = log;
  if (arch.rfind("compute_", 0) != 0) {  // a virtual architecture ("compute_90") gives PTX only
    check_nvrtc(nvrtcGetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
    m.cubin.resize(n);
    check_nvrtc(nvrtcGetCUBIN(prog, m.cubin.data()), "nvrtcGetCUBIN");
  }
  if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    m.ptx.resize(n);
    if (nvrtcGetPTX(prog, m.ptx.data()) != NVRTC_SUCCESS) m.ptx.clear();
    while (!m.ptx.empty() && m.ptx.back() == '\0') m.ptx.pop_back();
  }
  return m;
}

// Compiled modules by hash of (source, options, arch, NVRTC version): in memory for the process,
// and as <key>.cubin in MDH_CACHE_DIR (default ~/.cache/mdh) across processes. Thread-safe:
// the tuner compiles on several threads.
class module_cache {
 public:
  explicit module_cache(std::string dir = detail::cache_dir()) : dir_(std::move(dir)) {}

  std::shared_ptr<const compiled_module> compile(const std::string& source, const std::string& name,
                                                 const std::string& arch) {
    const std::string key = detail::cache_key(source, nvrtc_options(arch), arch);
    {
      std::lock_guard lock(mutex_);
      if (auto it = memory_.find(key); it != memory_.end()) return it->second;
    }
    auto m = std::make_shared<compiled_module>();
    const std::string path = dir_.empty() ? "" : dir_ + "/" + key + ".cubin";
    if (!path.empty() && std::filesystem::exists(path)) {
      std::ifstream f(path, std::ios::binary);
      m->cubin.assign(std::istreambuf_iterator<char>(f), {});
      m->name = name, m->arch = arch, m->from_cache = true;
    }
    if (m->cubin.empty()) {
      *m = compile_uncached(source, name, arch);
      if (!path.empty()) store(path, m->cubin);
      ++compiles_;
    }
    lower::dump(name + ".cu", source);
    if (!m->ptx.empty()) lower::dump(name + ".ptx", m->ptx);
    std::lock_guard lock(mutex_);
    return memory_.emplace(key, std::move(m)).first->second;
  }

  std::size_t compiles() const { return compiles_; }  // NVRTC runs by this cache
  const std::string& dir() const { return dir_; }

 private:
  static void store(const std::string& path, const std::vector<char>& bytes) {
    try {  // write-then-rename: a concurrent reader never sees half a file
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      std::string tmp =
          path + ".tmp" +
          std::to_string(std::hash<std::string>{}(path) ^ reinterpret_cast<std::uintptr_t>(&bytes));
      {
        std::ofstream f(tmp, std::ios::binary);
        f.write(bytes.data(), std::streamsize(bytes.size()));
        if (!f) return;
      }
      std::filesystem::rename(tmp, path);
    } catch (...) {
      // A read-only cache directory only costs recompilation.
    }
  }

  std::string dir_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const compiled_module>> memory_;
  std::atomic<std::size_t> compiles_{0};
};

inline module_cache& default_module_cache() {
  static module_cache cache;
  return cache;
}

}  // namespace mdh::cuda
