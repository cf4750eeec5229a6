// SPDX-License-Identifier: MIT
// The configuration and plan of a with_producer pair's kernel (ir::produced; attention): the
// consumer's rows i are cut into blocks of t_i, its reduction j is walked in steps of t_j keys;
// per step the block computes the producer's t_i x t_j tile once (every depth d) into
// registers, folds it with the consumer's operator and merges it into the running results of
// every value column e. Plain data: the passes of producer_passes.hpp write it, the printer
// (producer_printer.hpp) prints it.
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mdh/error.hpp>
#include <mdh/ir/with_producer.hpp>

namespace mdh::lower {

// Every field a named integer, as the tuner's parameters.
//   t_i    consumer rows per block (the innermost row dimension, i)
//   t_j    keys per step (the consumer's reduction dimension, j)
//   thr_i  threads along the rows; thread row ti owns rows ti, ti + thr_i, ... (t_i / thr_i)
//   thr_j  threads along the keys of a step and along the value columns e
//   pad    extra elements per shared row of the producer's operand tiles (bank conflicts)
//   vec    1, or 4: the producer's depth loop reads 4 consecutive operand elements as one
//          vector per tile row (4-byte operands; depth and pad multiples of 4: pad 4 keeps the
//          16-byte reads of consecutive rows on distinct banks)
//   mma    0: the SIMT loop nest; 1: tensor cores (mma.sync m16n8k16 on bf16/f16 operands, a
//          CUDA device of compute capability >= 8.0; producer_mma_printer.hpp): a warp per 16
//          or 32 rows (t_i = 16 or 32 thr_i, thr_j = 32 lanes; 32 rows share each K and V
//          fragment between two m16 tiles); the scores and p V are warp-level products and the
//          row maxima and sums warp shuffles; pad 0 or 8 (16-byte rows for ldmatrix)
//   stages 1, or 2 with mma: buffers of the column operands and values; with 2 the next step's
//          tiles are copied (cp.async) while this step computes
struct producer_config {
  std::int64_t t_i = 32, t_j = 32, thr_i = 8, thr_j = 16, pad = 1, vec = 1, mma = 0, stages = 1;
  // mma: the key steps of a row tile shared by `split` blocks; the tile's last block to finish
  // combines their (m, l, acc) with the consumer's operator (more blocks for a full last wave)
  std::int64_t split = 1;
  friend bool operator==(const producer_config&, const producer_config&) = default;
};

// The floats a thread of a split-keys block hands to its row tile's last block: m and l of its
// two rows per m16 tile, and its acc fragments (4 per n8 fragment of the padded values).
inline std::int64_t split_floats(const producer_config& c, std::int64_t values_padded) {
  const std::int64_t tiles = c.t_i / (16 * c.thr_i);
  return tiles * (4 + 4 * values_padded / 8);
}

// Every parameter with its value (the tuner's space, the rules).
inline std::map<std::string, std::int64_t> to_full_map(const producer_config& c) {
  return {{"t_i", c.t_i}, {"t_j", c.t_j}, {"thr_i", c.thr_i},   {"thr_j", c.thr_j}, {"pad", c.pad},
          {"vec", c.vec}, {"mma", c.mma}, {"stages", c.stages}, {"split", c.split}};
}
// The parameters a file and a kernel name hold: mma, stages and split only with mma on, so that
// the SIMT configurations keep their files, sources and kernel names.
inline std::map<std::string, std::int64_t> to_map(const producer_config& c) {
  auto m = to_full_map(c);
  if (c.mma == 0 && c.stages == 1 && c.split == 1) m.erase("mma"), m.erase("stages");
  if (c.split == 1 && c.mma == 0) m.erase("split");
  return m;
}
inline std::string to_string(const producer_config& c) {
  std::string s;
  for (auto& [k, v] : to_map(c)) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}
inline producer_config producer_config_from_map(const std::map<std::string, std::int64_t>& m) {
  producer_config c;
  const auto want = to_full_map(c);
  for (auto& [k, v] : m)
    if (!want.count(k))
      throw error(
          "producer configuration: unknown parameter '" + k +
          "' (expected t_i, t_j, thr_i, thr_j, pad, vec, and optionally mma, stages, split)");
  auto get = [&](const char* k) {
    auto it = m.find(k);
    if (it == m.end())
      throw error(std::string("producer configuration: missing parameter '") + k + "'");
    return it->second;
  };
  c.t_i = get("t_i"), c.t_j = get("t_j"), c.thr_i = get("thr_i"), c.thr_j = get("thr_j");
  c.pad = get("pad");
  c.vec = get("vec");
  // added with the tensor-core kernel: absent means the SIMT kernel
  if (m.count("mma")) c.mma = get("mma");
  if (m.count("stages")) c.stages = get("stages");
  if (m.count("split")) c.split = get("split");  // added with the split keys: absent means 1
  return c;
}
inline void to_json(nlohmann::json& j, const producer_config& c) {
  j = nlohmann::json::object();
  for (auto& [k, v] : to_map(c)) j[k] = v;
}
inline producer_config producer_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw error("producer configuration must be a flat JSON object");
  std::map<std::string, std::int64_t> m;
  for (auto& [k, v] : j.items()) {
    if (!v.is_number_integer())
      throw error("producer configuration: parameter '" + k + "' must be an integer");
    m[k] = v.get<std::int64_t>();
  }
  return producer_config_from_map(m);
}

