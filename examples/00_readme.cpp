// SPDX-License-Identifier: MIT
// The README's example, verbatim: keep the two in sync.
#include <mdh/mdh.hpp>

int main() {
  using namespace mdh;
  auto [i, j, k] = indices<3>();
  auto matmul = computation(
      "matmul", out_view(out<float, "C">(i, j)),                      // C[i,j] =
      md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),  //   +_k A[i,k] * B[k,j]
      inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));

  auto n = matmul.sizes(384, 384, 64);
  host_tensor<float> A(matmul.shape("A", n)), B(matmul.shape("B", n)), C(matmul.shape("C", n));
  A.randomize(1), B.randomize(2);
  reference(matmul, n, {A, B}, {C});  // the CPU reference: the oracle for every kernel
  std::puts(matmul.str().c_str());    // the expression in MDH notation
}
