// SPDX-License-Identifier: MIT
// computation(name, out_view, md_hom, inp_view): the whole MDH expression
// out_view ∘ md_hom ∘ inp_view. Checks the expression at compile time, records the scalar
// function symbolically into an ir::computation for the backends, and evaluates it numerically
// for the CPU reference.
#pragma once

#include <array>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/canonical.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/ir/print.hpp>
#include <mdh/md_hom.hpp>
#include <mdh/symbolic.hpp>
#include <mdh/tensor.hpp>
#include <mdh/view.hpp>

namespace mdh {

namespace detail {
template <class T>
struct is_std_tuple : std::false_type {};
template <class... T>
struct is_std_tuple<std::tuple<T...>> : std::true_type {};

// How many values a scalar function result holds (a number, a sym, or a std::tuple of them).
template <class R>
constexpr std::size_t result_arity() {
  if constexpr (is_std_tuple<std::remove_cvref_t<R>>::value)
    return std::tuple_size_v<std::remove_cvref_t<R>>;
  else
    return 1;
}

template <class R>
auto as_tuple(R&& r) {
  if constexpr (is_std_tuple<std::remove_cvref_t<R>>::value)
    return std::forward<R>(r);
  else
    return std::make_tuple(std::forward<R>(r));
}

// Converts each component of `values` to the matching type of Tuple.
template <class Tuple, class V, std::size_t... K>
Tuple convert_tuple(const V& values, std::index_sequence<K...>) {
  return Tuple{static_cast<std::tuple_element_t<K, Tuple>>(std::get<K>(values))...};
}

// The type a result component stored as S is computed and accumulated in: the stated
// accumulation type Acc, or (Acc void) float for bf16/f16 and S itself otherwise.
template <class S, class Acc>
using value_type_t =
    std::conditional_t<!std::is_void_v<Acc>, Acc, std::conditional_t<is_float16_v<S>, float, S>>;
// True when `To{from}` compiles: the conversion of a result into its output element type is
// not narrowing (C++ list-initialisation: float -> int32, double -> float, int32 -> float, ...).
template <class To, class From>
concept converts_without_narrowing = requires(From from) {
  To{from};
};

// For each access X of A...: accesses with X's name have X's element type and rank ("" is the
// name of an access whose name was an error).
template <class X, class... A>
inline constexpr bool agrees_with_namesakes =
    X::buffer.empty() ||
    ((X::buffer != A::buffer ||
      (std::is_same_v<typename X::element_type, typename A::element_type> && X::rank == A::rank)) &&
     ...);
// How many of A... are named like X.
template <class X, class... A>
inline constexpr std::size_t namesakes = X::buffer.empty() ? 0
                                                           : ((X::buffer == A::buffer) + ... + 0);

// A result of type R stored as O, computed in V (value_type_t): a bf16/f16 output takes any
// floating-point result on purpose (rounded once, to nearest even, when it is stored); every
// other result must convert to V without narrowing.
template <class O, class V, class R>
inline constexpr bool result_fits = (is_float16_v<O> &&
                                     (std::is_floating_point_v<R> || is_float16_v<R>)) ||
                                    converts_without_narrowing<V, R>;

// True unless f(Args...) returns as many values as Outputs has and one of them does not fit
// (result_fits) its output (a wrong count has its own message).
template <class Outputs, class Values, class F, class... Args>
constexpr bool results_fit() {
  if constexpr (std::is_invocable_v<F, Args...>) {
    using R = decltype(as_tuple(std::declval<std::invoke_result_t<F, Args...>>()));
    if constexpr (std::tuple_size_v<R> == std::tuple_size_v<Outputs>)
      return []<std::size_t... K>(std::index_sequence<K...>) {
        return (result_fits<std::tuple_element_t<K, Outputs>, std::tuple_element_t<K, Values>,
                            std::remove_cvref_t<std::tuple_element_t<K, R>>> &&
                ...);
      }
    (std::make_index_sequence<std::tuple_size_v<Outputs>>{});
  }
  return true;
}

inline std::vector<std::string> default_dim_names(std::size_t rank) {
  static const char* small[] = {"i", "j", "k"};
  std::vector<std::string> names;
  for (std::size_t d = 0; d < rank; ++d)
    names.push_back(rank <= 3 ? small[d] : "d" + std::to_string(d));
  return names;
}
}  // namespace detail

template <class Out, class Hom, class Inp>
class computation_t;

template <class... OA, class F, class... Ops, class... IA>
class computation_t<out_view_t<OA...>, md_hom_t<F, Ops...>, inp_view_t<IA...>> {
 public:
  using hom_type = md_hom_t<F, Ops...>;
  static constexpr std::size_t rank = sizeof...(Ops);
  static constexpr std::size_t num_args = sizeof...(IA);
  static constexpr std::size_t num_results = sizeof...(OA);
  using arg_types = std::tuple<typename IA::element_type...>;
  using reduction_type = typename hom_type::reduction_type;
  using accumulate_type = typename hom_type::accumulate_type;
  // The element types of the outputs, and the types f's results are computed and combined in
  // (the accumulation types: equal to the output types except for bf16/f16 outputs or a
  // stated pw(op, accumulate<T>)).
  using output_tuple = std::tuple<typename OA::element_type...>;
  using result_tuple =
      std::tuple<detail::value_type_t<typename OA::element_type, accumulate_type>...>;

