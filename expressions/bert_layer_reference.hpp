// SPDX-License-Identifier: MIT
// The BERT encoder layer of expressions/bert_layer.hpp computed with plain loops in double: the
// oracle its kernels are checked against. Written from the layer's definition (BERT, Devlin et
// al.; the encoder of Vaswani et al.), not from the mdh expressions: the head split is done with
// explicit offsets, softmax and layernorm the textbook way. Each stage is a function of its
// inputs, so that a test can also check one kernel on the inputs the previous kernels produced.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <expressions/bert_layer.hpp>
#include <mdh/error.hpp>
#include <mdh/float16.hpp>
#include <mdh/tensor.hpp>

namespace mdh::ops::bert_reference {

using vec = std::vector<double>;

// Runs body(r) for r in [0, n) on the machine's cores (the products at BERT-base are ~15 G
// multiply-adds: minutes on one core).
inline void parallel_rows(std::int64_t n, const std::function<void(std::int64_t)>& body) {
  const std::int64_t workers =
      std::clamp<std::int64_t>(std::int64_t(std::thread::hardware_concurrency()), 1, 64);
  if (workers == 1 || n < 64) {
    for (std::int64_t r = 0; r < n; ++r) body(r);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (std::int64_t r = w; r < n; r += workers) body(r);
    });
  for (auto& t : pool) t.join();
}

// y[r, o] = sum_i a[r, i] * w[i, o] + bias[o]   (a: rows x in, w: in x out)
inline vec linear(const vec& a, const vec& w, const vec& bias, std::int64_t rows, std::int64_t in,
                  std::int64_t out) {
  vec y(std::size_t(rows * out));
  parallel_rows(rows, [&](std::int64_t r) {
    for (std::int64_t o = 0; o < out; ++o) y[std::size_t(r * out + o)] = bias[std::size_t(o)];
    for (std::int64_t i = 0; i < in; ++i) {
      const double x = a[std::size_t(r * in + i)];
      for (std::int64_t o = 0; o < out; ++o)
        y[std::size_t(r * out + o)] += x * w[std::size_t(i * out + o)];
    }
  });
  return y;
}

inline vec gelu(vec x) {
  for (auto& v : x) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  return x;
}

inline vec plus(vec a, const vec& b) {
  for (std::size_t k = 0; k < a.size(); ++k) a[k] += b[k];
  return a;
}

// Per row: (x - mean) / sqrt(variance + eps) * gamma + beta (biased variance, two passes).
inline vec layernorm(const vec& x, const vec& gamma, const vec& beta, std::int64_t rows,
                     std::int64_t cols, double eps = 1e-12) {
  vec y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = &x[std::size_t(r * cols)];
    double mean = 0, var = 0;
    for (std::int64_t c = 0; c < cols; ++c) mean += row[c];
    mean /= double(cols);
    for (std::int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= double(cols);
    for (std::int64_t c = 0; c < cols; ++c)
      y[std::size_t(r * cols + c)] =
          (row[c] - mean) / std::sqrt(var + eps) * gamma[std::size_t(c)] + beta[std::size_t(c)];
  }
  return y;
}

// The [tokens, 3, heads, d] projection output: element (token, slot, head, e).
inline double qkv_at(const vec& qkv, const bert_shape& s, std::int64_t token, int slot,
                     std::int64_t head, std::int64_t e) {
  const std::int64_t D = s.head_dim();
  return qkv[std::size_t(token * 3 * s.hidden + slot * s.hidden + head * D + e)];
}

// scores[b,h,i,j] = q_i . k_j / sqrt(d) + (1 - mask[b,j]) * -10000
inline vec scores(const vec& qkv, const vec& mask, const bert_shape& s) {
  const std::int64_t B = s.batch, H = s.heads, S = s.seq, D = s.head_dim();
  const double scale = 1.0 / std::sqrt(double(D));
  vec y(std::size_t(B * H * S * S));
  parallel_rows(B * H, [&](std::int64_t bh) {
    const std::int64_t b = bh / H, h = bh % H;
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (std::int64_t e = 0; e < D; ++e)
          dot += qkv_at(qkv, s, b * S + i, 0, h, e) * qkv_at(qkv, s, b * S + j, 1, h, e);
        y[std::size_t(((bh)*S + i) * S + j)] =
            dot * scale + (1.0 - mask[std::size_t(b * S + j)]) * -10000.0;
      }
  });
  return y;
}

// Softmax over the last dimension of rows x cols.
inline vec softmax(const vec& x, std::int64_t rows, std::int64_t cols) {
  vec y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = &x[std::size_t(r * cols)];
    const double m = *std::max_element(row, row + cols);
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(row[c] - m);
    for (std::int64_t c = 0; c < cols; ++c)
      y[std::size_t(r * cols + c)] = std::exp(row[c] - m) / sum;
  }
  return y;
}

// ctx[b*S + i, h*D + e] = sum_j P[b,h,i,j] * v_j[h, e]
inline vec context(const vec& p, const vec& qkv, const bert_shape& s) {
  const std::int64_t B = s.batch, H = s.heads, S = s.seq, D = s.head_dim(), N = s.hidden;
  vec y(std::size_t(B * S * N));
  parallel_rows(B * H, [&](std::int64_t bh) {
    const std::int64_t b = bh / H, h = bh % H;
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t e = 0; e < D; ++e) {
        double acc = 0;
        for (std::int64_t j = 0; j < S; ++j)
          acc += p[std::size_t((bh * S + i) * S + j)] * qkv_at(qkv, s, b * S + j, 2, h, e);
        y[std::size_t((b * S + i) * N + h * D + e)] = acc;
      }
  });
  return y;
}

