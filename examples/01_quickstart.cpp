// SPDX-License-Identifier: MIT
// Quick start: write MatMul as an MDH expression, tune it on this machine's device (the GPU, or
// the CPU through OpenCL/PoCL when there is none), save the parameter file, load it back, run
// the tuned kernel against the CPU reference and time it against the default configuration.
//   01_quickstart [evaluations=20] [params folder=params]
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <mdh/mdh.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>

int main(int argc, char** argv) {
  using namespace mdh;
  std::uint64_t evaluations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20;
  std::filesystem::path params = argc > 2 ? argv[2] : "params";

  // 1. The operator: C[i,j] = +_k A[i,k] * B[k,j]
  auto [i, j, k] = indices<3>();
  auto matmul = computation("matmul", out_view(out<float, "C">(i, j)),
                            md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                            inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  std::puts(matmul.str().c_str());

  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    auto n = gpu ? matmul.sizes(1024, 1024, 1024) : matmul.sizes(96, 80, 64);

    // 2. Tune: every evaluation is compiled, checked against the CPU reference and timed.
    tuning::tune_options opt;
    opt.evaluations = evaluations;
    opt.seconds = 0;
    opt.parameter_file = params / tuning::file_name(tuning::workload::of(matmul.ir(), n));
    opt.log = opt.parameter_file.string() + ".log.jsonl";
    auto result = tuning::tune(matmul, n, target, opt);
    std::printf(
        "\ntuned %s %s on %s with %llu evaluations: kept %s -> %s\n", matmul.name().c_str(),
        to_string(n).c_str(), target.id().name.c_str(), (unsigned long long)result.run.evaluations,
        result.record.tuning.value("chosen_because", "").c_str(), opt.parameter_file.c_str());

    // 3. Later (or in another program): load the parameter file and run the tuned kernel.
    auto choice =
        tuning::choose_configuration(matmul.ir(), n, params, target.id(), target.limits());
    auto plan = lower::lower(matmul.ir(), n, choice.config, target.limits());
    auto data = tuning::make_workload_data(matmul, n, 42);  // fresh inputs + reference outputs
    auto in = data.input_refs();
    auto want = data.expected_refs();
    target.set_data(matmul.ir(), n, in, want);
    std::any kernel = target.prepare(plan);
    double us = target.measure(kernel, 0);  // throws if the result differs from the reference
    std::printf("loaded from %s: %.1f us, matches the CPU reference\n", choice.origin.c_str(), us);

    // 4. What tuning gained: the tuned kernel against the default configuration, measured in
    // turns (a machine busy with other work slows both alike), the medians compared.
    std::any untuned = target.prepare(
        lower::lower(matmul.ir(), n, lower::default_config(matmul.ir(), n), target.limits()));
    std::vector<double> tuned_us, default_us;
    for (int round = 0; round < 5; ++round) {
      tuned_us.push_back(target.measure(kernel, 0));
      default_us.push_back(target.measure(untuned, 0));
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double t = median(tuned_us), d = median(default_us);
    std::printf("tuned %.1f us, default configuration %.1f us: %.1fx %s (medians of 5 turns)\n", t,
                d, t < d ? d / t : t / d, t < d ? "faster" : "slower");
    return 0;
  });
}
