// SPDX-License-Identifier: MIT
// The 16-bit and TF32 cases the backend tests share (OpenCL runs, NVRTC compiles, GPU runs):
// a matmul, a reduction, maps, the softmax and layernorm statistics and the fused softmax in
// bf16 and f16, mixed storage (bf16 in, f32 out), a stated accumulation type, and a TF32
// matmul; and a check of a backend's run of random valid configurations against mdh::reference
// under the tolerance of mdh::tuning::tolerance.
#pragma once

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <expressions/all.hpp>
#include <mdh/fused.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/reference.hpp>
#include <mdh/tuning/verify.hpp>

namespace mdh::test {

// C = A * B with bf16 inputs and an f32 output (torch.matmul(..., out_dtype=float32)).
inline auto matmul_bf16_to_f32() {
  auto [i, j, k] = indices<3>();
  return computation("matmul_bf16_f32", out_view(out<float, "C">(i, j)),
                     md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                     inp_view(in<bf16, "A">(i, k), in<bf16, "B">(k, j)));
}

// A row sum of f16 values accumulated in double and stored as f16 (the f64 -> f16 rounding).
inline auto rowsum_f16_acc64() {
  auto [i, j] = indices<2>();
  return computation("rowsum_f16_acc64", out_view(out<f16, "y">(i)),
                     md_hom([](auto x) { return x; }, cc, pw(add, accumulate<double>)),
                     inp_view(in<f16, "X">(i, j)));
}

// visit(name, computation or fused pair, sizes) for every case of element type T.
template <class T, class Visit>
void for_each_typed_case(Visit&& visit) {
  using sz = std::vector<std::int64_t>;
  visit(std::string_view("matmul"), ops::matmul<T>(), sz{13, 17, 19});
  visit(std::string_view("batch_matmul_nt"), ops::batch_matmul<T, false, true>(),
        sz{2, 3, 5, 7, 6});
  visit(std::string_view("reduce"), ops::reduce<T>(), sz{101});
  visit(std::string_view("bias_add_grad"), ops::bias_add_grad<T>(), sz{37, 11});
  visit(std::string_view("multiply"), ops::multiply<T>(), sz{7, 13});
  visit(std::string_view("bias_gelu"), ops::bias_gelu<T>(), sz{7, 13});
  visit(std::string_view("softmax_stats"), ops::softmax_stats<T>(), sz{5, 37});
  visit(std::string_view("softmax_normalize"), ops::softmax_normalize<T>(), sz{5, 37});
  visit(std::string_view("layernorm_stats"), ops::layernorm_stats<T>(), sz{7, 33});
  visit(std::string_view("softmax"),
        fuse("softmax", ops::softmax_stats<T>(), ops::softmax_normalize<T>()), sz{5, 37});
}

// Every case: bf16, f16, the mixed ones and the TF32 matmul.
template <class Visit>
void for_each_type_case(Visit&& visit) {
  using sz = std::vector<std::int64_t>;
  for_each_typed_case<bf16>([&](std::string_view n, const auto& op, const sz& s) {
    visit("bf16 " + std::string(n), op, s);
  });
  for_each_typed_case<f16>([&](std::string_view n, const auto& op, const sz& s) {
    visit("f16 " + std::string(n), op, s);
  });
  visit(std::string("matmul_bf16_f32"), matmul_bf16_to_f32(), sz{13, 17, 19});
  visit(std::string("rowsum_f16_acc64"), rowsum_f16_acc64(), sz{7, 45});
  visit(std::string("tf32 matmul"), ops::matmul<float>().with_precision(ir::precision::tf32),
        sz{13, 17, 19});
}

// visit(name, computation, sizes, configuration) for 16-bit cases whose innermost dimension
// moves 8-element (16-byte) vectors: maps (vec, loads and stores), row reductions (vec_pw) and a
// column reduction with vector stores; every size a multiple of 8 and the 8-element register
// tiles blocked, so every group is aligned and nothing falls back to scalars.
template <class Visit>
void for_each_vector16_case(Visit&& visit) {
  using sz = std::vector<std::int64_t>;
  auto run = [&](std::string name, const auto& op, const sz& s, std::int64_t threads) {
    const ir::computation& x = op.ir();
    lower::config c = lower::default_config(x, s);
    const std::size_t d = x.rank() - 1;
    auto& in = c.dims[d];
    in.strided = false, in.t_rm = 8, in.thr = threads, in.thr_map = 0;
    in.t_sm = in.thr * in.t_rm, in.blk = x.is_reduction(d) ? 1 : s[d] / in.t_sm;
    if (x.is_reduction(d)) {
      in.t_sm = s[d];
      c.vec_pw = 8;
    } else {
      c.vec = 8;
    }
    for (std::size_t e = 0; e < d; ++e) c.dims[e].thr_map = 1;
    visit(std::move(name), op, s, c);
  };
  run("bf16 multiply", ops::multiply<bf16>(), sz{6, 128}, 8);
  run("f16 bias_gelu", ops::bias_gelu<f16>(), sz{5, 64}, 4);
  run("bf16 layernorm_stats", ops::layernorm_stats<bf16>(), sz{7, 768}, 32);
  run("f16 softmax_normalize", ops::softmax_normalize<f16>(), sz{3, 256}, 16);
  run("bf16 reduce", ops::reduce<bf16>(), sz{4096}, 64);
  run("bf16 bias_add_grad", ops::bias_add_grad<bf16>(), sz{37, 64}, 8);
}

// The IR the lowering takes (a computation's, or a fused pair's).
template <class Op>
const auto& ir_of(const Op& op) {
  return op.ir();
}

inline std::int64_t reduction_length_of(const ir::computation& c,
                                        const std::vector<std::int64_t>& s) {
  return tuning::reduction_length(c, s);
}
inline std::int64_t reduction_length_of(const ir::fused& f, const std::vector<std::int64_t>& s) {
  return tuning::reduction_length(f, s);
}

// Buffers of a case: random inputs, the reference's outputs.
struct case_data {
  std::vector<mdh::host_buffer> in, want;
  std::vector<buffer_ref> in_refs() const { return std::vector<buffer_ref>(in.begin(), in.end()); }
};

template <class Op>
case_data make_case_data(const Op& op, const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
  const auto& x = op.ir();
  case_data d;
  for (auto& b : x.inputs) {
    d.in.emplace_back(b.type, op.shape(b.name, sizes));
    d.in.back().randomize(seed++);
  }
  for (auto& b : x.outputs) d.want.emplace_back(b.type, op.shape(b.name, sizes));
  std::vector<buffer_ref> ir = d.in_refs(), wr(d.want.begin(), d.want.end());
  reference(op, sizes, std::span<const buffer_ref>(ir), std::span<const buffer_ref>(wr));
  return d;
}

// Random valid configurations of a case (the edge configurations first for a computation).
template <class IR>
auto case_configs(const IR& x, const std::vector<std::int64_t>& sizes,
                  const lower::device_limits& lim, std::mt19937_64& rng, int random) {
  std::vector<decltype(lower::random_config(x, sizes, lim, rng))> cfgs;
  if constexpr (std::is_same_v<IR, ir::computation>) cfgs = lower::edge_configs(x, sizes, lim);
  for (int k = 0; k < random; ++k) cfgs.push_back(lower::random_config(x, sizes, lim, rng));
  return cfgs;
}

// Runs `plan` through `run(plan, inputs, outputs)` on NaN-poisoned outputs and compares every
// output with the reference's; "" when all match within tuning::tolerance.
template <class Run>
std::string run_and_compare(const lower::kernel_plan& plan, const case_data& d, std::int64_t L,
                            Run&& run) {
  std::vector<mdh::host_buffer> got;
  for (auto& w : d.want) {
    got.emplace_back(w.type(), w.shape());
    std::memset(got.back().data(), 0xff, got.back().bytes());  // NaN in every float type
  }
  std::vector<buffer_ref> in = d.in_refs(), out(got.begin(), got.end());
  run(plan, in, out);
  for (std::size_t r = 0; r < got.size(); ++r) {
    auto msg = tuning::compare(got[r], d.want[r], L);
    if (!msg.empty()) return "output " + std::to_string(r) + ": " + msg;
  }
  return "";
}

}  // namespace mdh::test
