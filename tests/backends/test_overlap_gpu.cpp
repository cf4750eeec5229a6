// SPDX-License-Identifier: MIT
// Programmatic dependent launch (cuda_sequence_backend::overlap, program::launch's `overlap`) on
// a GPU (label gpu; exits 77, skipped, without one or below compute capability 9.0): the BERT
// layer at batch 2, seq 13 (hidden 64, 4 heads, FFN 128), fp32 and bf16, default and random
// valid configurations, run as plain launches, as overlapped launches and as an overlapped CUDA
// graph. A new X is uploaded before every run, so a stage that read what its predecessor wrote
// before the wait (the previous run's data) would change the output: every overlapped output
// must equal the plain one bit for bit (within tuning::tolerance where a stage combines blocks
// by atomics, whose order varies), and the plain one must match the double-precision reference
// of the layer (<= 9 x the tolerance of the longest reduction, as in backends_bert_layer).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <backends/bert_layer.hpp>
#include <backends/cuda/graph.hpp>
#include <backends/cuda/program.hpp>
#include <expressions/bert_layer.hpp>
#include <expressions/bert_layer_reference.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/tuning/verify.hpp>

using namespace mdh;
namespace ref = mdh::ops::bert_reference;

namespace {

const ops::bert_shape small{2, 13, 64, 4, 128};

cuda::device& dev() {
  static cuda::device d(0);
  return d;
}

void sm90_or_skip() {
  if (!cuda::device_available()) {
    std::cerr << "no CUDA device: skipping the GPU tests\n";
    std::exit(77);
  }
  if (dev().limits().cc_major < 9) {
    std::cerr << "compute capability below 9.0: no programmatic dependent launch, skipping\n";
    std::exit(77);
  }
}

template <class T>
void check_overlap(int random_configs, std::uint64_t seed) {
  const auto lim = dev().limits();
  const scalar_type t = scalar_type_of<T>();
  const double tol = tuning::tolerance(t, small.hidden);
  const double layer_tol = 9 * tuning::tolerance(t, std::max({small.hidden, small.ffn, small.seq}));
  for (int round = 0; round <= random_configs; ++round) {
    std::mt19937_64 rng(seed * 1000 + std::uint64_t(round));
    auto layer = load_bert_layer<T>(
        cuda_sequence_backend{&dev()}, small, [&](const ops::bert_stage& st, const auto& comp) {
          const auto& c = comp.ir();
          auto cfg = round == 0 ? lower::default_config(c, st.sizes)
                                : lower::random_config(c, st.sizes, lim, rng, {64, 2000});
          return stage_plan{lower::lower(c, st.sizes, cfg, lim),
                            round == 0 ? "default" : "random " + lower::to_string(cfg)};
        });
    for (std::size_t k = 0; k < layer.size(); ++k) {
      INFO(layer.at(k).name, ": ", layer.at(k).origin);
      REQUIRE(layer.at(k).program->overlap_supported());
    }
    const bool atomics = layer.combines_by_atomics();
    std::vector<std::string> names;
    for (auto& t : ops::bert_layer_tensors(small)) names.push_back(t.name);
    cuda::stream s;
    layer.backend().overlap = true;
    cuda::graph overlapped(s.get(), [&](CUstream q) { layer.launch(q); });
    for (int run = 0; run < 3; ++run) {
      auto inputs = ref::random_inputs<T>(small, seed * 100 + std::uint64_t(10 * round + run));
      for (auto& [name, x] : inputs) layer.upload(name, x);
      layer.backend().overlap = false;
      layer.launch(s.get());
      const host_buffer plain = layer.download("Y");
      std::vector<host_buffer> plain_all;  // every tensor, to name the first that differs
      for (auto& n : names) plain_all.push_back(layer.download(n));
      const std::string what = std::string(short_name(t)) + " round " + std::to_string(round) +
                               " run " + std::to_string(run);
      const double err = ref::relative_l2(ref::to_double(plain),
                                          ref::layer(ref::as_doubles(inputs), small).at("Y"));
      INFO(what, ": plain launches against the reference, relative L2 ", err);
      CHECK(err <= layer_tol);
      // the tensors (in the layer's order) whose bits differ from the plain run's
      auto differing = [&] {
        std::string d;
        for (std::size_t i = 0; i < names.size(); ++i)
          if (std::memcmp(layer.download(names[i]).data(), plain_all[i].data(),
                          plain_all[i].bytes()) != 0)
            d += (d.empty() ? "" : ", ") + names[i];
        return d.empty() ? std::string("none") : d;
      };
      auto same_as_plain = [&](const host_buffer& y, const std::string& how) {
        const double diff = ref::relative_l2(ref::to_double(y), ref::to_double(plain));
        INFO(what, ": ", how, " against plain launches, relative L2 ", diff,
             "; tensors that differ: ", differing());
        if (atomics)
          CHECK(diff <= tol);
        else
          CHECK(std::memcmp(y.data(), plain.data(), plain.bytes()) == 0);
      };
      // Each overlapped run follows a run on another X, so that every intermediate tensor holds
      // other values when it starts: a stage reading one before its predecessor finished
      // writing it would change Y. (Uploads wait for the stream: finish() first.)
      const auto other =
          ref::random_inputs<T>(small, seed * 100 + std::uint64_t(10 * round + run) + 7);
      auto after_other_x = [&](auto&& enqueue) {
        layer.upload("X", other.at("X"));
        enqueue();
        layer.finish(s.get());
        layer.upload("X", inputs.at("X"));
        enqueue();
        return layer.download("Y");
      };
      // the control: plain launches after the other X give the same bits
      layer.backend().overlap = false;
      same_as_plain(after_other_x([&] { layer.launch(s.get()); }), "plain launches again");
      layer.backend().overlap = true;
      same_as_plain(after_other_x([&] { layer.launch(s.get()); }), "overlapped launches");
      same_as_plain(after_other_x([&] { overlapped.launch(s.get()); }), "the overlapped graph");
    }
  }
}

}  // namespace

TEST_CASE("programmatic dependent launch: the BERT layer, fp32, output unchanged") {
  sm90_or_skip();
  check_overlap<float>(3, 1);
}

TEST_CASE("programmatic dependent launch: the BERT layer, bf16, output unchanged") {
  sm90_or_skip();
  check_overlap<bf16>(3, 2);
}
