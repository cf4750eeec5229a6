// SPDX-License-Identifier: MIT
// MBBS: Y(i) = +_{i' <= i} +_j X(i', j);  md_hom(id, (ps(+), pw(+))) over (i, j).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The bottom-box sums of maximum bottom box sum (TOPLAS Fig. 14): a prefix sum over rows of
// the row sums. Sizes (i, j).
template <class T = float>
auto mbbs() {
  auto [i, j] = indices<2>();
  return computation("mbbs", out_view(out<T, "Y">(i)),
                     md_hom([](auto x) { return x; }, ps(add), pw(add)), inp_view(in<T, "X">(i, j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