  static_assert((((IA::uses >> rank) == 0) && ...) && (((OA::uses >> rank) == 0) && ...),
                "mdh::computation(out_view, md_hom, inp_view) requires every index function to "
                "use only the md_hom's dimensions (a placeholder's number is >= the number of "
                "combine operators)");
  static_assert((((OA::uses & hom_type::pointwise_mask) == 0) && ...),
                "mdh::computation(out_view, md_hom, inp_view) requires 'out_view' not to use "
                "pw (reduction) dimensions in its index functions");
  static_assert((detail::agrees_with_namesakes<IA, IA...> && ...),
                "mdh::computation(out_view, md_hom, inp_view) requires the inp_view accesses "
                "of one buffer name to have one element type and one rank");
  static_assert(((detail::namesakes<OA, OA...> <= 1 && detail::namesakes<OA, IA...> == 0) && ...),
                "mdh::computation(out_view, md_hom, inp_view) requires every out_view buffer to "
                "have a name of its own (not another output's or an input's)");

  // Dimensions whose every index must have its own output element: cc (concatenation) and ps
  // (prefix sum, one result per prefix).
  static constexpr std::uint32_t kept_mask = hom_type::concat_mask | hom_type::prefix_sum_mask;
  static constexpr std::uint32_t used_mask = (0u | ... | IA::uses) | (0u | ... | OA::uses);
  static_assert((hom_type::concat_mask & ~used_mask) == 0,
                "mdh::computation(out_view, md_hom, inp_view) requires every cc dimension to be "
                "used by an index function (one that nothing uses only repeats the same result)");
  static_assert((hom_type::concat_mask & ~used_mask) != 0 ||
                    (((kept_mask & ~OA::uses) == 0) && ...),
                "mdh::computation(out_view, md_hom, inp_view) requires every out_view buffer to "
                "be indexed by every cc and ps dimension (leaving one out would write several "
                "results to one element: combine them with a pw(op) dimension instead)");
  static_assert(std::is_invocable_v<const F&, typename IA::element_type...>,
                "mdh::computation(out_view, md_hom, inp_view) requires the scalar function "
                "'f' to be callable with one argument per inp_view access");
  static_assert(
      detail::result_arity<std::invoke_result_t<const F&, typename IA::element_type...>>() ==
          num_results,
      "mdh::computation(out_view, md_hom, inp_view) requires the scalar function "
      "'f' to return one value per out_view buffer (a std::tuple for several)");
  static_assert(
      detail::results_fit<output_tuple, result_tuple, const F&, typename IA::element_type...>(),
      "mdh::computation(out_view, md_hom, inp_view) requires the scalar function 'f' to return "
      "values that convert to the out_view element types without narrowing (write "
      "mdh::cast<T>(x) to convert on purpose)");
  static_assert(
      !requires { reduction_type::components; } ||
          [] {
            if constexpr (requires { reduction_type::components; })
              return reduction_type::components == num_results;
            else
              return true;
          }(),
      "mdh::computation(out_view, md_hom, inp_view) requires the custom combine "
      "operator's identity to have one value per out_view buffer");

