// SPDX-License-Identifier: MIT
// Dot: C() = +_k A(k) * B(k);  md_hom(*, (pw(+))) over (k).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Inner product of two vectors of length K; sizes (k).
template <class T = float>
auto dot() {
  auto [k] = indices<1>();
  return computation("dot", out_view(out<T, "C">()),
                     md_hom([](auto a, auto b) { return a * b; }, pw(add)),
                     inp_view(in<T, "A">(k), in<T, "B">(k)))
      .with_dim_names({"k"});
}

}  // namespace mdh::ops
