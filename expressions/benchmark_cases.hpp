// SPDX-License-Identifier: MIT
// The cases of benchmarks.md and of issue 19 (any shape) as (name, computation, sizes), for sweeps
// over the operator library. bench/cases.json lists the same names and sizes (a test checks it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <expressions/attn_mask_add.hpp>
#include <expressions/batch_matmul.hpp>
#include <expressions/bert_mask.hpp>
#include <expressions/bias_add_grad.hpp>
#include <expressions/bias_gelu.hpp>
#include <expressions/bmatmul.hpp>
#include <expressions/dot.hpp>
#include <expressions/gemm_epilogues.hpp>
#include <expressions/jacobi3d.hpp>
#include <expressions/layernorm.hpp>
#include <expressions/matmul.hpp>
#include <expressions/matvec.hpp>
#include <expressions/mcc.hpp>
#include <expressions/mcc_nchw.hpp>
#include <expressions/multiply.hpp>
#include <expressions/prl.hpp>
#include <expressions/row_sum.hpp>
#include <expressions/softmax.hpp>
#include <expressions/subtract.hpp>
#include <expressions/tccg_abc_adec_ebd.hpp>
#include <expressions/tccg_abcd_aebf_dfce.hpp>
#include <expressions/tccg_abcd_eafd_fbec.hpp>
#include <expressions/tccg_abcdef_dega_gfbc.hpp>
#include <expressions/tccg_abcdef_dfgb_geac.hpp>

