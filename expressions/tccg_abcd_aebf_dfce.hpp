// SPDX-License-Identifier: MIT
// TCCG abcd-aebf-dfce: C(a,b,c,d) = +_{e,f} A(a,e,b,f) * B(d,f,c,e);  md_hom(*, (++x4, pw(+)x2)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TCCG's ijkl-imjn-lnkm (CCSD): both reduction indices sit between output indices in A, and B holds
// them in the opposite order; sizes (a, b, c, d, e, f).
template <class T = float>
auto tccg_abcd_aebf_dfce() {
  auto [a, b, c, d, e, f] = indices<6>();
  return computation("tccg_abcd_aebf_dfce", out_view(out<T, "C">(a, b, c, d)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, pw(add), pw(add)),
                     inp_view(in<T, "A">(a, e, b, f), in<T, "B">(d, f, c, e)))
      .with_dim_names({"a", "b", "c", "d", "e", "f"});
}

}  // namespace mdh::ops
