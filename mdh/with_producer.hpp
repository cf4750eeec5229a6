// SPDX-License-Identifier: MIT
// mdh::with_producer(name, producer, consumer): the consumer md_hom reads the producer's
// output, which one kernel computes tile by tile where the consumer needs it (mdh/ir/
// with_producer.hpp; lowered by mdh/lower/producer_passes.hpp). Attention:
//   mdh::with_producer("attention", scores, softmax_times_v)
// The sizes are the consumer's, then the producer's reduction dimensions' (head dim d).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mdh/epilogue.hpp>
#include <mdh/error.hpp>
#include <mdh/ir/with_producer.hpp>
#include <mdh/reference.hpp>
#include <mdh/tensor.hpp>

namespace mdh {

template <class P, class C>
class produced_t {
 public:
  produced_t(std::string name, P producer, C consumer)
      : p_(std::move(producer)),
        c_(std::move(consumer)),
        ir_(ir::with_producer(std::move(name), p_.ir(), c_.ir())) {}

  const ir::produced& ir() const { return ir_; }
  const std::string& name() const { return ir_.name; }
  std::string hash() const { return ir::structural_hash_hex(ir_); }
  const P& producer() const { return p_; }
  const C& consumer() const { return c_; }
  std::size_t rank() const { return ir::rank(ir_); }

  // Throws mdh::error naming the pair when the count is wrong or a stage refuses its sizes.
  void check_sizes(const std::vector<std::int64_t>& s) const {
    if (s.size() != rank())
      throw error("with_producer '" + ir_.name + "': " + std::to_string(s.size()) +
                  " sizes given, expected " + std::to_string(rank()) +
                  " (the consumer's dimensions, then the producer's reductions)");
    p_.check_sizes(ir::producer_sizes(ir_, s));
    c_.check_sizes(ir::consumer_sizes(ir_, s));
  }
  // A kernel buffer's shape (the producer's buffers at its sizes, the others at the consumer's).
  shape_t shape(std::string_view buffer, const std::vector<std::int64_t>& s) const {
    check_sizes(s);
    for (auto& b : ir::kernel_inputs(ir_.producer))
      if (b.name == buffer) return p_.shape(buffer, ir::producer_sizes(ir_, s));
    return c_.shape(buffer, ir::consumer_sizes(ir_, s));
  }

 private:
  P p_;
  C c_;
  ir::produced ir_;
};

template <class T>
inline constexpr bool is_produced_v = false;
template <class P, class C>
inline constexpr bool is_produced_v<produced_t<P, C>> = true;

template <class P, class C>
produced_t<P, C> with_producer(std::string name, P producer, C consumer) {
  return produced_t<P, C>(std::move(name), std::move(producer), std::move(consumer));
}

// The plain composition, the oracle of the one-kernel lowering: the producer into a temporary
// buffer (its element type), then the consumer. Buffers as ir::produced lists them.
template <class P, class C>
void reference(const produced_t<P, C>& x, const std::vector<std::int64_t>& sizes,
               std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs,
               unsigned threads = 0) {
  const ir::produced& r = x.ir();
  x.check_sizes(sizes);
  if (inputs.size() != r.inputs.size() || outputs.size() != r.outputs.size())
    throw error("mdh::reference(" + r.name + "): expected " + std::to_string(r.inputs.size()) +
                " inputs and " + std::to_string(r.outputs.size()) + " outputs, got " +
                std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  const auto ps = ir::producer_sizes(r, sizes), cs = ir::consumer_sizes(r, sizes);
  const ir::buffer& s = ir::kernel_outputs(r.producer)[0];
  host_buffer scores(s.type, x.producer().shape(s.name, ps));
  const buffer_ref s_ref = scores;
  const std::size_t np = ir::kernel_inputs(r.producer).size();
  reference(x.producer(), ps, inputs.first(np), std::span<const buffer_ref>(&s_ref, 1), threads);
  std::vector<buffer_ref> c_in;
  const auto want = ir::kernel_inputs(r.consumer);
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (k == r.read) {
      c_in.push_back(s_ref);
      continue;
    }
    for (std::size_t b = 0; b < r.inputs.size(); ++b)
      if (r.inputs[b].name == want[k].name) {
        c_in.push_back(inputs[b]);
        break;
      }
  }
  reference(x.consumer(), cs, std::span<const buffer_ref>(c_in), outputs, threads);
}

template <class P, class C>
void reference(const produced_t<P, C>& x, const std::vector<std::int64_t>& sizes,
               std::initializer_list<buffer_ref> inputs, std::initializer_list<buffer_ref> outputs,
               unsigned threads = 0) {
  reference(x, sizes, std::span<const buffer_ref>(inputs.begin(), inputs.size()),
            std::span<const buffer_ref>(outputs.begin(), outputs.size()), threads);
}

}  // namespace mdh
