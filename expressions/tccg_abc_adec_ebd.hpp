// SPDX-License-Identifier: MIT
// TCCG abc-adec-ebd: C(a,b,c) = +_{d,e} A(a,d,e,c) * B(e,b,d);  md_hom(*, (++x3, pw(+)x2)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TCCG's ijk-ilmk-mjl (CCSD): a 3-D result of a 4-D and a 3-D tensor, the reduction indices in the
// middle of A and reversed in B; sizes (a, b, c, d, e).
template <class T = float>
auto tccg_abc_adec_ebd() {
  auto [a, b, c, d, e] = indices<5>();
  return computation("tccg_abc_adec_ebd", out_view(out<T, "C">(a, b, c)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, pw(add), pw(add)),
                     inp_view(in<T, "A">(a, d, e, c), in<T, "B">(e, b, d)))
      .with_dim_names({"a", "b", "c", "d", "e"});
}

}  // namespace mdh::ops
