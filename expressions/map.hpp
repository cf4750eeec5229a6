// SPDX-License-Identifier: MIT
// Map: Y(i) = f(X(i));  md_hom(f, (++)) over (i).
#pragma once

#include <string>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Element-wise f: X of type T to Y of type U. f is a generic lambda written with mdh's math
// functions (mdh::exp, mdh::select, ...), e.g. map([](auto x) { return x * x; }).
template <class T = float, class U = T, class F>
auto map(F f, std::string name = "map") {
  auto [i] = indices<1>();
  return computation(std::move(name), out_view(out<U, "Y">(i)), md_hom(std::move(f), cc),
                     inp_view(in<T, "X">(i)))
      .with_dim_names({"i"});
}

}  // namespace mdh::ops
