// SPDX-License-Identifier: MIT
// A BERT encoder layer (inference) as seven mdh computations, run in order (bert_layer_stages):
//   qkv       QKV = X Wqkv + bqkv                       matmul_bias        [T, 3*hidden]
//   attention ctx = softmax(Q K^T / sqrt(d) + (1 - mask) * -1e4) V, one kernel
//                                                       attention          [T, hidden]
//   attn_out  A = ctx Wo + bo + X                       matmul_bias_residual
//   ln1       H1 = layernorm(A)                         fuse(layernorm)
//   ffn_up    F1 = gelu(H1 W1 + b1)                     matmul_bias_gelu
//   ffn_down  F2 = F1 W2 + b2 + H1                      matmul_bias_residual
//   ln2       Y = layernorm(F2)                         fuse(layernorm)
// with T = batch * seq tokens. The projection writes QKV as [batch, seq, 3, heads, d] (the
// product's [T, 3*hidden] row by row); the attention reads its Q, K and V slices straight from
// there through affine index functions and writes the context as [batch, seq, hidden]: no
// transposes, no copies. The attention has two forms (attention_form): one md_hom
// (expressions/attention.hpp: the scores produced tile by tile inside the online-softmax-times-V
// kernel), or three computations - attention_scores, the fused softmax and attention_context
// below - with the scores in memory. Which is faster depends on the type and the sizes (in bf16
// the three-kernel form's two products run on the tensor cores, the one kernel on the SIMT
// cores), so both are tuned and the loader runs the faster (backends/bert_layer.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <expressions/attention.hpp>
#include <expressions/bert_shape.hpp>
#include <expressions/gemm_epilogues.hpp>
#include <expressions/layernorm.hpp>
#include <expressions/softmax.hpp>
#include <mdh/epilogue.hpp>
#include <mdh/error.hpp>
#include <mdh/fused.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

namespace detail {
template <class T>
constexpr void require_float_type() {
  static_assert(std::is_floating_point_v<T> || is_float16_v<T>,
                "mdh::ops::attention_qk<T>, attention_context<T>, scale_mask_add<T> require 'T' "
                "to be float, double, mdh::bf16 or mdh::f16");
}
}  // namespace detail

// The scores' epilogue: Y(b,h,i,j) = C(b,h,i,j) * scale + (1 - mask(b,j)) * -10000, BERT's
// additive padding mask (mask 1: attend, 0: padding). Sizes (b, h, i, j).
template <class T = float, buffer_name C = "C">
auto scale_mask_add(compute_type_t<T> scale) {
  detail::require_float_type<T>();
  using V = compute_type_t<T>;
  auto [b, h, i, j] = indices<4>();
  return computation("scale_mask_add", out_view(out<T, "Y">(b, h, i, j)),
                     md_hom([scale](auto c, auto m) { return c * scale + (V(1) - m) * V(-10000); },
                            cc, cc, cc, cc),
                     inp_view(in<T, C>(b, h, i, j), in<T, "mask">(b, j)))
      .with_dim_names({"b", "h", "i", "j"});
}

// Q K^T per (batch, head), read from the projection's [batch, seq, 3, heads, d] buffer seen as
// rows of `hidden`: token t's slot s is row 3t + s. Q and K are that one buffer, passed twice
// (two names, so that each operand has its own tiles: Q reads slot 0, K slot 1).
//   C(b,h,i,j) = +_k Q(3(S b + i), D h + k) * K(3(S b + j) + 1, D h + k)
// Sizes (b, h, i, j, k) = (batch, heads, seq, seq, d).
template <class T = float>
auto attention_qk(const bert_shape& s) {
  detail::require_float_type<T>();
  s.check();
  const std::int64_t S = s.seq, D = s.head_dim();
  auto [b, h, i, j, k] = indices<5>();
  return computation("attention_qk", out_view(out<T, "C">(b, h, i, j)),
                     md_hom([](auto q, auto kk) { return q * kk; }, cc, cc, cc, cc, pw(add)),
                     inp_view(in<T, "Q">(3 * S * b + 3 * i, D * h + k),
                              in<T, "K">(3 * S * b + 3 * j + 1, D * h + k)))
      .with_dim_names({"b", "h", "i", "j", "k"});
}

