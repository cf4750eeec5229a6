// SPDX-License-Identifier: MIT
// BiasAddGrad<NHWC>: OB1(j) = +_i IB1(i,j);  md_hom(id, (pw(+), ++)) over (i, j).
#pragma once

#include <mdh/mdh.hpp>

namespace mdh::ops {

// TensorFlow's BiasAddGrad (SC21 Table I): column sums, i = the flattened N*H*W rows and
// j = the channels. Sizes (i, j), e.g. (6144, 768) in BERT (batch 16, sequence 384).
template <class T = float>
auto bias_add_grad() {
  auto [i, j] = indices<2>();
  return computation("bias_add_grad", out_view(out<T, "OB1">(j)),
                     md_hom([](auto x) { return x; }, pw(add), cc), inp_view(in<T, "IB1">(i, j)))
      .with_dim_names({"i", "j"});
}

}  // namespace mdh::ops
