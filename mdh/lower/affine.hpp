// SPDX-License-Identifier: MIT
// An access of a global buffer as one affine function of the iteration point: the flat element
// offset sum_d coeff[d] * e_d + constant (the access's index functions folded with the strides).
#pragma once

#include <cstdint>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower {

struct flat_access {
  std::vector<std::int64_t> coeff;  // per dimension of the computation
  std::int64_t constant = 0;
};

inline flat_access flatten(const ir::access& a, const global_buffer& g, std::size_t rank) {
  flat_access f;
  f.coeff.assign(rank, 0);
  for (std::size_t k = 0; k < a.index.size(); ++k) {
    for (std::size_t d = 0; d < rank; ++d) f.coeff[d] += a.index[k].coeff[d] * g.stride[k];
    f.constant += a.index[k].offset * g.stride[k];
  }
  return f;
}

}  // namespace mdh::lower
