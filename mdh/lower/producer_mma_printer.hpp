// SPDX-License-Identifier: MIT
// Prints a with_producer plan with producer_config::mma = 1 (attention on tensor cores) as one
// CUDA kernel with inline PTX: cp.async.cg.shared.global, ldmatrix.sync.aligned.m8n8.x4[.trans],
// mma.sync.aligned.m16n8k16 (bf16 or f16 in, f32 accumulators). Per block, thr_i warps of 16 or
// 32 rows each (one or two m16 tiles sharing each K and V fragment):
//
//   copy the row operand (Q) tile [t_i][depth], once
//   (m, l) per row = the identity of the consumer's operator; acc[16 x values] = 0 (fragments)
//   for steps of t_j keys (stages 2: the next step's tiles copied while this one computes):
//     copy the column operand (K) and value (V) tiles of the step
//     s[16 x t_j] = mma(Q fragments, K fragments) over the depth           (the producer)
//     s = producer epilogue (scale, mask); keys past the end: -inf
//     m_t = max(m, row max of s) (quad shuffles); p = exp(s - m_t) (ex2.approx, since p is
//       rounded to 16 bits next); l_t = row sum of p
//     (m, l, r) = (m, l, 1) (+) (m_t, l_t, 0): the consumer's operator, whose third result is
//       the factor that rescales acc (its accumulator is linear: the roles pass's law)
//     acc = acc * r + mma(p as 16-bit A fragments, V fragments)
//   write the consumer's epilogue (acc / l) of (m, l, acc)
//
// The fragment layouts are the PTX ISA's (m16n8k16, g = lane / 4, t = lane % 4): A a0..a3 at rows
// g, g + 8 and columns 2t, 2t + 8; B b0, b1 at rows 2t, 2t + 8, column g; C c0..c3 at rows g,
// g + 8 and columns 2t, 2t + 1. An m16n8 accumulator pair is therefore an A fragment of k16: p
// never leaves the registers.
#pragma once

#include <string>
#include <vector>

#include <mdh/lower/producer_printer.hpp>

namespace mdh::lower {

namespace detail {

class producer_mma_printer : public producer_printer {
 public:
  using producer_printer::producer_printer;

 private:
  // Every result is rounded to 16 bits: f32 divisions (the consumer's epilogue acc / l) take
  // div.full.f32 (full range, at most 2 ulp: far below 16 bits' rounding) instead of the IEEE
  // division, whose slow-path branch per element cost a tenth of the kernel (ncu source page).
  bool results_16_bit() const { return all_outputs_16_bit(kp_); }
  std::string helpers() const override {
    if (!results_16_bit()) return {};
    return "// f32 division to 2 ulp (the results are rounded to 16 bits)\n"
           "static __device__ __forceinline__ float mdh_div_full(float a, float b) {\n"
           "  float q;\n"
           "  asm(\"div.full.f32 %0, %1, %2;\" : \"=f\"(q) : \"f\"(a), \"f\"(b));\n"
           "  return q;\n"
           "}\n";
  }
  std::string f32_division() const override { return results_16_bit() ? "mdh_div_full" : ""; }

  std::string half_type() const {
    return kp_.inputs[p_.value_input].type == scalar_type::bf16 ? "bf16" : "f16";
  }

  // The shared address of element (row, col) of a tile at `offset` + slot * `stage` bytes.
  static std::string smem_at(std::int64_t offset, std::int64_t stage, std::int64_t stride,
                             const std::string& row, const std::string& col,
                             const std::string& slot) {
    std::string a = "smem_base + " + num(offset);
    if (stage) a += " + " + slot + " * " + num(stage);
    return a + " + ((" + row + ") * " + num(stride) + " + " + col + ") * 2";
  }

