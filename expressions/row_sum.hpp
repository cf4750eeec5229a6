// SPDX-License-Identifier: MIT
// Row sums: Y(i) = +_j X(i,j);  md_hom(id, (++, pw(+))) over (i, j).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// The sum of every row of a row-major matrix (torch X.sum(1)); the column sums are
// bias_add_grad. Sizes (i, j): rows, columns.
template <class T = float>
auto row_sum() {
  auto [i, j] = indices<2>();
  return computation("row_sum", out_view(out<T, "Y">(i)),
                     md_hom([](auto x) { return x; }, cc, pw(add)), inp_view(in<T, "X">(i, j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