// A producer operand: one read of the producer's scalar function, copied per step into a
// shared tile [extent][depth + pad] in its stored type. Row operands (Q) do not depend on j and
// are copied once per block; column operands (K) do not depend on i and are copied per step.
struct producer_operand {
  std::size_t input = 0, access = 0;  // the producer's input and access
  std::size_t kernel_input = 0;       // the kernel parameter it reads
  bool row = true;
  std::int64_t extent = 1, stride = 1;  // tile rows (t_i or t_j), elements per tile row
  std::int64_t offset_bytes = 0;
  std::int64_t stage_bytes = 0;  // mma: the column operands' tile per stage
  friend bool operator==(const producer_operand&, const producer_operand&) = default;
};

struct producer_plan {
  bool on = false;
  ir::produced x;
  // roles pass: consumer dims
  std::vector<std::size_t> batch_dims;  // row dims other than i: one block coordinate each
  std::size_t row_dim = 0, key_dim = 0, value_dim = 0;
  std::size_t depth_dim = 0;  // the producer's reduction dimension
  std::int64_t rows = 1, keys = 1, values = 1, depth = 1;
  std::vector<producer_operand> operands;  // the producer's f arguments, in order
  std::size_t value_input = 0;             // the consumer's other input (V): its kernel input
  std::size_t value_access = 0;
  // partition pass
  std::int64_t rows_per_thread = 1, keys_per_thread = 1, values_per_thread = 1;
  std::int64_t row_blocks = 1, key_steps = 1, batch_blocks = 1;
  // shared pass: the value tile [t_j][values], the probabilities [t_i][t_j], the partial row
  // maxima and sums [t_i][thr_j] (floats, after the operand tiles)
  std::int64_t value_offset_bytes = 0, p_offset_bytes = 0, p_stride = 1;
  std::int64_t red_max_offset_bytes = 0, red_sum_offset_bytes = 0;
  // mma (producer_config::mma = 1): the depth and the values rounded up to the instruction's 16
  // (zeros past the end); the value tile [t_j][values_padded + pad] per stage; whether the
  // operands' and the values' tile rows are copied as 16-byte cp.async chunks (every row
  // start 16-byte aligned, provably: copy_mode pass) or element by element
  std::int64_t depth_padded = 0, values_padded = 0, value_stride = 0, value_stage_bytes = 0;
  bool operand_chunks = false, value_chunks = false;
  // mma: whether the last row block / key step reaches past the rows / keys. Only then does the
  // kernel test bounds (a size the tile divides has no edge, and the scores no masked keys).
  bool rows_partial = true, keys_partial = true;
  // mma: the results leave through shared memory as 16-byte stores (results_mode pass): each
  // warp writes its rows [16 m16-tiles][results_stride] of 16-bit results there (the tiles'
  // space, free after the last step), then copies them out 16 bytes a lane. Only for one output
  // written through one access whose rows are chunk_aligned; else each lane stores its
  // fragments' elements (2 bytes each: a quarter of every 32-byte sector per store).
  bool results_chunks = false;
  std::int64_t results_offset_bytes = 0, results_stride = 0;
  friend bool operator==(const producer_plan&, const producer_plan&) = default;
};

