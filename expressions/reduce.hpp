// SPDX-License-Identifier: MIT
// Reduce: Y() = X(0) op X(1) op ... op X(N-1);  md_hom(id, (pw(op))) over (i).
#pragma once

#include <string>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// Reduction of a vector to one value with op (add by default; mul, max, min or a custom one).
template <class T = float, class Op = add_t>
auto reduce(Op op = {}, std::string name = "reduce") {
  auto [i] = indices<1>();
  return computation(std::move(name), out_view(out<T, "Y">()),
                     md_hom([](auto x) { return x; }, pw(op)), inp_view(in<T, "X">(i)))
      .with_dim_names({"i"});
}

}  // namespace mdh::ops
