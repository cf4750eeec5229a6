// SPDX-License-Identifier: MIT
// A bf16 matmul: bf16 inputs and output, products and sums in float (the default accumulation
// type), rounded to bf16 once per output element. Tunes it, saves the parameter file, loads it
// back, runs the tuned kernel and checks it against the CPU reference under the bf16 tolerance
// (docs/expressions.md, "Tolerances"). The same from the command line:
//   mdh-tune tune matmul --type bf16 --sizes 1024,1024,1024 --out params
//   06_bf16_matmul [evaluations=12] [params folder=params]
#include <cstdio>
#include <cstdlib>

#include <expressions/matmul.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>

int main(int argc, char** argv) {
  using namespace mdh;
  std::uint64_t evaluations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 12;
  std::filesystem::path params = argc > 2 ? argv[2] : "params";

  // C[i,j] = +_k A[i,k] * B[k,j] over bf16 buffers; ops::matmul<bf16>() is the same.
  auto [i, j, k] = indices<3>();
  auto matmul = computation("matmul", out_view(out<bf16, "C">(i, j)),
                            md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                            inp_view(in<bf16, "A">(i, k), in<bf16, "B">(k, j)));
  std::puts(matmul.str().c_str());  // ... computed in (f32), stored as out_view's types

  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    auto n = gpu ? matmul.sizes(1024, 1024, 1024) : matmul.sizes(96, 80, 64);

    // Tune: each evaluation is compiled, checked against the CPU reference and timed.
    tuning::tune_options opt;
    opt.evaluations = evaluations;
    opt.seconds = 0;
    auto w = tuning::workload::of(matmul.ir(), n);  // types bf16,bf16,bf16 in the file
    opt.parameter_file = params / tuning::file_name(w);
    opt.log = opt.parameter_file.string() + ".log.jsonl";
    auto result = tuning::tune(matmul, n, target, opt);
    std::printf("\ntuned bf16 matmul %s on %s: %.1f us -> %s\n", to_string(n).c_str(),
                target.id().name.c_str(), result.record.cost, opt.parameter_file.c_str());

    // Load and run: the record matches this workload's hash and element types only (an fp32
    // matmul of the same sizes gets its own file).
    auto choice =
        tuning::choose_configuration(matmul.ir(), n, params, target.id(), target.limits());
    auto data = tuning::make_workload_data(matmul, n, 7);  // random bf16 inputs + reference
    auto in = data.input_refs();
    auto want = data.expected_refs();
    target.set_data(matmul.ir(), n, in, want);
    std::any kernel = target.prepare(lower::lower(matmul.ir(), n, choice.config, target.limits()));
    double us = target.measure(kernel, 0);  // throws if the result is off the reference
    std::printf(
        "loaded from %s: %.1f us, matches the CPU reference (relative L2 tolerance %.3g "
        "for bf16 over k = %lld)\n",
        choice.origin.c_str(), us, tuning::tolerance(scalar_type::bf16, n[2]),
        static_cast<long long>(n[2]));
    return 0;
  });
}
