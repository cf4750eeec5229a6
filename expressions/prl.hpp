// SPDX-License-Identifier: MIT
// PRL: (M_w(i), M_id(i)) = max_PRL_j wght(N(i), E(j)); md_hom(wght, (++, pw(max_PRL))) over (i, j).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>

#include <mdh/error.hpp>
#include <mdh/mdh.hpp>

namespace mdh::ops {

// Fellegi-Sunter weights of one record field: log2(m/u) when the field agrees, log2((1-m)/(1-u))
// when it does not (m: P(agree | match), u: P(agree | non-match)).
struct prl_field {
  float agree;
  float disagree;
  static prl_field from_probabilities(double m, double u) {
    if (!(m > 0 && m < 1 && u > 0 && u < 1))
      throw error("mdh::ops::prl_field: m and u must lie in (0, 1)");
    return {float(std::log2(m / u)), float(std::log2((1 - m) / (1 - u)))};
  }
};

// max_PRL: the larger weight wins, a tie goes to the smaller id. A lexicographic maximum over
// (weight, -id), so associative and commutative; identity (-inf, INT32_MAX).
inline auto max_prl() {
  return custom(
      "max_prl",
      [](auto lhs, auto rhs) {
        auto [wl, il] = lhs;
        auto [wr, ir] = rhs;
        auto take_rhs = (wr > wl) || ((wr == wl) && (ir < il));
        return std::make_tuple(select(take_rhs, wr, wl), select(take_rhs, ir, il));
      },
      -std::numeric_limits<double>::infinity(), std::numeric_limits<std::int32_t>::max());
}

// Probabilistic record linkage (PACT'19, TOPLAS Fig. 20): for every new record i, the best
// match among the existing records j and its weight. A record has two fields of type T
// (N0/N1 for new records, E0/E1 for existing ones) and existing records carry an id E_id.
// Sizes (i, j).
template <class T = std::int32_t>
auto prl(prl_field f0 = prl_field::from_probabilities(0.95, 0.01),
         prl_field f1 = prl_field::from_probabilities(0.9, 0.1)) {
  auto [i, j] = indices<2>();
  return computation("prl", out_view(out<float, "M_w">(i), out<std::int32_t, "M_id">(i)),
                     md_hom(
                         [f0, f1](auto n0, auto n1, auto e0, auto e1, auto id) {
                           auto w = select(n0 == e0, f0.agree, f0.disagree) +
                                    select(n1 == e1, f1.agree, f1.disagree);
                           return std::make_tuple(w, id);
                         },
                         cc, pw(max_prl())),
                     inp_view(in<T, "N0">(i), in<T, "N1">(i), in<T, "E0">(j), in<T, "E1">(j),
                              in<std::int32_t, "E_id">(j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
