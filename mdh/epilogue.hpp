// SPDX-License-Identifier: MIT
// mdh::with_epilogue(name, c, e): the computation c whose results go through the point-wise
// computation e (every dimension cc) before they are written, lowered to one kernel: each thread
// applies e to the results it holds after the last combine, in registers, and writes e's
// outputs; c's own outputs are never written. GEMM + bias + GELU:
//
//   mdh::with_epilogue("matmul_bias_gelu", ops::matmul(), ops::bias_gelu())
//
// (bias_gelu reads matmul's output C through C's index function and its own bias b). e's
// dimensions are c's cc/ps dimensions in order. It is one computation to the tuner: the same
// parameters as c (the epilogue adds none), a block-split reduction combined by a second kernel
// or the last block, which apply e (atomics are ruled out: they have no last step).
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mdh/computation.hpp>
#include <mdh/error.hpp>
#include <mdh/ir/with_epilogue.hpp>
#include <mdh/reference.hpp>
#include <mdh/tensor.hpp>

namespace mdh {

namespace detail {
// The accesses of a computation_t's views, for the static checks of with_epilogue.
template <class C>
struct views_of;
template <class... OA, class F, class... Ops, class... IA>
struct views_of<computation_t<out_view_t<OA...>, md_hom_t<F, Ops...>, inp_view_t<IA...>>> {
  using outputs = std::tuple<OA...>;
  using inputs = std::tuple<IA...>;
};

template <class X, class Tuple>
struct named_in;
template <class X, class... A>
struct named_in<X, std::tuple<A...>> {
  static constexpr bool any = ((X::buffer == A::buffer) || ...);
  // every access of A... named like X has X's element type and rank
  static constexpr bool same_kind =
      ((X::buffer != A::buffer ||
        (std::is_same_v<typename X::element_type, typename A::element_type> &&
         X::rank == A::rank)) &&
       ...);
};
template <class Tuple, class Others>
struct any_named_in;
template <class... X, class Others>
struct any_named_in<std::tuple<X...>, Others> {
  static constexpr bool value = (named_in<X, Others>::any || ...);
  static constexpr bool same_kind = (named_in<X, Others>::same_kind && ...);
};
}  // namespace detail

template <class C, class E>
class with_epilogue_t {
  using c_out = typename detail::views_of<C>::outputs;
  using c_in = typename detail::views_of<C>::inputs;
  using e_out = typename detail::views_of<E>::outputs;
  using e_in = typename detail::views_of<E>::inputs;

  static_assert(E::hom_type::pointwise_mask == 0 && E::hom_type::prefix_sum_mask == 0,
                "mdh::with_epilogue(name, c, e) requires the epilogue 'e' to be point-wise "
                "(every combine operator cc): it runs once per result, after the last combine");
  static_assert(std::popcount(C::kept_mask) == E::rank,
                "mdh::with_epilogue(name, c, e) requires 'e' to have one dimension per cc/ps "
                "dimension of 'c' (shape mismatch: e runs over the points of c's results)");
  static_assert(detail::any_named_in<e_in, c_out>::value,
                "mdh::with_epilogue(name, c, e) requires 'e' to read an output of 'c' by its "
                "name (in<T, \"C\">(i, j) for c's out<T, \"C\">): it reads a buffer that 'c' "
                "does not write");
  static_assert(detail::any_named_in<e_in, c_out>::same_kind,
                "mdh::with_epilogue(name, c, e) requires 'e' to read an output of 'c' with "
                "the element type and rank 'c' writes it with");
  static_assert(!detail::any_named_in<e_in, c_in>::value,
                "mdh::with_epilogue(name, c, e) requires 'e' not to read an input of 'c' (pass "
                "the data again under a name of its own)");
  static_assert(!detail::any_named_in<e_out, c_in>::value &&
                    !detail::any_named_in<e_out, c_out>::value,
                "mdh::with_epilogue(name, c, e) requires 'e' to write new buffers (not an "
                "input or output of 'c')");

 public:
  static constexpr std::size_t rank = C::rank;

  with_epilogue_t(std::string name, C c, E e)
      : c_(std::move(c)),
        e_(std::move(e)),
        ir_(ir::with_epilogue(std::move(name), c_.ir(), e_.ir())) {}

  // One computation: c's dimensions, c's inputs then e's own, e's outputs.
  const ir::computation& ir() const { return ir_; }
  const std::string& name() const { return ir_.name; }
  std::string str() const { return ir::to_string(ir_); }
  std::string hash() const { return ir::structural_hash_hex(ir_); }
  const C& computation() const { return c_; }
  const E& epilogue() const { return e_; }