  computation_t(std::string name, out_view_t<OA...> out, hom_type hom, inp_view_t<IA...> inp)
      : out_(std::move(out)), hom_(std::move(hom)), inp_(std::move(inp)) {
    describe(std::move(name));
  }

  // The runtime description the backends lower.
  const ir::computation& ir() const { return ir_; }
  const std::string& name() const { return ir_.name; }
  std::string str() const { return ir::to_string(ir_); }
  std::string hash() const { return ir::structural_hash_hex(ir_); }

  // The same computation with another precision for its fp32 operands: precision::tf32 rounds
  // every f32 input element to TF32 (10 fraction bits) before f reads it, as tensor cores read
  // fp32 operands (torch.backends.cuda.matmul.allow_tf32); products and sums stay fp32. For
  // contractions only (a pw(add) reduction over f32 inputs). Part of the structural hash: a
  // tf32 parameter file is never used for the fp32 computation, nor the reverse.
  // precision::tf32x3 keeps near-fp32 accuracy: on the tensor cores each product is three TF32
  // products of split operands (hi = tf32(x), lo = x - hi truncated to TF32); elsewhere it is ieee.
  computation_t with_precision(ir::precision p) const {
    computation_t c = *this;
    c.ir_.input_precision = p;
    ir::validate(c.ir_);
    return c;
  }
  ir::precision precision() const { return ir_.input_precision; }

  // The iteration sizes, one per dimension: `matmul.sizes(1024, 1024, 1024)`.
  template <class... N>
  requires(std::is_integral_v<N>&&...) std::vector<std::int64_t> sizes(N... n)
  const {
    static_assert(sizeof...(N) == rank,
                  "mdh::computation::sizes(n...) requires 'n' to give one size per dimension");
    std::vector<std::int64_t> s{static_cast<std::int64_t>(n)...};
    check_sizes(s);
    return s;
  }
  void check_sizes(const std::vector<std::int64_t>& s) const {
    if (s.size() != rank)
      throw error("computation '" + ir_.name + "' has " + std::to_string(rank) +
                  " dimensions, got " + std::to_string(s.size()) + " sizes");
    for (std::size_t d = 0; d < rank; ++d)
      if (s[d] < 1)
        throw error("computation '" + ir_.name + "': size of dimension '" + ir_.dims[d].name +
                    "' is " + std::to_string(s[d]) + " (must be >= 1)");
  }

  // A buffer's shape, derived from the sizes and its index functions.
  shape_t shape(std::string_view buffer, const std::vector<std::int64_t>& s) const {
    check_sizes(s);
    for (auto* bufs : {&ir_.inputs, &ir_.outputs})
      for (auto& b : *bufs)
        if (b.name == buffer) return ir::buffer_shape(ir_, b, s);
    throw error("computation '" + ir_.name + "' has no buffer '" + std::string(buffer) + "'");
  }

  // The same computation with its dimensions named (for printing): {"b", "i", "j", "k"}.
  computation_t with_dim_names(std::vector<std::string> names) const {
    if (names.size() != rank) throw error("with_dim_names: need one name per dimension");
    computation_t c = *this;
    for (std::size_t d = 0; d < rank; ++d) c.ir_.dims[d].name = names[d];
    return c;
  }

