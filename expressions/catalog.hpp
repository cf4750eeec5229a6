// SPDX-License-Identifier: MIT
// The named operators of the library with a description and example sizes, for tools such as
// mdh-tune: for_each_operator(visit) calls visit(entry, make) where make(sizes) returns the
// computation (a few operators, like layernorm's normalising map, take a size as a parameter; the
// products with an epilogue are computations too, mdh::with_epilogue), or a fused pair of two
// (softmax, layernorm; mdh::is_fused_v tells them apart).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include <expressions/all.hpp>

namespace mdh::ops {

struct catalog_entry {
  std::string_view name;
  std::string_view description;
  std::string_view dims;  // dimension names in size order
  std::vector<std::int64_t> example_sizes;
};

// The operators with element type T (float, double, mdh::bf16 or mdh::f16); histogram and
// prl, which count and compare integers, are listed for float only.
template <class T = float, class Visit>
void for_each_operator(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  auto fixed = [](auto comp) { return [comp](const sizes&) { return comp; }; };
  visit(catalog_entry{"dot", "C = +_k A[k] * B[k]", "k", {1 << 20}}, fixed(dot<T>()));
  visit(catalog_entry{"matvec", "w[i] = +_k M[i,k] * v[k]", "i,k", {1024, 1024}},
        fixed(matvec<T>()));
  visit(catalog_entry{"matmul", "C[i,j] = +_k A[i,k] * B[k,j]", "i,j,k", {256, 256, 256}},
        fixed(matmul<T>()));
  visit(catalog_entry{"matmul_t", "C[j,i] = +_k A[k,i] * B[j,k]", "i,j,k", {256, 256, 256}},
        fixed(matmul_t<T>()));
  visit(catalog_entry{"matmul_nt", "C[i,j] = +_k A[i,k] * B[j,k]", "i,j,k", {256, 256, 256}},
        fixed(matmul_nt<T>()));
  // Products with their point-wise epilogue in one kernel (mdh::with_epilogue): the product's
  // search space, the epilogue applied to the final sums in registers.
  visit(catalog_entry{"matmul_bias",
                      "Y[i,j] = +_k A[i,k] * B[k,j] + b[j], one kernel",
                      "i,j,k",
                      {2048, 768, 768}},
        fixed(matmul_bias<T>()));
  visit(catalog_entry{"matmul_bias_gelu",
                      "Y[i,j] = gelu(+_k A[i,k] * B[k,j] + b[j]), one kernel",
                      "i,j,k",
                      {2048, 3072, 768}},
        fixed(matmul_bias_gelu<T>()));
  visit(catalog_entry{"matmul_bias_residual",
                      "Y[i,j] = +_k A[i,k] * B[k,j] + b[j] + R[i,j], one kernel",
                      "i,j,k",
                      {2048, 768, 3072}},
        fixed(matmul_bias_residual<T>()));
  visit(catalog_entry{"matmul_nt_bias_gelu",
                      "Y[i,j] = gelu(+_k A[i,k] * B[j,k] + b[j]), one kernel",
                      "i,j,k",
                      {2048, 3072, 768}},
        fixed(matmul_nt_bias_gelu<T>()));
  visit(catalog_entry{"matmul_nt_bias_residual",
                      "Y[i,j] = +_k A[i,k] * B[j,k] + b[j] + R[i,j], one kernel",
                      "i,j,k",
                      {2048, 768, 3072}},
        fixed(matmul_nt_bias_residual<T>()));
  visit(catalog_entry{"batch_matmul_bias",
                      "Y[b1,b2,i,j] = +_k A[b1,b2,i,k] * B[b1,b2,k,j] + b[j], one kernel",
                      "b1,b2,i,j,k",
                      {16, 12, 128, 64, 128}},
        fixed(batch_matmul_bias<T>()));
  visit(
      catalog_entry{"bmatmul", "C[b,i,j] = +_k A[b,i,k] * B[b,k,j]", "b,i,j,k", {16, 10, 500, 64}},
      fixed(bmatmul<T>()));
  visit(catalog_entry{"batch_matmul",
                      "BERT BatchMatMul: C[b1,b2,i,j] = +_k A[b1,b2,i,k] * B[b1,b2,k,j]",
                      "b1,b2,i,j,k",
                      {16, 12, 128, 64, 128}},
        fixed(batch_matmul<T>()));
  visit(catalog_entry{"batch_matmul_nt",
                      "BERT Q*K^T: C[b1,b2,i,j] = +_k A[b1,b2,i,k] * B[b1,b2,j,k]",
                      "b1,b2,i,j,k",
                      {16, 12, 128, 128, 64}},
        fixed(batch_matmul<T, false, true>()));
  visit(
      catalog_entry{"conv2d", "O[p,q] = +_{r,s} I[p+r,q+s] * F[r,s]", "p,q,r,s", {256, 256, 5, 5}},
      fixed(conv2d<T>()));
  visit(
      catalog_entry{
          "mcc", "NHWC/KRSC convolution, stride 1", "n,p,q,k,r,s,c", {1, 56, 56, 64, 3, 3, 64}},
      fixed(mcc<T>()));
  visit(catalog_entry{"mcc_s2",
                      "NHWC/KRSC convolution, stride 2 (ResNet-50 layer 1)",
                      "n,p,q,k,r,s,c",
                      {16, 112, 112, 64, 7, 7, 3}},
        fixed(mcc<T>(2, 2)));
  visit(catalog_entry{"ccsd_t",
                      "CCSD(T) contraction abcdef-gdab-efgc",
                      "a,b,c,d,e,f,g",
                      {16, 16, 16, 16, 16, 16, 16}},
        fixed(ccsd_t<T>()));
  // TCCG contractions (issue 19): reduction and output indices permuted in the inputs.
  visit(catalog_entry{"tccg_abcd_aebf_dfce",
                      "TCCG C[a,b,c,d] = +_{e,f} A[a,e,b,f] * B[d,f,c,e]",
                      "a,b,c,d,e,f",
                      {48, 48, 48, 48, 48, 48}},
        fixed(tccg_abcd_aebf_dfce<T>()));
  visit(catalog_entry{"tccg_abcd_eafd_fbec",
                      "TCCG C[a,b,c,d] = +_{e,f} A[e,a,f,d] * B[f,b,e,c]",
                      "a,b,c,d,e,f",
                      {48, 48, 48, 48, 48, 48}},
        fixed(tccg_abcd_eafd_fbec<T>()));
  visit(catalog_entry{"tccg_abc_adec_ebd",
                      "TCCG C[a,b,c] = +_{d,e} A[a,d,e,c] * B[e,b,d]",
                      "a,b,c,d,e",
                      {72, 72, 72, 48, 48}},
        fixed(tccg_abc_adec_ebd<T>()));
  visit(catalog_entry{"tccg_abcdef_dega_gfbc",
                      "TCCG C[a,b,c,d,e,f] = +_g A[d,e,g,a] * B[g,f,b,c]",
                      "a,b,c,d,e,f,g",
                      {24, 16, 16, 24, 16, 16, 24}},
        fixed(tccg_abcdef_dega_gfbc<T>()));
  visit(catalog_entry{"tccg_abcdef_dfgb_geac",
                      "TCCG C[a,b,c,d,e,f] = +_g A[d,f,g,b] * B[g,e,a,c]",
                      "a,b,c,d,e,f,g",
                      {24, 16, 16, 24, 16, 16, 24}},
        fixed(tccg_abcdef_dfgb_geac<T>()));
  visit(catalog_entry{"jacobi1d", "3-point stencil", "i", {1 << 20}}, fixed(jacobi1d<T>()));
  visit(catalog_entry{"jacobi2d", "5-point stencil", "i,j", {1024, 1024}}, fixed(jacobi2d<T>()));
  visit(catalog_entry{"jacobi3d", "7-point stencil", "i,j,k", {254, 254, 254}},
        fixed(jacobi3d<T>()));
  if constexpr (std::is_same_v<T, float>) {
    visit(catalog_entry{"prl", "probabilistic record linkage, (++, max_PRL)", "i,j", {1024, 1024}},
          fixed(prl()));
    visit(catalog_entry{"histogram", "Out[b] = +_e (Elems[e] == Bins[b])", "e,b", {1 << 16, 64}},
          fixed(histogram()));
  }
  visit(catalog_entry{"scan", "y[i] = +_{i' <= i} x[i']", "i", {1 << 16}}, fixed(scan<T>()));
  visit(catalog_entry{"reduce", "y = +_i x[i]", "i", {1 << 20}}, fixed(reduce<T>()));
  visit(catalog_entry{"row_sum", "Y[i] = +_j X[i,j]", "i,j", {3001, 4093}}, fixed(row_sum<T>()));
  visit(catalog_entry{"reduce_sum_max", "(sum, max) of x", "i", {1 << 20}},
        fixed(reduce_sum_max<T>()));
  visit(catalog_entry{"mul", "BERT Mul, 2-D elementwise", "i,j", {2048, 3072}},
        fixed(multiply<T>()));
  visit(catalog_entry{"sub", "BERT Sub, 2-D elementwise", "i,j", {2048, 3072}},
        fixed(subtract<T>()));
  visit(catalog_entry{"bias_add", "O[n,h,w,c] = I[n,h,w,c] + b[c]", "n,h,w,c", {16, 32, 32, 64}},
        fixed(bias_add<T>()));
  visit(catalog_entry{"bias_add_grad", "O[j] = +_i I[i,j]", "i,j", {2048, 768}},
        fixed(bias_add_grad<T>()));
  visit(
      catalog_entry{
          "bert_mask", "fused attention mask (1 - m1*m2) * -10000", "b,h,q,k", {16, 1, 384, 384}},
      fixed(bert_mask<T>()));
  visit(
      catalog_entry{"attn_mask_add", "scores + (1 - mask) * -10000", "b,h,q,k", {16, 12, 128, 128}},
      fixed(attn_mask_add<T>()));
  visit(catalog_entry{"bias_gelu", "gelu(x + b)", "i,j", {2048, 3072}}, fixed(bias_gelu<T>()));
  visit(catalog_entry{"add_bias", "Y[i,j] = X[i,j] + b[j]", "i,j", {2048, 768}},
        fixed(add_bias<T>()));
  visit(catalog_entry{"add_bias_residual", "Y[i,j] = X[i,j] + b[j] + R[i,j]", "i,j", {2048, 768}},
        fixed(add_bias_residual<T>()));
  visit(catalog_entry{"softmax_stats",
                      "row (max, sum of exp) with the custom max_sum operator",
                      "r,c",
                      {2048, 128}},
        fixed(softmax_stats<T>()));
  visit(catalog_entry{"softmax_normalize", "y = exp(x - M) / S", "r,c", {2048, 128}},
        fixed(softmax_normalize<T>()));
  visit(catalog_entry{"layernorm_stats", "row (sum, sum of squares)", "r,c", {2048, 768}},
        fixed(layernorm_stats<T>()));
  visit(catalog_entry{"layernorm_normalize",
                      "y = (x - mean) / sqrt(var + eps) * gamma + beta",
                      "r,c",
                      {2048, 768}},
        [](const sizes& s) { return layernorm_normalize<T>(s.size() > 1 ? s[1] : 1); });
  // Two computations as one kernel (mdh::fuse): the statistics stay in the block.
  visit(catalog_entry{"softmax", "softmax_stats then softmax_normalize, fused", "r,c", {2048, 128}},
        fixed(fuse("softmax", softmax_stats<T>(), softmax_normalize<T>())));
  visit(
      catalog_entry{
          "layernorm", "layernorm_stats then layernorm_normalize, fused", "r,c", {2048, 768}},
      [](const sizes& s) {
        return fuse("layernorm", layernorm_stats<T>(),
                    layernorm_normalize<T>(s.size() > 1 ? s[1] : 1));
      });
}

// The operators of one element type by its short name: f32, bf16 or f16 (mdh-tune --type;
// tf32 is f32 read at TF32 precision, see computation::with_precision).
template <class Visit>
void for_each_operator(std::string_view type, Visit&& visit) {
  if (type == "f32")
    for_each_operator<float>(visit);
  else if (type == "bf16")
    for_each_operator<bf16>(visit);
  else if (type == "f16")
    for_each_operator<f16>(visit);
  else
    throw error("the operator library has no element type '" + std::string(type) +
                "' (f32, bf16, f16)");
}

}  // namespace mdh::ops