inline std::string to_string(const producer_plan& p, const producer_config& c) {
  std::ostringstream os;
  const auto& cd = p.x.consumer.dims;
  os << "with_producer plan: producer " << p.x.producer.name << " -> consumer " << p.x.consumer.name
     << "\n  rows " << cd[p.row_dim].name << "=" << p.rows << " keys " << cd[p.key_dim].name << "="
     << p.keys << " values " << cd[p.value_dim].name << "=" << p.values << " depth "
     << p.x.producer.dims[p.depth_dim].name << "=" << p.depth << "\n  block coordinates:";
  for (auto d : p.batch_dims) os << " " << cd[d].name;
  os << " " << cd[p.row_dim].name << "/" << c.t_i << " (" << p.batch_blocks << " x " << p.row_blocks
     << " blocks)\n";
  if (c.mma) {
    os << "  tensor cores: " << c.thr_i << " warps of " << c.t_i / c.thr_i << " rows; depth "
       << p.depth << " -> " << p.depth_padded << ", values " << p.values << " -> "
       << p.values_padded << "; edges: rows " << (p.rows_partial ? "partial" : "exact") << ", keys "
       << (p.keys_partial ? "partial" : "exact") << "\n  for " << p.key_steps << " steps of "
       << c.t_j << " keys (" << c.stages << " stage(s)): copy the column operands and values ("
       << (p.operand_chunks ? "16-byte cp.async" : "elements") << ", "
       << (p.value_chunks ? "16-byte cp.async" : "elements")
       << "); scores = mma(row operand, column operand); epilogue; row max and sum by warp "
          "shuffles; p = exp(s - max) packed to 16 bits; acc = acc * rescale + mma(p, V)\n";
    for (auto& o : p.operands)
      os << "  operand " << p.x.producer.inputs[o.input].name << " access " << o.access << ": "
         << (o.row ? "row" : "column") << " tile [" << o.extent << "][" << o.stride << "] at byte "
         << o.offset_bytes << " (" << o.stage_bytes << " bytes per stage)\n";
    os << "  values tile [" << c.t_j << "][" << p.value_stride << "] at byte "
       << p.value_offset_bytes << " (" << p.value_stage_bytes << " bytes per stage)\n";
    if (p.results_chunks)
      os << "  results: each warp's rows [" << c.t_i / c.thr_i << "][" << p.results_stride
         << "] through shared memory at byte " << p.results_offset_bytes
         << ", then 16-byte stores\n";
    else
      os << "  results: element stores from the fragments\n";
    return os.str();
  }
  os << "  threads " << c.thr_i << " x " << c.thr_j << ": " << p.rows_per_thread << " rows x "
     << p.keys_per_thread << " keys of the tile, " << p.rows_per_thread << " rows x "
     << p.values_per_thread << " values of the result\n"
     << "  for " << p.key_steps << " steps of " << c.t_j
     << " keys: copy the column operands and values; tile = f folded over depth (registers); "
        "epilogue; row max, p = exp(s - max), row sum (shared); p V; merge with the "
        "consumer's operator\n";
  for (auto& o : p.operands)
    os << "  operand " << p.x.producer.inputs[o.input].name << " access " << o.access << ": "
       << (o.row ? "row" : "column") << " tile [" << o.extent << "][" << o.stride << "] at byte "
       << o.offset_bytes << "\n";
  os << "  values " << p.x.consumer.inputs[p.x.read == 0 ? 1 : 0].name << " tile at byte "
     << p.value_offset_bytes << ", p at byte " << p.p_offset_bytes << " (row stride " << p.p_stride
     << "), row maxima at " << p.red_max_offset_bytes << ", sums at " << p.red_sum_offset_bytes
     << "\n";
  return os.str();
}

}  // namespace mdh::lower
