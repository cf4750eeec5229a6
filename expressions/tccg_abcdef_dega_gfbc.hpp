// SPDX-License-Identifier: MIT
// TCCG abcdef-dega-gfbc: C(a,b,c,d,e,f) = +_g A(d,e,g,a) * B(g,f,b,c);  md_hom(*, (++x6, pw(+))).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TCCG's abcijk-ijma-mkbc (CCSD(T)): a 6-D result, the reduction index in the middle of A and
// leading B; sizes (a, b, c, d, e, f, g).
template <class T = float>
auto tccg_abcdef_dega_gfbc() {
  auto [a, b, c, d, e, f, g] = indices<7>();
  return computation("tccg_abcdef_dega_gfbc", out_view(out<T, "C">(a, b, c, d, e, f)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, cc, cc, pw(add)),
                     inp_view(in<T, "A">(d, e, g, a), in<T, "B">(g, f, b, c)))
      .with_dim_names({"a", "b", "c", "d", "e", "f", "g"});
}

}  // namespace mdh::ops
