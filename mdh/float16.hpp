// SPDX-License-Identifier: MIT
// 16-bit floating-point storage types: mdh::bf16 (bfloat16: 8 exponent bits, 8 significand
// bits) and mdh::f16 (IEEE binary16: 5 exponent bits, 11 significand bits). They store; they do
// not compute: every arithmetic operation converts to float first (bf16 * bf16 is a float), as
// the generated kernels do. Conversions to 16 bits round to nearest, ties to even, directly from
// float or double (no double rounding), and keep NaN, infinities, signed zeros and subnormals.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mdh {

namespace detail {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// v rounded to nearest-even with `digits` significand bits (the implicit one included) and
// normal exponents >= emin (below: the subnormal quantum 2^(emin - digits + 1)); values past
// the largest finite number of an emax format become infinities. Exact in double for digits
// <= 24, so it rounds a double in one step.
inline double round_to_format(double v, int digits, int emin, int emax) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = std::ilogb(v);  // |v| in [2^e, 2^(e+1))
  int q = (e < emin ? emin : e) - (digits - 1);
  double r = std::ldexp(std::nearbyint(std::ldexp(v, -q)), q);  // default mode: ties to even
  double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - digits), emax);
  if (std::fabs(r) > largest) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

}  // namespace detail

// Round to nearest even into bf16 bits, from float or double.
inline std::uint16_t bf16_bits_from(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xffc0 : 0x7fc0;  // a quiet NaN
  float r = float(detail::round_to_format(v, 8, -126, 127));    // exact in float
  return std::uint16_t(detail::float_bits(r) >> 16);
}
inline float bf16_bits_to_float(std::uint16_t b) {
  return detail::bits_float(std::uint32_t(b) << 16);
}

// Round to nearest even into IEEE binary16 bits, from float or double.
inline std::uint16_t f16_bits_from(double v) {
  std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  double r = std::fabs(detail::round_to_format(v, 11, -14, 15));
  if (std::isinf(r)) return sign | 0x7c00;
  if (r < 0x1p-14) return sign | std::uint16_t(std::ldexp(r, 24));  // subnormal (or zero)
  int e = std::ilogb(r);
  auto mantissa = std::uint16_t(std::ldexp(r, 10 - e) - 1024);
  return sign | std::uint16_t((e + 15) << 10) | mantissa;
}
inline float f16_bits_to_float(std::uint16_t b) {
  float sign = (b & 0x8000) ? -1.0f : 1.0f;
  int e = (b >> 10) & 0x1f, m = b & 0x3ff;
  if (e == 0x1f)
    return std::copysign(
        m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity(), sign);
  if (e == 0) return sign * std::ldexp(float(m), -24);
  return sign * std::ldexp(float(1024 + m), e - 25);
}

// TF32 as the tensor cores read an fp32 operand (cvt.rna.tf32.f32): 10 fraction bits, rounded
// to nearest with ties away from zero; NaN and infinities unchanged. The result is a float
// whose low 13 bits are zero.
inline float round_tf32(float f) {
  std::uint32_t u = detail::float_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;  // NaN, infinity
  return detail::bits_float((u + 0x1000u) & 0xffffe000u);
}

// Split TF32 (precision tf32x3): x = hi + lo + r with hi = round_tf32(x) and lo = x - hi (exact,
// Sterbenz) truncated to TF32, so |r| < 2^-21 |x|. The kernels compute both by integer
// arithmetic without a NaN test (cvt.rna.tf32.f32 is a sequence with one on sm_90): a NaN x
// reaches the sum through lo, which is NaN. This is lo for a finite x.
inline float split_tf32_lo(float x) {
  return detail::bits_float(detail::float_bits(x - round_tf32(x)) & 0xffffe000u);
}

namespace detail {
// A 16-bit storage type: bits, explicit construction from numbers, implicit reading as float.
template <class Tag>
struct float16_storage {
  std::uint16_t bits = 0;

  constexpr float16_storage() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  explicit float16_storage(T v) : bits(Tag::from(double(v))) {}

  static float16_storage from_bits(std::uint16_t b) {
    float16_storage h;
    h.bits = b;
    return h;
  }
  operator float() const { return Tag::to(bits); }
};
struct bf16_tag {
  static std::uint16_t from(double v) { return bf16_bits_from(v); }
  static float to(std::uint16_t b) { return bf16_bits_to_float(b); }
};
struct f16_tag {
  static std::uint16_t from(double v) { return f16_bits_from(v); }
  static float to(std::uint16_t b) { return f16_bits_to_float(b); }
};
}  // namespace detail

using bf16 = detail::float16_storage<detail::bf16_tag>;
using f16 = detail::float16_storage<detail::f16_tag>;
static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2);

template <class T>
inline constexpr bool is_float16_v =
    std::is_same_v<std::remove_cvref_t<T>, bf16> || std::is_same_v<std::remove_cvref_t<T>, f16>;

}  // namespace mdh
