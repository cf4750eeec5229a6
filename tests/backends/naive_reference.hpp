// SPDX-License-Identifier: MIT
// Test support: typed host buffers, a naive interpreter of the IR (the oracle until
// mdh::reference exists), and comparison with a stated tolerance.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <mdh/ir/computation.hpp>
#include <mdh/ir/evaluate.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/tensor.hpp>

namespace mdh::test {

// A dense host array of any IR element type, stored as bytes.
struct host_buffer {
  scalar_type type = scalar_type::f32;
  shape_t shape;
  std::vector<unsigned char> bytes;

  host_buffer() = default;
  host_buffer(scalar_type t, shape_t s) : type(t), shape(std::move(s)) {
    bytes.assign(std::size_t(element_count(shape)) * size_of(t), 0);
  }
  std::int64_t size() const { return element_count(shape); }
  double get(std::int64_t k) const {
    const void* p = bytes.data() + std::size_t(k) * size_of(type);
    switch (type) {
      case scalar_type::f32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case scalar_type::f64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
      case scalar_type::i32: {
        std::int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case scalar_type::i64: {
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return double(v);
      }
      case scalar_type::boolean:
        return *static_cast<const unsigned char*>(p) != 0;
      case scalar_type::bf16:
      case scalar_type::f16: {
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return type == scalar_type::bf16 ? bf16_bits_to_float(v) : f16_bits_to_float(v);
      }
    }
    return 0;
  }
  void set(std::int64_t k, double x) {
    void* p = bytes.data() + std::size_t(k) * size_of(type);
    switch (type) {
      case scalar_type::f32: {
        float v = float(x);
        std::memcpy(p, &v, 4);
        break;
      }
      case scalar_type::f64:
        std::memcpy(p, &x, 8);
        break;
      case scalar_type::i32: {
        std::int32_t v = std::int32_t(x);
        std::memcpy(p, &v, 4);
        break;
      }
      case scalar_type::i64: {
        std::int64_t v = std::int64_t(x);
        std::memcpy(p, &v, 8);
        break;
      }
      case scalar_type::boolean:
        *static_cast<unsigned char*>(p) = x != 0;
        break;
      case scalar_type::bf16:
      case scalar_type::f16: {
        std::uint16_t v = type == scalar_type::bf16 ? bf16_bits_from(x) : f16_bits_from(x);
        std::memcpy(p, &v, 2);
        break;
      }
    }
  }
  // Non-zero random values; integers in [-20, 20], floats in [-1, 1] (quantized to 1/8 when
  // `ties`, so max/count operators see equal values).
  void randomize(std::uint64_t seed, bool ties = false) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::uniform_int_distribution<int> ui(-20, 20);
    for (std::int64_t k = 0; k < size(); ++k) {
      double v = 0;
      while (v == 0) {
        if (is_floating(type))
          v = ties ? std::round(u(rng) * 8) / 8 : u(rng);
        else
          v = ui(rng);
      }
      set(k, v);
    }
  }
  // Poison: NaN for floats, a sentinel for integers.
  void poison() {
    for (std::int64_t k = 0; k < size(); ++k) set(k, is_floating(type) ? std::nan("") : -123456789);
  }
  operator buffer_ref() { return {bytes.data(), type, shape}; }
};

inline std::vector<host_buffer> make_inputs(const ir::computation& c,
                                            const std::vector<std::int64_t>& sizes,
                                            std::uint64_t seed, bool ties = false) {
  std::vector<host_buffer> v;
  for (auto& b : ir::kernel_inputs(c)) {  // with an epilogue: its own inputs too
    v.emplace_back(b.type, ir::buffer_shape(c, b, sizes));
    v.back().randomize(seed++, ties);
  }
  return v;
}

inline std::vector<host_buffer> make_outputs(const ir::computation& c,
                                             const std::vector<std::int64_t>& sizes) {
  std::vector<host_buffer> v;
  for (auto& b : ir::kernel_outputs(c)) {  // with an epilogue: its outputs
    v.emplace_back(b.type, ir::buffer_shape(c, b, sizes));
    v.back().poison();
  }
  return v;
}

inline std::int64_t flat_index(const ir::access& a, const shape_t& shape,
                               const std::vector<std::int64_t>& point) {
  std::int64_t off = 0;
  for (std::size_t k = 0; k < a.index.size(); ++k) {
    std::int64_t x = a.index[k].offset;
    for (std::size_t d = 0; d < point.size(); ++d) x += a.index[k].coeff[d] * point[d];
    off = off * shape[k] + x;
  }
  return off;
}

// out_view ∘ md_hom ∘ inp_view by definition: for every point of the ++/ps dims, combine f over
// the pw dims (and over ps positions <= the point's), in order, then write every output access.
inline void naive_reference(const ir::computation& c, const std::vector<std::int64_t>& sizes,
                            const std::vector<host_buffer>& in, std::vector<host_buffer>& out) {
  const std::size_t D = c.rank(), m = c.outputs.size();
  std::vector<std::int64_t> pt(D, 0), q(D, 0);
  auto combine = [&](std::vector<double>& acc, const std::vector<double>& v) {
    for (std::size_t r = 0; r < m; ++r) {
      scalar_type t = c.f.result_type(r);
      double a = acc[r], b = v[r];
      switch (c.reduction.kind) {
        case ir::builtin::add:
          acc[r] = ir::to_type(a + b, t);
          break;
        case ir::builtin::mul:
          acc[r] = ir::to_type(a * b, t);
          break;
        case ir::builtin::max:
          acc[r] = a < b ? b : a;
          break;
        case ir::builtin::min:
          acc[r] = b < a ? b : a;
          break;
        default:
          break;
      }
    }
    if (c.reduction.kind == ir::builtin::custom) {
      std::vector<double> args = acc;
      args.insert(args.end(), v.begin(), v.end());
      acc = ir::evaluate(c.reduction.custom, args);
    }
  };
  auto eval_at = [&](const std::vector<std::int64_t>& p) {
    std::vector<double> args;
    for (std::size_t b = 0; b < c.inputs.size(); ++b)
      for (auto& a : c.inputs[b].accesses) args.push_back(in[b].get(flat_index(a, in[b].shape, p)));
    return ir::evaluate(c.f, args);
  };
  // iterate outer points
  for (;;) {
    std::vector<double> acc(m);
    if (c.has_reduction()) {
      for (std::size_t r = 0; r < m; ++r)
        acc[r] =
            ir::to_type(ir::identity_of(c.reduction, r, c.f.result_type(r)), c.f.result_type(r));
      // inner points: pw dims full range, ps dims 0..pt[d]
      q = pt;
      for (std::size_t d = 0; d < D; ++d)
        if (c.is_reduction(d)) q[d] = 0;
      for (;;) {
        combine(acc, eval_at(q));
        std::size_t d = D;
        while (d-- > 0) {
          if (!c.is_reduction(d)) continue;
          std::int64_t hi =
              c.dims[d].combine == ir::combine_kind::prefix_sum ? pt[d] : sizes[d] - 1;
          if (++q[d] <= hi) break;
          q[d] = 0;
        }
        if (d == std::size_t(-1)) break;
      }
    } else {
      acc = eval_at(pt);
    }
    for (std::size_t r = 0; r < m; ++r)
      for (auto& a : c.outputs[r].accesses) out[r].set(flat_index(a, out[r].shape, pt), acc[r]);
    std::size_t d = D;
    while (d-- > 0) {
      if (c.dims[d].combine == ir::combine_kind::pointwise) continue;
      if (++pt[d] < sizes[d]) break;
      pt[d] = 0;
    }
    if (d == std::size_t(-1)) break;
  }
}

// Largest number of terms one output point combines (for the tolerance).
inline std::int64_t reduction_length(const ir::computation& c,
                                     const std::vector<std::int64_t>& sizes) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < c.rank(); ++d)
    if (c.is_reduction(d)) n *= sizes[d];
  return n;
}

// "" when equal within tolerance: integers exactly; floats |got - want| <= tol * max(1, |want|)
// with tol = 1e-5 * max(1, L / 8) for f32 (L = reduction length) and 1e-12 * L for f64.
inline std::string compare(const host_buffer& got, const host_buffer& want, std::int64_t L) {
  double tol = want.type == scalar_type::f32 ? 1e-5 * std::max<double>(1, double(L) / 8)
                                             : 1e-12 * double(std::max<std::int64_t>(L, 1));
  for (std::int64_t k = 0; k < want.size(); ++k) {
    double g = got.get(k), w = want.get(k);
    bool ok = is_floating(want.type)
                  ? (std::isnan(w) ? std::isnan(g)
                                   : std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)))
                  : g == w;
    if (!ok)
      return "element " + std::to_string(k) + ": got " + std::to_string(g) + ", want " +
             std::to_string(w);
  }
  return "";
}

}  // namespace mdh::test
