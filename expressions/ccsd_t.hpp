// SPDX-License-Identifier: MIT
// CCSD(T) abcdef-gdab-efgc: C(a,b,c,d,e,f) = +_g A(g,d,a,b) * B(e,f,g,c); md_hom(*, (++x6, pw(+))).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// One of the TCCG CCSD(T) tensor contractions of TOPLAS Fig. 19; sizes (a, b, c, d, e, f, g).
template <class T = float>
auto ccsd_t() {
  auto [a, b, c, d, e, f, g] = indices<7>();
  return computation("ccsd_t_abcdef_gdab_efgc", out_view(out<T, "C">(a, b, c, d, e, f)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, cc, cc, pw(add)),
                     inp_view(in<T, "A">(g, d, a, b), in<T, "B">(e, f, g, c)))
      .with_dim_names({"a", "b", "c", "d", "e", "f", "g"});
}

}  // namespace mdh::ops
