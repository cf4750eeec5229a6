// SPDX-License-Identifier: MIT
// Invalid expressions, one per CASE; each must fail to compile with its static_assert message.
#include <cmath>

#include <mdh/mdh.hpp>

using namespace mdh;

int main() {
  auto [i, j, k] = indices<3>();
  auto times = [](auto a, auto b) { return a * b; };
  (void)i, (void)j, (void)k, (void)times;
#if CASE == 0  // the correct twin
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  // A float (or double) result into a bf16/f16 output is rounded once on purpose: not narrowing.
  auto bf16_matmul = computation(out_view(out<bf16, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                                 inp_view(in<bf16, "A">(i, k), in<bf16, "B">(k, j)));
  auto f16_out = computation(out_view(out<f16, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                             inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  auto double_into_bf16 =
      computation(out_view(out<bf16, "C">(i, j)), md_hom([](auto a) { return a * 0.5; }, cc, cc),
                  inp_view(in<float, "A">(i, j)));
  (void)bf16_matmul, (void)f16_out, (void)double_into_bf16;
  // an epilogue: C read in registers, plus a bias of its own (the twin of cases 25 to 30)
  auto bias = computation(out_view(out<float, "Y">(i, j)),
                          md_hom([](auto x, auto b) { return x + b; }, cc, cc),
                          inp_view(in<float, "C">(i, j), in<float, "b">(j)));
  auto gemm_bias = with_epilogue("gemm_bias", c, bias);
  (void)gemm_bias;
#elif CASE == 1   // placeholder l (dimension 3) in a 3-dimensional md_hom
  auto [a, b, c0, l] = indices<4>();
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, l), in<float, "B">(k, j)));
#elif CASE == 2   // output indexed by the reduction dimension k
  auto c = computation(out_view(out<float, "C">(i, k)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 3   // f takes one argument, inp_view has two accesses
  auto c = computation(out_view(out<float, "C">(i, j)),
                       md_hom([](auto a) { return a; }, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 4   // f returns two values, out_view has one buffer
  auto c =
      computation(out_view(out<float, "C">(i, j)),
                  md_hom([](auto a, auto b) { return std::make_tuple(a, b); }, cc, cc, pw(add)),
                  inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 5   // pw(add) with pw(mul): not a homomorphism
  auto c = computation(out_view(out<float, "C">(i)), md_hom(times, cc, pw(add), pw(mul)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 6   // two prefix-sum dimensions
  auto c = computation(out_view(out<float, "C">(i, j, k)), md_hom(times, ps(add), ps(add), cc),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 7   // `add` is a reduction operator, not a combine operator
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, add),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 8   // char is not an element type
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<char, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 9   // pw of something that is not an operator
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(42)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 10  // custom operator with two identities for one output
  auto op = custom(
      "pair", [](auto a, auto b) { return a + b; }, 0.0, 0.0);
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(op)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 11  // C(i) over cc, cc, pw: every j would write its result to the same C(i)
  auto c = computation(out_view(out<float, "C">(i)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 12  // cc dimension k used by no index function
  auto c =
      computation(out_view(out<float, "C">(i, j)), md_hom([](auto a) { return a; }, cc, cc, cc),
                  inp_view(in<float, "A">(i, j)));
#elif CASE == 13  // a float result silently truncated into an int32 output
  auto c = computation(out_view(out<std::int32_t, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 14  // x * 0.5 computes in double: narrowing into a float output
  auto c =
      computation(out_view(out<float, "C">(i, j)), md_hom([](auto a) { return a * 0.5; }, cc, cc),
                  inp_view(in<float, "A">(i, j)));
#elif CASE == 15  // input A with two element types
  auto c = computation(out_view(out<double, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<double, "A">(k, j)));
#elif CASE == 16  // input A with two ranks
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "A">(k, j, 0)));
#elif CASE == 17  // output C named twice
  auto c = computation(
      out_view(out<float, "C">(i, j), out<float, "C">(i, j)),
      md_hom([](auto a, auto b) { return std::make_tuple(a * b, a + b); }, cc, cc, pw(add)),
      inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 18  // output named like an input
  auto c = computation(out_view(out<float, "A">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 19  // std::exp on a symbolic value
  auto c = computation(out_view(out<float, "C">(i, j)),
                       md_hom([](auto a, auto b) { return std::exp(a) * b; }, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 20  // ?: on a symbolic comparison
  auto c = computation(out_view(out<float, "C">(i, j)),
                       md_hom([](auto a, auto b) { return a > b ? a : b; }, cc, cc, pw(max)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
#elif CASE == 21  // a product of placeholders is not affine
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i * k), in<float, "B">(k, j)));
#elif CASE == 22  // a fractional coefficient would be truncated to an integer
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float, "A">(i, k), in<float, "B">(0.5 * k, j)));
#elif CASE == 23  // the run-time spelling of earlier versions
  auto c = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float>("A")(i, k), in<float, "B">(k, j)));
#elif CASE == 24  // bf16 inputs compute in float: still narrowing into an int32 output
  auto c = computation(out_view(out<std::int32_t, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<bf16, "A">(i, k), in<bf16, "B">(k, j)));
#elif CASE >= 25 && CASE <= 30  // epilogues after matmul (mdh::with_epilogue)
  auto mm = computation(out_view(out<float, "C">(i, j)), md_hom(times, cc, cc, pw(add)),
                        inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  auto plus = [](auto x, auto b) { return x + b; };
#if CASE == 25    // shape mismatch: three dimensions after a product whose results span two
  auto e = computation(out_view(out<float, "Y">(i, j, k)), md_hom(plus, cc, cc, cc),
                       inp_view(in<float, "C">(i, j), in<float, "b">(k)));
#elif CASE == 26  // reads "D", which matmul does not write
  auto e = computation(out_view(out<float, "Y">(i, j)), md_hom(plus, cc, cc),
                       inp_view(in<float, "D">(i, j), in<float, "b">(j)));
#elif CASE == 27  // not point-wise: a row sum is no epilogue
  auto e = computation(out_view(out<float, "Y">(i)), md_hom(plus, cc, pw(add)),
                       inp_view(in<float, "C">(i, j), in<float, "b">(j)));
#elif CASE == 28  // reads matmul's input A
  auto e = computation(out_view(out<float, "Y">(i, j)), md_hom(plus, cc, cc),
                       inp_view(in<float, "C">(i, j), in<float, "A">(i, j)));
#elif CASE == 29  // reads C as double
  auto e = computation(out_view(out<double, "Y">(i, j)), md_hom(plus, cc, cc),
                       inp_view(in<double, "C">(i, j), in<double, "b">(j)));
#elif CASE == 30  // writes matmul's input A
  auto e = computation(out_view(out<float, "A">(i, j)), md_hom(plus, cc, cc),
                       inp_view(in<float, "C">(i, j), in<float, "b">(j)));
#endif
  auto c = with_epilogue("bad", mm, e);
#endif
  (void)c;
}
