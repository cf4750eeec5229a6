// SPDX-License-Identifier: MIT
// Jacobi2D (5-point): y(i,j) = c * (x(i+1,j+1) + x(i,j+1) + x(i+2,j+1) + x(i+1,j) + x(i+1,j+2)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// 5-point Jacobi step, md_hom(J_2D, (++, ++)); y is the interior: sizes (i, j) = (N-2, M-2).
template <class T = float>
auto jacobi2d(compute_type_t<T> c = compute_type_t<T>(1) / compute_type_t<T>(5)) {
  auto [i, j] = indices<2>();
  return computation(
             "jacobi2d", out_view(out<T, "y">(i, j)),
             md_hom([c](auto ctr, auto n, auto s, auto w,
                        auto e) { return c * (ctr + n + s + w + e); },
                    cc, cc),
             inp_view(in<T, "x">(i + 1, j + 1), in<T, "x">(i, j + 1), in<T, "x">(i + 2, j + 1),
                      in<T, "x">(i + 1, j), in<T, "x">(i + 1, j + 2)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
