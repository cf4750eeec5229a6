// SPDX-License-Identifier: MIT
// Histogram: Out(b) = +_e select(Elems(e) == Bins(b), 1, 0);  md_hom(f, (pw(+), ++)) over (e, b).
#pragma once

#include <cstdint>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Counts, for every bin value Bins(b), the elements equal to it (TOPLAS Fig. 14, Histo);
// int32 counts. Sizes (e, b).
template <class T = std::int32_t>
auto histogram() {
  auto [e, b] = indices<2>();
  return computation("histogram", out_view(out<std::int32_t, "Out">(b)),
                     md_hom([](auto x, auto bin) { return select(x == bin, 1, 0); }, pw(add), cc),
                     inp_view(in<T, "Elems">(e), in<T, "Bins">(b)))
      .with_dim_names({"e", "b"});
}

}  // namespace mdh::ops
