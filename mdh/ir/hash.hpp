// SPDX-License-Identifier: MIT
// A stable structural hash of a computation (FNV-1a over a canonical encoding). Names of the
// computation, its dimensions and buffers are left out: two spellings of the same structure
// share parameter files. Changing this encoding invalidates every parameter file: don't.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include <mdh/ir/computation.hpp>

namespace mdh::ir {

class fnv1a {
 public:
  void bytes(const void* p, std::size_t n) {
    auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t k = 0; k < n; ++k) h_ = (h_ ^ c[k]) * 1099511628211ull;
  }
  void u64(std::uint64_t v) {
    unsigned char b[8];
    for (int k = 0; k < 8; ++k) b[k] = static_cast<unsigned char>(v >> (8 * k));  // little-endian
    bytes(b, 8);
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

inline void hash_into(fnv1a& h, const scalar_function& f) {
  h.u64(f.arg_types.size());
  for (auto t : f.arg_types) h.u64(std::uint64_t(t));
  h.u64(f.nodes.size());
  for (auto& n : f.nodes) {
    h.u64(std::uint64_t(n.kind));
    h.u64(std::uint64_t(n.type));
    h.i64(n.a), h.i64(n.b), h.i64(n.c), h.i64(n.index), h.f64(n.value);
  }
  h.u64(f.results.size());
  for (int r : f.results) h.i64(r);
}

inline std::uint64_t structural_hash(const computation& c) {
  fnv1a h;
  h.str("mdh-ir-1");
  h.u64(c.rank());
  for (auto& d : c.dims) h.u64(std::uint64_t(d.combine));
  h.u64(std::uint64_t(c.reduction.kind));
  if (c.reduction.kind == builtin::custom) {
    hash_into(h, c.reduction.custom);
    for (double v : c.reduction.identity) h.f64(v);
  }
  for (auto* bufs : {&c.inputs, &c.outputs}) {
    h.u64(bufs->size());
    for (auto& b : *bufs) {
      h.u64(std::uint64_t(b.type));
      h.u64(b.rank);
      h.u64(b.accesses.size());
      for (auto& a : b.accesses)
        for (auto& f : a.index) {
          for (auto k : f.coeff) h.i64(k);
          h.i64(f.offset);
        }
    }
  }
  hash_into(h, c.f);
  // Added only when not the default, so that every ieee computation keeps its hash.
  if (c.input_precision != precision::ieee)
    h.str(std::string("precision:") + to_string(c.input_precision));
  if (c.epilogue) {  // likewise: a computation without one keeps its hash
    const pointwise_epilogue& e = *c.epilogue;
    h.str("epilogue");
    for (auto* bufs : {&e.inputs, &e.outputs}) {
      h.u64(bufs->size());
      for (auto& b : *bufs) {
        h.u64(std::uint64_t(b.type));
        h.u64(b.rank);
        h.u64(b.accesses.size());
        for (auto& a : b.accesses)
          for (auto& f : a.index) {
            for (auto k : f.coeff) h.i64(k);
            h.i64(f.offset);
          }
      }
    }
    for (int r : e.result_of) h.i64(r);
    hash_into(h, e.f);
  }
  return h.value();
}

// A 64-bit hash as 16 lower-case hex digits.
inline std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string structural_hash_hex(const computation& c) { return hex16(structural_hash(c)); }

}  // namespace mdh::ir
