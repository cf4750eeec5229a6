// SPDX-License-Identifier: MIT
// MatVec: w(i) = +_k M(i,k) * v(k);  md_hom(*, (++, pw(+))) over (i, k).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Matrix-vector product, M row-major I x K; sizes (i, k).
template <class T = float>
auto matvec() {
  auto [i, k] = indices<2>();
  return computation("matvec", out_view(out<T, "w">(i)),
                     md_hom([](auto m, auto v) { return m * v; }, cc, pw(add)),
                     inp_view(in<T, "M">(i, k), in<T, "v">(k)))
      .with_dim_names({"i", "k"});
}

}  // namespace mdh::ops
