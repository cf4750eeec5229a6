// SPDX-License-Identifier: MIT
// Host buffers: host_tensor<T> owns a dense row-major array with a shape; buffer_ref is the
// type-erased view that the reference and the backends take, so sizes can be checked per dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/ir/scalar_type.hpp>

namespace mdh {

using shape_t = std::vector<std::int64_t>;

inline std::int64_t element_count(const shape_t& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

inline std::string to_string(const shape_t& s) {
  std::string r = "[";
  for (std::size_t k = 0; k < s.size(); ++k) r += (k ? "," : "") + std::to_string(s[k]);
  return r + "]";
}

// A non-owning, type-erased reference to a dense row-major host (or device) array.
struct buffer_ref {
  void* data = nullptr;
  scalar_type type = scalar_type::f32;
  shape_t shape;

  template <class T>
  T* as() const {
    if (type != scalar_type_of<T>())
      throw error("buffer_ref: element type is " + std::string(short_name(type)) + ", not " +
                  std::string(short_name(scalar_type_of<T>())));
    return static_cast<T*>(data);
  }
  std::int64_t size() const { return element_count(shape); }
};

template <class T>
class host_tensor {
  static_assert(
      !std::is_same_v<T, bool>,
      "mdh::host_tensor<T> requires 'T' not to be bool (std::vector<bool> has no data()); "
      "use mdh::host_buffer(scalar_type::boolean, shape) for bool buffers");

 public:
  host_tensor() = default;
  explicit host_tensor(shape_t shape, T fill = T{})
      : shape_(std::move(shape)), data_(static_cast<std::size_t>(element_count(shape_)), fill) {}

  const shape_t& shape() const { return shape_; }
  std::int64_t size() const { return static_cast<std::int64_t>(data_.size()); }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  T& operator[](std::int64_t k) { return data_[static_cast<std::size_t>(k)]; }
  const T& operator[](std::int64_t k) const { return data_[static_cast<std::size_t>(k)]; }
  std::vector<T>& vector() { return data_; }
  const std::vector<T>& vector() const { return data_; }

  // Element at a multi-index (row-major), bounds-checked.
  T& at(std::initializer_list<std::int64_t> idx) { return data_[offset(idx)]; }
  const T& at(std::initializer_list<std::int64_t> idx) const { return data_[offset(idx)]; }

  operator buffer_ref() { return {data_.data(), scalar_type_of<T>(), shape_}; }
  operator buffer_ref() const {  // for inputs: the reference never writes through it
    return {const_cast<T*>(data_.data()), scalar_type_of<T>(), shape_};
  }

  // Fills with uniform random values in [lo, hi], never exactly zero (zeros hide bugs); bf16
  // and f16 values are drawn as doubles and rounded to nearest even.
  host_tensor& randomize(std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
    std::mt19937_64 rng(seed);
    for (auto& x : data_) {
      if constexpr (std::is_integral_v<T>) {
        std::uniform_int_distribution<std::int64_t> u(static_cast<std::int64_t>(lo),
                                                      static_cast<std::int64_t>(hi));
        do x = static_cast<T>(u(rng));
        while (x == 0 && lo != hi);
      } else {
        std::uniform_real_distribution<double> u(lo, hi);
        do x = static_cast<T>(u(rng));
        while (x == T(0));
      }
    }
    return *this;
  }

 private:
  std::size_t offset(std::initializer_list<std::int64_t> idx) const {
    if (idx.size() != shape_.size())
      throw error("host_tensor::at: " + std::to_string(idx.size()) + " indices for rank " +
                  std::to_string(shape_.size()));
    std::int64_t off = 0;
    std::size_t k = 0;
    for (auto i : idx) {
      if (i < 0 || i >= shape_[k])
        throw error("host_tensor::at: index " + std::to_string(i) + " out of range in dimension " +
                    std::to_string(k) + " of shape " + to_string(shape_));
      off = off * shape_[k++] + i;
    }
    return static_cast<std::size_t>(off);
  }

  shape_t shape_;
  std::vector<T> data_;
};

// An owning, type-erased dense array: what code that handles computations of any element
// types (the tuner, the command-line tools) allocates.
class host_buffer {
 public:
  host_buffer(scalar_type type, shape_t shape)
      : type_(type),
        shape_(std::move(shape)),
        bytes_(static_cast<std::size_t>(element_count(shape_)) * size_of(type)) {}

  scalar_type type() const { return type_; }
  const shape_t& shape() const { return shape_; }
  std::size_t bytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  operator buffer_ref() const { return {const_cast<std::byte*>(bytes_.data()), type_, shape_}; }

  // Random non-zero values (as host_tensor::randomize): floats in [-1, 1], integers in [1, 9].
  host_buffer& randomize(std::uint64_t seed) {
    switch (type_) {
      case scalar_type::f32:
        fill<float>(seed, -1, 1);
        break;
      case scalar_type::f64:
        fill<double>(seed, -1, 1);
        break;
      case scalar_type::i32:
        fill<std::int32_t>(seed, 1, 9);
        break;
      case scalar_type::i64:
        fill<std::int64_t>(seed, 1, 9);
        break;
      case scalar_type::boolean: {
        std::mt19937_64 rng(seed);
        for (auto& b : bytes_) b = std::byte(rng() & 1);
        break;
      }
      case scalar_type::bf16:
        fill<bf16>(seed, -1, 1);
        break;
      case scalar_type::f16:
        fill<f16>(seed, -1, 1);
        break;
    }
    return *this;
  }

 private:
  template <class T>
  void fill(std::uint64_t seed, double lo, double hi) {
    host_tensor<T> t(shape_);
    t.randomize(seed, lo, hi);
    std::memcpy(bytes_.data(), t.data(), bytes_.size());
  }

  scalar_type type_;
  shape_t shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace mdh
