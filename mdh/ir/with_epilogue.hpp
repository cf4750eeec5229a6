// SPDX-License-Identifier: MIT
// ir::with_epilogue(name, c, e): the computation c whose results go through the point-wise
// computation e before they are written (mdh/ir/epilogue.hpp), checked; and the buffers the
// kernel of a computation takes (kernel_inputs, kernel_outputs), which an epilogue changes.
#pragma once

#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/hash.hpp>

namespace mdh::ir {

// The dimensions an epilogue runs over: c's ++ and ps dimensions, in order.
inline std::vector<std::size_t> kept_dims(const computation& c) {
  std::vector<std::size_t> v;
  for (std::size_t d = 0; d < c.rank(); ++d)
    if (c.dims[d].combine != combine_kind::pointwise) v.push_back(d);
  return v;
}

// The kernel's inputs: c's, then the epilogue's own (those that are not results of c).
inline std::vector<buffer> kernel_inputs(const computation& c) {
  std::vector<buffer> v = c.inputs;
  if (c.epilogue)
    for (std::size_t b = 0; b < c.epilogue->inputs.size(); ++b)
      if (c.epilogue->result_of[b] < 0) v.push_back(c.epilogue->inputs[b]);
  return v;
}

// The kernel's outputs: the epilogue's when there is one, else c's.
inline const std::vector<buffer>& kernel_outputs(const computation& c) {
  return c.epilogue ? c.epilogue->outputs : c.outputs;
}

namespace detail {
inline std::string dim_list(const computation& c, const std::vector<std::size_t>& ds) {
  std::string s;
  for (auto d : ds) s += (s.empty() ? "" : ", ") + c.dims[d].name;
  return "(" + s + ")";
}
}  // namespace detail

// c with e as its epilogue, named `name`. e's dimensions are c's ++/ps dimensions in order; e
// reads outputs of c through the index functions c writes them with (mapped onto e's
// dimensions) and buffers of its own, and writes new buffers. Throws mdh::error saying which
// rule which buffer or dimension breaks.
inline computation with_epilogue(std::string name, const computation& c, const computation& e) {
  const std::string where = "mdh::with_epilogue('" + name + "', " + c.name + ", " + e.name + "): ";
  if (c.epilogue)
    throw error(where + "'" + c.name + "' already has the epilogue '" + c.epilogue->name +
                "'; write the two point-wise steps as one computation");
  for (auto& d : e.dims)
    if (d.combine != combine_kind::concat)
      throw error(where + "an epilogue is point-wise: dimension '" + d.name + "' of '" + e.name +
                  "' is not ++ (cc)");
  const auto kept = kept_dims(c);
  if (e.rank() != kept.size())
    throw error(where + "shape mismatch: '" + e.name + "' has " + std::to_string(e.rank()) +
                " dimensions, but the results of '" + c.name + "' span " +
                std::to_string(kept.size()) + " " + detail::dim_list(c, kept));
  // e's index functions over c's dimensions.
  auto widen = [&](buffer b) {
    for (auto& a : b.accesses)
      for (auto& f : a.index) {
        std::vector<std::int64_t> w(c.rank(), 0);
        for (std::size_t q = 0; q < kept.size(); ++q) w[kept[q]] = f.coeff.at(q);
        f.coeff = std::move(w);
      }
    return b;
  };
  pointwise_epilogue ep;
  ep.name = e.name;
  ep.f = e.f;
  bool reads_result = false;
  for (auto& in : e.inputs) {
    buffer b = widen(in);
    int result = -1;
    for (std::size_t r = 0; r < c.outputs.size(); ++r)
      if (c.outputs[r].name == in.name) result = int(r);
    for (auto& x : c.inputs)
      if (x.name == in.name)
        throw error(where + "'" + e.name + "' reads '" + in.name + "', an input of '" + c.name +
                    "'; an epilogue reads the results and buffers of its own (pass the data "
                    "again under another name)");
    if (result >= 0) {
      const buffer& o = c.outputs[std::size_t(result)];
      if (o.type != in.type || o.rank != in.rank)
        throw error(where + "'" + in.name + "' is " + std::string(short_name(o.type)) + "[" +
                    std::to_string(o.rank) + "-d] in '" + c.name + "' but " +
                    std::string(short_name(in.type)) + "[" + std::to_string(in.rank) + "-d] in '" +
                    e.name + "'");
      bool written = b.accesses.size() == 1;
      if (written) {
        written = false;
        for (auto& w : o.accesses) written = written || w == b.accesses[0];
      }
      if (!written)
        throw error(where + "'" + e.name + "' must read '" + in.name +
                    "' once, through the index function '" + c.name +
                    "' writes it with: each thread applies the epilogue to the results it holds");
      reads_result = true;
    }
    ep.inputs.push_back(std::move(b));
    ep.result_of.push_back(result);
  }
  if (!reads_result)
    throw error(where + "'" + e.name + "' reads no output of '" + c.name +
                "'; an epilogue takes the computation's results");
  for (auto& out : e.outputs) {
    auto clash = [&](const std::vector<buffer>& v) {
      for (auto& x : v)
        if (x.name == out.name) return true;
      return false;
    };
    if (clash(c.inputs) || clash(c.outputs) || clash(e.inputs))
      throw error(where + "'" + e.name + "' writes '" + out.name + "', which '" + c.name +
                  "' or the epilogue also uses; the epilogue's outputs must be new buffers");
    ep.outputs.push_back(widen(out));
  }
  computation r = c;
  r.name = std::move(name);
  r.epilogue = std::move(ep);
  return r;
}

}  // namespace mdh::ir