// Every stage's result, named as the layer's tensors (bert_layer_tensors).
using tensors = std::map<std::string, vec>;

// The stages in order from the given tensors X, mask and the weights; returns QKV, scores, P,
// ctx, attn, H1, F1, F2 and Y.
inline tensors layer(const tensors& in, const bert_shape& s) {
  s.check();
  auto at = [&](const char* name) -> const vec& {
    auto it = in.find(name);
    if (it == in.end()) throw error(std::string("bert_reference::layer: no tensor '") + name + "'");
    return it->second;
  };
  const std::int64_t T = s.tokens(), N = s.hidden, F = s.ffn;
  tensors r;
  r["QKV"] = linear(at("X"), at("Wqkv"), at("bqkv"), T, N, 3 * N);
  r["scores"] = scores(r["QKV"], at("mask"), s);
  r["P"] = softmax(r["scores"], s.batch * s.heads * s.seq, s.seq);
  r["ctx"] = context(r["P"], r["QKV"], s);
  r["attn"] = plus(linear(r["ctx"], at("Wo"), at("bo"), T, N, N), at("X"));
  r["H1"] = layernorm(r["attn"], at("gamma1"), at("beta1"), T, N);
  r["F1"] = gelu(linear(r["H1"], at("W1"), at("b1"), T, N, F));
  r["F2"] = plus(linear(r["F1"], at("W2"), at("b2"), T, F, N), r["H1"]);
  r["Y"] = layernorm(r["F2"], at("gamma2"), at("beta2"), T, N);
  return r;
}

// Relative L2 error ||got - want|| / ||want|| (NaN in got: infinity).
inline double relative_l2(const vec& got, const vec& want) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double d = got[k] - want[k];
    if (!std::isfinite(got[k])) return INFINITY;
    num += d * d, den += want[k] * want[k];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A buffer's elements as doubles (f32, f64, bf16, f16).
inline vec to_double(const buffer_ref& b) {
  vec v(std::size_t(b.size()));
  for (std::int64_t k = 0; k < b.size(); ++k) switch (b.type) {
      case scalar_type::f32:
        v[std::size_t(k)] = double(b.as<float>()[k]);
        break;
      case scalar_type::f64:
        v[std::size_t(k)] = b.as<double>()[k];
        break;
      case scalar_type::bf16:
        v[std::size_t(k)] = double(float(b.as<bf16>()[k]));
        break;
      case scalar_type::f16:
        v[std::size_t(k)] = double(float(b.as<f16>()[k]));
        break;
      default:
        throw error("bert_reference::to_double: not a floating-point buffer");
    }
  return v;
}

// How many keys of sequence b the padding mask lets through: all for b % 4 == 0, then a
// quarter, a half, three quarters fewer (at least one).
inline std::int64_t valid_keys(const bert_shape& s, std::int64_t b) {
  return std::max<std::int64_t>(1, s.seq - (b % 4) * s.seq / 4);
}

// The layer's given tensors (bert_layer_tensors' `given` ones), random and reproducible from
// `seed`: X in [-1, 1]; weights in +-sqrt(3 / fan_in) (variance 1 / fan_in, so activations stay
// of order 1); biases in +-0.1; gammas in [0.5, 1.5], betas in +-0.5; the mask 1 for the first
// valid_keys(b) keys of sequence b and 0 after.
template <class T>
std::map<std::string, host_tensor<T>> random_inputs(const bert_shape& s, std::uint64_t seed) {
  std::map<std::string, host_tensor<T>> m;
  std::uint64_t k = 0;
  for (auto& t : bert_layer_tensors(s)) {
    if (!t.given) continue;
    host_tensor<T> x(t.shape);
    const std::string& n = t.name;
    const double fan_in = n == "W2" ? double(s.ffn) : double(s.hidden);
    if (n == "mask") {
      for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t j = 0; j < s.seq; ++j) x.at({b, j}) = T(j < valid_keys(s, b) ? 1 : 0);
    } else if (n[0] == 'W') {
      const double a = std::sqrt(3.0 / fan_in);
      x.randomize(seed * 97 + k, -a, a);
    } else if (n[0] == 'b' && n.rfind("beta", 0) != 0) {
      x.randomize(seed * 97 + k, -0.1, 0.1);
    } else if (n.rfind("gamma", 0) == 0) {
      x.randomize(seed * 97 + k, 0.5, 1.5);
    } else if (n.rfind("beta", 0) == 0) {
      x.randomize(seed * 97 + k, -0.5, 0.5);
    } else {
      x.randomize(seed * 97 + k, -1.0, 1.0);
    }
    ++k;
    m.emplace(n, std::move(x));
  }
  return m;
}

// The same tensors as doubles, for layer().
template <class T>
tensors as_doubles(const std::map<std::string, host_tensor<T>>& m) {
  tensors d;
  for (auto& [name, t] : m) d[name] = to_double(buffer_ref(t));
  return d;
}

}  // namespace mdh::ops::bert_reference
