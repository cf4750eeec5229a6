// SPDX-License-Identifier: MIT
// mdh::fuse(name, first, second): two computations over the same iteration space, the second
// reading (some of) the first's outputs, lowered to one kernel (mdh/lower/fuse.hpp). Softmax is
// `mdh::fuse("softmax", softmax_stats(), softmax_normalize())`: the row statistics stay in the
// block that computed them, and the input is read while it is still in the caches.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/fused.hpp>
#include <mdh/reference.hpp>
#include <mdh/tensor.hpp>

namespace mdh {

template <class First, class Second>
class fused_t {
 public:
  fused_t(std::string name, First first, Second second)
      : first_(std::move(first)),
        second_(std::move(second)),
        ir_(ir::make_fused(std::move(name), first_.ir(), second_.ir())) {}

  const ir::fused& ir() const { return ir_; }
  const std::string& name() const { return ir_.name; }
  std::string hash() const { return ir::structural_hash_hex(ir_); }
  const First& first() const { return first_; }
  const Second& second() const { return second_; }

  // One size per dimension, shared by both computations.
  void check_sizes(const std::vector<std::int64_t>& s) const {
    first_.check_sizes(s);
    second_.check_sizes(s);
  }
  // A buffer's shape (the pair's buffers: either computation's).
  shape_t shape(std::string_view buffer, const std::vector<std::int64_t>& s) const {
    for (auto* bufs : {&ir_.first.inputs, &ir_.first.outputs})
      for (auto& b : *bufs)
        if (b.name == buffer) return first_.shape(buffer, s);
    return second_.shape(buffer, s);
  }

 private:
  First first_;
  Second second_;
  ir::fused ir_;
};

template <class T>
inline constexpr bool is_fused_v = false;
template <class First, class Second>
inline constexpr bool is_fused_v<fused_t<First, Second>> = true;

template <class First, class Second>
fused_t<First, Second> fuse(std::string name, First first, Second second) {
  return fused_t<First, Second>(std::move(name), std::move(first), std::move(second));
}

// Runs the pair on host buffers: the pair's inputs (the first's, then the second's new ones) and
// outputs (the first's, then the second's), as ir::fused lists them.
template <class First, class Second>
void reference(const fused_t<First, Second>& f, const std::vector<std::int64_t>& sizes,
               std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs,
               unsigned threads = 0) {
  const ir::fused& x = f.ir();
  if (inputs.size() != x.inputs.size() || outputs.size() != x.outputs.size())
    throw error("mdh::reference of the fused pair '" + x.name + "': expected " +
                std::to_string(x.inputs.size()) + " inputs and " +
                std::to_string(x.outputs.size()) + " outputs, got " +
                std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  const std::size_t m1 = x.first.outputs.size();
  std::vector<buffer_ref> in1(inputs.begin(),
                              inputs.begin() + std::ptrdiff_t(x.first.inputs.size()));
  std::vector<buffer_ref> out1(outputs.begin(), outputs.begin() + std::ptrdiff_t(m1));
  reference(f.first(), sizes, std::span<const buffer_ref>(in1), std::span<const buffer_ref>(out1),
            threads);
  std::vector<buffer_ref> in2, out2(outputs.begin() + std::ptrdiff_t(m1), outputs.end());
  for (auto& s : x.second_inputs)
    in2.push_back(s.from_first_output ? outputs[s.index] : inputs[s.index]);
  reference(f.second(), sizes, std::span<const buffer_ref>(in2), std::span<const buffer_ref>(out2),
            threads);
}

template <class First, class Second>
void reference(const fused_t<First, Second>& f, const std::vector<std::int64_t>& sizes,
               std::initializer_list<buffer_ref> inputs, std::initializer_list<buffer_ref> outputs,
               unsigned threads = 0) {
  reference(f, sizes, std::span<const buffer_ref>(inputs.begin(), inputs.size()),
            std::span<const buffer_ref>(outputs.begin(), outputs.size()), threads);
}

}  // namespace mdh