  // --- numeric evaluation (the CPU reference) ---
  // f on numbers, results converted to the output element types.
  result_tuple apply(const typename IA::element_type&... args) const {
    return detail::convert_tuple<result_tuple>(detail::as_tuple(hom_.f(args...)),
                                               std::make_index_sequence<num_results>{});
  }
  // a ⊕ b on result tuples.
  result_tuple combine(const result_tuple& a, const result_tuple& b) const {
    using Op = reduction_type;
    if constexpr (std::is_void_v<Op>) {
      return b;
    } else if constexpr (Op::kind == ir::builtin::custom) {
      const Op& op = reduction_op();
      if constexpr (num_results == 1)
        return detail::convert_tuple<result_tuple>(
            detail::as_tuple(op.fn(std::get<0>(a), std::get<0>(b))), std::index_sequence<0>{});
      else
        return detail::convert_tuple<result_tuple>(detail::as_tuple(op.fn(a, b)),
                                                   std::make_index_sequence<num_results>{});
    } else {
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return result_tuple{static_cast<std::tuple_element_t<K, result_tuple>>(
            Op{}(std::get<K>(a), std::get<K>(b)))...};
      }
      (std::make_index_sequence<num_results>{});
    }
  }
  // For lambda argument k: which IR input buffer and which of its accesses.
  const std::array<std::pair<int, int>, num_args>& arg_source() const { return arg_source_; }

 private:
  template <std::size_t K = 0>
  const auto& reduction_op() const {
    if constexpr (K == rank) {
      throw internal_error("no reduction operator");
      return std::get<0>(hom_.ops);  // unreachable, keeps the return type
    } else if constexpr (std::tuple_element_t<K, std::tuple<Ops...>>::kind !=
                         ir::combine_kind::concat) {
      return std::get<K>(hom_.ops).op;
    } else {
      return reduction_op<K + 1>();
    }
  }

  template <class Access>
  static ir::access to_ir(const Access& a) {
    ir::access r;
    for (std::size_t k = 0; k < Access::rank; ++k) {
      ir::affine f;
      f.coeff.assign(a.index.coeff[k].begin(), a.index.coeff[k].begin() + rank);
      f.offset = a.index.offset[k];
      r.index.push_back(std::move(f));
    }
    return r;
  }

  void describe(std::string name) {
    ir_.name = std::move(name);
    auto names = detail::default_dim_names(rank);
    std::size_t d = 0;
    ((ir_.dims.push_back({names[d], Ops::kind}), ++d), ...);

    // Inputs: group accesses by buffer name, in order of first appearance.
    std::map<std::string, int> index_of;
    std::size_t k = 0;
    auto add_input = [&](const auto& a) {
      using A = std::remove_cvref_t<decltype(a)>;
      scalar_type t = scalar_type_of<typename A::element_type>();
      // One name is one buffer of one element type and rank (checked statically above).
      auto [it, fresh] = index_of.try_emplace(std::string(A::buffer), int(ir_.inputs.size()));
      if (fresh) ir_.inputs.push_back({std::string(A::buffer), t, A::rank, {}});
      ir::buffer& b = ir_.inputs[it->second];
      arg_source_[k++] = {it->second, int(b.accesses.size())};
      b.accesses.push_back(to_ir(a));
    };
    std::apply([&](const auto&... a) { (add_input(a), ...); }, inp_.accesses);
    auto add_output = [&](const auto& a) {
      using A = std::remove_cvref_t<decltype(a)>;
      ir_.outputs.push_back({std::string(A::buffer),
                             scalar_type_of<typename A::element_type>(),
                             A::rank,
                             {to_ir(a)}});
    };
    std::apply([&](const auto&... a) { (add_output(a), ...); }, out_.accesses);
    value_types_ = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::vector<scalar_type>{scalar_type_of<std::tuple_element_t<K, result_tuple>>()...};
    }
    (std::make_index_sequence<num_results>{});