  // With c's fp32 operands read at another precision (computation::with_precision); the
  // epilogue's inputs are read as stored.
  with_epilogue_t with_precision(ir::precision p) const {
    return with_epilogue_t(ir_.name, c_.with_precision(p), e_);
  }
  ir::precision precision() const { return ir_.input_precision; }

  template <class... N>
  requires(std::is_integral_v<N>&&...) std::vector<std::int64_t> sizes(N... n)
  const { return c_.sizes(n...); }
  void check_sizes(const std::vector<std::int64_t>& s) const { c_.check_sizes(s); }

  // A buffer's shape: c's buffers at c's sizes, e's at the sizes of c's cc/ps dimensions.
  shape_t shape(std::string_view buffer, const std::vector<std::int64_t>& s) const {
    check_sizes(s);
    for (auto* bufs : {&ir_.inputs, &ir_.outputs})
      for (auto& b : *bufs)
        if (b.name == buffer) return ir::buffer_shape(ir_, b, s);
    for (auto* bufs : {&ir_.epilogue->inputs, &ir_.epilogue->outputs})
      for (auto& b : *bufs)
        if (b.name == buffer) return ir::buffer_shape(ir_, b, s);
    throw error("computation '" + ir_.name + "' has no buffer '" + std::string(buffer) + "'");
  }
  // The sizes of e's dimensions: c's cc/ps ones.
  std::vector<std::int64_t> epilogue_sizes(const std::vector<std::int64_t>& s) const {
    check_sizes(s);
    std::vector<std::int64_t> k;
    for (auto d : ir::kept_dims(ir_)) k.push_back(s[d]);
    return k;
  }

 private:
  C c_;
  E e_;
  ir::computation ir_;
};

template <class T>
inline constexpr bool is_with_epilogue_v = false;
template <class C, class E>
inline constexpr bool is_with_epilogue_v<with_epilogue_t<C, E>> = true;

template <class... OA, class F, class... Ops, class... IA, class E>
auto with_epilogue(std::string name,
                   computation_t<out_view_t<OA...>, md_hom_t<F, Ops...>, inp_view_t<IA...>> c,
                   E e) {
  using C = computation_t<out_view_t<OA...>, md_hom_t<F, Ops...>, inp_view_t<IA...>>;
  return with_epilogue_t<C, E>(std::move(name), std::move(c), std::move(e));
}

// The plain composition, the oracle of the fused kernel: c into temporary outputs (stored in
// their element types), then e. Buffers as ir::kernel_inputs / kernel_outputs list them: c's
// inputs, then e's own inputs in e's order; e's outputs.
template <class C, class E>
void reference(const with_epilogue_t<C, E>& x, const std::vector<std::int64_t>& sizes,
               std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs,
               unsigned threads = 0) {
  const ir::computation& c = x.computation().ir();
  const ir::computation& e = x.epilogue().ir();
  const auto want_in = ir::kernel_inputs(x.ir());
  if (inputs.size() != want_in.size() || outputs.size() != e.outputs.size())
    throw error("mdh::reference(" + x.name() + "): expected " + std::to_string(want_in.size()) +
                " inputs and " + std::to_string(e.outputs.size()) + " outputs, got " +
                std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  std::vector<host_buffer> results;
  results.reserve(c.outputs.size());
  std::vector<buffer_ref> c_out;
  for (auto& o : c.outputs) {
    results.emplace_back(o.type, ir::buffer_shape(c, o, sizes));
    c_out.push_back(results.back());
  }
  reference(x.computation(), sizes, inputs.first(c.inputs.size()),
            std::span<const buffer_ref>(c_out), threads);
  std::vector<buffer_ref> e_in;
  std::size_t own = c.inputs.size();
  for (std::size_t b = 0; b < e.inputs.size(); ++b) {
    const int r = x.ir().epilogue->result_of[b];
    e_in.push_back(r >= 0 ? c_out[std::size_t(r)] : inputs[own++]);
  }
  reference(x.epilogue(), x.epilogue_sizes(sizes), std::span<const buffer_ref>(e_in), outputs,
            threads);
}

template <class C, class E>
void reference(const with_epilogue_t<C, E>& x, const std::vector<std::int64_t>& sizes,
               std::initializer_list<buffer_ref> inputs, std::initializer_list<buffer_ref> outputs,
               unsigned threads = 0) {
  reference(x, sizes, std::span<const buffer_ref>(inputs.begin(), inputs.size()),
            std::span<const buffer_ref>(outputs.begin(), outputs.size()), threads);
}

}  // namespace mdh
