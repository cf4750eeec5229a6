// SPDX-License-Identifier: MIT
// Scan: Y(i) = X(0) op X(1) op ... op X(i);  md_hom(id, (ps(op))) over (i).
#pragma once

#include <string>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Inclusive prefix sum with operator op (add by default; mul, max, min or a custom operator).
template <class T = float, class Op = add_t>
auto scan(Op op = {}, std::string name = "scan") {
  auto [i] = indices<1>();
  return computation(std::move(name), out_view(out<T, "Y">(i)),
                     md_hom([](auto x) { return x; }, ps(op)), inp_view(in<T, "X">(i)))
      .with_dim_names({"i"});
}

}  // namespace mdh::ops
