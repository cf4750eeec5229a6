// SPDX-License-Identifier: MIT
// The fused pairs the fused-pair tests and the source-hash test both sweep: softmax, layernorm, a
// map then a row reduction of its result, a map then a prefix sum of its result.
#pragma once

#include <cstdint>

#include <expressions/layernorm.hpp>
#include <expressions/softmax.hpp>
#include <mdh/fused.hpp>

namespace mdh::test {

auto softmax_pair() { return fuse("softmax", ops::softmax_stats(), ops::softmax_normalize()); }
auto layernorm_pair(std::int64_t cols) {
  return fuse("layernorm", ops::layernorm_stats(), ops::layernorm_normalize(cols));
}
// A map, then a row reduction of its result: the second stage reduces.
auto map_then_rowsum() {
  auto [r, c] = indices<2>();
  auto twice =
      computation("twice", out_view(out<float, "E">(r, c)),
                  md_hom([](auto x) { return x * 2.0f; }, cc, cc), inp_view(in<float, "X">(r, c)));
  auto rowsum = computation("rowsum", out_view(out<float, "T">(r)),
                            md_hom([](auto e, auto x) { return e - x; }, cc, pw(add)),
                            inp_view(in<float, "E">(r, c), in<float, "X">(r, c)));
  return fuse("map_rowsum", twice, rowsum);
}
// A map, then a prefix sum of its result along the rows: the second stage scans.
auto map_then_scan() {
  auto [r, c] = indices<2>();
  auto twice =
      computation("twice", out_view(out<float, "E">(r, c)),
                  md_hom([](auto x) { return x * 2.0f; }, cc, cc), inp_view(in<float, "X">(r, c)));
  auto scan =
      computation("rowscan", out_view(out<float, "P">(r, c)),
                  md_hom([](auto e) { return e; }, cc, ps(add)), inp_view(in<float, "E">(r, c)));
  return fuse("map_scan", twice, scan);
}

}  // namespace mdh::test
