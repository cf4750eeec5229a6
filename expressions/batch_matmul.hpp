// SPDX-License-Identifier: MIT
// BatchMatMul: OB1(b1,b2,i,j) = +_k IB1(b1,b2,i,k) * IB2(b1,b2,k,j);  md_hom(*, (++1..++4, pw(+))).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

namespace detail {
// in<T, Name>(b1, b2, x, y), or (b1, b2, y, x) when Adj (TensorFlow's adj_x / adj_y).
template <class T, buffer_name Name, bool Adj, class B1, class B2, class X, class Y>
auto batch_operand(B1 b1, B2 b2, X x, Y y) {
  if constexpr (Adj)
    return in<T, Name>(b1, b2, y, x);
  else
    return in<T, Name>(b1, b2, x, y);
}
}  // namespace detail

// TensorFlow's BatchMatMul<adj_x, adj_y> as in BERT (SC21 Table I): two batch dimensions
// (batch, heads); sizes (b1, b2, i, j, k). AdjA reads IB1 as (b1,b2,k,i), AdjB reads IB2 as
// (b1,b2,j,k): BERT's scores Q * K^T are batch_matmul<float, false, true>.
template <class T = float, bool AdjA = false, bool AdjB = false>
auto batch_matmul() {
  auto [b1, b2, i, j, k] = indices<5>();
  return computation("batch_matmul", out_view(out<T, "OB1">(b1, b2, i, j)),
                     md_hom([](auto x, auto y) { return x * y; }, cc, cc, cc, cc, pw(add)),
                     inp_view(detail::batch_operand<T, "IB1", AdjA>(b1, b2, i, k),
                              detail::batch_operand<T, "IB2", AdjB>(b1, b2, k, j)))
      .with_dim_names({"b1", "b2", "i", "j", "k"});
}

}  // namespace mdh::ops