    // The scalar function, recorded symbolically; IR args are ordered buffer by buffer.
    std::vector<int> first_arg;
    int n = 0;
    for (auto& b : ir_.inputs) {
      first_arg.push_back(n);
      n += int(b.accesses.size());
      for (std::size_t a = 0; a < b.accesses.size(); ++a) ir_.f.arg_types.push_back(b.type);
    }
    {
      recording_scope scope(ir_.f);
      auto arg = [&](std::size_t pos) {
        auto [b, a] = arg_source_[pos];
        return sym::arg(first_arg[b] + a, ir_.inputs[b].type);
      };
      auto result = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return detail::as_tuple(hom_.f(arg(K)...));
      }
      (std::make_index_sequence<num_args>{});
      record_results(ir_.f, result);
    }

    // The reduction operator shared by the pw/ps dimensions.
    using Op = reduction_type;
    if constexpr (!std::is_void_v<Op>) {
      const Op& op = reduction_op();
      ir_.reduction.kind = Op::kind;
      if constexpr (Op::kind == ir::builtin::custom) {
        ir_.reduction.name = op.name;
        ir_.reduction.identity.assign(op.identity.begin(), op.identity.end());
        ir::scalar_function& g = ir_.reduction.custom;
        for (int side = 0; side < 2; ++side)
          for (auto t : value_types_) g.arg_types.push_back(t);
        recording_scope scope(g);
        auto side_args = [&](int side) {
          return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::make_tuple(sym::arg(side * int(num_results) + int(K), value_types_[K])...);
          }
          (std::make_index_sequence<num_results>{});
        };
        auto lhs = side_args(0), rhs = side_args(1);
        if constexpr (num_results == 1)
          record_results(g, detail::as_tuple(op.fn(std::get<0>(lhs), std::get<0>(rhs))));
        else
          record_results(g, detail::as_tuple(op.fn(lhs, rhs)));
      } else {
        ir_.reduction.name = Op::name;
      }
    }
    // Creation order depends on the compiler (unspecified argument evaluation order).
    ir_.f = ir::canonicalize(ir_.f);
    if (ir_.reduction.kind == ir::builtin::custom)
      ir_.reduction.custom = ir::canonicalize(ir_.reduction.custom);
    ir::validate(ir_);
  }

  // Stores the recorded results, cast to the accumulation types (value_types_).
  template <class Tuple>
  void record_results(ir::scalar_function& g, const Tuple& results) {
    std::size_t r = 0;
    std::apply(
        [&](const auto&... v) {
          ((g.results.push_back(detail::convert(detail::to_sym(v), value_types_[r]).node()), ++r),
           ...);
        },
        results);
  }

  out_view_t<OA...> out_;
  hom_type hom_;
  inp_view_t<IA...> inp_;
  ir::computation ir_;
  std::array<std::pair<int, int>, num_args> arg_source_{};
  std::vector<scalar_type> value_types_;  // per result: the type of result_tuple's component
};

template <class... OA, class F, class... Ops, class... IA>
auto computation(std::string name, out_view_t<OA...> out, md_hom_t<F, Ops...> hom,
                 inp_view_t<IA...> inp) {
  return computation_t<out_view_t<OA...>, md_hom_t<F, Ops...>, inp_view_t<IA...>>(
      std::move(name), std::move(out), std::move(hom), std::move(inp));
}
template <class... OA, class F, class... Ops, class... IA>
auto computation(out_view_t<OA...> out, md_hom_t<F, Ops...> hom, inp_view_t<IA...> inp) {
  return computation("computation", std::move(out), std::move(hom), std::move(inp));
}

// The IR of any computation (for backends that take plain data).
template <class C>
const ir::computation& describe(const C& c) {
  return c.ir();
}

}  // namespace mdh
