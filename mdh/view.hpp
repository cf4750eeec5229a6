// SPDX-License-Identifier: MIT
// Buffers and views: `in<float, "A">(i, k)` is one access of input buffer A through index
// functions; inp_view(...) lists the accesses the scalar function receives (a buffer may appear
// several times, as in stencils), out_view(...) the output buffers its results are written to.
#pragma once

#include <string_view>
#include <tuple>

#include <mdh/buffer_name.hpp>
#include <mdh/index.hpp>
#include <mdh/ir/scalar_type.hpp>

namespace mdh {

// One index function with R coordinates; `Uses` = the placeholders it uses (bit per dimension).
template <std::size_t R, std::uint32_t Uses>
struct index_function {
  std::array<std::array<std::int64_t, max_rank>, R> coeff{};
  std::array<std::int64_t, R> offset{};
  static constexpr std::size_t rank = R;
  static constexpr std::uint32_t uses = Uses;

  template <class... I>
  static index_function make(const I&... idx) {
    index_function f;
    std::size_t k = 0;
    ((f.coeff[k] = as_affine(idx).coeff, f.offset[k] = as_affine(idx).offset, ++k), ...);
    return f;
  }
};

template <class T, std::size_t R, std::uint32_t Uses, buffer_name Name>
struct input_access {
  using element_type = T;
  static constexpr std::size_t rank = R;
  static constexpr std::uint32_t uses = Uses;
  static constexpr std::string_view buffer = Name.view();
  index_function<R, Uses> index;
};
template <class T, std::size_t R, std::uint32_t Uses, buffer_name Name>
struct output_access {
  using element_type = T;
  static constexpr std::size_t rank = R;
  static constexpr std::uint32_t uses = Uses;
  static constexpr std::string_view buffer = Name.view();
  index_function<R, Uses> index;
};

namespace detail {
// The access `Access<T, rank, uses, Name>` of `idx...`, once its arguments are checked.
template <template <class, std::size_t, std::uint32_t, buffer_name> class Access, class T,
          buffer_name Name, class... I>
auto make_access(const I&... idx) {
  constexpr std::uint32_t uses = (0u | ... | decltype(as_affine(idx))::uses);
  return Access<T, sizeof...(I), uses, Name>{index_function<sizeof...(I), uses>::make(idx...)};
}

// What a run-time name `in<T>("A")` leads to after its error: the access without a name, so
// the error is not followed by others.
template <template <class, std::size_t, std::uint32_t, buffer_name> class Access, class T>
struct unnamed_buffer {
  template <IndexArgument... I>
  auto operator()(const I&... idx) const {
    return make_access<Access, T, buffer_name<1>{""}>(idx...);
  }
};
}  // namespace detail

// `mdh::in<float, "A">(i, k)`: one read access of input buffer A through the index functions
// i and k. The name is a template argument so that names are checked at compile time.
template <class T, buffer_name Name, class... I>
auto in(const I&... idx) {
  static_assert(is_element_type_v<T>,
                "mdh::in<T, name>(idx...) requires 'T' to be an element type (float, double, "
                "std::int32_t, std::int64_t, bool, mdh::bf16 or mdh::f16)");
  static_assert(!Name.empty(), "mdh::in<T, name>(idx...) requires 'name' not to be empty");
  static_assert((IndexArgument<I> && ...),
                "mdh::in<T, name>(idx...) requires every 'idx' to be an index function "
                "(placeholders, their integer multiples and sums, integer offsets) or an integer");
  if constexpr (is_element_type_v<T> && (IndexArgument<I> && ...))
    return detail::make_access<input_access, T, Name>(idx...);
}
// `mdh::out<float, "C">(i, j)`: the write access of output buffer C.
template <class T, buffer_name Name, class... I>
auto out(const I&... idx) {
  static_assert(is_element_type_v<T>,
                "mdh::out<T, name>(idx...) requires 'T' to be an element type (float, double, "
                "std::int32_t, std::int64_t, bool, mdh::bf16 or mdh::f16)");
  static_assert(!Name.empty(), "mdh::out<T, name>(idx...) requires 'name' not to be empty");
  static_assert((IndexArgument<I> && ...),
                "mdh::out<T, name>(idx...) requires every 'idx' to be an index function "
                "(placeholders, their integer multiples and sums, integer offsets) or an integer");
  if constexpr (is_element_type_v<T> && (IndexArgument<I> && ...))
    return detail::make_access<output_access, T, Name>(idx...);
}

// The run-time spelling of earlier versions, `in<float>("A")(i, k)`: names must be known at
// compile time now; this says how to write them.
template <class T, class S>
auto in(const S&) {
  static_assert(detail::always_false<S>,
                "mdh::in<T>(name) requires 'name' to be a template argument: write "
                "mdh::in<float, \"A\">(i, k) (buffer names are checked at compile time)");
  return detail::unnamed_buffer<input_access, T>{};
}
template <class T, class S>
auto out(const S&) {
  static_assert(detail::always_false<S>,
                "mdh::out<T>(name) requires 'name' to be a template argument: write "
                "mdh::out<float, \"C\">(i, j) (buffer names are checked at compile time)");
  return detail::unnamed_buffer<output_access, T>{};
}

template <class T>
struct is_input_access : std::false_type {};
template <class T, std::size_t R, std::uint32_t U, buffer_name N>
struct is_input_access<input_access<T, R, U, N>> : std::true_type {};
template <class T>
struct is_output_access : std::false_type {};
template <class T, std::size_t R, std::uint32_t U, buffer_name N>
struct is_output_access<output_access<T, R, U, N>> : std::true_type {};

template <class... A>
struct inp_view_t {
  std::tuple<A...> accesses;
};
template <class... A>
struct out_view_t {
  std::tuple<A...> accesses;
};

template <class... A>
inp_view_t<A...> inp_view(A... accesses) {
  static_assert(sizeof...(A) >= 1, "mdh::inp_view(accesses...) requires at least one access");
  static_assert((is_input_access<A>::value && ...),
                "mdh::inp_view(accesses...) requires 'accesses' to be input accesses, e.g. "
                "mdh::in<float, \"A\">(i, k)");
  return {{std::move(accesses)...}};
}
template <class... A>
out_view_t<A...> out_view(A... accesses) {
  static_assert(sizeof...(A) >= 1, "mdh::out_view(accesses...) requires at least one access");
  static_assert((is_output_access<A>::value && ...),
                "mdh::out_view(accesses...) requires 'accesses' to be output accesses, e.g. "
                "mdh::out<float, \"C\">(i, j)");
  return {{std::move(accesses)...}};
}

}  // namespace mdh