  // Copies rows first + r (r < extent) of a tile: every element of the padded row (zeros past
  // `length`), or 16-byte cp.async chunks of the `length` elements (the padding columns were
  // zeroed at the start). Rows from `bound` on are zeros where `partial` (the last tile reaches
  // past the size). var / along: the row's and the column's index variable; `global` the
  // element's index in `buf`.
  struct tile_copy {
    std::string what;
    bool chunks = false;
    std::int64_t extent = 0, length = 0, padded = 0;
    std::string var, first;
    std::int64_t bound = 0;
    bool partial = true;
    std::string along, global;
    const global_buffer* buf = nullptr;
    std::int64_t offset = 0, stage = 0, stride = 0;
    std::string slot;
  };
  void print_tile_copy(const tile_copy& t) {
    out_.line("// " + t.what);
    const std::int64_t per_row = t.chunks ? t.length / 8 : t.padded;
    out_.line("for (int f = tid; f < " + num(t.extent * per_row) + "; f += " + num(kp_.threads) +
              ") {");
    out_.line("const int r = f / " + num(per_row) + ";");
    out_.line("const idx_t " + t.var + " = " + t.first + " + r, " + t.along + " = f % " +
              num(per_row) + (t.chunks ? " * 8" : "") + ";");
    const std::string in_rows = t.var + " < " + num(t.bound);
    if (t.chunks) {
      const std::string dst = smem_at(t.offset, t.stage, t.stride, "r", "(int)" + t.along, t.slot);
      if (t.partial) {
        out_.line("const bool in = " + in_rows + ";");
        out_.line("const unsigned short* src = (const unsigned short*)" + t.buf->name +
                  " + (in ? " + t.global + " : 0);");
        out_.line("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(" +
                  dst + "), \"l\"(src), \"r\"(in ? 16 : 0) : \"memory\");");
      } else {
        out_.line("const unsigned short* src = (const unsigned short*)" + t.buf->name + " + (" +
                  t.global + ");");
        out_.line("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(" + dst +
                  "), \"l\"(src) : \"memory\");");
      }
    } else {
      std::string in;
      if (t.partial) in = in_rows;
      if (t.length < t.padded) in += (in.empty() ? "" : " && ") + t.along + " < " + num(t.length);
      const std::string load = "((const unsigned short*)" + t.buf->name + ")[" + t.global + "]";
      out_.line("((unsigned short*)(mdh_smem + " + num(t.offset) +
                (t.stage ? " + " + t.slot + " * " + num(t.stage) : std::string()) + "))[r * " +
                num(t.stride) + " + (int)" + t.along +
                "] = " + (in.empty() ? load : in + " ? " + load + " : (unsigned short)0") + ";");
    }
    out_.line("}");
  }

  // The column operand tiles (`values` false) or the value tile (true) of the step starting at
  // key `first` into `slot`.
  void print_step_copies(const std::string& first, const std::string& slot, bool values) {
    if (!values) {
      print_column_operand_copies(first, slot);
      return;
    }
    const global_buffer& vg = kp_.inputs[p_.value_input];
    const auto& va = x_.consumer.inputs[1 - x_.read].accesses[0];
    print_tile_copy(
        {"values " + x_.consumer.inputs[1 - x_.read].name, p_.value_chunks, c_.t_j, p_.values,
         p_.values_padded, "j", first, p_.keys, p_.keys_partial, "e",
         index(va, vg, x_.consumer.rank(), [&](std::size_t d) { return consumer_var(d); }), &vg,
         p_.value_offset_bytes, p_.value_stage_bytes, p_.value_stride, slot});
  }
  void print_column_operand_copies(const std::string& first, const std::string& slot) {
    for (std::size_t k = 0; k < p_.operands.size(); ++k) {
      const producer_operand& o = p_.operands[k];
      if (o.row) continue;
      const global_buffer& g = kp_.inputs[o.kernel_input];
      const auto& a = x_.producer.inputs[o.input].accesses[o.access];
      print_tile_copy(
          {"column operand " + x_.producer.inputs[o.input].name, p_.operand_chunks, o.extent,
           p_.depth, p_.depth_padded, "j", first, p_.keys, p_.keys_partial, "dd",
           index(a, g, x_.producer.rank(), [&](std::size_t d) { return producer_var(d); }), &g,
           o.offset_bytes, o.stage_bytes, o.stride, slot});
    }
  }

