// SPDX-License-Identifier: MIT
// Tuning your own expression: this program is mdh-tune for one operator the library does not ship,
// a row-wise squared distance to a reference vector, d[i] = +_j (X[i,j] - r[j])^2 * w[j].
//   02_custom_expression list
//   02_custom_expression tune sqdist --sizes 4096,512 --time 30 --out params
//   02_custom_expression run sqdist --sizes 4096,512 --params params
#include <mdh/mdh.hpp>
#include <tools/cli.hpp>

auto sqdist() {
  using namespace mdh;
  auto [i, j] = indices<2>();
  return computation(
      "sqdist", out_view(out<float, "d">(i)),
      md_hom([](auto x, auto r, auto w) { return (x - r) * (x - r) * w; }, cc, pw(add)),
      inp_view(in<float, "X">(i, j), in<float, "r">(j), in<float, "w">(j)));
}

int main(int argc, char** argv) {
  return mdh::tuning::cli::main(
      argc, argv,
      mdh::tuning::cli::one_operator(
          {"sqdist", "d[i] = +_j (X[i,j] - r[j])^2 * w[j]", "i,j", {4096, 512}},
          [](const auto&) { return sqdist(); }));
}
