// SPDX-License-Identifier: MIT
// A fused pair: two computations over the same iteration space, the second reading (some of) the
// first's outputs, run as one kernel (softmax: row statistics, then the normalising map).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/hash.hpp>

namespace mdh::ir {

// Where one input of the second computation comes from.
struct fused_source {
  bool from_first_output = false;  // true: the first computation's output `index`
  std::size_t index = 0;           // otherwise: the pair's input `index`
  friend bool operator==(const fused_source&, const fused_source&) = default;
};

struct fused {
  std::string name;
  computation first, second;
  // The pair's buffers: inputs = the first's inputs, then the second's inputs that are neither
  // an input of the first nor an output of the first (in the second's order); outputs = the
  // first's outputs, then the second's.
  std::vector<buffer> inputs, outputs;
  std::vector<fused_source> second_inputs;  // one per input of `second`
  friend bool operator==(const fused&, const fused&) = default;
};

namespace detail {
inline const buffer* find_buffer(const std::vector<buffer>& v, const std::string& name,
                                 std::size_t* index = nullptr) {
  for (std::size_t k = 0; k < v.size(); ++k)
    if (v[k].name == name) {
      if (index) *index = k;
      return &v[k];
    }
  return nullptr;
}
}  // namespace detail

// Builds the pair, matching buffers by name. Throws mdh::error saying which buffer breaks which
// rule: the same rank; a shared buffer has one type and rank; the second reads an output of the
// first only through an index function the first writes it with (so each block of the fused
// kernel reads only what it wrote itself); the second writes no buffer the first reads or writes.
inline fused make_fused(std::string name, const computation& a, const computation& b) {
  const std::string where = "mdh::fuse('" + name + "', " + a.name + ", " + b.name + "): ";
  for (auto* x : {&a, &b})
    if (x->epilogue)
      throw error(where + "'" + x->name + "' has the epilogue '" + x->epilogue->name +
                  "'; a fused pair's stages have none");
  if (a.rank() != b.rank())
    throw error(where + "both computations need the same dimensions; '" + a.name + "' has " +
                std::to_string(a.rank()) + ", '" + b.name + "' has " + std::to_string(b.rank()));
  fused f;
  f.name = std::move(name);
  f.first = a, f.second = b;
  f.inputs = a.inputs;
  f.outputs = a.outputs;
  auto same_kind = [&](const buffer& x, const buffer& y) {
    if (x.type != y.type || x.rank != y.rank)
      throw error(where + "buffer '" + x.name + "' is " + std::string(short_name(x.type)) + "[" +
                  std::to_string(x.rank) + "-d] in '" + a.name + "' but " +
                  std::string(short_name(y.type)) + "[" + std::to_string(y.rank) + "-d] in '" +
                  b.name + "'");
  };
  for (auto& in : b.inputs) {
    fused_source s;
    std::size_t k = 0;
    if (auto* o = detail::find_buffer(a.outputs, in.name, &k)) {
      same_kind(*o, in);
      for (auto& w : o->accesses)
        for (std::size_t d = 0; d < a.rank(); ++d) {
          bool used = false;
          for (auto& ix : w.index) used = used || ix.uses(d);
          if (!a.is_reduction(d) && !used)
            throw error(where + "'" + a.name + "' writes '" + o->name +
                        "' at the same element for every value of dimension '" + a.dims[d].name +
                        "'; the second computation may only read outputs whose every element "
                        "one block writes");
        }
      for (auto& acc : in.accesses) {
        bool written = false;
        for (auto& w : o->accesses) written = written || w == acc;
        if (!written)
          throw error(where + "'" + b.name + "' reads '" + in.name +
                      "' through an index function that '" + a.name +
                      "' does not write it with; a fused kernel's block may only read what it "
                      "wrote itself");
      }
      s.from_first_output = true, s.index = k;
    } else if (auto* i = detail::find_buffer(f.inputs, in.name, &k)) {
      same_kind(*i, in);
      s.index = k;
    } else {
      s.index = f.inputs.size();
      f.inputs.push_back(in);
    }
    f.second_inputs.push_back(s);
  }
  for (auto& out : b.outputs) {
    if (detail::find_buffer(a.inputs, out.name) || detail::find_buffer(a.outputs, out.name) ||
        detail::find_buffer(b.inputs, out.name))
      throw error(where + "'" + b.name + "' writes '" + out.name +
                  "', which the pair also reads or the first computation writes; the second "
                  "computation's outputs must be new buffers");
    f.outputs.push_back(out);
  }
  return f;
}

// The buffers the pair's kernel takes (as ir::kernel_inputs / kernel_outputs of a computation).
inline const std::vector<buffer>& kernel_inputs(const fused& f) { return f.inputs; }
inline const std::vector<buffer>& kernel_outputs(const fused& f) { return f.outputs; }

// The shape of a buffer the pair shares at `sizes` must be the same under both computations (the
// fused kernel has one parameter for it). Throws mdh::error naming the buffer and both shapes.
inline void check_shared_shapes(const fused& f, const std::vector<std::int64_t>& sizes) {
  auto str = [](const std::vector<std::int64_t>& s) {
    std::string t = "[";
    for (std::size_t k = 0; k < s.size(); ++k) t += (k ? "," : "") + std::to_string(s[k]);
    return t + "]";
  };
  for (std::size_t k = 0; k < f.second.inputs.size(); ++k) {
    const auto& src = f.second_inputs[k];
    if (!src.from_first_output && src.index >= f.first.inputs.size()) continue;
    const buffer& b1 =
        src.from_first_output ? f.first.outputs[src.index] : f.first.inputs[src.index];
    auto s1 = buffer_shape(f.first, b1, sizes);
    auto s2 = buffer_shape(f.second, f.second.inputs[k], sizes);
    if (s1 != s2)
      throw error("fused pair '" + f.name + "': buffer '" + b1.name + "' is " + str(s1) + " in '" +
                  f.first.name + "' but " + str(s2) + " in '" + f.second.name +
                  "' at these sizes; both computations must see a shared buffer whole");
  }
}

inline std::uint64_t structural_hash(const fused& f) {
  fnv1a h;
  h.str("mdh-fused-1");
  h.u64(structural_hash(f.first));
  h.u64(structural_hash(f.second));
  for (auto& s : f.second_inputs) h.u64(s.from_first_output), h.u64(s.index);
  return h.value();
}

inline std::string structural_hash_hex(const fused& f) { return hex16(structural_hash(f)); }

}  // namespace mdh::ir