namespace mdh::ops {

// The "any_shape" suite of bench/cases.json (issue 19): extents that no tile divides - odd and
// prime products, a matvec, a dot and row/column sums - and TCCG tensor contractions whose
// reduction and output indices are permuted in the inputs.
// T: the element type of every buffer (float; bf16 for the bf16 suite).
template <class T = float, class Visit>
void for_each_any_shape_case(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  visit(std::string_view("matmul_997x1009x769"), matmul<T>(), sizes{997, 1009, 769});
  visit(std::string_view("matmul_1023x1025x1027"), matmul<T>(), sizes{1023, 1025, 1027});
  visit(std::string_view("matmul_4095x4097x33"), matmul<T>(), sizes{4095, 4097, 33});
  visit(std::string_view("bmm_12x333x333x77"), bmatmul<T>(), sizes{12, 333, 333, 77});
  visit(std::string_view("matvec_12289x3001"), matvec<T>(), sizes{12289, 3001});
  visit(std::string_view("dot_8388613"), dot<T>(), sizes{(1 << 23) + 5});
  visit(std::string_view("row_sum_3001x4093"), row_sum<T>(), sizes{3001, 4093});
  visit(std::string_view("col_sum_3001x4093"), bias_add_grad<T>(), sizes{3001, 4093});
  visit(std::string_view("tccg_abcd_aebf_dfce"), tccg_abcd_aebf_dfce<T>(),
        sizes{48, 48, 48, 48, 48, 48});
  visit(std::string_view("tccg_abcd_eafd_fbec"), tccg_abcd_eafd_fbec<T>(),
        sizes{48, 48, 48, 48, 48, 48});
  visit(std::string_view("tccg_abc_adec_ebd"), tccg_abc_adec_ebd<T>(), sizes{72, 72, 72, 48, 48});
  visit(std::string_view("tccg_abcdef_dega_gfbc"), tccg_abcdef_dega_gfbc<T>(),
        sizes{24, 16, 16, 24, 16, 16, 24});
  visit(std::string_view("tccg_abcdef_dfgb_geac"), tccg_abcdef_dfgb_geac<T>(),
        sizes{24, 16, 16, 24, 16, 16, 24});
}

// Calls visit(name, computation, sizes) for every case of benchmarks.md (the suites bert, sc21
// and toplas of bench/cases.json), in the table's order, with buffers of element type T (float;
// bf16 for the bf16 suite, which leaves out PRL: it compares integers). Softmax and layernorm are
// two computations each, given as one fused pair (mdh::fuse: one kernel; mdh::is_fused_v tells them
// apart). Notes: Jacobi3D 256^3 is the interior of a 256^3 grid (sizes 254^3); the ResNet-50
// layer derives its image as 229 x 229 (the 230th row/column of the 230 x 230 input is never
// read).
template <class T = float, class Visit>
void for_each_benchmarks_md_case(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  auto bmm_nt = batch_matmul<T, false, true>();  // Q * K^T
  auto bmm_nn = batch_matmul<T>();               // P * V
  visit(std::string_view("matmul_768x3072"), matmul<T>(), sizes{2048, 3072, 768});
  visit(std::string_view("matmul_768x768"), matmul<T>(), sizes{2048, 768, 768});
  visit(std::string_view("bmm_qk"), bmm_nt, sizes{16, 12, 128, 128, 64});
  visit(std::string_view("bmm_pv"), bmm_nn, sizes{16, 12, 128, 64, 128});
  visit(std::string_view("bias_add_grad_768"), bias_add_grad<T>(), sizes{2048, 768});
  visit(std::string_view("bias_add_grad_3072"), bias_add_grad<T>(), sizes{2048, 3072});
  visit(std::string_view("mul"), multiply<T>(), sizes{2048, 3072});
  visit(std::string_view("sub"), subtract<T>(), sizes{2048, 3072});
  visit(std::string_view("attn_mask_subgraph"), attn_mask_add<T>(), sizes{16, 12, 128, 128});
  visit(std::string_view("softmax"), fuse("softmax", softmax_stats<T>(), softmax_normalize<T>()),
        sizes{16 * 12 * 128, 128});
  visit(std::string_view("bias_gelu"), bias_gelu<T>(), sizes{2048, 3072});
  visit(std::string_view("layernorm"),
        fuse("layernorm", layernorm_stats<T>(), layernorm_normalize<T>(768)), sizes{2048, 768});
  visit(std::string_view("conv3x3_resnet"), mcc_nchw<T>(), sizes{32, 256, 14, 14, 256, 3, 3});
  visit(std::string_view("mask_sc21"), bert_mask<T>(), sizes{16, 1, 384, 384});
  visit(std::string_view("bias_add_grad_s384"), bias_add_grad<T>(), sizes{6144, 768});
  visit(std::string_view("bmm_qk_s384"), bmm_nt, sizes{16, 12, 384, 384, 64});
  visit(std::string_view("dot"), dot<T>(), sizes{1 << 24});
  visit(std::string_view("matvec"), matvec<T>(), sizes{4096, 4096});
  visit(std::string_view("matmul_1024"), matmul<T>(), sizes{1024, 1024, 1024});
  visit(std::string_view("matmul_16x1000x2048"), matmul<T>(), sizes{16, 1000, 2048});
  visit(std::string_view("matmul_10x500x64"), matmul<T>(), sizes{10, 500, 64});
  visit(std::string_view("bmm_16x10x500x64"), bmatmul<T>(), sizes{16, 10, 500, 64});
  visit(std::string_view("jacobi3d_256"), jacobi3d<T>(), sizes{254, 254, 254});
  visit(std::string_view("mcc_resnet50_l1"), mcc<T>(2, 2), sizes{16, 112, 112, 64, 7, 7, 3});
  if constexpr (std::is_same_v<T, float>)
    visit(std::string_view("prl_2p15"), prl(), sizes{32768, 32768});
}

// The "bert_epilogue" suite of bench/cases.json (issue 20): BERT's GEMMs with their epilogue as
// one kernel (mdh::with_epilogue), each next to the plain GEMM of its shape (the target: no
// slower than it plus 5 %), and the plain FFN down-projection that the suites above lack.
template <class Visit>
void for_each_epilogue_case(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  visit(std::string_view("matmul_3072x768"), matmul(), sizes{2048, 768, 3072});
  visit(std::string_view("matmul_bias_gelu_768x3072"), matmul_bias_gelu(), sizes{2048, 3072, 768});
  visit(std::string_view("matmul_bias_residual_3072x768"), matmul_bias_residual(),
        sizes{2048, 768, 3072});
  visit(std::string_view("matmul_bias_768x768"), matmul_bias(), sizes{2048, 768, 768});
  visit(std::string_view("matmul_bias_residual_768x768"), matmul_bias_residual(),
        sizes{2048, 768, 768});
}

// A GEMM-like product: a pw(add) reduction over two input buffers with two or more concat
// dimensions, so that the output is a matrix (or a batch of them) that tensor-core tiles cover.
// Dot and matvec are contractions too, but memory-bound: they get no TF32 variant.
inline bool is_gemm_like(const ir::computation& c) {
  std::size_t concat_dims = 0;
  for (auto& d : c.dims) concat_dims += d.combine == ir::combine_kind::concat;
  return c.reduction.kind == ir::builtin::add && c.has_reduction() && c.inputs.size() == 2 &&
         concat_dims >= 2;
}

// The variants of issue 18, derived from the cases above (bench/peers/make_cases.py derives
// bench/cases.json's the same way): "<name>_bf16" (suite bf16: every case but PRL, bf16 buffers)
// and "<name>_tf32" (suite tf32: the GEMM-like products, fp32 read at TF32 precision).
template <class Visit>
void for_each_bf16_case(Visit&& visit) {
  auto renamed = [&](std::string_view name, const auto& comp, const auto& sizes) {
    std::string n = std::string(name) + "_bf16";
    visit(std::string_view(n), comp, sizes);
  };
  for_each_benchmarks_md_case<bf16>(renamed);
  for_each_any_shape_case<bf16>(renamed);
}
// The GEMM-like float32 products at another precision `p`, named "<name><suffix>".
template <class Visit>
void for_each_product_case_at(ir::precision p, std::string_view suffix, Visit&& visit) {
  auto renamed = [&](std::string_view name, const auto& comp, const auto& sizes) {
    if constexpr (!is_fused_v<std::decay_t<decltype(comp)>>) {
      if (!is_gemm_like(comp.ir())) return;
      std::string n = std::string(name) + std::string(suffix);
      visit(std::string_view(n), comp.with_precision(p), sizes);
    }
  };
  for_each_benchmarks_md_case(renamed);
  for_each_any_shape_case(renamed);
}
template <class Visit>
void for_each_tf32_case(Visit&& visit) {
  for_each_product_case_at(ir::precision::tf32, "_tf32", visit);
}
// "<name>_tf32x3" (suite tf32x3): the same products at near-fp32 accuracy, each product three
// TF32 tensor-core products of split operands (the user's choice); their peers are the float32
// case's.
template <class Visit>
void for_each_tf32x3_case(Visit&& visit) {
  for_each_product_case_at(ir::precision::tf32x3, "_tf32x3", visit);
}

// The float32 cases of bench/cases.json: those of benchmarks.md, the any_shape suite, the
// epilogues (what the backends' tests sweep and pin).
template <class Visit>
void for_each_benchmark_case(Visit&& visit) {
  for_each_benchmarks_md_case(visit);
  for_each_any_shape_case(visit);
  for_each_epilogue_case(visit);
}

// Every case of bench/cases.json: the float32 ones, then their bf16, tf32 and tf32x3 variants
// (issue 18): what the benchmark drivers (bench/mdh_bench, bench/tune_cases) run.
template <class Visit>
void for_each_benchmark_case_of_every_type(Visit&& visit) {
  for_each_benchmark_case(visit);
  for_each_bf16_case(visit);
  for_each_tf32_case(visit);
  for_each_tf32x3_case(visit);
}

}  // namespace mdh::ops
