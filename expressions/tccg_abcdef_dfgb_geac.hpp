// SPDX-License-Identifier: MIT
// TCCG abcdef-dfgb-geac: C(a,b,c,d,e,f) = +_g A(d,f,g,b) * B(g,e,a,c);  md_hom(*, (++x6, pw(+))).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TCCG's abcijk-ikmb-mjac (CCSD(T)): like abcdef-dega-gfbc with the output's e and f, and a and b,
// interleaved across the inputs; sizes (a, b, c, d, e, f, g).
template <class T = float>
auto tccg_abcdef_dfgb_geac() {
  auto [a, b, c, d, e, f, g] = indices<7>();
  return computation("tccg_abcdef_dfgb_geac", out_view(out<T, "C">(a, b, c, d, e, f)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, cc, cc, pw(add)),
                     inp_view(in<T, "A">(d, f, g, b), in<T, "B">(g, e, a, c)))
      .with_dim_names({"a", "b", "c", "d", "e", "f", "g"});
}

}  // namespace mdh::ops
