// SPDX-License-Identifier: MIT
// A fused BERT subgraph as ONE md_hom: the attention mask of SC'21,
// out[b,0,q,k] = (1 - m1[b,q,0] * m2[b,0,k]) * -10000 (Mul -> ExpandDims -> Sub -> Mul in TF),
// run on this machine's device with the default configuration and checked against the reference.
#include <cstdio>

#include <expressions/bert_mask.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <tuning/any_target.hpp>
#include <tuning/tune.hpp>

int main() {
  using namespace mdh;
  auto mask = ops::bert_mask();
  std::puts(mask.str().c_str());
  return tuning::with_target([&](auto& target) {
    bool gpu = target.id().backend == "cuda";
    auto n = gpu ? mask.sizes(16, 1, 384, 384) : mask.sizes(4, 1, 96, 80);
    auto choice =
        tuning::choose_configuration(mask.ir(), n, "params", target.id(), target.limits(), nullptr);
    auto data = tuning::make_workload_data(mask, n, 5);
    auto in = data.input_refs();
    auto want = data.expected_refs();
    target.set_data(mask.ir(), n, in, want);
    std::any kernel = target.prepare(lower::lower(mask.ir(), n, choice.config, target.limits()));
    double us = target.measure(kernel, 0);
    std::printf("bert_mask %s on %s (%s): %.1f us, matches the CPU reference\n",
                to_string(n).c_str(), target.id().name.c_str(), choice.origin.c_str(), us);
    return 0;
  });
}
