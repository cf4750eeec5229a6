// SPDX-License-Identifier: MIT
// Jacobi3D (7-point): y(i,j,k) = c * (x(i+1,j+1,k+1) + 6 neighbours);  md_hom(J_3D, (++,++,++)).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// 7-point Jacobi step: seven accesses of one buffer, the centre first, then the neighbours at
// offsets 0 and 2 in i, j, k. y is the interior: sizes (i, j, k) = (N-2, N-2, N-2).
template <class T = float>
auto jacobi3d(compute_type_t<T> c = compute_type_t<T>(1) / compute_type_t<T>(7)) {
  auto [i, j, k] = indices<3>();
  return computation("jacobi3d", out_view(out<T, "y">(i, j, k)),
                     md_hom([c](auto ctr, auto im, auto ip, auto jm, auto jp, auto km,
                                auto kp) { return c * (ctr + im + ip + jm + jp + km + kp); },
                            cc, cc, cc),
                     inp_view(in<T, "x">(i + 1, j + 1, k + 1), in<T, "x">(i, j + 1, k + 1),
                              in<T, "x">(i + 2, j + 1, k + 1), in<T, "x">(i + 1, j, k + 1),
                              in<T, "x">(i + 1, j + 2, k + 1), in<T, "x">(i + 1, j + 1, k),
                              in<T, "x">(i + 1, j + 1, k + 2)))
      .with_dim_names({"i", "j", "k"});
}

}  // namespace mdh::ops
