// SPDX-License-Identifier: MIT
// Jacobi1D: y(i) = c * (x(i) + x(i+1) + x(i+2));  md_hom(J_1D, (++)) over the interior (i).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// 3-point Jacobi step: three accesses of one buffer. Size (i) = N - 2 for an x of length N.
template <class T = float>
auto jacobi1d(compute_type_t<T> c = compute_type_t<T>(1) / compute_type_t<T>(3)) {
  auto [i] = indices<1>();
  return computation("jacobi1d", out_view(out<T, "y">(i)),
                     md_hom([c](auto l, auto m, auto r) { return c * (l + m + r); }, cc),
                     inp_view(in<T, "x">(i), in<T, "x">(i + 1), in<T, "x">(i + 2)))
      .with_dim_names({"i"});
}

}  // namespace mdh::ops
