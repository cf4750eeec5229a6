// SPDX-License-Identifier: MIT
// Softmax as ONE kernel: its two computations (row statistics, then the normalising map) fused
// with mdh::fuse, tuned briefly on this machine's device, then loaded from the parameter file
// and checked against the CPU reference of both computations.
//   05_fused_softmax [EVALUATIONS=12] [PARAMS_DIR=params]
#include <cstdio>
#include <string>

#include <expressions/softmax.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>

int main(int argc, char** argv) {
  using namespace mdh;
  const int evaluations = argc > 1 ? std::stoi(argv[1]) : 12;
  const std::string params = argc > 2 ? argv[2] : "params";
  auto [stats, normalize] = ops::softmax();
  auto softmax = fuse("softmax", stats, normalize);  // inputs {X}, outputs {M, S, Y}
  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    // BERT's attention scores [16,12,128,128] as rows x cols; smaller on a CPU
    std::vector<std::int64_t> n =
        gpu ? std::vector<std::int64_t>{16 * 12 * 128, 128} : std::vector<std::int64_t>{512, 128};
    tuning::tune_options opt;
    opt.seconds = 0;
    opt.evaluations = std::uint64_t(evaluations);
    opt.parameter_file = params + "/softmax_fused.json";
    opt.log = params + "/softmax_fused.log.jsonl";
    opt.progress = atf::progress_mode::off;
    auto tuned = tuning::tune(softmax, n, target, opt);
    std::printf("tuned softmax %s: %llu evaluations, best %.1f us (%s)\n", to_string(n).c_str(),
                (unsigned long long)tuned.run.evaluations, tuned.record.cost,
                tuned.record.tuning.value("chosen", "").c_str());

    // A later run: the parameter file's configuration, one kernel, checked on fresh data.
    auto choice = tuning::choose_configuration(softmax.ir(), n, opt.parameter_file, target.id(),
                                               target.limits());
    auto plan = lower::lower(softmax.ir(), n, choice.config, target.limits());
    auto data = tuning::make_workload_data(softmax, n, 21);
    auto in = data.input_refs();
    auto want = data.expected_refs();
    target.set_data(softmax.ir(), n, in, want);
    std::any kernel = target.prepare(plan);
    double us = target.measure(kernel, 0);  // compares with the reference first
    std::printf("softmax %s on %s: %zu kernel (%s), %.1f us, matches the CPU reference\n",
                to_string(n).c_str(), target.id().name.c_str(), plan.kernels.size(),
                plan.name.c_str(), us);
    return plan.kernels.size() == 1 ? 0 : 1;
  });
}
