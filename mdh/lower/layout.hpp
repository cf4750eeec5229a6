// SPDX-License-Identifier: MIT
// mdh::layout: a function from coordinates to offsets given as shape:stride (CuTe's notation,
// flat modes). The one statement of "thread/slot -> element" (dim_plan::elements) and of "box
// coordinate -> shared-memory offset" (smem_tile::box); the C printer evaluates layouts
// symbolically (symbolic_terms), simulate() and to_string(plan) numerically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mdh/error.hpp>

namespace mdh {

struct layout {
  std::vector<std::int64_t> shape, stride;  // one entry per mode

  std::size_t rank() const { return shape.size(); }
  // Coordinates: the domain's size, the product of the shape.
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  // One past the largest offset (non-negative strides).
  std::int64_t cosize() const {
    std::int64_t hi = 0;
    for (std::size_t i = 0; i < rank(); ++i) hi += (shape[i] - 1) * stride[i];
    return hi + 1;
  }
  // The offset of a coordinate (one entry per mode; entries may lie outside the shape: the
  // printer's guards decide validity, the layout only maps).
  std::int64_t operator()(const std::vector<std::int64_t>& coord) const {
    if (coord.size() != rank())
      throw internal_error("layout of rank " + std::to_string(rank()) + " given " +
                           std::to_string(coord.size()) + " coordinates");
    std::int64_t o = 0;
    for (std::size_t i = 0; i < rank(); ++i) o += coord[i] * stride[i];
    return o;
  }
  // The coordinate of a linear index, the first mode fastest (CuTe's order).
  std::vector<std::int64_t> coordinate(std::int64_t index) const {
    std::vector<std::int64_t> c(rank());
    for (std::size_t i = 0; i < rank(); ++i) c[i] = index % shape[i], index /= shape[i];
    return c;
  }
  std::int64_t at(std::int64_t index) const { return (*this)(coordinate(index)); }
  // Modes [first, last) as a layout of their own.
  layout modes(std::size_t first, std::size_t last) const {
    return {{shape.begin() + std::ptrdiff_t(first), shape.begin() + std::ptrdiff_t(last)},
            {stride.begin() + std::ptrdiff_t(first), stride.begin() + std::ptrdiff_t(last)}};
  }
  friend bool operator==(const layout&, const layout&) = default;
};

// The modes of a, then those of b: (a, b) -> a(a-part) + b(b-part).
inline layout concat(const layout& a, const layout& b) {
  layout r = a;
  r.shape.insert(r.shape.end(), b.shape.begin(), b.shape.end());
  r.stride.insert(r.stride.end(), b.stride.begin(), b.stride.end());
  return r;
}

// Dense row-major over `shape` (the last mode contiguous).
inline layout row_major(const std::vector<std::int64_t>& shape) {
  layout l{shape, std::vector<std::int64_t>(shape.size(), 1)};
  for (std::size_t i = shape.size(); i-- > 1;) l.stride[i - 1] = l.stride[i] * shape[i];
  return l;
}

// a o b: the layout i -> a.at(b.at(i)) with b's shape, where b's offsets are linear indices into
// a's domain. Each mode (s:d) of b selects s elements d apart in a's linear order, which must
// fall on a's modes evenly (CuTe's divisibility condition); otherwise this throws.
inline layout compose(const layout& a, const layout& b) {
  layout r;
  for (std::size_t j = 0; j < b.rank(); ++j) {
    std::int64_t skip = b.stride[j], need = b.shape[j];
    // a with its first modes divided by the stride
    std::vector<std::int64_t> sh, st;
    for (std::size_t i = 0; i < a.rank(); ++i) {
      std::int64_t s = a.shape[i], t = a.stride[i];
      if (skip > 1) {
        if (skip >= s) {
          if (skip % s != 0) throw internal_error("compose: stride does not divide the shape");
          skip /= s;
          continue;
        }
        if (s % skip != 0) throw internal_error("compose: stride does not divide the shape");
        s /= skip, t *= skip, skip = 1;
      }
      sh.push_back(s), st.push_back(t);
    }
    // the first `need` elements of what remains, as modes of their own
    const std::size_t before = r.rank();
    for (std::size_t i = 0; i < sh.size() && need > 1; ++i) {
      const bool last = i + 1 == sh.size();
      if (need <= sh[i] || last) {
        if (!last && sh[i] % need != 0)
          throw internal_error("compose: shape does not divide the layout's mode");
        r.shape.push_back(need), r.stride.push_back(st[i]), need = 1;
      } else {
        if (need % sh[i] != 0)
          throw internal_error("compose: shape does not divide the layout's mode");
        r.shape.push_back(sh[i]), r.stride.push_back(st[i]), need /= sh[i];
      }
    }
    if (r.rank() == before) r.shape.push_back(b.shape[j]), r.stride.push_back(0);
  }
  return r;
}

// "(4,8):(8,1)"
inline std::string to_string(const layout& l) {
  std::string s = "(", t = "(";
  for (std::size_t i = 0; i < l.rank(); ++i) {
    s += (i ? "," : "") + std::to_string(l.shape[i]);
    t += (i ? "," : "") + std::to_string(l.stride[i]);
  }
  return s + "):" + t + ")";
}

// A coordinate as C source: `atomic` when it can be scaled without parentheses (an identifier).
struct symbolic_coord {
  std::string text;
  bool atomic = true;
};

// The layout at symbolic coordinates, one term per mode: "" for a mode of extent 1, the
// coordinate for stride 1, else "coord * stride". With every_mode, each term is "coord * stride"
// whatever the extent and stride.
inline std::vector<std::string> symbolic_terms(const layout& l,
                                               const std::vector<symbolic_coord>& coord,
                                               bool every_mode = false) {
  if (coord.size() != l.rank())
    throw internal_error("symbolic_terms: layout of rank " + std::to_string(l.rank()) + " given " +
                         std::to_string(coord.size()) + " coordinates");
  std::vector<std::string> terms;
  for (std::size_t i = 0; i < l.rank(); ++i) {
    const std::string c = coord[i].atomic ? coord[i].text : "(" + coord[i].text + ")";
    if (every_mode)
      terms.push_back(c + " * " + std::to_string(l.stride[i]));
    else if (l.shape[i] == 1)
      terms.emplace_back();
    else
      terms.push_back(l.stride[i] == 1 ? coord[i].text : c + " * " + std::to_string(l.stride[i]));
  }
  return terms;
}

}  // namespace mdh