// The masked, scaled scores as one kernel: attention_qk with the scale_mask_add epilogue.
// Inputs Q, K (the QKV buffer twice), mask [batch, seq]; output Y [batch, heads, seq, seq].
template <class T = float>
auto attention_scores(const bert_shape& s) {
  using V = compute_type_t<T>;
  const V scale = V(1) / V(std::sqrt(double(s.head_dim())));
  return with_epilogue("attention_scores", attention_qk<T>(s), scale_mask_add<T, "C">(scale));
}

// The context P V, written as [batch, seq, hidden] (heads side by side in each token's row):
//   ctx(S b + i, D h + d) = +_j P(b,h,i,j) * V(3(S b + j) + 2, D h + d)
// V is the QKV buffer again (slot 2). Sizes (b, h, i, d, j) = (batch, heads, seq, d, seq).
template <class T = float>
auto attention_context(const bert_shape& s) {
  detail::require_float_type<T>();
  s.check();
  const std::int64_t S = s.seq, D = s.head_dim();
  auto [b, h, i, d, j] = indices<5>();
  return computation("attention_context", out_view(out<T, "ctx">(S * b + i, D * h + d)),
                     md_hom([](auto p, auto v) { return p * v; }, cc, cc, cc, cc, pw(add)),
                     inp_view(in<T, "P">(b, h, i, j), in<T, "V">(3 * S * b + 3 * j + 2, D * h + d)))
      .with_dim_names({"b", "h", "i", "d", "j"});
}

// One stage of the layer: its name, the layer tensors its kernel reads and writes (in the
// kernel's buffer order: inputs, then outputs) and its md_hom sizes.
struct bert_stage {
  std::string name;
  std::vector<std::string> inputs, outputs;
  std::vector<std::int64_t> sizes;
  bool attention = false;  // one of the stages that only one attention_form has
};

// How the layer computes softmax(Q K^T * scale + mask) V.
enum class attention_form {
  one_kernel,     // "attention": one md_hom, the scores never in memory
  three_kernels,  // "scores", "softmax", "context": the scores and P as [batch, heads, seq, seq]
};

inline const char* to_string(attention_form f) {
  return f == attention_form::one_kernel ? "one kernel" : "three kernels";
}

// A tensor of the layer: name, shape as the layer holds it, whether the caller provides it
// (input or weight) or a stage writes it, and whether it holds row statistics (layernorm's sums,
// softmax's max and sum), which are stored in the compute type: float in a 16-bit layer.
struct bert_tensor {
  std::string name;
  shape_t shape;
  bool given = false;
  bool statistic = false;
};

// The layer's tensors: the input X, the padding mask, the weights, then every stage's outputs
// (with three attention kernels, also the scores, the softmax's row max and sum, and P).
inline std::vector<bert_tensor> bert_layer_tensors(
    const bert_shape& s, attention_form form = attention_form::one_kernel) {
  s.check();
  const std::int64_t T = s.tokens(), N = s.hidden, F = s.ffn, B = s.batch, S = s.seq, H = s.heads;
  std::vector<bert_tensor> t{
      {"X", {T, N}, true},
      {"mask", {B, S}, true},
      {"Wqkv", {N, 3 * N}, true},
      {"bqkv", {3 * N}, true},
      {"Wo", {N, N}, true},
      {"bo", {N}, true},
      {"gamma1", {N}, true},
      {"beta1", {N}, true},
      {"W1", {N, F}, true},
      {"b1", {F}, true},
      {"W2", {F, N}, true},
      {"b2", {N}, true},
      {"gamma2", {N}, true},
      {"beta2", {N}, true},
      {"QKV", {T, 3 * N}},
      {"ctx", {T, N}},
      {"attn", {T, N}},
      {"ln1_sum", {T}, false, true},
      {"ln1_sq", {T}, false, true},
      {"H1", {T, N}},
      {"F1", {T, F}},
      {"F2", {T, N}},
      {"ln2_sum", {T}, false, true},
      {"ln2_sq", {T}, false, true},
      {"Y", {T, N}},
  };
  if (form == attention_form::three_kernels)
    t.insert(t.end(), {{"scores", {B, H, S, S}},
                       {"max", {B * H * S}, false, true},
                       {"sum", {B * H * S}, false, true},
                       {"P", {B, H, S, S}}});
  return t;
}

