// SPDX-License-Identifier: MIT
// The whole operator library mdh::ops: every expression of TOPLAS Fig. 14, SC21 and benchmarks.md.
#pragma once

// Linear algebra and tensor contractions
#include <expressions/batch_matmul.hpp>  // batch_matmul<T, AdjA, AdjB>  (BERT BatchMatMul, 4-D)
#include <expressions/bmatmul.hpp>       // bmatmul<T>                  (b, i, j, k)
#include <expressions/ccsd_t.hpp>        // ccsd_t<T>                   (abcdef-gdab-efgc)
#include <expressions/dot.hpp>           // dot<T>
#include <expressions/matmul.hpp>        // matmul<T>
#include <expressions/matmul_nt.hpp>     // matmul_nt<T>                (B[j,k])
#include <expressions/matmul_t.hpp>      // matmul_t<T>
#include <expressions/matvec.hpp>        // matvec<T>
#include <expressions/tccg_abc_adec_ebd.hpp>      // tccg_abc_adec_ebd<T>      (TCCG, 3-D)
#include <expressions/tccg_abcd_aebf_dfce.hpp>    // tccg_abcd_aebf_dfce<T>    (TCCG, 4-D)
#include <expressions/tccg_abcd_eafd_fbec.hpp>    // tccg_abcd_eafd_fbec<T>    (TCCG, 4-D)
#include <expressions/tccg_abcdef_dega_gfbc.hpp>  // tccg_abcdef_dega_gfbc<T>  (TCCG, 6-D)
#include <expressions/tccg_abcdef_dfgb_geac.hpp>  // tccg_abcdef_dfgb_geac<T>  (TCCG, 6-D)
// Stencils and convolutions
#include <expressions/conv2d.hpp>       // conv2d<T>
#include <expressions/jacobi1d.hpp>     // jacobi1d<T>(c)
#include <expressions/jacobi2d.hpp>     // jacobi2d<T>(c)
#include <expressions/jacobi3d.hpp>     // jacobi3d<T>(c)
#include <expressions/mcc.hpp>          // mcc<T>(sh, sw, dh, dw)       (NHWC/KRSC/NPQK)
#include <expressions/mcc_capsule.hpp>  // mcc_capsule<T>(sh, sw)
#include <expressions/mcc_nchw.hpp>     // mcc_nchw<T>(sh, sw, dh, dw)  (NCHW/KCRS/NKPQ)
// Data-parallel patterns
#include <expressions/histogram.hpp>       // histogram<T>
#include <expressions/map.hpp>             // map<T, U>(f)
#include <expressions/mbbs.hpp>            // mbbs<T>
#include <expressions/prl.hpp>             // prl<T>(f0, f1), max_prl()
#include <expressions/reduce.hpp>          // reduce<T>(op)
#include <expressions/reduce_sum_max.hpp>  // reduce_sum_max<T>, sum_max()
#include <expressions/row_sum.hpp>         // row_sum<T>
#include <expressions/scan.hpp>            // scan<T>(op)
// Deep-learning operators (BERT)
#include <expressions/add_bias.hpp>           // add_bias<T, X, N>
#include <expressions/add_bias_residual.hpp>  // add_bias_residual<T, X, N>
#include <expressions/attn_mask_add.hpp>      // attn_mask_add<T>
#include <expressions/bert_mask.hpp>          // bert_mask<T>          (SC21 fused subgraph)
#include <expressions/bias_add.hpp>           // bias_add<T>           (NHWC)
#include <expressions/bias_add_grad.hpp>      // bias_add_grad<T>
#include <expressions/bias_gelu.hpp>          // bias_gelu<T>
#include <expressions/expand_dims.hpp>        // expand_dims<Axis, D, T>
#include <expressions/layernorm.hpp>  // layernorm_stats<T>, layernorm_normalize<T>(cols, eps)
#include <expressions/multiply.hpp>   // multiply<T>           (TF Mul)
#include <expressions/softmax.hpp>    // softmax_stats<T>, softmax_normalize<T>, max_sum()
#include <expressions/subtract.hpp>   // subtract<T>           (TF Sub)
// The benchmark cases
#include <expressions/benchmark_cases.hpp>  // for_each_benchmark_case(visit)
#include <expressions/gemm_epilogues.hpp>   // matmul_bias_gelu<T>, ... (one kernel each)
