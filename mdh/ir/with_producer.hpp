// SPDX-License-Identifier: MIT
// ir::with_producer(name, producer, consumer): a consumer md_hom one of whose inputs is the
// output of a producer contraction, which the kernel computes tile by tile where the consumer
// reads it and never stores. Attention is the example: the producer is the scores
// S(b,h,i,j) = +_d Q K (with its scale/mask epilogue), the consumer the online softmax times V
// over (b,h,i,e | j); an S tile is computed once per (i-block, j-block) and used for every e.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/ir/with_epilogue.hpp>

namespace mdh::ir {

struct produced {
  std::string name;
  computation producer;  // ++ dims and pw(add) dims; may have an epilogue; one output
  computation consumer;  // reads the producer's output by name; may have an epilogue
  std::size_t read = 0;  // the consumer's input that the producer writes
  // Per producer dimension: the consumer dimension it is (++ dims), or -1 (its pw dims).
  std::vector<int> dim_of;
  // The kernel's buffers: the producer's kernel inputs, then the consumer's other kernel
  // inputs (a buffer both read, by name, once); the consumer's kernel outputs.
  std::vector<buffer> inputs, outputs;
  friend bool operator==(const produced&, const produced&) = default;
};

// The sizes of the pair: the consumer's, then the producer's pw dimensions' in order.
inline std::vector<std::int64_t> producer_sizes(const produced& x,
                                                const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> s;
  std::size_t extra = x.consumer.rank();
  for (std::size_t d = 0; d < x.producer.rank(); ++d)
    s.push_back(x.dim_of[d] >= 0 ? sizes.at(std::size_t(x.dim_of[d])) : sizes.at(extra++));
  return s;
}
inline std::vector<std::int64_t> consumer_sizes(const produced& x,
                                                const std::vector<std::int64_t>& sizes) {
  return {sizes.begin(), sizes.begin() + std::ptrdiff_t(x.consumer.rank())};
}
inline std::size_t rank(const produced& x) {
  std::size_t n = x.consumer.rank();
  for (int d : x.dim_of) n += d < 0;
  return n;
}

// Builds the pair. Throws mdh::error saying which rule which buffer or dimension breaks: the
// producer has one output, which the consumer reads once, each index a single dimension of the
// consumer that the producer writes it with (so every producer ++ dimension is a consumer
// dimension); the producer's reductions are pw; the consumer's kernel outputs are new buffers.
inline produced with_producer(std::string name, const computation& p, const computation& c) {
  const std::string where = "mdh::with_producer('" + name + "', " + p.name + ", " + c.name + "): ";
  const auto& p_out = kernel_outputs(p);
  if (p_out.size() != 1 || p_out[0].accesses.size() != 1)
    throw error(where + "the producer must write one buffer through one index function; '" +
                p.name + "' writes " + std::to_string(p_out.size()));
  for (auto& d : p.dims)
    if (d.combine == combine_kind::prefix_sum)
      throw error(where + "the producer's dimension '" + d.name + "' is a scan; only ++ and pw");
  const buffer& s = p_out[0];
  produced x;
  x.name = std::move(name);
  x.producer = p, x.consumer = c;
  bool found = false;
  for (std::size_t k = 0; k < c.inputs.size(); ++k)
    if (c.inputs[k].name == s.name) x.read = k, found = true;
  if (!found)
    throw error(where + "the consumer does not read the producer's output '" + s.name + "'");
  const buffer& r = c.inputs[x.read];
  if (r.accesses.size() != 1 || r.type != s.type || r.rank != s.rank)
    throw error(where + "the consumer must read '" + s.name +
                "' once, with the type and rank the "
                "producer writes it with");
  x.dim_of.assign(p.rank(), -1);
  for (std::size_t k = 0; k < s.rank; ++k) {
    const affine& w = s.accesses[0].index[k];
    const affine& u = r.accesses[0].index[k];
    int pd = -1, cd = -1;
    for (std::size_t d = 0; d < p.rank(); ++d)
      if (w.coeff[d] != 0) pd = pd < 0 && w.coeff[d] == 1 ? int(d) : -2;
    for (std::size_t d = 0; d < c.rank(); ++d)
      if (u.coeff[d] != 0) cd = cd < 0 && u.coeff[d] == 1 ? int(d) : -2;
    if (pd < 0 || cd < 0 || w.offset != 0 || u.offset != 0)
      throw error(where + "index " + std::to_string(k) + " of '" + s.name +
                  "' must be one dimension, written by the producer and read by the consumer");
    x.dim_of[std::size_t(pd)] = cd;
  }
  for (std::size_t d = 0; d < p.rank(); ++d)
    if (p.is_reduction(d) == (x.dim_of[d] >= 0))
      throw error(where + "the producer's dimension '" + p.dims[d].name + "' must " +
                  (p.is_reduction(d) ? "not index '" : "index '") + s.name + "'");
  x.inputs = kernel_inputs(p);
  auto has = [](const std::vector<buffer>& v, const std::string& n) {
    for (auto& b : v)
      if (b.name == n) return true;
    return false;
  };
  auto c_in = kernel_inputs(c);
  for (std::size_t k = 0; k < c_in.size(); ++k) {
    if (k == x.read) continue;
    if (!has(x.inputs, c_in[k].name)) x.inputs.push_back(c_in[k]);
  }
  x.outputs = kernel_outputs(c);
  for (auto& o : x.outputs)
    if (has(x.inputs, o.name) || o.name == s.name)
      throw error(where + "the consumer writes '" + o.name + "', which the pair reads");
  return x;
}

// The buffers the pair's kernel takes (as ir::kernel_inputs / kernel_outputs of a computation).
inline const std::vector<buffer>& kernel_inputs(const produced& x) { return x.inputs; }
inline const std::vector<buffer>& kernel_outputs(const produced& x) { return x.outputs; }

inline std::uint64_t structural_hash(const produced& x) {
  fnv1a h;
  h.str("mdh-produced-1");
  h.u64(structural_hash(x.producer));
  h.u64(structural_hash(x.consumer));
  h.u64(x.read);
  for (int d : x.dim_of) h.u64(std::uint64_t(std::int64_t(d)));
  return h.value();
}
inline std::string structural_hash_hex(const produced& x) { return hex16(structural_hash(x)); }

}  // namespace mdh::ir
