// SPDX-License-Identifier: MIT
// The cases of benchmarks.md and of issue 19 (any shape) as (name, computation, sizes), for sweeps
// over the operator library. bench/cases.json lists the same names and sizes (a test checks it).
#pragma once

#include <cstdint>
#include <string_view>
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
template <class Visit>
void for_each_any_shape_case(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  visit(std::string_view("matmul_997x1009x769"), matmul(), sizes{997, 1009, 769});
  visit(std::string_view("matmul_1023x1025x1027"), matmul(), sizes{1023, 1025, 1027});
  visit(std::string_view("matmul_4095x4097x33"), matmul(), sizes{4095, 4097, 33});
  visit(std::string_view("bmm_12x333x333x77"), bmatmul(), sizes{12, 333, 333, 77});
  visit(std::string_view("matvec_12289x3001"), matvec(), sizes{12289, 3001});
  visit(std::string_view("dot_8388613"), dot(), sizes{(1 << 23) + 5});
  visit(std::string_view("row_sum_3001x4093"), row_sum(), sizes{3001, 4093});
  visit(std::string_view("col_sum_3001x4093"), bias_add_grad(), sizes{3001, 4093});
  visit(std::string_view("tccg_abcd_aebf_dfce"), tccg_abcd_aebf_dfce(),
        sizes{48, 48, 48, 48, 48, 48});
  visit(std::string_view("tccg_abcd_eafd_fbec"), tccg_abcd_eafd_fbec(),
        sizes{48, 48, 48, 48, 48, 48});
  visit(std::string_view("tccg_abc_adec_ebd"), tccg_abc_adec_ebd(), sizes{72, 72, 72, 48, 48});
  visit(std::string_view("tccg_abcdef_dega_gfbc"), tccg_abcdef_dega_gfbc(),
        sizes{24, 16, 16, 24, 16, 16, 24});
  visit(std::string_view("tccg_abcdef_dfgb_geac"), tccg_abcdef_dfgb_geac(),
        sizes{24, 16, 16, 24, 16, 16, 24});
}

// Calls visit(name, computation, sizes) for every float32 case of benchmarks.md (the suites bert,
// sc21 and toplas of bench/cases.json), in the table's order. Softmax and layernorm are two
// computations each, given as one fused pair (mdh::fuse: one kernel; mdh::is_fused_v tells them
// apart). Notes: Jacobi3D 256^3 is the interior of a 256^3 grid (sizes 254^3); the ResNet-50
// layer derives its image as 229 x 229 (the 230th row/column of the 230 x 230 input is never
// read).
template <class Visit>
void for_each_benchmarks_md_case(Visit&& visit) {
  using sizes = std::vector<std::int64_t>;
  auto bmm_nt = batch_matmul<float, false, true>();  // Q * K^T
  auto bmm_nn = batch_matmul<float>();               // P * V
  visit(std::string_view("matmul_768x3072"), matmul(), sizes{2048, 3072, 768});
  visit(std::string_view("matmul_768x768"), matmul(), sizes{2048, 768, 768});
  visit(std::string_view("bmm_qk"), bmm_nt, sizes{16, 12, 128, 128, 64});
  visit(std::string_view("bmm_pv"), bmm_nn, sizes{16, 12, 128, 64, 128});
  visit(std::string_view("bias_add_grad_768"), bias_add_grad(), sizes{2048, 768});
  visit(std::string_view("bias_add_grad_3072"), bias_add_grad(), sizes{2048, 3072});
  visit(std::string_view("mul"), multiply(), sizes{2048, 3072});
  visit(std::string_view("sub"), subtract(), sizes{2048, 3072});
  visit(std::string_view("attn_mask_subgraph"), attn_mask_add(), sizes{16, 12, 128, 128});
  visit(std::string_view("softmax"), fuse("softmax", softmax_stats(), softmax_normalize()),
        sizes{16 * 12 * 128, 128});
  visit(std::string_view("bias_gelu"), bias_gelu(), sizes{2048, 3072});
  visit(std::string_view("layernorm"),
        fuse("layernorm", layernorm_stats(), layernorm_normalize(768)), sizes{2048, 768});
  visit(std::string_view("conv3x3_resnet"), mcc_nchw(), sizes{32, 256, 14, 14, 256, 3, 3});
  visit(std::string_view("mask_sc21"), bert_mask(), sizes{16, 1, 384, 384});
  visit(std::string_view("bias_add_grad_s384"), bias_add_grad(), sizes{6144, 768});
  visit(std::string_view("bmm_qk_s384"), bmm_nt, sizes{16, 12, 384, 384, 64});
  visit(std::string_view("dot"), dot(), sizes{1 << 24});
  visit(std::string_view("matvec"), matvec(), sizes{4096, 4096});
  visit(std::string_view("matmul_1024"), matmul(), sizes{1024, 1024, 1024});
  visit(std::string_view("matmul_16x1000x2048"), matmul(), sizes{16, 1000, 2048});
  visit(std::string_view("matmul_10x500x64"), matmul(), sizes{10, 500, 64});
  visit(std::string_view("bmm_16x10x500x64"), bmatmul(), sizes{16, 10, 500, 64});
  visit(std::string_view("jacobi3d_256"), jacobi3d(), sizes{254, 254, 254});
  visit(std::string_view("mcc_resnet50_l1"), mcc(2, 2), sizes{16, 112, 112, 64, 7, 7, 3});
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

// Every case of bench/cases.json: those of benchmarks.md, the any_shape suite, the epilogues.
template <class Visit>
void for_each_benchmark_case(Visit&& visit) {
  for_each_benchmarks_md_case(visit);
  for_each_any_shape_case(visit);
  for_each_epilogue_case(visit);
}

}  // namespace mdh::ops
