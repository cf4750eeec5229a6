// SPDX-License-Identifier: MIT
// Attention as one md_hom: ctx = softmax(Q K^T * scale + mask) V over the keys j, with the
// scores produced tile by tile inside the kernel (mdh::with_producer):
//   producer  S(b,h,i,j) = scale * +_d Q(b,h,i,d) K(b,h,j,d) + (1 - mask(b,j)) * -10000
//   consumer  (m,l,acc)(b,h,i,e) = online_softmax_j f(S(b,h,i,j), V(b,h,j,e)),
//             f(s, v) = (s, 1, v);  ctx(b,h,i,e) = acc / l   (its epilogue)
// Q, K and V are read straight from the QKV projection's [batch, seq, 3, heads, d] rows and
// the context written as [batch, seq, hidden], as the three-kernel attention of
// expressions/bert_layer.hpp does. Sizes (b, h, i, e, j, d) = (batch, heads, seq, d, seq, d).
#pragma once

#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include <expressions/bert_shape.hpp>
#include <mdh/epilogue.hpp>
#include <mdh/mdh.hpp>
#include <mdh/with_producer.hpp>

namespace mdh::ops {

// The online-softmax operator on (running max m, sum l of exp(s - m), accumulator
// acc = sum exp(s - m) v):
//   (m1,l1,a1) (+) (m2,l2,a2) = (m, l1 e^(m1-m) + l2 e^(m2-m), a1 e^(m1-m) + a2 e^(m2-m)),
// m = max(m1, m2). A side whose max is m is taken unscaled (select), so the identity
// (-inf, 0, 0) combines exactly and exp(-inf - -inf) is never taken (no NaN), as in max_sum.
inline auto online_softmax() {
  return custom(
      "online_softmax",
      [](auto lhs, auto rhs) {
        auto [m1, l1, a1] = lhs;
        auto [m2, l2, a2] = rhs;
        auto m = mdh::max(m1, m2);
        auto e1 = mdh::exp(m1 - m), e2 = mdh::exp(m2 - m);
        auto l = select(m1 == m, l1, l1 * e1) + select(m2 == m, l2, l2 * e2);
        auto a = select(m1 == m, a1, a1 * e1) + select(m2 == m, a2, a2 * e2);
        return std::make_tuple(m, l, a);
      },
      -std::numeric_limits<double>::infinity(), 0.0, 0.0);
}

namespace detail {
template <class T>
constexpr void require_attention_type() {
  static_assert(std::is_floating_point_v<T> || is_float16_v<T>,
                "mdh::ops::attention<T> requires 'T' to be float, double, mdh::bf16 or mdh::f16");
}
}  // namespace detail

// The producer: the scaled, masked scores in the accumulation type (they never leave the
// kernel), read from the QKV buffer seen as [3T, hidden] rows (token t's slot s is row 3t + s).
// Sizes (b, h, i, j, d).
template <class T = float>
auto attention_scores_produced(const bert_shape& s) {
  detail::require_attention_type<T>();
  s.check();
  using V = compute_type_t<T>;
  const std::int64_t S = s.seq, D = s.head_dim();
  const V scale = V(1) / V(std::sqrt(double(D)));
  auto [b, h, i, j, d] = indices<5>();
  auto qk = computation("qk", out_view(out<V, "QK">(b, h, i, j)),
                        md_hom([](auto q, auto k) { return q * k; }, cc, cc, cc, cc, pw(add)),
                        inp_view(in<T, "Q">(3 * S * b + 3 * i, D * h + d),
                                 in<T, "K">(3 * S * b + 3 * j + 1, D * h + d)))
                .with_dim_names({"b", "h", "i", "j", "d"});
  auto [b2, h2, i2, j2] = indices<4>();
  auto mask =
      computation("scale_mask", out_view(out<V, "S">(b2, h2, i2, j2)),
                  md_hom([scale](auto c, auto m) { return c * scale + (V(1) - m) * V(-10000); }, cc,
                         cc, cc, cc),
                  inp_view(in<V, "QK">(b2, h2, i2, j2), in<T, "mask">(b2, j2)))
          .with_dim_names({"b", "h", "i", "j"});
  return with_epilogue("attention_scores_produced", qk, mask);
}

// The consumer: online softmax over the keys j times V, normalised by its epilogue and written
// as the context [batch, seq, hidden]. Sizes (b, h, i, e, j).
template <class T = float>
auto attention_softmax_v(const bert_shape& s) {
  detail::require_attention_type<T>();
  s.check();
  using V = compute_type_t<T>;
  const std::int64_t S = s.seq, D = s.head_dim();
  auto [b, h, i, e, j] = indices<5>();
  auto sv =
      computation(
          "softmax_v",
          out_view(out<V, "m">(b, h, i, e), out<V, "l">(b, h, i, e), out<V, "acc">(b, h, i, e)),
          md_hom([](auto sc, auto v) { return std::make_tuple(sc, V(1), mdh::cast<V>(v)); }, cc, cc,
                 cc, cc, pw(online_softmax())),
          inp_view(in<V, "S">(b, h, i, j), in<T, "V">(3 * S * b + 3 * j + 2, D * h + e)))
          .with_dim_names({"b", "h", "i", "e", "j"});
  auto [b2, h2, i2, e2] = indices<4>();
  auto norm = computation("normalize", out_view(out<T, "ctx">(S * b2 + i2, D * h2 + e2)),
                          md_hom([](auto l, auto a) { return a / l; }, cc, cc, cc, cc),
                          inp_view(in<V, "l">(b2, h2, i2, e2), in<V, "acc">(b2, h2, i2, e2)))
                  .with_dim_names({"b", "h", "i", "e"});
  return with_epilogue("attention_softmax_v", sv, norm);
}

// Attention as one kernel: inputs Q, K (the QKV buffer twice), mask [batch, seq], V (the QKV
// buffer a third time); output ctx [batch * seq, hidden].
template <class T = float>
auto attention(const bert_shape& s) {
  return with_producer("attention", attention_scores_produced<T>(s), attention_softmax_v<T>(s));
}

// Its sizes (b, h, i, e, j, d).
inline std::vector<std::int64_t> attention_sizes(const bert_shape& s) {
  s.check();
  return {s.batch, s.heads, s.seq, s.head_dim(), s.seq, s.head_dim()};
}

}  // namespace mdh::ops
