// SPDX-License-Identifier: MIT
// atf::error: the one exception type the tuner throws; its message says what and where.
#pragma once

#include <stdexcept>
#include <string>

namespace atf {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("atf: " + what) {}
};

}  // namespace atf
