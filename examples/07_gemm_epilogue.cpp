// SPDX-License-Identifier: MIT
// GEMM + bias + GELU as ONE kernel: the product and the point-wise step are two MDH expressions,
// joined with mdh::with_epilogue; the product's sums never reach memory. Tuned briefly on this
// machine's device (the product's search space: the epilogue adds no parameter), loaded from the
// parameter file, checked against the plain composition (product, then bias + GELU) and timed
// next to the plain product with the same configuration.
//   07_gemm_epilogue [EVALUATIONS=12] [PARAMS_DIR=params]
#include <cstdio>
#include <string>

#include <mdh/mdh.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>

int main(int argc, char** argv) {
  using namespace mdh;
  const int evaluations = argc > 1 ? std::stoi(argv[1]) : 12;
  const std::string params = argc > 2 ? argv[2] : "params";

  auto [i, j, k] = indices<3>();
  auto gemm = computation("gemm", out_view(out<float, "C">(i, j)),  // C[i,j] = +_k A[i,k] B[k,j]
                          md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                          inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  auto bias_gelu = computation(  // Y[i,j] = gelu(C[i,j] + b[j]), C read where gemm writes it
      "bias_gelu", out_view(out<float, "Y">(i, j)),
      md_hom(
          [](auto c, auto b) {
            auto v = c + b;
            return 0.5f * v * (1.0f + mdh::erf(v * 0.70710678f));
          },
          cc, cc),
      inp_view(in<float, "C">(i, j), in<float, "b">(j)));
  auto fused = with_epilogue("gemm_bias_gelu", gemm, bias_gelu);  // inputs {A, B, b}, output {Y}
  std::puts(fused.str().c_str());

  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    // BERT-base's FFN up-projection (tokens x 3072 x 768); smaller on a CPU
    std::vector<std::int64_t> n =
        gpu ? std::vector<std::int64_t>{2048, 3072, 768} : std::vector<std::int64_t>{256, 384, 96};
    tuning::tune_options opt;
    opt.seconds = 0;
    opt.evaluations = std::uint64_t(evaluations);
    opt.parameter_file = params + "/gemm_bias_gelu.json";
    opt.log = params + "/gemm_bias_gelu.log.jsonl";
    opt.progress = atf::progress_mode::off;
    auto tuned = tuning::tune(fused, n, target, opt);
    std::printf("tuned %s %s: %llu evaluations, best %.1f us\n", fused.name().c_str(),
                to_string(n).c_str(), (unsigned long long)tuned.run.evaluations, tuned.record.cost);

    // A later run: the parameter file's configuration, one kernel, checked on fresh data.
    auto choice = tuning::choose_configuration(fused.ir(), n, opt.parameter_file, target.id(),
                                               target.limits());
    auto time = [&](const auto& comp) {
      auto plan = lower::lower(comp.ir(), n, choice.config, target.limits());
      auto data = tuning::make_workload_data(comp, n, 21);
      auto in = data.input_refs();
      auto want = data.expected_refs();
      target.set_data(comp.ir(), n, in, want);
      std::any kernel = target.prepare(plan);
      return target.measure(kernel, 0);  // compares with the reference first
    };
    const double fused_us = time(fused), plain_us = time(gemm);
    std::printf(
        "%s on %s: %.1f us, matches the product followed by bias + GELU; the plain product with "
        "the same configuration: %.1f us (fused / plain %.3f)\n",
        fused.name().c_str(), target.id().name.c_str(), fused_us, plain_us, fused_us / plain_us);
    return 0;
  });
}
