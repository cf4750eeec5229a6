// SPDX-License-Identifier: MIT
// The BERT encoder layer (expressions/bert_layer.hpp) on a device: its tensors and its seven
// (or, with three attention kernels, nine) kernels as a kernel_sequence, each kernel configured
// from the parameter files of a folder (or the default configuration) or by a function of the
// caller's (tests: random configurations).
//
//   cuda::device dev;
//   auto layer = mdh::load_bert_layer<float>(mdh::cuda_sequence_backend{&dev}, shape, "params");
//   for (auto& [name, t] : inputs) layer.upload(name, t);
//   layer.launch(stream);  auto y = layer.download("Y");
//
// fp32 with the four weight products as three TF32 products each (near-fp32 accuracy), its files in
// a folder of their own: load_bert_layer<float>(backend, shape, "params/tf32x3", &std::cerr,
// nullptr, mdh::ir::precision::tf32x3).
//
// On sm_90 on, `layer.backend().overlap = true;` before launch() (or before capturing it into a
// cuda::graph) lets each kernel start while the previous one finishes (programmatic dependent
// launch; the kernels wait for their predecessor before touching memory). Time it first: on an
// H200 it made the layer slower at batch 16 / seq 128 (docs/bert-layer.md).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <backends/bert_attention_form.hpp>
#include <backends/kernel_sequence.hpp>
#include <expressions/bert_layer.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/tuning/choose_configuration.hpp>
#include <mdh/tuning/parameter_file.hpp>

namespace mdh {

// What plan_of returns for a stage: the lowered kernel and where its configuration came from.
struct stage_plan {
  lower::kernel_plan plan;
  std::string origin;
};

// The layer with element type T: every tensor of ops::bert_layer_tensors on the device (zero;
// the row statistics in compute_type_t<T>, the others in T),
// and the stages in order, stage k's kernel = plan_of(stage, computation).plan; the weight
// products at precision `products` (ops::for_each_bert_stage).
template <class T, class Backend, class PlanOf>
kernel_sequence<Backend> load_bert_layer(Backend backend, const ops::bert_shape& s,
                                         PlanOf&& plan_of,
                                         ops::attention_form form = ops::attention_form::one_kernel,
                                         ir::precision products = ir::precision::ieee) {
  kernel_sequence<Backend> seq(std::move(backend));
  for (auto& t : ops::bert_layer_tensors(s, form))
    seq.add_tensor(t.name, t.statistic ? scalar_type_of<compute_type_t<T>>() : scalar_type_of<T>(),
                   t.shape);
  ops::for_each_bert_stage<T>(
      s,
      [&](const ops::bert_stage& st, const auto& comp) {
        stage_plan p = plan_of(st, comp);
        seq.add_step(st.name, std::move(p.plan), st.inputs, st.outputs, std::move(p.origin));
      },
      form, products);
  return seq;
}

// The layer with each stage's configuration from `params` (a folder of parameter files, as
// mdh-tune tune-layer writes it; it may not exist): the record for the stage's workload and
// this device, else the default configuration (origin "default configuration"); the attention
// in the form choose_attention_form picks (written to *chosen when given); the weight products
// at precision `products` (their records are of that precision: a folder of their own, e.g.
// params/h200/bert_layer/tf32x3). A file that is meant for a stage but cannot be used is named
// on `warn`.
template <class T, class Backend>
kernel_sequence<Backend> load_bert_layer(Backend backend, const ops::bert_shape& s,
                                         const std::filesystem::path& params,
                                         std::ostream* warn = nullptr,
                                         attention_form_choice* chosen = nullptr,
                                         ir::precision products = ir::precision::ieee) {
  const auto limits = backend.limits();
  const auto dev = tuning::device_id_of(backend.name(), limits);
  const auto form = choose_attention_form<T>(s, params, dev, products);
  if (chosen) *chosen = form;
  return load_bert_layer<T>(
      std::move(backend), s,
      [&](const ops::bert_stage& st, const auto& comp) {
        auto choice =
            tuning::choose_configuration(comp.ir(), st.sizes, params, dev, limits, nullptr);
        if (warn)
          for (auto& why : choice.unusable) *warn << why << "\n";
        return stage_plan{lower::lower(comp.ir(), st.sizes, choice.config, limits), choice.origin};
      },
      form.form, products);
}

// The stages of a loaded layer that run the default configuration.
template <class Backend>
std::vector<std::string> default_configured_stages(const kernel_sequence<Backend>& seq) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < seq.size(); ++k)
    if (seq.at(k).origin == "default configuration") out.push_back(seq.at(k).name);
  return out;
}

}  // namespace mdh
