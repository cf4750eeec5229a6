// SPDX-License-Identifier: MIT
// Attention as one kernel on a GPU (label gpu; exits 77, skipped, without one): the default
// and random valid configurations at BERT-base shapes (batch 16, seq 128; batch 8, seq 512) and
// at odd ones (seq 13, 77; head dims 16, 40, 12), fp32 and bf16, and the tensor-core kernel's
// starts and random draws in bf16 and f16 (mma = 1), against mdh::reference on random
// inputs with a padding mask; relative L2 error <= tuning::tolerance(type, reduction_length),
// the bounds of the two reductions in sequence added (mdh/tuning/verify.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/program.hpp>
#include <expressions/attention.hpp>
#include <mdh/lower/producer_passes.hpp>
#include <mdh/tuning/verify.hpp>
#include <tuning/producer_space.hpp>

using namespace mdh;

namespace {
cuda::device& dev() {
  static cuda::device d(0);
  return d;
}

void gpu_or_skip() {
  if (!cuda::device_available()) {
    std::cerr << "no CUDA device: skipping the GPU tests\n";
    std::exit(77);
  }
}

// mma: the tensor-core kernel's configurations instead (random draws, the tuner's starts).
template <class T>
void check_shape(const ops::bert_shape& s, int random_configs, std::uint64_t seed,
                 bool mma = false) {
  const auto lim = dev().limits();
  auto att = ops::attention<T>(s);
  const auto n = ops::attention_sizes(s);
  host_tensor<T> qkv({s.tokens(), 3 * s.hidden}), mask({s.batch, s.seq}, T(1));
  qkv.randomize(seed, -1, 1);
  for (std::int64_t b = 1; b < s.batch; ++b)
    for (std::int64_t j = s.seq - 1 - b % 5; j < s.seq; ++j) mask.data()[b * s.seq + j] = T(0);
  auto view = [&](const char* name) {
    buffer_ref r = qkv;
    r.shape = att.shape(name, n);
    return r;
  };
  const std::vector<buffer_ref> in{view("Q"), view("K"), buffer_ref(mask), view("V")};
  host_tensor<T> want({s.tokens(), s.hidden});
  const std::vector<buffer_ref> outs{buffer_ref(want)};
  reference(att, n, std::span<const buffer_ref>(in), std::span<const buffer_ref>(outs));
  const auto t = scalar_type_of<T>();
  const std::int64_t reduction_length = tuning::reduction_length(att.ir(), n);
  std::mt19937_64 rng(seed);
  std::vector<lower::producer_config> cfgs;
  if (mma) {
    for (auto& c : tuning::start_configurations(att.ir(), n, lim))
      if (c.mma) cfgs.push_back(c);
    for (int k = 0; k < random_configs; ++k)
      cfgs.push_back(lower::random_mma_config(att.ir(), n, lim, rng));
  } else {
    cfgs.push_back(lower::producer_config{});
    for (int k = 0; k < random_configs; ++k)
      cfgs.push_back(lower::random_config(att.ir(), n, lim, rng));
  }
  for (auto& cfg : cfgs) {
    INFO(short_name(t), " ", s.str(), " ", lower::to_string(cfg));
    cuda::program prog(dev(), lower::lower(att.ir(), n, cfg, lim));
    host_tensor<T> got({s.tokens(), s.hidden}, T(1234));
    std::vector<buffer_ref> out{buffer_ref(got)};
    prog.run(in, out);
    const std::string why = tuning::compare(got, want, reduction_length);
    CHECK_MESSAGE(why.empty(), why);
    if (cfg.split > 1) {  // the last block reset the counters: a second launch, the same result
      host_tensor<T> again({s.tokens(), s.hidden}, T(4321));
      std::vector<buffer_ref> out2{buffer_ref(again)};
      prog.run(in, out2);
      CHECK(std::equal(again.data(), again.data() + again.size(), got.data(),
                       [](T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }));
    }
  }
}
}  // namespace

TEST_CASE("GPU attention, fp32: BERT-base shapes and odd ones") {
  gpu_or_skip();
  check_shape<float>({16, 128}, 6, 1);
  check_shape<float>({8, 512}, 4, 2);
  check_shape<float>({3, 13, 64, 4, 8}, 6, 3);
  check_shape<float>({2, 77, 120, 3, 8}, 6, 4);
}

TEST_CASE("GPU attention on tensor cores, bf16 and f16: BERT-base shapes and odd ones") {
  gpu_or_skip();
  check_shape<bf16>({16, 128}, 6, 8, true);
  check_shape<bf16>({8, 512}, 4, 9, true);
  check_shape<bf16>({3, 13, 64, 4, 8}, 6, 10, true);   // head dim 16, 13 keys
  check_shape<bf16>({2, 77, 120, 3, 8}, 6, 11, true);  // head dim 40: padded to 48
  check_shape<bf16>({2, 19, 36, 3, 8}, 6, 12, true);   // head dim 12: element copies
  check_shape<f16>({4, 128}, 4, 13, true);
  check_shape<f16>({2, 77, 120, 3, 8}, 4, 14, true);
}

TEST_CASE("GPU attention on tensor cores: a buffer off the 16-byte grid is refused at launch") {
  gpu_or_skip();
  const ops::bert_shape s{2, 128};
  auto att = ops::attention<bf16>(s);
  const auto n = ops::attention_sizes(s);
  lower::producer_config c{64, 64, 4, 32, 8, 1, 1, 2};
  cuda::program prog(dev(), lower::lower(att.ir(), n, c, dev().limits()));
  dev().make_current();
  cuda::device_buffer<bf16> qkv(std::size_t(s.tokens() * 3 * s.hidden + 8)),
      mask(std::size_t(s.batch * s.seq)), ctx(std::size_t(s.tokens() * s.hidden));
  const CUdeviceptr off = qkv.get() + 2;  // one bf16 past the allocation's start
  const std::vector<CUdeviceptr> in{off, off, mask.get(), off}, out{ctx.get()};
  CHECK_THROWS_WITH_AS(prog.launch(in, out),
                       doctest::Contains("needs it aligned to 16 bytes; its device pointer is not"),
                       error);
  // the results leave in 16-byte stores (producer_plan::results_chunks): the output too
  REQUIRE(prog.plan().producer.results_chunks);
  cuda::device_buffer<bf16> ctx2(std::size_t(s.tokens() * s.hidden + 8));
  const std::vector<CUdeviceptr> good{qkv.get(), qkv.get(), mask.get(), qkv.get()},
      out_off{ctx2.get() + 2};
  CHECK_THROWS_WITH_AS(prog.launch(good, out_off),
                       doctest::Contains("writes output 0 ('out0') in 16-byte stores and needs it "
                                         "aligned to 16 bytes"),
                       error);
}

TEST_CASE("GPU attention, bf16: BERT-base shapes and odd ones") {
  gpu_or_skip();
  check_shape<bf16>({16, 128}, 6, 5);
  check_shape<bf16>({8, 512}, 4, 6);
  check_shape<bf16>({2, 77, 120, 3, 8}, 6, 7);
}
