// SPDX-License-Identifier: MIT
// lower(): (computation, sizes, configuration, device limits) -> kernel plan, after check().
#pragma once

#include <mdh/lower/check.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/passes.hpp>

namespace mdh::lower {

// Checks the configuration (throws mdh::error naming the parameter) and runs the passes:
// partition, map_threads, global_buffers, cache_inputs, combines, kernels (see passes.hpp).
inline kernel_plan lower(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                         const config& cfg, const device_limits& limits) {
  check(cfg, comp, sizes, limits);
  return passes::run_all(comp, sizes, cfg, limits);
}

}  // namespace mdh::lower
