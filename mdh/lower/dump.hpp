// SPDX-License-Identifier: MIT
// MDH_DUMP_DIR: when set, every stage writes its text there (<kernel>.plan.txt, .cu, .cl, .ptx).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace mdh::lower {

// The dump directory, or "" when MDH_DUMP_DIR is unset.
inline std::string dump_dir() {
  const char* d = std::getenv("MDH_DUMP_DIR");
  return d && *d ? std::string(d) : std::string();
}

// Writes `text` to <dir>/<file>; returns the path ("" when not written). Never throws: a dump
// is a debugging aid and must not turn a working run into a failing one.
inline std::string write_text_file(const std::string& dir, const std::string& file,
                                   const std::string& text) {
  try {
    std::filesystem::create_directories(dir);
    std::string path = (std::filesystem::path(dir) / file).string();
    std::ofstream f(path, std::ios::binary);
    f << text;
    return f ? path : std::string();
  } catch (...) {
    return std::string();
  }
}

inline void dump(const std::string& file, const std::string& text) {
  std::string dir = dump_dir();
  if (!dir.empty()) write_text_file(dir, file, text);
}

}  // namespace mdh::lower
