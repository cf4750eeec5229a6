// SPDX-License-Identifier: MIT
// Invalid expressions, one per CASE; each must fail to compile with its static_assert message.
#include <mdh/mdh.hpp>

using namespace mdh;

int main() {
  auto [i, j, k] = indices<3>();
  auto times = [](auto a, auto b) { return a * b; };
  (void)i, (void)j, (void)k, (void)times;
#if CASE == 0  // the correct twin
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 1   // placeholder l (dimension 3) in a 3-dimensional md_hom
  auto [a, b, c0, l] = indices<4>();
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float>("A")(i, l), in<float>("B")(k, j)));
#elif CASE == 2   // output indexed by the reduction dimension k
  auto c = computation(out_view(out<float>("C")(i, k)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 3   // f takes one argument, inp_view has two accesses
  auto c = computation(out_view(out<float>("C")(i, j)),
                       md_hom([](auto a) { return a; }, cc, cc, pw(add)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 4   // f returns two values, out_view has one buffer
  auto c =
      computation(out_view(out<float>("C")(i, j)),
                  md_hom([](auto a, auto b) { return std::make_tuple(a, b); }, cc, cc, pw(add)),
                  inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 5   // pw(add) with pw(mul): not a homomorphism
  auto c = computation(out_view(out<float>("C")(i)), md_hom(times, cc, pw(add), pw(mul)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 6   // two prefix-sum dimensions
  auto c = computation(out_view(out<float>("C")(i, j, k)), md_hom(times, ps(add), ps(add), cc),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 7   // `add` is a reduction operator, not a combine operator
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, add),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 8   // char is not an element type
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, pw(add)),
                       inp_view(in<char>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 9   // pw of something that is not an operator
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, pw(42)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#elif CASE == 10  // custom operator with two identities for one output
  auto op = custom(
      "pair", [](auto a, auto b) { return a + b; }, 0.0, 0.0);
  auto c = computation(out_view(out<float>("C")(i, j)), md_hom(times, cc, cc, pw(op)),
                       inp_view(in<float>("A")(i, k), in<float>("B")(k, j)));
#endif
  (void)c;
}
