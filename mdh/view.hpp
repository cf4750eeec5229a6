// SPDX-License-Identifier: MIT
// Buffers and views: `in<float>("A")(i, k)` is one access of input buffer A through an index
// function; inp_view(...) lists the accesses the scalar function receives (a buffer may appear
// several times, as in stencils), out_view(...) the output buffers its results are written to.
#pragma once

#include <string>
#include <tuple>

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

template <class T, std::size_t R, std::uint32_t Uses>
struct input_access {
  using element_type = T;
  static constexpr std::size_t rank = R;
  static constexpr std::uint32_t uses = Uses;
  std::string buffer;
  index_function<R, Uses> index;
};
template <class T, std::size_t R, std::uint32_t Uses>
struct output_access {
  using element_type = T;
  static constexpr std::size_t rank = R;
  static constexpr std::uint32_t uses = Uses;
  std::string buffer;
  index_function<R, Uses> index;
};

template <class T>
struct input_buffer {
  static_assert(is_element_type_v<T>,
                "mdh::in<T>(name) requires 'T' to be an element type (float, double, "
                "std::int32_t, std::int64_t, bool, mdh::bf16 or mdh::f16)");
  std::string name;
  template <IndexArgument... I>
  auto operator()(const I&... idx) const {
    constexpr std::uint32_t uses = (0u | ... | decltype(as_affine(idx))::uses);
    return input_access<T, sizeof...(I), uses>{name,
                                               index_function<sizeof...(I), uses>::make(idx...)};
  }
};
template <class T>
struct output_buffer {
  static_assert(is_element_type_v<T>,
                "mdh::out<T>(name) requires 'T' to be an element type (float, double, "
                "std::int32_t, std::int64_t, bool, mdh::bf16 or mdh::f16)");
  std::string name;
  template <IndexArgument... I>
  auto operator()(const I&... idx) const {
    constexpr std::uint32_t uses = (0u | ... | decltype(as_affine(idx))::uses);
    return output_access<T, sizeof...(I), uses>{name,
                                                index_function<sizeof...(I), uses>::make(idx...)};
  }
};

template <class T>
input_buffer<T> in(std::string name) {
  return {std::move(name)};
}
template <class T>
output_buffer<T> out(std::string name) {
  return {std::move(name)};
}

template <class T>
struct is_input_access : std::false_type {};
template <class T, std::size_t R, std::uint32_t U>
struct is_input_access<input_access<T, R, U>> : std::true_type {};
template <class T>
struct is_output_access : std::false_type {};
template <class T, std::size_t R, std::uint32_t U>
struct is_output_access<output_access<T, R, U>> : std::true_type {};

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
                "mdh::in<float>(\"A\")(i, k)");
  return {{std::move(accesses)...}};
}
template <class... A>
out_view_t<A...> out_view(A... accesses) {
  static_assert(sizeof...(A) >= 1, "mdh::out_view(accesses...) requires at least one access");
  static_assert((is_output_access<A>::value && ...),
                "mdh::out_view(accesses...) requires 'accesses' to be output accesses, e.g. "
                "mdh::out<float>(\"C\")(i, j)");
  return {{std::move(accesses)...}};
}

}  // namespace mdh
