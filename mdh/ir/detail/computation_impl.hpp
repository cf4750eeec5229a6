// SPDX-License-Identifier: MIT
// Out-of-line parts of mdh/ir/computation.hpp (kept inline: the library is header-only).
#pragma once

#include <limits>
#include <string>

namespace mdh::ir {

inline double identity_of(const reduction_operator& r, std::size_t component, scalar_type t) {
  bool fp = is_floating(t);
  switch (r.kind) {
    case builtin::add:
      return 0.0;
    case builtin::mul:
      return 1.0;
    case builtin::max:
      if (fp) return -std::numeric_limits<double>::infinity();
      return t == scalar_type::i32 ? double(std::numeric_limits<std::int32_t>::lowest())
                                   : double(std::numeric_limits<std::int64_t>::lowest());
    case builtin::min:
      if (fp) return std::numeric_limits<double>::infinity();
      return t == scalar_type::i32 ? double(std::numeric_limits<std::int32_t>::max())
                                   : double(std::numeric_limits<std::int64_t>::max());
    case builtin::custom:
      if (component >= r.identity.size())
        throw error("reduction operator '" + r.name + "' has no identity for result " +
                    std::to_string(component));
      return r.identity[component];
    case builtin::none:
      break;
  }
  throw error("identity_of: the computation has no reduction operator");
}

inline std::vector<std::int64_t> buffer_shape(const computation& c, const buffer& b,
                                              const std::vector<std::int64_t>& sizes) {
  if (sizes.size() != c.rank())
    throw error("computation '" + c.name + "' has " + std::to_string(c.rank()) +
                " dimensions but " + std::to_string(sizes.size()) + " sizes were given");
  std::vector<std::int64_t> shape(b.rank, 1);
  for (std::size_t k = 0; k < b.rank; ++k) {
    std::int64_t hi = std::numeric_limits<std::int64_t>::min();
    for (std::size_t a = 0; a < b.accesses.size(); ++a) {
      const affine& f = b.accesses[a].index.at(k);
      std::int64_t lo_a = f.offset, hi_a = f.offset;
      for (std::size_t d = 0; d < c.rank(); ++d) {
        std::int64_t span = f.coeff.at(d) * (sizes[d] - 1);
        (span < 0 ? lo_a : hi_a) += span;
      }
      if (lo_a < 0)
        throw error("buffer '" + b.name + "' access " + std::to_string(a) + " dimension " +
                    std::to_string(k) + " reaches index " + std::to_string(lo_a) +
                    " (index functions must stay >= 0)");
      hi = std::max(hi, hi_a);
    }
    shape[k] = hi + 1;
  }
  return shape;
}

inline void validate(const computation& c) {
  auto where = [&](const std::string& s) { return "computation '" + c.name + "': " + s; };
  if (c.dims.empty()) throw error(where("needs at least one dimension"));
  std::size_t n_ps = 0;
  for (auto& d : c.dims) n_ps += d.combine == combine_kind::prefix_sum;
  if (n_ps > 1) throw error(where("at most one prefix-sum (ps) dimension is supported"));
  if (c.has_reduction() != (c.reduction.kind != builtin::none))
    throw error(where("reduction dimensions and the reduction operator disagree"));
  if (c.outputs.empty()) throw error(where("needs at least one output buffer"));
  auto check_buffer = [&](const buffer& b, bool output) {
    if (b.accesses.empty()) throw error(where("buffer '" + b.name + "' has no access"));
    for (std::size_t a = 0; a < b.accesses.size(); ++a) {
      auto& acc = b.accesses[a];
      if (acc.index.size() != b.rank)
        throw error(where("buffer '" + b.name + "' access " + std::to_string(a) + " has " +
                          std::to_string(acc.index.size()) + " coordinates, rank is " +
                          std::to_string(b.rank)));
      for (std::size_t k = 0; k < acc.index.size(); ++k) {
        if (acc.index[k].coeff.size() != c.rank())
          throw error(where("buffer '" + b.name + "' index function has the wrong arity"));
        for (std::size_t d = 0; d < c.rank(); ++d)
          if (output && c.dims[d].combine == combine_kind::pointwise && acc.index[k].uses(d))
            throw error(where("output '" + b.name + "' dimension " + std::to_string(k) +
                              " uses reduction dimension '" + c.dims[d].name +
                              "' (out_view indices must not depend on pw dimensions)"));
      }
    }
  };
  for (auto& b : c.inputs) check_buffer(b, false);
  for (auto& b : c.outputs) check_buffer(b, true);
  // The static checks of mdh::computation, again for IR built otherwise (and for coefficients
  // that cancel, as in `k - k`).
  for (auto* bufs : {&c.inputs, &c.outputs})
    for (auto& b : *bufs)
      for (auto& o : c.outputs)
        if (&o != &b && o.name == b.name)
          throw error(where("output '" + o.name + "' is named twice (or also an input)"));
  for (auto& o : c.outputs)
    for (auto& acc : o.accesses)
      for (std::size_t d = 0; d < c.rank(); ++d) {
        if (c.dims[d].combine == combine_kind::pointwise) continue;
        bool used = false;
        for (auto& f : acc.index) used = used || f.uses(d);
        if (!used)
          throw error(where("output '" + o.name + "' does not depend on dimension '" +
                            c.dims[d].name + "' (every cc and ps dimension must index it)"));
      }
  if (c.f.arg_types.size() != c.num_args())
    throw error(where("scalar function takes " + std::to_string(c.f.arg_types.size()) +
                      " arguments but inp_view has " + std::to_string(c.num_args()) + " accesses"));
  std::size_t arg = 0;
  for (auto& b : c.inputs)
    for (std::size_t a = 0; a < b.accesses.size(); ++a, ++arg)
      if (c.f.arg_types[arg] != b.type)
        throw error(
            where("argument " + std::to_string(arg) + " has the wrong type for '" + b.name + "'"));
  if (c.f.results.size() != c.outputs.size())
    throw error(where("scalar function returns " + std::to_string(c.f.results.size()) +
                      " results but out_view has " + std::to_string(c.outputs.size()) +
                      " buffers"));
  for (std::size_t r = 0; r < c.f.results.size(); ++r)
    if (is_float16(c.f.result_type(r)))
      throw error(where("result " + std::to_string(r) + " is computed in " +
                        std::string(short_name(c.f.result_type(r))) +
                        " (bf16/f16 store values; they are computed and accumulated in f32 or "
                        "f64)"));
  if (reads_tf32(c) || splits_tf32(c)) {
    bool f32_input = false;
    for (auto& b : c.inputs) f32_input = f32_input || b.type == scalar_type::f32;
    if (c.reduction.kind != builtin::add || !f32_input)
      throw error(
          where(std::string("precision ") + to_string(c.input_precision) +
                " applies to fp32 contractions: it needs a pw(add) "
                "reduction over f32 inputs (the reduction is " +
                (c.reduction.kind == builtin::none ? std::string("none") : c.reduction.name) +
                (f32_input ? "" : ", no input is f32") + ")"));
  }
  if (c.reduction.kind == builtin::custom) {
    std::size_t m = c.outputs.size();
    if (c.reduction.custom.arg_types.size() != 2 * m || c.reduction.custom.results.size() != m ||
        c.reduction.identity.size() != m)
      throw error(where("custom combine operator '" + c.reduction.name + "' must map 2x" +
                        std::to_string(m) + " values to " + std::to_string(m) +
                        " with an identity of " + std::to_string(m) + " values"));
  }
}

}  // namespace mdh::ir
