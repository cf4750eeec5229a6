// SPDX-License-Identifier: MIT
// Which form of the BERT layer's attention (ops::attention_form) to run: the one whose tuned
// stages add up to less time on this device, from the costs measured into a folder of
// parameter files (mdh-tune tune-layer tunes both forms). In bf16 on an H100, for example, the
// three-kernel form's products take the tensor cores and beat the one SIMT kernel; in fp32 the
// one kernel wins (bench/LAYER.md).
#pragma once

#include <filesystem>
#include <string>

#include <expressions/bert_layer.hpp>
#include <mdh/tuning/parameter_file.hpp>

namespace mdh {

// Which attention form a folder of parameter files runs faster, from the measured costs in its
// records for this device: the attention stages of each form added up.
struct attention_form_choice {
  ops::attention_form form = ops::attention_form::one_kernel;
  // per form (one kernel, three kernels): the summed cost in us, or < 0 when a stage has no record
  double cost[2] = {-1, -1};
  std::string why;
};

// The form whose attention stages all have records and add up to less time; the one-kernel
// form when neither or only it is complete (its default configuration beats the three kernels'
// untuned ones); the three kernels when only they are. `products`: the layer's
// (ops::for_each_bert_stage), so that the stages looked up are the ones the layer runs.
template <class T>
attention_form_choice choose_attention_form(const ops::bert_shape& s,
                                            const std::filesystem::path& params,
                                            const tuning::device_id& dev,
                                            ir::precision products = ir::precision::ieee) {
  attention_form_choice c;
  for (auto form : {ops::attention_form::one_kernel, ops::attention_form::three_kernels}) {
    double sum = 0;
    ops::for_each_bert_stage<T>(
        s,
        [&](const ops::bert_stage& st, const auto& comp) {
          if (!st.attention || sum < 0) return;
          auto rec = tuning::find_parameters(params, tuning::workload::of(comp.ir(), st.sizes), dev,
                                             nullptr);
          sum = rec ? sum + rec->cost : -1;
        },
        form, products);
    c.cost[int(form)] = sum;
  }
  const double one = c.cost[0], three = c.cost[1];
  auto us = [](double v) { return std::to_string(int(v + 0.5)) + " us"; };
  if (one >= 0 && three >= 0) {
    c.form = three < one ? ops::attention_form::three_kernels : ops::attention_form::one_kernel;
    c.why = "tuned: one kernel " + us(one) + ", three kernels " + us(three);
  } else if (three >= 0) {
    c.form = ops::attention_form::three_kernels;
    c.why = "only the three kernels are tuned (" + us(three) + ")";
  } else {
    c.why = one >= 0 ? "only the one kernel is tuned (" + us(one) + ")"
                     : "neither form is tuned: the one kernel";
  }
  return c;
}

}  // namespace mdh
