// SPDX-License-Identifier: MIT
// Contractions with their point-wise epilogue as one kernel (mdh::with_epilogue): a linear
// layer's bias, bias + GELU (BERT's FFN up-projection), bias + residual (the projections that
// feed a layernorm). The epilogue reads the product's output C in registers; C is never written.
#pragma once

#include <expressions/add_bias.hpp>
#include <expressions/add_bias_residual.hpp>
#include <expressions/batch_matmul.hpp>
#include <expressions/bias_gelu.hpp>
#include <expressions/matmul.hpp>
#include <expressions/matmul_nt.hpp>
#include <mdh/epilogue.hpp>

namespace mdh::ops {

// Y[i,j] = +_k A[i,k] * B[k,j] + b[j]. Sizes (i, j, k); buffers A, B, b -> Y.
template <class T = float>
auto matmul_bias() {
  return with_epilogue("matmul_bias", matmul<T>(), add_bias<T, "C">());
}

// Y[i,j] = gelu(+_k A[i,k] * B[k,j] + b[j]) (exact erf form). Sizes (i, j, k), e.g. BERT's
// FFN up-projection (2048, 3072, 768); buffers A, B, b -> Y.
template <class T = float>
auto matmul_bias_gelu() {
  return with_epilogue("matmul_bias_gelu", matmul<T>(), bias_gelu<T, "C">());
}

// Y[i,j] = +_k A[i,k] * B[k,j] + b[j] + R[i,j]. Sizes (i, j, k), e.g. BERT's FFN
// down-projection (2048, 768, 3072); buffers A, B, b, R -> Y.
template <class T = float>
auto matmul_bias_residual() {
  return with_epilogue("matmul_bias_residual", matmul<T>(), add_bias_residual<T, "C">());
}

// The same three with B stored transposed (B[j,k], PyTorch's nn.Linear weight).
template <class T = float>
auto matmul_nt_bias() {
  return with_epilogue("matmul_nt_bias", matmul_nt<T>(), add_bias<T, "C">());
}
template <class T = float>
auto matmul_nt_bias_gelu() {
  return with_epilogue("matmul_nt_bias_gelu", matmul_nt<T>(), bias_gelu<T, "C">());
}
template <class T = float>
auto matmul_nt_bias_residual() {
  return with_epilogue("matmul_nt_bias_residual", matmul_nt<T>(), add_bias_residual<T, "C">());
}

// BERT's 4-D BatchMatMul with a bias over j: Y[b1,b2,i,j] = +_k A[..,i,k] * B[..,k,j] + b[j].
// Sizes (b1, b2, i, j, k); buffers IB1, IB2, b -> Y.
template <class T = float>
auto batch_matmul_bias() {
  return with_epilogue("batch_matmul_bias", batch_matmul<T>(), add_bias<T, "OB1", 4>());
}

}  // namespace mdh::ops
