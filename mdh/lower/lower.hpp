// SPDX-License-Identifier: MIT
// lower(): (computation, sizes, configuration, device limits) -> kernel plan: check_config, the
// passes (passes.hpp), and the check pass over the finished plan - one run of the pipeline.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include <mdh/lower/check.hpp>
#include <mdh/lower/dump.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/lower/passes.hpp>

namespace mdh::lower {

// With MDH_DUMP_DIR set: an observer writing the plan after each pass to
// <dir>/<plan name>.<NN>-<pass>.plan.txt, numbered in the order the passes run; else none.
inline passes::pass_observer pass_dumper() {
  std::string dir = dump_dir();
  if (dir.empty()) return {};
  auto n = std::make_shared<int>(0);
  return [dir, n](const char* pass, const kernel_plan& p) {
    char num[16];
    std::snprintf(num, sizeof num, "%02d", ++*n);
    write_text_file(dir, p.name + "." + num + "-" + pass + ".plan.txt", to_string(p));
  };
}

// The plan after the passes and the check pass (throws mdh::error naming the parameter and the
// rule; see check.hpp).
inline kernel_plan lower(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                         const config& cfg, const device_limits& limits) {
  check_config(cfg, comp, sizes, limits);
  const passes::pass_observer after = pass_dumper();
  kernel_plan p = passes::run_all(comp, sizes, cfg, limits, after);
  check_plan(p);
  if (after) after("check", p);
  return p;
}

}  // namespace mdh::lower
