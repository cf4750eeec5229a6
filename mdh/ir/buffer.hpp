// SPDX-License-Identifier: MIT
// A buffer of a computation: element type, rank and the affine index functions through which
// the computation reads or writes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mdh/ir/scalar_type.hpp>

namespace mdh::ir {

// One coordinate of an index function: sum_d coeff[d] * i_d + offset.
struct affine {
  std::vector<std::int64_t> coeff;  // one per md_hom dimension
  std::int64_t offset = 0;
  bool uses(std::size_t d) const { return d < coeff.size() && coeff[d] != 0; }
  friend bool operator==(const affine&, const affine&) = default;
};

// One access of a buffer: an index function from the iteration point to a buffer coordinate.
struct access {
  std::vector<affine> index;  // one per buffer dimension
  friend bool operator==(const access&, const access&) = default;
};

struct buffer {
  std::string name;
  scalar_type type = scalar_type::f32;
  std::size_t rank = 0;
  std::vector<access> accesses;  // input: read in this order; output: every access is written
  friend bool operator==(const buffer&, const buffer&) = default;
};

}  // namespace mdh::ir
