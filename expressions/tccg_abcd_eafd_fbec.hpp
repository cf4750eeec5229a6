// SPDX-License-Identifier: MIT
// TCCG abcd-eafd-fbec: C(a,b,c,d) = +_{e,f} A(e,a,f,d) * B(f,b,e,c);  md_hom(*, (++x4, pw(+)x2)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TCCG's ijkl-minl-njmk (CCSD): A leads with a reduction index and ends with the output's innermost
// d; sizes (a, b, c, d, e, f).
template <class T = float>
auto tccg_abcd_eafd_fbec() {
  auto [a, b, c, d, e, f] = indices<6>();
  return computation("tccg_abcd_eafd_fbec", out_view(out<T, "C">(a, b, c, d)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, pw(add), pw(add)),
                     inp_view(in<T, "A">(e, a, f, d), in<T, "B">(f, b, e, c)))
      .with_dim_names({"a", "b", "c", "d", "e", "f"});
}

}  // namespace mdh::ops
