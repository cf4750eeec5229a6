// SPDX-License-Identifier: MIT
// mdh: the library version, the single source CMake parses.
#pragma once

#define MDH_VERSION_MAJOR 0
#define MDH_VERSION_MINOR 1
#define MDH_VERSION_PATCH 0
#define MDH_VERSION_STRING "0.1.0"

namespace mdh {
inline constexpr const char* version = MDH_VERSION_STRING;
}  // namespace mdh
