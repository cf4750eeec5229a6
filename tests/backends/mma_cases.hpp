// SPDX-License-Identifier: MIT
// The contractions the tensor-core tests share (NVRTC compiles, CPU simulation, GPU runs): a
// matmul, a batched matmul with B transposed, a transposed matmul (A stored K x M, C written
// transposed), convolutions as implicit GEMMs (mcc, NHWC; mcc_nchw at strides 1 and 2) and two
// TCCG tensor contractions, each in bf16, f16 and TF32-read f32 (four also in split TF32), at
// sizes that leave partial tiles everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <expressions/all.hpp>

namespace mdh::test {

// f32 cases take precision `p` (tf32, or tf32x3: split TF32, compared with the IEEE reference at
// fp32's tolerance); `all` = false visits four of them (a plain, a batched, a gathered and a
// multi-dimensional contraction).
template <class T, class Visit>
void for_each_mma_case_of(const std::string& type, Visit&& visit,
                          ir::precision p = ir::precision::tf32, bool all = true) {
  using sz = std::vector<std::int64_t>;
  auto v = [&](std::string_view name, auto op, const sz& s) {
    if (!all && name != "matmul" && name != "batch_matmul_nt" && name != "mcc_nchw" &&
        name != "tccg_abcdef_dega_gfbc")
      return;
    if constexpr (std::is_same_v<T, float>)
      visit(type + " " + std::string(name), op.with_precision(p), s);
    else
      visit(type + " " + std::string(name), op, s);
  };
  v("matmul", ops::matmul<T>(), sz{97, 101, 77});
  v("batch_matmul_nt", ops::batch_matmul<T, false, true>(), sz{2, 3, 33, 40, 72});
  v("matmul_t", ops::matmul_t<T>(), sz{45, 70, 49});
  v("mcc", ops::mcc<T>(), sz{2, 5, 7, 24, 3, 3, 16});
  v("tccg_abcd_aebf_dfce", ops::tccg_abcd_aebf_dfce<T>(), sz{6, 5, 7, 9, 8, 10});
  // the NCHW convolution (n, k, p, q, c, r, s): its image's w = sw*q + s mixes an M and a K
  // dimension; stride 1 and 2, odd sizes
  v("mcc_nchw", ops::mcc_nchw<T>(), sz{3, 19, 5, 7, 5, 3, 3});
  v("mcc_nchw_s2", ops::mcc_nchw<T>(2, 2), sz{2, 17, 3, 5, 9, 3, 3});
  // three M and three N dimensions (a, d, e and b, c, f), one K
  v("tccg_abcdef_dega_gfbc", ops::tccg_abcdef_dega_gfbc<T>(), sz{3, 4, 5, 3, 2, 3, 7});
}

// visit(name, computation, sizes) for every case in bf16, f16 and TF32, and four in split TF32.
template <class Visit>
void for_each_mma_case(Visit&& visit) {
  for_each_mma_case_of<bf16>("bf16", visit);
  for_each_mma_case_of<f16>("f16", visit);
  for_each_mma_case_of<float>("tf32", visit);
  for_each_mma_case_of<float>("tf32x3", visit, ir::precision::tf32x3, false);
}

// The tensor-core path with a point-wise epilogue (mdh::with_epilogue) in each type: GEMM + bias
// + GELU, + bias + residual, B transposed + bias (TF32), batched + bias; partial tiles everywhere.
template <class Visit>
void for_each_mma_epilogue_case(Visit&& visit) {
  using sz = std::vector<std::int64_t>;
  visit("bf16 matmul_bias_gelu", ops::matmul_bias_gelu<bf16>(), sz{97, 101, 77});
  visit("f16 matmul_bias_residual", ops::matmul_bias_residual<f16>(), sz{45, 70, 49});
  visit("tf32 matmul_nt_bias", ops::matmul_nt_bias<float>().with_precision(ir::precision::tf32),
        sz{33, 40, 72});
  visit("bf16 batch_matmul_bias", ops::batch_matmul_bias<bf16>(), sz{2, 3, 33, 40, 72});
}

}  // namespace mdh::test
