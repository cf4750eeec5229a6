// SPDX-License-Identifier: MIT
// The sizes of a BERT encoder layer (expressions/bert_layer.hpp, expressions/attention.hpp).
#pragma once

#include <cstdint>
#include <string>

#include <mdh/error.hpp>

namespace mdh::ops {

// The layer's sizes. BERT-base: hidden 768, 12 heads of 64, FFN 3072.
struct bert_shape {
  std::int64_t batch = 16, seq = 128, hidden = 768, heads = 12, ffn = 3072;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t tokens() const { return batch * seq; }
  // Throws mdh::error naming the size that cannot be.
  void check() const {
    auto at_least_1 = [](std::int64_t v, const char* what) {
      if (v < 1) throw error(std::string("bert_shape: ") + what + " must be >= 1");
    };
    at_least_1(batch, "batch"), at_least_1(seq, "seq"), at_least_1(hidden, "hidden");
    at_least_1(heads, "heads"), at_least_1(ffn, "ffn");
    if (hidden % heads != 0)
      throw error("bert_shape: hidden (" + std::to_string(hidden) +
                  ") must be a multiple of heads (" + std::to_string(heads) + ")");
  }
  std::string str() const {
    return "batch " + std::to_string(batch) + ", seq " + std::to_string(seq) + ", hidden " +
           std::to_string(hidden) + ", heads " + std::to_string(heads) + ", ffn " +
           std::to_string(ffn);
  }
};

}  // namespace mdh::ops
