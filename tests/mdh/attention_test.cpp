// SPDX-License-Identifier: MIT
// Attention as one md_hom (expressions/attention.hpp): the online-softmax operator's laws on
// samples, mdh::reference of the with_producer pair against plain loops in double, and the
// rules with_producer enforces.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include <expressions/attention.hpp>

#include "ops_test_util.hpp"

using namespace ops_test;

TEST_CASE("online_softmax (m, l, acc): identity exact, no NaN, commutative, associative") {
  auto c = mdh::ops::attention_softmax_v<float>(mdh::ops::bert_shape{1, 4, 8, 2, 1}).computation();
  std::mt19937_64 rng(2002);
  // Samples as the reduction produces them: a fold of f(s, v) = (s, 1, v) over 1..4 keys,
  // now and then a score of -inf.
  auto sample = [&] {
    auto s = [&] { return rng() % 8 ? random_value<float>(rng, -20, 20) : -INFINITY; };
    auto acc = c.apply(s(), random_value<float>(rng, -1, 1));
    for (int k = int(rng() % 4); k > 0; --k)
      acc = c.combine(acc, c.apply(s(), random_value<float>(rng, -1, 1)));
    return acc;
  };
  check_combine_laws(c, sample, 2000, 1e-5);
  using R = std::tuple<float, float, float>;
  const R e{-INFINITY, 0.f, 0.f};
  CHECK(c.combine(e, e) == e);
  CHECK(c.combine(e, R{3.f, 2.f, -1.f}) == R{3.f, 2.f, -1.f});
  // (0, 1, 2) (+) (log 3, 1, 6): m = log 3, l = 1/3 + 1, acc = 2/3 + 6
  auto [m, l, a] = c.combine(R{0.f, 1.f, 2.f}, R{std::log(3.f), 1.f, 6.f});
  CHECK(m == std::log(3.f));
  CHECK(l == doctest::Approx(1 + 1.0 / 3).epsilon(1e-6));
  CHECK(a == doctest::Approx(6 + 2.0 / 3).epsilon(1e-6));
}

namespace {
// softmax(Q K^T / sqrt(D) + (1 - mask) * -1e4) V per (batch, head), from the QKV rows.
std::vector<double> attention_loops(const mdh::ops::bert_shape& s, const std::vector<float>& qkv,
                                    const std::vector<float>& mask) {
  const std::int64_t B = s.batch, S = s.seq, H = s.heads, D = s.head_dim(), N = s.hidden;
  std::vector<double> ctx(std::size_t(B * S * N));
  auto at = [&](std::int64_t b, std::int64_t t, std::int64_t slot, std::int64_t h, std::int64_t d) {
    return double(qkv[std::size_t(((b * S + t) * 3 + slot) * N + h * D + d)]);
  };
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i) {
        std::vector<double> p(static_cast<std::size_t>(S));
        double mx = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(b, i, 0, h, d) * at(b, j, 1, h, d);
          p[std::size_t(j)] =
              dot / std::sqrt(double(D)) + (1 - mask[std::size_t(b * S + j)]) * -1e4;
          mx = std::max(mx, p[std::size_t(j)]);
        }
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (std::int64_t e = 0; e < D; ++e) {
          double acc = 0;
          for (std::int64_t j = 0; j < S; ++j) acc += p[std::size_t(j)] * at(b, j, 2, h, e);
          ctx[std::size_t((b * S + i) * N + h * D + e)] = acc / sum;
        }
      }
  return ctx;
}
}  // namespace

TEST_CASE("attention: mdh::reference of the with_producer pair equals plain loops") {
  for (auto s : {mdh::ops::bert_shape{2, 13, 64, 4, 128}, mdh::ops::bert_shape{1, 5, 24, 3, 8}}) {
    CAPTURE(s.str());
    auto att = mdh::ops::attention<float>(s);
    auto n = mdh::ops::attention_sizes(s);
    const std::int64_t T = s.tokens();
    mdh::host_tensor<float> qkv({T, 3 * s.hidden}), mask({s.batch, s.seq}), ctx({T, s.hidden});
    qkv.randomize(7, -1, 1);
    for (std::int64_t k = 0; k < mask.size(); ++k) mask.data()[k] = 1;
    mask.data()[s.seq - 1] = 0;  // the first sequence's last key is padding
    // Q, K, V are views of the QKV buffer: each sees its rows (fewer than 3T at the end).
    auto view = [&](const char* name) {
      mdh::buffer_ref r = qkv;
      r.shape = att.shape(name, n);
      return r;
    };
    mdh::reference(att, n, {view("Q"), view("K"), mask, view("V")}, {ctx});
    std::vector<float> q(qkv.data(), qkv.data() + qkv.size()),
        m(mask.data(), mask.data() + mask.size());
    auto want = attention_loops(s, q, m);
    double err = 0, norm = 0;
    for (std::size_t k = 0; k < want.size(); ++k)
      err += (ctx.data()[k] - want[k]) * (ctx.data()[k] - want[k]), norm += want[k] * want[k];
    CHECK(std::sqrt(err / norm) < 1e-5);
  }
}

TEST_CASE("attention: with_producer names the broken rule") {
  mdh::ops::bert_shape s{1, 4, 8, 2, 8};
  auto att = mdh::ops::attention<float>(s);
  CHECK(att.ir().inputs.size() == 4);  // Q, K, mask, V
  CHECK(att.ir().outputs.size() == 1);
  CHECK(att.ir().dim_of == std::vector<int>{0, 1, 2, 4, -1});
  CHECK_THROWS_WITH_AS(att.check_sizes({1, 2, 4, 4}),
                       doctest::Contains("4 sizes given, expected 6"), mdh::error);
  // A consumer that does not read the producer's output.
  auto [i, j] = mdh::indices<2>();
  auto other = mdh::computation("other", mdh::out_view(mdh::out<float, "o">(i)),
                                mdh::md_hom([](auto x) { return x; }, mdh::cc, mdh::pw(mdh::add)),
                                mdh::inp_view(mdh::in<float, "X">(i, j)));
  CHECK_THROWS_WITH_AS(
      mdh::with_producer("bad", mdh::ops::attention_scores_produced<float>(s), other),
      doctest::Contains("does not read the producer's output 'S'"), mdh::error);
}
