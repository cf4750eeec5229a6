// SPDX-License-Identifier: MIT
// Operator library: the TCCG tensor contractions (issue 19) against a naive contraction that
// reads the TCCG spelling "out-a-b" (row-major, the last index contiguous), on random non-zero
// inputs at extents 1, small odd ones and a few mixed ones.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <expressions/all.hpp>

#include "ops_test_util.hpp"

using namespace ops_test;
using mdh::host_tensor;
using mdh::reference;

namespace {

constexpr double kReduceTol = 1e-5;  // times the sum of |terms| (see ops_linalg.cpp)

// Row-major offset of the tensor indexed by `idx` (letters) at the index values `at`.
std::int64_t offset(const std::string& idx, const std::map<char, std::int64_t>& at,
                    const std::map<char, std::int64_t>& size) {
  std::int64_t off = 0;
  for (char x : idx) off = off * size.at(x) + at.at(x);
  return off;
}

// out[...] = sum over the letters not in `out` of A[...] * B[...], in double, and the sum of the
// magnitudes of the terms (the tolerance's scale), for spec "out-a-b" and one extent a letter in
// alphabetical order.
void naive_contraction(const std::string& spec, const sizes_t& extents, const host_tensor<float>& A,
                       const host_tensor<float>& B, std::vector<double>& want,
                       std::vector<double>& mag) {
  const auto d1 = spec.find('-'), d2 = spec.rfind('-');
  const std::string out = spec.substr(0, d1), ia = spec.substr(d1 + 1, d2 - d1 - 1),
                    ib = spec.substr(d2 + 1);
  std::map<char, std::int64_t> size, at;
  std::int64_t points = 1, outs = 1;
  char letter = 'a';
  for (auto e : extents) size[letter] = e, at[letter] = 0, points *= e, ++letter;
  for (char x : out) outs *= size.at(x);
  want.assign(std::size_t(outs), 0.0);
  mag.assign(std::size_t(outs), 0.0);
  for (std::int64_t p = 0; p < points; ++p) {
    std::int64_t r = p;  // p's index values, the last letter fastest
    for (auto it = size.rbegin(); it != size.rend(); ++it)
      at[it->first] = r % it->second, r /= it->second;
    const double t = double(A[offset(ia, at, size)]) * B[offset(ib, at, size)];
    const auto o = std::size_t(offset(out, at, size));
    want[o] += t, mag[o] += std::fabs(t);
  }
}

// The shape a TCCG index string gives at these extents.
mdh::shape_t shape_of(const std::string& idx, const sizes_t& extents) {
  mdh::shape_t s;
  for (char x : idx) s.push_back(extents[std::size_t(x - 'a')]);
  return s;
}

template <class Op>
void check_contraction(const Op& c, const std::string& spec, const std::vector<sizes_t>& cases) {
  const auto d1 = spec.find('-'), d2 = spec.rfind('-');
  for (auto& n : cases) {
    INFO(spec, " at ", show(n));
    REQUIRE(n.size() == c.ir().rank());
    auto A = tensor<float>(c, "A", n, 301 + n[0]), B = tensor<float>(c, "B", n, 302 + n.back());
    CHECK(A.shape() == shape_of(spec.substr(d1 + 1, d2 - d1 - 1), n));
    CHECK(B.shape() == shape_of(spec.substr(d2 + 1), n));
    host_tensor<float> C(c.shape("C", n));
    CHECK(C.shape() == shape_of(spec.substr(0, d1), n));
    reference(c, n, {A, B}, {C});
    std::vector<double> want, mag;
    naive_contraction(spec, n, A, B, want, mag);
    expect_close(spec + " " + show(n), C, want, mag, kReduceTol);
  }
}

}  // namespace

TEST_CASE("ops::tccg_abcd_aebf_dfce against a naive contraction") {
  check_contraction(
      mdh::ops::tccg_abcd_aebf_dfce(), "abcd-aebf-dfce",
      {{1, 1, 1, 1, 1, 1}, {3, 5, 2, 7, 3, 4}, {4, 3, 5, 2, 9, 1}, {6, 7, 5, 3, 11, 13}});
}

TEST_CASE("ops::tccg_abcd_eafd_fbec against a naive contraction") {
  check_contraction(
      mdh::ops::tccg_abcd_eafd_fbec(), "abcd-eafd-fbec",
      {{1, 1, 1, 1, 1, 1}, {3, 5, 2, 7, 3, 4}, {5, 2, 3, 4, 1, 17}, {7, 6, 5, 3, 13, 11}});
}

TEST_CASE("ops::tccg_abc_adec_ebd against a naive contraction") {
  check_contraction(mdh::ops::tccg_abc_adec_ebd(), "abc-adec-ebd",
                    {{1, 1, 1, 1, 1}, {3, 5, 7, 2, 4}, {9, 1, 5, 13, 3}, {17, 13, 11, 7, 19}});
}

TEST_CASE("ops::tccg_abcdef_dega_gfbc against a naive contraction") {
  check_contraction(mdh::ops::tccg_abcdef_dega_gfbc(), "abcdef-dega-gfbc",
                    {{1, 1, 1, 1, 1, 1, 1}, {3, 2, 4, 5, 2, 3, 7}, {2, 3, 5, 3, 4, 2, 33}});
}

TEST_CASE("ops::tccg_abcdef_dfgb_geac against a naive contraction") {
  check_contraction(mdh::ops::tccg_abcdef_dfgb_geac(), "abcdef-dfgb-geac",
                    {{1, 1, 1, 1, 1, 1, 1}, {3, 2, 4, 5, 2, 3, 7}, {4, 5, 2, 3, 3, 2, 29}});
}
