// SPDX-License-Identifier: MIT
// ExpandDims<axis, D>: OB1(i1..i_axis, 0, i_axis+1..iD) = IB1(i1..iD);  md_hom(id, (++1..++D)).
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TensorFlow's ExpandDims (SC21 Table I): inserts an extent-1 dimension at position Axis
// (0..D) of a rank-D tensor, purely through the out_view. Sizes (i1, ..., iD).
template <std::size_t Axis, std::size_t D, class T = float>
auto expand_dims() {
  static_assert(D >= 1 && D + 1 <= max_rank,
                "mdh::ops::expand_dims<Axis, D>() requires 1 <= 'D' < mdh::max_rank");
  static_assert(Axis <= D, "mdh::ops::expand_dims<Axis, D>() requires 'Axis' <= 'D'");
  constexpr auto idx = indices<D>();
  // Output coordinate K: the input's dimensions with a constant 0 at position Axis.
  auto coord = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    if constexpr (K < Axis)
      return std::get<K>(idx);
    else if constexpr (K == Axis)
      return 0;
    else
      return std::get<K - 1>(idx);
  };
  std::vector<std::string> names;
  for (std::size_t d = 1; d <= D; ++d) names.push_back("i" + std::to_string(d));
  return [&]<std::size_t... K, std::size_t... L>(std::index_sequence<K...>,
                                                 std::index_sequence<L...>) {
    return computation("expand_dims",
                       out_view(out<T, "OB1">(coord(std::integral_constant<std::size_t, K>{})...)),
                       md_hom([](auto x) { return x; }, ((void)L, cc)...),
                       inp_view(in<T, "IB1">(std::get<L>(idx)...)));
  }
  (std::make_index_sequence<D + 1>{}, std::make_index_sequence<D>{})
      .with_dim_names(std::move(names));
}

}  // namespace mdh::ops
