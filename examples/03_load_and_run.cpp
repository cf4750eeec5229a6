// SPDX-License-Identifier: MIT
// A second program that only runs: it finds the parameter file that 01_quickstart (or mdh-tune)
// wrote for this workload and device, and runs that kernel on its own data. Without a record it
// says how to make one and runs the default configuration.
//   03_load_and_run [params folder=params]
#include <cstdio>

#include <backends/tuning/any_target.hpp>
#include <backends/tuning/load.hpp>
#include <backends/tuning/tune.hpp>
#include <expressions/matmul.hpp>
#include <mdh/mdh.hpp>

int main(int argc, char** argv) {
  using namespace mdh;
  std::filesystem::path params = argc > 1 ? argv[1] : "params";
  auto matmul = ops::matmul();
  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    auto n = gpu ? matmul.sizes(1024, 1024, 1024) : matmul.sizes(96, 80, 64);
    auto choice =
        tuning::choose_configuration(matmul.ir(), n, params, target.id(), target.limits());
    if (choice.record)
      std::printf("using %s: tuned on %s, %.1f us when tuned\n", choice.origin.c_str(),
                  choice.record->device.name.c_str(), choice.record->cost);
    auto data = tuning::make_workload_data(matmul, n, 2024);
    auto in = data.input_refs();
    auto want = data.expected_refs();
    target.set_data(matmul.ir(), n, in, want);
    std::any kernel = target.prepare(lower::lower(matmul.ir(), n, choice.config, target.limits()));
    double us = target.measure(kernel, 0);
    std::printf("matmul %s on %s: %.1f us, matches the CPU reference\n", to_string(n).c_str(),
                target.id().name.c_str(), us);
    return 0;
  });
}