  // Zeros columns [from, to) of `rows` tile rows at `offset` (the padding that chunk copies
  // leave alone: the depth or the values rounded up to 16).
  void print_zero_columns(std::int64_t offset, std::int64_t rows, std::int64_t stride,
                          std::int64_t from, std::int64_t to) {
    if (from >= to) return;
    const std::int64_t w = to - from;
    out_.line("for (int f = tid; f < " + num(rows * w) + "; f += " + num(kp_.threads) + ")");
    out_.line("  ((unsigned short*)(mdh_smem + " + num(offset) + "))[f / " + num(w) + " * " +
              num(stride) + " + " + num(from) + " + f % " + num(w) + "] = (unsigned short)0;");
  }

  void print_mma(const std::string& c, const std::string& a, const std::string& b0,
                 const std::string& b1) {
    out_.line("asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + half_type() + "." +
              half_type() +
              ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\" : "
              "\"+f\"(" +
              c + "[0]), \"+f\"(" + c + "[1]), \"+f\"(" + c + "[2]), \"+f\"(" + c +
              "[3]) : \"r\"(" + a + "[0]), \"r\"(" + a + "[1]), \"r\"(" + a + "[2]), \"r\"(" + a +
              "[3]), \"r\"(" + b0 + "), \"r\"(" + b1 + "));");
  }

  void print_ldmatrix(bool trans, const std::string& regs, const std::string& addr) {
    out_.line("asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + std::string(trans ? ".trans" : "") +
              ".shared.b16 {%0, %1, %2, %3}, [%4];\\n\" : \"=r\"(" + regs + "[0]), \"=r\"(" + regs +
              "[1]), \"=r\"(" + regs + "[2]), \"=r\"(" + regs + "[3]) : \"r\"(" + addr + "));");
  }

  // For each pair np of n8 fragments: one ldmatrix.x4 (at `addr`, reading np and lane) of their
  // B fragments, then the products c[m][2 np] and c[m][2 np + 1] += a x B of every m16 tile m.
  void print_n_pairs(std::int64_t pairs, std::int64_t tiles, bool trans, const std::string& addr,
                     const std::string& c, const std::string& a) {
    out_.line(d_.unroll());
    out_.line("for (int np = 0; np < " + num(pairs) + "; ++np) {");
    out_.line("unsigned b[4];");
    print_ldmatrix(trans, "b", addr);
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(tiles) + "; ++m) {");
    print_mma(c + "[m][2 * np]", a, "b[0]", "b[1]");
    print_mma(c + "[m][2 * np + 1]", a, "b[2]", "b[3]");
    out_.line("}");
    out_.line("}");
  }

  // Opens the loops over every accumulator element of a warp: m16 tile m, n8 fragment n, element
  // c (rows g + (c >> 1) * 8, column t4 * 2 + (c & 1)); two braces to close.
  void print_fragment_loops(std::int64_t tiles, std::int64_t n8) {
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(tiles) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(n8) + "; ++n) {");
    out_.line(d_.unroll());
    out_.line("for (int c = 0; c < 4; ++c) {");
  }