// Calls visit(stage, computation) for the stages in order (seven with the one-kernel attention,
// nine with three); `computation` is an mdh::computation (with an epilogue for the products and
// the scores), an mdh::fuse pair (layernorm, softmax) or the one-kernel attention's
// mdh::with_producer pair. Element type T: float (fp32) or mdh::bf16 / mdh::f16 (16-bit storage,
// float arithmetic and accumulation). `products`: the precision of the four weight products
// (qkv, attn_out, ffn_up, ffn_down), the user's choice for T = float (e.g. tf32x3: three TF32
// products each on the tensor cores, near-fp32 accuracy); the attention, layernorm and softmax
// stages are computed as stored whatever it is. Only ieee for a 16-bit T.
template <class T = float, class Visit>
void for_each_bert_stage(const bert_shape& s, Visit&& visit,
                         attention_form form = attention_form::one_kernel,
                         ir::precision products = ir::precision::ieee) {
  s.check();
  const std::int64_t T_ = s.tokens(), N = s.hidden, F = s.ffn, B = s.batch, S = s.seq, H = s.heads,
                     D = s.head_dim();
  auto layernorm_pair = [&] {
    return fuse("layernorm", layernorm_stats<T>(), layernorm_normalize<T>(N));
  };
  // ieee: the product as built (its hash, and so its parameter files, unchanged)
  auto product = [&](auto comp) {
    return products == ir::precision::ieee ? comp : comp.with_precision(products);
  };
  visit(bert_stage{"qkv", {"X", "Wqkv", "bqkv"}, {"QKV"}, {T_, 3 * N, N}},
        product(matmul_bias<T>()));
  if (form == attention_form::one_kernel) {
    visit(bert_stage{"attention", {"QKV", "QKV", "mask", "QKV"}, {"ctx"}, {B, H, S, D, S, D}, true},
          attention<T>(s));
  } else {
    visit(bert_stage{"scores", {"QKV", "QKV", "mask"}, {"scores"}, {B, H, S, S, D}, true},
          attention_scores<T>(s));
    visit(bert_stage{"softmax", {"scores"}, {"max", "sum", "P"}, {B * H * S, S}, true},
          fuse("softmax", softmax_stats<T>(), softmax_normalize<T>()));
    visit(bert_stage{"context", {"P", "QKV"}, {"ctx"}, {B, H, S, D, S}, true},
          attention_context<T>(s));
  }
  visit(bert_stage{"attn_out", {"ctx", "Wo", "bo", "X"}, {"attn"}, {T_, N, N}},
        product(matmul_bias_residual<T>()));
  visit(bert_stage{"ln1", {"attn", "gamma1", "beta1"}, {"ln1_sum", "ln1_sq", "H1"}, {T_, N}},
        layernorm_pair());
  visit(bert_stage{"ffn_up", {"H1", "W1", "b1"}, {"F1"}, {T_, F, N}},
        product(matmul_bias_gelu<T>()));
  visit(bert_stage{"ffn_down", {"F1", "W2", "b2", "H1"}, {"F2"}, {T_, N, F}},
        product(matmul_bias_residual<T>()));
  visit(bert_stage{"ln2", {"F2", "gamma2", "beta2"}, {"ln2_sum", "ln2_sq", "Y"}, {T_, N}},
        layernorm_pair());
}

}  // namespace mdh::ops
