// SPDX-License-Identifier: MIT
// md_hom(f, ops...): the scalar function f and one combine operator per dimension.
// Checks Lemma 1 of the MDH papers statically: all pw/ps dimensions share one operator.
#pragma once

#include <tuple>
#include <type_traits>

#include <mdh/combine.hpp>
#include <mdh/index.hpp>

namespace mdh {

namespace detail {
template <class Op>
struct reduction_of {
  using type = void;
  using accumulate = void;
};
template <class Op, class Acc>
struct reduction_of<pw_t<Op, Acc>> {
  using type = Op;
  using accumulate = Acc;
};
template <class Op, class Acc>
struct reduction_of<ps_t<Op, Acc>> {
  using type = Op;
  using accumulate = Acc;
};

// The operator type shared by all non-cc dimensions (void if none); `consistent` is false when
// two dimensions disagree. Likewise the stated accumulation type (void: none stated).
template <class... Ops>
struct shared_reduction {
  using type = void;
  using accumulate = void;
  static constexpr bool consistent = true;
  static constexpr bool consistent_accumulate = true;
};
template <class Op, class... Rest>
struct shared_reduction<Op, Rest...> {
  using mine = typename reduction_of<Op>::type;
  using my_acc = typename reduction_of<Op>::accumulate;
  using rest = shared_reduction<Rest...>;
  using type = std::conditional_t<std::is_void_v<mine>, typename rest::type, mine>;
  using accumulate = std::conditional_t<std::is_void_v<my_acc>, typename rest::accumulate, my_acc>;
  static constexpr bool consistent =
      rest::consistent && (std::is_void_v<mine> || std::is_void_v<typename rest::type> ||
                           std::is_same_v<mine, typename rest::type>);
  static constexpr bool consistent_accumulate =
      rest::consistent_accumulate &&
      (std::is_void_v<my_acc> || std::is_void_v<typename rest::accumulate> ||
       std::is_same_v<my_acc, typename rest::accumulate>);
};
}  // namespace detail

template <class F, class... Ops>
struct md_hom_t {
  static constexpr std::size_t rank = sizeof...(Ops);
  using reduction_type = typename detail::shared_reduction<Ops...>::type;
  // The accumulation type stated with pw(op, accumulate<T>), or void.
  using accumulate_type = typename detail::shared_reduction<Ops...>::accumulate;
  F f;
  std::tuple<Ops...> ops;

  // Bit d set when dimension d has combine operator kind K.
  template <ir::combine_kind K>
  static constexpr std::uint32_t mask_of = [] {
    std::uint32_t m = 0, d = 0;
    ((m |= (Ops::kind == K ? (1u << d) : 0u), ++d), ...);
    return m;
  }();
  static constexpr std::uint32_t concat_mask = mask_of<ir::combine_kind::concat>;
  static constexpr std::uint32_t pointwise_mask = mask_of<ir::combine_kind::pointwise>;
  static constexpr std::uint32_t prefix_sum_mask = mask_of<ir::combine_kind::prefix_sum>;
};

template <class F, class... Ops>
md_hom_t<F, std::remove_cvref_t<Ops>...> md_hom(F f, Ops&&... ops) {
  static_assert(sizeof...(Ops) >= 1, "mdh::md_hom(f, ops...) requires at least one dimension");
  static_assert(sizeof...(Ops) <= max_rank,
                "mdh::md_hom(f, ops...) requires at most mdh::max_rank (16) dimensions");
  static_assert((is_combine_operator_v<Ops> && ...),
                "mdh::md_hom(f, ops...) requires every 'ops' to be a combine operator "
                "(mdh::cc, mdh::pw(op) or mdh::ps(op))");
  static_assert(
      ((std::remove_cvref_t<Ops>::kind == ir::combine_kind::prefix_sum ? 1 : 0) + ... + 0) <= 1,
      "mdh::md_hom(f, ops...) requires 'ops' to have at most one ps(op) dimension");
  static_assert(detail::shared_reduction<std::remove_cvref_t<Ops>...>::consistent,
                "mdh::md_hom(f, ops...) requires all pw/ps 'ops' to share one operator (Lemma 1: "
                "e.g. pw(add) with pw(mul) is not a homomorphism)");
  static_assert(detail::shared_reduction<std::remove_cvref_t<Ops>...>::consistent_accumulate,
                "mdh::md_hom(f, ops...) requires all pw/ps 'ops' that state an accumulation "
                "type (pw(op, accumulate<T>)) to state the same one");
  return {std::move(f), {std::forward<Ops>(ops)...}};
}

}  // namespace mdh
