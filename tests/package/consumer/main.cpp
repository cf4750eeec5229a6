// SPDX-License-Identifier: MIT
// A downstream program: builds MatMul with the installed/added mdh and runs the reference.
#include <cstdio>

#include <mdh/mdh.hpp>

int main() {
  using namespace mdh;
  auto [i, j, k] = indices<3>();
  auto mm = computation("matmul", out_view(out<float, "C">(i, j)),
                        md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                        inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  auto n = mm.sizes(2, 2, 2);
  host_tensor<float> A(mm.shape("A", n), 1.0f), B(mm.shape("B", n), 2.0f), C(mm.shape("C", n));
  reference(mm, n, {A, B}, {C});
  std::printf("mdh %s: C[0] = %g\n", mdh::version, double(C[0]));
  return C[0] == 4.0f ? 0 : 1;
}
