// SPDX-License-Identifier: MIT
// Sub: OB1(i,j) = IB1(i,j) - IB2(i,j);  md_hom(-, (++, ++)) over (i, j).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TensorFlow's Sub on two matrices of equal shape (SC21 Table I); sizes (i, j).
template <class T = float>
auto subtract() {
  auto [i, j] = indices<2>();
  return computation("sub", out_view(out<T, "OB1">(i, j)),
                     md_hom([](auto a, auto b) { return a - b; }, cc, cc),
                     inp_view(in<T, "IB1">(i, j), in<T, "IB2">(i, j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