  // Split keys (detail::print_last_block): a block that is not its row tile's last to finish
  // writes its (m, l) and acc to part0 and exits; the last folds the shares in key order (its
  // own registers at zs) with the consumer's operator, which is associative: (m, l, acc) over
  // all keys = the shares' results combined.
  void print_split_combine(std::int64_t MT, std::int64_t NV) {
    const std::string S = num(c_.split), T = num(kp_.threads),
                      F = num(split_floats(c_, p_.values_padded));
    const std::string AS = ty(acc_type());
    // the thread's float k of share z at part0[((tile * split + z) * F + k) * threads + tid]
    auto at = [&](const std::string& z, const std::string& k) {
      return "part0[((tile * " + S + " + " + z + ") * " + F + " + " + k + ") * " + T + " + tid]";
    };
    // floats: m[m][h] at m * 2 + h, l at 2 MT + m * 2 + h, acc[m][n][c] at 4 MT + (m NV + n) 4 + c
    const std::string MT2 = num(2 * MT), MT4 = num(4 * MT);
    out_.line("{  // split keys: the row tile's last block to finish folds the others' shares in");
    out_.line("const idx_t tile = (idx_t)" + d_.block_id(0) + " / " + S + ";");
    detail::print_last_block(out_, d_, c_.split, [&] {
      print_fragment_loops(MT, NV);
      out_.line("__stcg(&" + at("zs", MT4 + " + (m * " + num(NV) + " + n) * 4 + c") +
                ", acc[m][n][c]);");
      out_.line("if (n == 0 && c < 2) {");
      out_.line("__stcg(&" + at("zs", "m * 2 + c") + ", run_m[m][c]);");
      out_.line("__stcg(&" + at("zs", MT2 + " + m * 2 + c") + ", run_l[m][c]);");
      out_.line("}");
      out_.line("}");
      out_.line("}");
    });
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int h = 0; h < 2; ++h) {");
    out_.line("// the row's (m, l, acc): share 0's, then each further share folded in");
    out_.line(AS + " mm = zs == 0 ? run_m[m][h] : __ldcg(&" + at("0", "m * 2 + h") + ");");
    out_.line(AS + " ll = zs == 0 ? run_l[m][h] : __ldcg(&" + at("0", MT2 + " + m * 2 + h") + ");");
    out_.line("float a[" + num(NV) + "][2];");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) + "; ++n)");
    out_.line(d_.unroll());
    out_.line("for (int c = 0; c < 2; ++c)");
    out_.line("a[n][c] = zs == 0 ? acc[m][n][2 * h + c] : __ldcg(&" +
              at("0", MT4 + " + (m * " + num(NV) + " + n) * 4 + 2 * h + c") + ");");
    out_.line("for (int z = 1; z < " + S + "; ++z) {");
    out_.line("const " + AS + " zm = z == zs ? run_m[m][h] : __ldcg(&" + at("z", "m * 2 + h") +
              ");");
    out_.line("const " + AS + " zl = z == zs ? run_l[m][h] : __ldcg(&" +
              at("z", MT2 + " + m * 2 + h") + ");");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) + "; ++n)");
    out_.line(d_.unroll());
    out_.line("for (int c = 0; c < 2; ++c) {");
    out_.line("const float za = z == zs ? acc[m][n][2 * h + c] : __ldcg(&" +
              at("z", MT4 + " + (m * " + num(NV) + " + n) * 4 + 2 * h + c") + ");");
    out_.line(AS + " m2 = mm, l2 = ll;");
    out_.line("mdh_c_combine(&m2, &l2, &a[n][c], zm, zl, za);");
    out_.line("}");
    out_.line(AS + " unused = (" + AS + ")0;");
    out_.line("mdh_c_combine(&mm, &ll, &unused, zm, zl, (" + AS + ")0);");
    out_.line("}");
    out_.line("run_m[m][h] = mm, run_l[m][h] = ll;");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) + "; ++n)");
    out_.line(d_.unroll());
    out_.line("for (int c = 0; c < 2; ++c) acc[m][n][2 * h + c] = a[n][c];");
    out_.line("}");
    out_.line("}");
  }

  // The test that result (i, e) lies within the sizes, where a tile reaches past them; "" if
  // none does.
  std::string in_sizes() const {
    std::string in = p_.rows_partial ? "i < " + num(p_.rows) : std::string();
    if (p_.values < p_.values_padded) in += (in.empty() ? "" : " && ") + ("e < " + num(p_.values));
    return in;
  }

  // producer_plan::results_chunks: each lane's pairs of adjacent results (16 bits each, as
  // stored) into the warp's rows of shared memory as 32-bit words (row stride results_stride:
  // the 8 rows of a fragment start 4 banks apart, so a warp's 32 words hit 32 banks), then the
  // warp copies its rows out in 16-byte chunks. Only the warp's own rows: __syncwarp suffices.
  void print_staged_results(std::int64_t MT, std::int64_t NV, const std::string& R) {
    const std::int64_t RS = p_.results_stride, CH = p_.values / 8;
    out_.line(
        "// the consumer's results, as stored, into the warp's rows of shared memory (the tiles "
        "are read), then out in 16-byte stores");
    out_.line("const unsigned res_base = smem_base + " + num(p_.results_offset_bytes) +
              " + warp * " + num(16 * MT * RS * 2) + ";");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) + "; ++n)");
    out_.line(d_.unroll());
    out_.line("for (int h = 0; h < 2; ++h) {");
    out_.line("unsigned rv[2];");
    out_.line(d_.unroll());
    out_.line("for (int c2 = 0; c2 < 2; ++c2) {");
    out_.line("const int c = 2 * h + c2;");
    out_.line("const idx_t i = i0 + warp * " + R +
              " + m * 16 + g + h * 8, e = n * 8 + t4 * 2 + c2;");
    out_.line("(void)i, (void)e;");
    // rows and values past the sizes are never copied out; their epilogue is not run either
    const std::string in = in_sizes();
    out_.line(in.empty() ? std::string("{") : "if (" + in + ") {");
    const std::vector<std::string> v =
        print_consumer_values({"run_m[m][h]", "run_l[m][h]", "acc[m][n][c]"});
    out_.line("rv[c2] = (unsigned)(" + v[0] + ");");
    out_.line(in.empty() ? std::string("}") : "} else {");
    if (!in.empty()) {
      out_.line("rv[c2] = 0u;");
      out_.line("}");
    }
    out_.line("}");
    out_.line(
        "asm volatile(\"st.shared.b32 [%0], %1;\\n\" :: \"r\"(res_base + ((m * 16 + g + h * 8) * " +
        num(RS) + " + n * 8 + t4 * 2) * 2), \"r\"(rv[0] | (rv[1] << 16)) : \"memory\");");
    out_.line("}");
    out_.line("__syncwarp();");
    out_.line("for (int f = lane; f < " + num(16 * MT * CH) + "; f += 32) {");
    out_.line("const int r = f / " + num(CH) + ", q = f % " + num(CH) + ";");
    out_.line("const idx_t i = i0 + warp * " + R + " + r, e = (idx_t)q * 8;");
    out_.line("(void)e;");
    out_.line(p_.rows_partial ? "if (i < " + num(p_.rows) + ") {" : std::string("{"));
    out_.line("unsigned w0, w1, w2, w3;");
    out_.line(
        "asm volatile(\"ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\\n\" : \"=r\"(w0), \"=r\"(w1), "
        "\"=r\"(w2), \"=r\"(w3) : \"r\"(res_base + (r * " +
        num(RS) + " + q * 8) * 2) : \"memory\");");
    const ir::computation& cc = x_.consumer;
    const global_buffer& g = kp_.outputs[0];
    const std::string at = index(cc.epilogue->outputs[0].accesses[0], g, cc.rank(),
                                 [&](std::size_t d) { return consumer_var(d); });
    out_.line("asm volatile(\"st.global.v4.u32 [%0], {%1, %2, %3, %4};\\n\" :: \"l\"(" + g.name +
              " + (" + at + ")), \"r\"(w0), \"r\"(w1), \"r\"(w2), \"r\"(w3) : \"memory\");");
    out_.line("}");
    out_.line("}");
  }

  void print_kernel(const kernel& k) override {
    const std::int64_t W = c_.thr_i, TJ = c_.t_j, NT = TJ / 8, NV = p_.values_padded / 8;
    const std::int64_t KD = p_.depth_padded / 16, MT = c_.t_i / (16 * W);  // m16 tiles a warp
    const std::string R = num(16 * MT);                                    // rows a warp
    std::size_t row_op = 0, col_op = 0;
    for (std::size_t o = 0; o < p_.operands.size(); ++o) (p_.operands[o].row ? row_op : col_op) = o;
    const producer_operand &q = p_.operands[row_op], &kop = p_.operands[col_op];
    const std::string AS = ty(acc_type()), NEG = inf(acc_type());
    const bool two = c_.stages == 2;
    out_.line("// One block: " + num(c_.t_i) + " rows of one batch coordinate, " + num(W) +
              " warps of " + R + " rows on tensor cores; steps of " + num(TJ) + " keys, " +
              num(c_.stages) + " stage(s).");
    for (auto& l : d_.kernel_open(kp_, k, kernel_params())) out_.line(l);
    out_.line(d_.shared_pool(kp_.shared_bytes));
    out_.line("const int tid = " + d_.thread_id(0) + ";");
    out_.line("const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;");
    print_block_coordinates();
    out_.line("unsigned smem_base;  // the shared pool as a 32-bit shared-window address");
    out_.line(
        "asm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(smem_base) "
        ": \"l\"(mdh_smem));");
    // the padding columns that chunk copies leave alone
    if (p_.operand_chunks && p_.depth < p_.depth_padded) {
      out_.line("// zeros in the depth's padding columns (" + num(p_.depth) + " to " +
                num(p_.depth_padded) + ")");
      print_zero_columns(q.offset_bytes, q.extent, q.stride, p_.depth, p_.depth_padded);
      print_zero_columns(kop.offset_bytes, kop.extent * c_.stages, kop.stride, p_.depth,
                         p_.depth_padded);
    }
    if (p_.value_chunks && p_.values < p_.values_padded) {
      out_.line("// zeros in the values' padding columns (" + num(p_.values) + " to " +
                num(p_.values_padded) + ")");
      print_zero_columns(p_.value_offset_bytes, TJ * c_.stages, p_.value_stride, p_.values,
                         p_.values_padded);
    }
    {
      const global_buffer& g = kp_.inputs[q.kernel_input];
      const auto& a = x_.producer.inputs[q.input].accesses[q.access];
      print_tile_copy(
          {"row operand " + x_.producer.inputs[q.input].name + ", once", p_.operand_chunks,
           q.extent, p_.depth, p_.depth_padded, "i", "i0", p_.rows, p_.rows_partial, "dd",
           index(a, g, x_.producer.rank(), [&](std::size_t d) { return producer_var(d); }), &g,
           q.offset_bytes, 0, q.stride, "0"});
    }
    const bool async = p_.operand_chunks || p_.value_chunks;
    // the block's key steps: all of them, or its share with split keys
    const bool split = c_.split > 1;
    const std::string S0 = split ? "step0" : "0", S1 = split ? "step1" : num(p_.key_steps);
    if (split)
      out_.line("const int step0 = zs * " + num(p_.key_steps) + " / " + num(c_.split) +
                ", step1 = (zs + 1) * " + num(p_.key_steps) + " / " + num(c_.split) + ";");
    // The column operands and the values of a step are two cp.async groups: the scores wait
    // for the first only, and the values arrive while they are computed.
    const std::string commit = "asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");";
    auto wait = [&](int n) {
      out_.line("asm volatile(\"cp.async.wait_group " + std::to_string(n) +
                ";\\n\" ::: \"memory\");");
    };
    if (two) {
      for (const bool values : {false, true}) {
        print_step_copies(split ? "(idx_t)step0 * " + num(TJ) : "0", "0", values);
        out_.line(commit);
      }
    }
    out_.line(
        "// running (m, l) of the consumer's operator for rows g and g + 8 of each of the "
        "warp's m16 tiles; acc");
    out_.line(AS + " run_m[" + num(MT) + "][2], run_l[" + num(MT) + "][2];");
    out_.line("float acc[" + num(MT) + "][" + num(NV) + "][4];");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m) {");
    out_.line("run_m[m][0] = run_m[m][1] = " + identity(0) + ";");
    out_.line("run_l[m][0] = run_l[m][1] = " + identity(1) + ";");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) +
              "; ++n) acc[m][n][0] = acc[m][n][1] = acc[m][n][2] = acc[m][n][3] = 0.0f;");
    out_.line("}");
    out_.line("unsigned qf[" + num(MT) + "][" + num(KD) +
              "][4];  // the row operand's A fragments");
    out_.line("for (int step = " + S0 + "; step < " + S1 + "; ++step) {");
    out_.line("const idx_t j0 = (idx_t)step * " + num(TJ) + ";");
    if (two) {  // groups in flight: this step's operands and values, the next step's
      out_.line(split ? "const int slot = (step - step0) & 1;" : "const int slot = step & 1;");
      for (const bool values : {false, true}) {
        out_.line("if (step + 1 < " + S1 + ") {");
        print_step_copies("j0 + " + num(TJ), "(slot ^ 1)", values);
        out_.line("}");
        out_.line(commit);  // (empty after the last step: the count stays the same)
      }
      wait(3);
    } else {
      out_.line("const int slot = 0;");
      for (const bool values : {false, true}) {
        print_step_copies("j0", "slot", values);
        if (async) out_.line(commit);
      }
      if (async) wait(1);
    }
    out_.line(d_.barrier() +
              "  // the step's column operands (and the row operand) are in shared memory" +
              (async ? "" : ", and its values"));
    out_.line("if (step == " + S0 + ") {");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int kk = 0; kk < " + num(KD) + "; ++kk)");
    print_ldmatrix(false, "qf[m][kk]",
                   smem_at(q.offset_bytes, 0, q.stride, "warp * " + R + " + m * 16 + (lane & 15)",
                           "kk * 16 + (lane >> 4) * 8", "0"));
    out_.line("}");
    // scores
    out_.line("// the producer: scores of the warp's " + R + " rows x " + num(TJ) +
              " keys (each K fragment serves every m16 tile)");
    out_.line("float s[" + num(MT) + "][" + num(NT) + "][4];");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NT) +
              "; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.0f;");
    out_.line(d_.unroll());
    out_.line("for (int kk = 0; kk < " + num(KD) + "; ++kk) {");
    print_n_pairs(NT / 2, MT, false,
                  smem_at(kop.offset_bytes, kop.stage_bytes, kop.stride,
                          "np * 16 + (lane & 7) + (lane >> 4) * 8",
                          "kk * 16 + ((lane >> 3) & 1) * 8", "slot"),
                  "s", "qf[m][kk]");
    out_.line("}");
    // epilogue
    out_.line("// the producer's epilogue; keys past the end weigh nothing (-inf)");
    print_fragment_loops(MT, NT);
    out_.line("const idx_t i = i0 + warp * " + R +
              " + m * 16 + g + (c >> 1) * 8, j = j0 + n * 8 + t4 * 2 + (c & 1);");
    out_.line("(void)i, (void)j;");
    // bounds only where a tile reaches past the sizes (partition's edges)
    const std::string in_keys = "j < " + num(p_.keys), in_rows = "i < " + num(p_.rows);
    const std::string y = print_producer_epilogue("s[m][n][c]", p_.keys_partial && p_.rows_partial
                                                                    ? in_keys + " && " + in_rows
                                                                : p_.keys_partial ? in_keys
                                                                : p_.rows_partial ? in_rows
                                                                                  : std::string());
    const std::string y_rows =
        p_.rows_partial ? "(" + in_rows + " ? " + y + " : (" + AS + ")0)" : y;
    out_.line("s[m][n][c] = " +
              (p_.keys_partial ? in_keys + " ? " + y_rows + " : " + NEG : y_rows) + ";");
    out_.line("}");
    out_.line("}");
    // online softmax
    out_.line(
        "// m_t = max(m, row max), p = exp(s - m_t) (ex2.approx: p is rounded to 16 bits "
        "next), l_t = row sum of p (the quad's lanes share a row)");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int h = 0; h < 2; ++h) {");
    // two partial maxima and sums a row: two dependency chains through it, not one (four
    // chains with 128 registers a thread spilled at t_i 128)
    out_.line(AS + " vq[2] = {run_m[m][h], run_m[m][h]};");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NT) + "; ++n) {");
    out_.line("vq[n & 1] = vq[n & 1] < s[m][n][2 * h] ? s[m][n][2 * h] : vq[n & 1];");
    out_.line("vq[n & 1] = vq[n & 1] < s[m][n][2 * h + 1] ? s[m][n][2 * h + 1] : vq[n & 1];");
    out_.line("}");
    out_.line(AS + " v = vq[0] < vq[1] ? vq[1] : vq[0];");
    out_.line(d_.unroll());
    out_.line("for (int o = 1; o < 4; o <<= 1) {");
    out_.line("const " + AS + " w = __shfl_xor_sync(0xffffffffu, v, o);");
    out_.line("v = v < w ? w : v;");
    out_.line("}");
    out_.line("const float vl = v == " + NEG + " ? 0.0f : v * 1.4426950408889634f;");
    out_.line(AS + " sq[2] = {(" + AS + ")0, (" + AS + ")0};");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NT) + "; ++n)");
    out_.line(d_.unroll());
    out_.line("for (int c = 2 * h; c < 2 * h + 2; ++c) {");
    out_.line("const " + AS + " x = s[m][n][c];");
    out_.line("float e;");
    out_.line(
        "asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(x * 1.4426950408889634f - "
        "vl));");
    out_.line("s[m][n][c] = e;  // ex2.approx(-inf) = +0: masked keys weigh nothing");
    out_.line("sq[n & 1] += e;");
    out_.line("}");
    out_.line(AS + " sum = sq[0] + sq[1];");
    out_.line("sum += __shfl_xor_sync(0xffffffffu, sum, 1);");
    out_.line("sum += __shfl_xor_sync(0xffffffffu, sum, 2);");
    out_.line("// (m, l, r) = (m, l, 1) (+) (m_t, l_t, 0): r rescales acc to the new maximum");
    out_.line(AS + " mm = run_m[m][h], ll = run_l[m][h], r = (" + AS + ")1;");
    out_.line("mdh_c_combine(&mm, &ll, &r, v, sum, (" + AS + ")0);");
    out_.line("run_m[m][h] = mm, run_l[m][h] = ll;");
    out_.line(d_.unroll());
    out_.line("for (int n = 0; n < " + num(NV) +
              "; ++n) acc[m][n][2 * h] *= r, acc[m][n][2 * h + 1] *= r;");
    out_.line("}");
    if (async) {
      wait(two ? 2 : 0);
      out_.line(d_.barrier() + "  // the step's values are in shared memory");
    }
    // p V
    const std::string cvt = "cvt.rn." + half_type() + "x2.f32";
    out_.line("// acc += p V: p's accumulator pairs as " + half_type() +
              " A fragments; each V fragment serves every m16 tile");
    out_.line(d_.unroll());
    out_.line("for (int kk = 0; kk < " + num(TJ / 16) + "; ++kk) {");
    out_.line("unsigned pa[" + num(MT) + "][4];");
    out_.line(d_.unroll());
    out_.line("for (int m = 0; m < " + num(MT) + "; ++m)");
    out_.line(d_.unroll());
    out_.line("for (int x = 0; x < 4; ++x)");
    out_.line(
        "asm(\"" + cvt +
        " %0, %1, %2;\" : \"=r\"(pa[m][x]) : \"f\"(s[m][2 * kk + (x >> 1)][(x & 1) * 2 + 1]), "
        "\"f\"(s[m][2 * kk + (x >> 1)][(x & 1) * 2]));");
    print_n_pairs(NV / 2, MT, true,
                  smem_at(p_.value_offset_bytes, p_.value_stage_bytes, p_.value_stride,
                          "kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8",
                          "np * 16 + (lane >> 4) * 8", "slot"),
                  "acc", "pa[m]");
    out_.line("}");
    out_.line(d_.barrier() + "  // the step's tiles are read before they are refilled");
    out_.line("}");
    if (split) print_split_combine(MT, NV);
    // results
    if (p_.results_chunks) {
      print_staged_results(MT, NV, R);
      out_.line("}");
      return;
    }
    out_.line("// the consumer's results of the lane's rows and values, written");
    print_fragment_loops(MT, NV);
    out_.line("const int h = c >> 1;");
    out_.line("const idx_t i = i0 + warp * " + R +
              " + m * 16 + g + h * 8, e = n * 8 + t4 * 2 + (c & 1);");
    const std::string in = in_sizes();
    out_.line(in.empty() ? std::string("{") : "if (" + in + ") {");
    print_consumer_results({"run_m[m][h]", "run_l[m][h]", "acc[m][n][c]"});
    out_.line("}");
    out_.line("}");
    out_.line("}");
    out_.line("}");
  }
};

}  // namespace detail

inline std::string print_producer_mma_source(const kernel_plan& p, const c_dialect& d) {
  return detail::producer_mma_printer(p, d).print();
}

}  // namespace mdh::lower
