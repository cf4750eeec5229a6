// SPDX-License-Identifier: MIT
// Prints the main kernel of a tensor-core plan (mma_plan, written by the mma_tiles pass in
// mdh/lower/mma.hpp) as CUDA C++ with inline PTX: cp.async.cg.shared.global (+ commit_group /
// wait_group), ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, mma.sync.aligned.m16n8k16 /
// m16n8k8. Every number and choice comes from the plan; the fragment layouts are those of the
// PTX ISA ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"): with g = lane / 4, t = lane % 4,
//   A (16 x K): register pair j holds rows g (+8 for j odd), columns 2t, 2t+1 (+8 for j >= 2);
//               TF32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
//   B (K x 8):  register j holds rows 2t, 2t+1 (+8 for j = 1), column g; TF32: (t, g), (t+4, g)
//   C (16 x 8): c0, c1 at row g, columns 2t, 2t+1; c2, c3 the same at row g+8.
// mma = 2 (print_wgmma): wgmma.mma_async on matrix descriptors of the shared tiles,
// fence.proxy.async after the copies, wgmma.fence / commit_group / wait_group; its accumulators are
// C above repeated along N (8 columns per group of 4 registers), warp w of the warpgroup at rows
// 16w of each 64.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <mdh/lower/c_printer.hpp>
#include <mdh/lower/conversions.hpp>
#include <mdh/lower/kernel_plan.hpp>

namespace mdh::lower {

namespace detail {

class mma_printer {
 public:
  mma_printer(const kernel_plan& p, const c_dialect& d) : p_(p), m_(p.mma), d_(d) {}

  std::string print(const kernel& k) {
    if (m_.wgmma) return print_wgmma(k);
    const std::string T = num(p_.threads);
    out_.line("// Main kernel (tensor cores, " + mma_ptx(m_.instruction) + "): " + num(p_.blocks) +
              " blocks of " + T + " threads.");
    std::string params;
    for (auto& g : p_.inputs)
      params += (params.empty() ? "" : ", ") + d_.global_param(g.type, true, true) + " " + g.name;
    for (auto& g : p_.outputs) params += ", " + d_.global_param(g.type, false, true) + " " + g.name;
    for (auto* list : {&p_.partials, &p_.counters})  // split-K's partials and counters
      for (auto& g : *list) params += ", " + d_.global_param(g.type, false, true) + " " + g.name;
    for (auto& l : d_.kernel_open(p_, k, params)) out_.line(l);
    out_.line(d_.shared_pool(p_.shared_bytes));
    out_.line("const int tid = " + d_.thread_id(0) + ";");
    out_.line("const int lane = tid & 31, warp = tid >> 5;");
    out_.line(
        "const int g = lane >> 2, t = lane & 3;  // the fragments' group and thread in group");
    out_.line("const int wm = warp / " + num(m_.warps_n) + ", wn = warp % " + num(m_.warps_n) +
              ";  // the warp's tile along M and N");
    out_.line("const idx_t m_blk = (idx_t)" + d_.block_id(1) + " * " + num(m_.block_m) +
              ", n_blk = (idx_t)" + d_.block_id(0) + " * " + num(m_.block_n) + ";");
    print_block_z();
    out_.line("unsigned smem_base;  // the shared pool as a 32-bit shared-window address");
    out_.line(
        "asm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(smem_base) "
        ": \"l\"(mdh_smem));");
    out_.line("float acc[" + num(m_.frags_m) + "][" + num(m_.frags_n) + "][4];");
    loop("for (int i = 0; i < " + num(m_.frags_m * m_.frags_n * 4) +
         "; ++i) (&acc[0][0][0])[i] = 0.0f;");
    print_load_step();
    out_.line("// prologue: the first stages - 1 steps in flight");
    loop("for (int s = 0; s < " + num(m_.stages - 1) + "; ++s) {");
    out_.line("if (" + at_step("s") + " < " + step_end() + ") load_step(" + at_step("s") + ", s);");
    out_.line("asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");");
    out_.line("}");
    out_.line("for (int step = " + step_begin() + "; step < " + step_end() + "; ++step) {");
    out_.line("asm volatile(\"cp.async.wait_group " + num(m_.stages - 2) +
              ";\\n\" ::: \"memory\");  // step's copies have landed");
    out_.line(d_.barrier() + "  // ... for every thread, and step - 1's buffer is free");
    print_copy_ahead(m_.stages - 1);
    out_.line("const int slot = " + in_range("step") + " % " + num(m_.stages) + ";");
    print_compute();
    out_.line("}");
    print_split_combine();
    print_epilogue();
    out_.line("}");
    return out_.str();
  }

 private:
  const kernel_plan& p_;
  const mma_plan& m_;
  const c_dialect& d_;
  source out_;

  static std::string num(std::int64_t v) { return std::to_string(v); }
  // mma_plan::cluster_*: the persistent kernel's blocks in clusters of two
  bool cluster() const { return m_.cluster_m * m_.cluster_n > 1; }
  // An unrolled loop's head (the dialect's pragma on its own line).
  void loop(const std::string& head) {
    if (!d_.unroll().empty()) out_.line(d_.unroll());
    out_.line(head);
  }
  static std::string ev(std::size_t d) { return "e" + std::to_string(d); }

  // The K steps of this block: all of them, or with split-K (mma_plan::split) its share
  // [step0, step1); at_step(s): the s-th of them; in_range(x): x counted from the first.
  bool split() const { return m_.split > 1; }
  std::string step_begin() const { return split() ? "step0" : "0"; }
  std::string step_end() const { return split() ? "step1" : num(m_.steps); }
  std::string at_step(const std::string& s) const { return split() ? "step0 + " + s : s; }
  std::string in_range(const std::string& x) const { return split() ? "(" + x + " - step0)" : x; }

  // The cp.async copies of step + ahead into its buffer, one commit group (empty past the end).
  void print_copy_ahead(std::int64_t ahead) {
    out_.line("{");
    out_.line("const int next = step + " + num(ahead) + ";");
    out_.line("if (next < " + step_end() + ") load_step(next, " + in_range("next") + " % " +
              num(m_.stages) + ");");
    out_.line("asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");");
    out_.line("}");
  }

  // blockIdx.z: the other ++ dimensions, and with split-K this block's share of the K steps
  // (the fastest-varying part).
  void print_block_z() {
    const std::string bz = "(idx_t)" + d_.block_id(2);
    if (!split()) {
      decode(bz, m_.grid_dims, "the other ++ dimensions, one per block");
      return;
    }
    const std::string S = num(m_.split);
    out_.line("// split-K: " + S + " blocks per tile, each a share of the K steps");
    out_.line("const int zs = (int)(" + bz + " % " + S + ");");
    out_.line("const int step0 = zs * " + num(m_.steps) + " / " + S + ", step1 = (zs + 1) * " +
              num(m_.steps) + " / " + S + ";");
    decode("(" + bz + " / " + S + ")", m_.grid_dims, "the other ++ dimensions, one per tile");
  }

  // Split-K: a block that is not the tile's last to finish writes its accumulators to part0 and
  // exits; the last waits until every other partial is written, adds them all in z order (its
  // own registers at its z, so the sum does not depend on who finished last) and goes on to the
  // epilogue. cnt[tile]: blocks finished (low 16 bits), partials written (high 16 bits).
  void print_split_combine() {
    if (!split()) return;
    const std::string S = num(m_.split), T = num(p_.threads);
    const std::int64_t groups = m_.frags_m * m_.frags_n;  // float4 groups per thread
    out_.line("{  // split-K: the tile's last block to finish adds the others' partial sums");
    out_.line("const idx_t tile = ((idx_t)" + d_.block_id(2) + " / " + S + " * " +
              num(ceil_div(m_.size_m, m_.block_m)) + " + " + d_.block_id(1) + ") * " +
              num(ceil_div(m_.size_n, m_.block_n)) + " + " + d_.block_id(0) + ";");
    out_.line("float4* const parts = (float4*)part0 + tile * " + num(m_.split * groups) + " * " +
              T + ";");
    // thread tid's group j = fm * frags_n + fn of block z at parts[(z * groups + j) * T + tid]
    const std::string FN = num(m_.frags_n);
    detail::print_last_block(out_, d_, m_.split, [&] {
      loop("for (int fm = 0; fm < " + num(m_.frags_m) + "; ++fm)");
      loop("for (int fn = 0; fn < " + FN + "; ++fn)");
      out_.line("  __stcg(parts + (zs * " + num(groups) + " + fm * " + FN + " + fn) * " + T +
                " + tid, make_float4(acc[fm][fn][0], acc[fm][fn][1], acc[fm][fn][2], "
                "acc[fm][fn][3]));");
    });
    loop("for (int fm = 0; fm < " + num(m_.frags_m) + "; ++fm)");
    loop("for (int fn = 0; fn < " + FN + "; ++fn) {");
    out_.line(
        "const float4 own = make_float4(acc[fm][fn][0], acc[fm][fn][1], acc[fm][fn][2], "
        "acc[fm][fn][3]);");
    out_.line("float4 s = zs == 0 ? own : __ldcg(parts + (fm * " + FN + " + fn) * " + T +
              " + tid);");
    loop("for (int z = 1; z < " + S + "; ++z) {");
    out_.line("const float4 x = z == zs ? own : __ldcg(parts + (z * " + num(groups) + " + fm * " +
              FN + " + fn) * " + T + " + tid);");
    out_.line("s.x += x.x, s.y += x.y, s.z += x.z, s.w += x.w;");
    out_.line("}");
    out_.line(
        "acc[fm][fn][0] = s.x, acc[fm][fn][1] = s.y, acc[fm][fn][2] = s.z, "
        "acc[fm][fn][3] = s.w;");
    out_.line("}");
    out_.line("}");
  }

  // The stride of each of `dims` in their row-major linear index (the last fastest).
  std::vector<std::int64_t> row_major_weights(const std::vector<std::size_t>& dims) const {
    std::int64_t w = 1;
    std::vector<std::int64_t> W(dims.size());
    for (std::size_t j = dims.size(); j-- > 0;) W[j] = w, w *= p_.sizes[dims[j]];
    return W;
  }

  // const idx_t e<d> = ... for `dims` from the linear index `id` (row-major, the last fastest).
  void decode(const std::string& id, const std::vector<std::size_t>& dims,
              const std::string& what) {
    if (dims.empty()) return;
    out_.line("// " + what);
    const std::vector<std::int64_t> W = row_major_weights(dims);
    for (std::size_t j = 0; j < dims.size(); ++j)
      out_.line("const idx_t " + ev(dims[j]) + " = (" + id + " / " + num(W[j]) + ") % " +
                num(p_.sizes[dims[j]]) + ";");
  }

  // The index along an axis of the product (`axis`: "m", "n" or "k"): its dimension's e<d>, or
  // lin_<axis> for a fused axis (mma_fuse_*), which decode_axis splits into its dimensions.
  static std::string axis_index(const std::vector<std::size_t>& dims, const std::string& axis) {
    return dims.size() == 1 ? ev(dims[0]) : "lin_" + axis;
  }
  // const idx_t e<d> = ... for each dimension of a fused axis from its index (row-major, the
  // innermost last); nothing for an axis of one dimension.
  void decode_axis(const std::vector<std::size_t>& dims, const std::string& axis) {
    if (dims.size() == 1) return;
    const std::string lin = axis_index(dims, axis);
    const std::vector<std::int64_t> W = row_major_weights(dims);
    std::string line;
    for (std::size_t j = 0; j < dims.size(); ++j) {
      std::string e = W[j] == 1 ? lin : lin + " / " + num(W[j]);
      if (j > 0) e += " % " + num(p_.sizes[dims[j]]);  // the outermost is bounded by the guard
      line += (line.empty() ? "const idx_t " : ", ") + ev(dims[j]) + " = " + e;
    }
    out_.line(line + ";");
  }

  static std::string affine(const std::vector<std::int64_t>& coeff, std::int64_t constant) {
    std::string s;
    for (std::size_t d = 0; d < coeff.size(); ++d) {
      if (coeff[d] == 0) continue;
      if (!s.empty()) s += " + ";
      s += coeff[d] == 1 ? ev(d) : num(coeff[d]) + " * " + ev(d);
    }
    if (constant != 0 || s.empty()) s += (s.empty() ? "" : " + ") + num(constant);
    return s;
  }

  // The element offset of tile element (r, c) of operand o (mma_operand's layout).
  // `phase`: an expression equal to r modulo 8 (the swizzle repeats every 8 rows), simpler
  // for the compiler than r itself where r's other terms are multiples of 8.
  static std::string tile_offset(const mma_operand& o, const std::string& r, const std::string& c,
                                 const std::string& phase = "") {
    if (o.atom_cols > 0) {  // wgmma: column blocks of atom_cols, each swizzled as a whole row
      const std::string W = num(o.atom_cols), in = "(" + c + ") % " + W;
      return "(" + c + ") / " + W + " * " + num(o.rows * o.atom_cols) + " + (" + r + ") * " + W +
             " + ((((" + in + ") / " + num(o.chunk) + ") ^ (((" + r + ") / " + num(o.swizzle_rows) +
             ") % " + num(o.swizzle_chunks) + ")) * " + num(o.chunk) + ") + (" + c + ") % " +
             num(o.chunk);
    }
    if (o.swizzle_chunks == 1) return "(" + r + ") * " + num(o.pitch) + " + (" + c + ")";
    const std::string ph = phase.empty() ? r : phase;
    return "(" + r + ") * " + num(o.pitch) + " + ((((" + c + ") / " + num(o.chunk) + ") ^ (((" +
           ph + ") / " + num(o.swizzle_rows) + ") % " + num(o.swizzle_chunks) + ")) * " +
           num(o.chunk) + ") + (" + c + ") % " + num(o.chunk);
  }

  // The kernel of mma = 2: warpgroups (128 threads each) issue wgmma.mma_async on descriptors of
  // the shared tiles (laid out by wgmma_operand_layout, mma.hpp). Per step: wait for the step's
  // cp.async copies, make them visible to the async proxy (fence.proxy.async), barrier; copy
  // step + copies_ahead into the buffer whose wgmmas every warpgroup has waited for; wgmma.fence,
  // the step's instructions, commit, wait until at most wgmma_depth groups are in flight.
  std::string print_wgmma(const kernel& k) {
    const std::string T = num(p_.threads);
    const std::string ptx = wgmma_ptx(m_.instruction, m_.warp_n);
    out_.line("// Main kernel (tensor cores, " + ptx + "): " + num(p_.blocks) + " blocks of " + T +
              " threads (" + num(m_.warps_m * m_.warps_n) +
              (m_.persistent ? " computing warpgroups and a producer)." : " warpgroups)."));
    if (cluster())
      out_.line("// Clusters of two blocks along " + std::string(m_.cluster_n > 1 ? "N" : "M") +
                ", each block one of a unit's two tiles; the " + (m_.cluster_n > 1 ? "A" : "B") +
                " tile multicast, half of its boxes from each block.");
    std::string params;
    for (auto& g : p_.inputs)
      params += (params.empty() ? "" : ", ") + d_.global_param(g.type, true, true) + " " + g.name;
    for (auto& g : p_.outputs) params += ", " + d_.global_param(g.type, false, true) + " " + g.name;
    for (auto* list : {&p_.partials, &p_.counters})  // split-K's partials and counters
      for (auto& g : *list) params += ", " + d_.global_param(g.type, false, true) + " " + g.name;
    if (m_.tma) {  // the tensor maps, passed by value in the parameter space
      out_.line("// A CUtensorMap (cuda.h), passed as a __grid_constant__ kernel parameter.");
      out_.line("struct __align__(64) mdh_tensor_map { unsigned long long opaque[16]; };");
      params += ", const __grid_constant__ mdh_tensor_map tmap_a";
      params += ", const __grid_constant__ mdh_tensor_map tmap_b";
    }
    for (auto& l : d_.kernel_open(p_, k, params)) out_.line(l);
    out_.line("extern __shared__ __align__(1024) unsigned char mdh_smem_pool[];");
    out_.line("const int tid = " + d_.thread_id(0) + ";");
    out_.line("const int lane = tid & 31, warp = tid >> 5;");
    out_.line(
        "const int g = lane >> 2, t = lane & 3;  // the fragments' group and thread in group");
    if (m_.persistent)  // broadcast: ptxas then knows it warp-uniform, and the roles' branches
      // (wgmma in one of them) are no divergent paths it would serialize the wgmmas for
      out_.line(
          "const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0), wq = warp & 3;  // the "
          "warpgroup, the warp within it");
    else
      out_.line("const int wg = tid >> 7, wq = warp & 3;  // the warpgroup, the warp within it");
    out_.line("const int wm = wg / " + num(m_.warps_n) + ", wn = wg % " + num(m_.warps_n) +
              ";  // the warpgroup's tile along M and N");
    if (!m_.persistent) {
      out_.line("const idx_t m_blk = (idx_t)" + d_.block_id(1) + " * " + num(m_.block_m) +
                ", n_blk = (idx_t)" + d_.block_id(0) + " * " + num(m_.block_n) + ";");
      print_block_z();
    }
    out_.line("// the pool from its first 1024-byte boundary on (the 128-byte swizzle's period)");
    out_.line("unsigned smem_base;");
    out_.line(
        "asm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(smem_base) "
        ": \"l\"(mdh_smem_pool));");
    out_.line("const unsigned pad = (1024u - (smem_base & 1023u)) & 1023u;");
    out_.line("smem_base += pad;");
    if (m_.persistent) {
      print_wgmma_persistent();
      out_.line("}");
      return out_.str();
    }
    // the element copies' stores, TF32's rounding
    if (!m_.tma &&
        (!m_.a.async_copy || !m_.b.async_copy || m_.instruction == mma_instruction::m16n8k8_tf32))
      out_.line("unsigned char* const mdh_smem = mdh_smem_pool + pad;");
    out_.line("float acc[" + num(m_.frags_m) + "][" + num(m_.frags_n) + "][4];");
    loop("for (int i = 0; i < " + num(m_.frags_m * m_.frags_n * 4) +
         "; ++i) (&acc[0][0][0])[i] = 0.0f;");
    const std::int64_t ahead = m_.copies_ahead;
    if (m_.tma) {
      print_tma_step();
    } else {
      print_load_step();
      out_.line("// prologue: the first " + num(ahead) + " step(s) in flight");
      loop("for (int s = 0; s < " + num(ahead) + "; ++s) {");
      out_.line("if (" + at_step("s") + " < " + step_end() + ") load_step(" + at_step("s") +
                ", s);");
      out_.line("asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");");
      out_.line("}");
    }
    // descriptor bits 16-29: LBO >> 4, 32-45: SBO >> 4, 62-63: swizzle mode; 0-13: start >> 4
    auto desc_hi = [&](const mma_operand& o) { return std::to_string(wgmma_desc_hi(o)) + "ull"; };
    out_.line("// matrix descriptors: LBO, SBO and swizzle mode; the start address is added");
    out_.line("const unsigned long long desc_a = " + desc_hi(m_.a) + ", desc_b = " + desc_hi(m_.b) +
              ";");
    const bool tf32 = m_.instruction == mma_instruction::m16n8k8_tf32;
    if (tf32) print_round_step();
    out_.line("for (int step = " + step_begin() + "; step < " + step_end() + "; ++step) {");
    if (m_.tma) {
      out_.line("const int slot = " + in_range("step") + " % " + num(m_.stages) + ";");
      out_.line("wait_barrier(bar_full + slot * 8, (" + in_range("step") + " / " + num(m_.stages) +
                ") & 1);  // the step's boxes have landed");
    } else {
      out_.line("asm volatile(\"cp.async.wait_group " + num(ahead - 1) +
                ";\\n\" ::: \"memory\");  // step's copies have landed");
      if (tf32) out_.line("round_step(" + in_range("step") + " % " + num(m_.stages) + ");");
      out_.line(
          "asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");  // visible to "
          "wgmma");
      out_.line(d_.barrier() + "  // ... for every thread; every warpgroup is done with step - " +
                num(m_.wgmma_depth + 1));
      if (!copies_through_registers()) print_copy_ahead(ahead);
      out_.line("const int slot = " + in_range("step") + " % " + num(m_.stages) + ";");
    }
    if (copies_through_registers()) {
      // a thread waits for its copies' loads before it stores them: the step's wgmmas go first
      // and run while it does (the buffer copied is free since the barrier, as it was before)
      print_wgmma_instructions([&] { print_copy_ahead(ahead); });
    } else {
      print_wgmma_instructions();
    }
    if (m_.tma) print_tma_release();
    out_.line("}");
    if (m_.wgmma_depth > 0)
      out_.line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");");
    out_.line("// the accumulators are the last wgmma's results from here on");
    loop("for (int i = 0; i < " + num(m_.frags_m * m_.frags_n * 4) +
         "; ++i) asm volatile(\"\" : \"+f\"((&acc[0][0][0])[i])::\"memory\");");
    print_split_combine();
    print_epilogue();
    out_.line("}");
    return out_.str();
  }

  // One step's wgmmas of this warpgroup on stage `slot`: the descriptors of its A and B slices,
  // every K slice's instructions, commit, and wait until at most wgmma_depth groups are in flight.
  // while_in_flight: printed between the commit and the wait.
  void print_wgmma_instructions(const std::function<void()>& while_in_flight = {}) {
    const std::string ptx = wgmma_ptx(m_.instruction, m_.warp_n);
    const bool tf32 = m_.instruction == mma_instruction::m16n8k8_tf32;
    // bytes per M (N) index between descriptor starts (wgmma_desc_offset is linear in mn0 over
    // multiples of 64 for A and of the warpgroup tile for B)
    const std::int64_t mnb_a = wgmma_desc_offset(m_.a, 64, 0) / 64;
    const std::int64_t mnb_b = wgmma_desc_offset(m_.b, m_.warp_n, 0) / m_.warp_n;
    out_.line("const unsigned a_base = smem_base + " + num(m_.a.offset_bytes) + " + slot * " +
              num(m_.a.stage_bytes) + " + wm * " + num(m_.warp_m * mnb_a) + ";");
    out_.line("const unsigned b_base = smem_base + " + num(m_.b.offset_bytes) + " + slot * " +
              num(m_.b.stage_bytes) + " + wn * " + num(m_.warp_n * mnb_b) + ";");
    out_.line("asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");");
    const std::int64_t n_regs = m_.warp_n / 2;
    std::string regs, outs;
    for (std::int64_t r = 0; r < n_regs; ++r) {
      regs += (r ? ", %" : "%") + num(r);
      outs +=
          std::string(r ? ", " : "") + "\"+f\"(acc[fm][" + num(r / 4) + "][" + num(r % 4) + "])";
    }
    // the major-ness (imm-trans-a/b: 1 = M/N-major); TF32 has no such operands (always K-major)
    const std::string trans = tf32 ? ""
                                   : std::string(", ") + (m_.a.k_contiguous ? "0" : "1") + ", " +
                                         (m_.b.k_contiguous ? "0" : "1");
    // split TF32: the low tiles lie at a fixed distance from the high ones
    const std::int64_t lo_a = m_.a.lo_offset_bytes - m_.a.offset_bytes,
                       lo_b = m_.b.lo_offset_bytes - m_.b.offset_bytes;
    for (std::int64_t kk = 0; kk < m_.block_k; kk += m_.inst_k) {
      out_.line("{  // K slice " + num(kk));
      out_.line("const unsigned long long db = desc_b | (unsigned long long)(((b_base + " +
                num(wgmma_desc_offset(m_.b, 0, kk)) + ") & 0x3FFFF) >> 4);");
      if (m_.split_tf32)
        out_.line("const unsigned long long db_lo = desc_b | (unsigned long long)(((b_base + " +
                  num(lo_b + wgmma_desc_offset(m_.b, 0, kk)) + ") & 0x3FFFF) >> 4);");
      loop("for (int fm = 0; fm < " + num(m_.frags_m) + "; ++fm) {");
      out_.line("const unsigned long long da = desc_a | (unsigned long long)(((a_base + fm * " +
                num(64 * mnb_a) + " + " + num(wgmma_desc_offset(m_.a, 0, kk)) +
                ") & 0x3FFFF) >> 4);");
      auto issue = [&](const std::string& da, const std::string& db) {
        out_.line("asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + num(n_regs + 2) +
                  ", 0;\\n" + ptx + " {" + regs + "}, %" + num(n_regs) + ", %" + num(n_regs + 1) +
                  ", p, 1, 1" + trans + ";\\n}\\n\" : " + outs + " : \"l\"(" + da + "), \"l\"(" +
                  db + "), \"r\"(1));");
      };
      if (m_.split_tf32) {  // the small products first: lo*hi, hi*lo, then hi*hi
        out_.line(
            "const unsigned long long da_lo = desc_a | (unsigned long long)(((a_base + fm * " +
            num(64 * mnb_a) + " + " + num(lo_a + wgmma_desc_offset(m_.a, 0, kk)) +
            ") & 0x3FFFF) >> 4);");
        issue("da_lo", "db");
        issue("da", "db_lo");
      }
      issue("da", "db");
      out_.line("}");
      out_.line("}");
    }
    out_.line("asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");");
    if (while_in_flight) while_in_flight();
    out_.line("asm volatile(\"wgmma.wait_group.sync.aligned " + num(m_.wgmma_depth) +
              ";\\n\" ::: \"memory\");");
  }

  // With mma_shift = 1, some operand's tile is copied through registers (element or shifted
  // copies), not by cp.async or TMA: the copying thread waits for the loads.
  bool copies_through_registers() const {
    if (m_.tma || p_.cfg.mma.shift == 0) return false;
    const mma_operand& a = m_.land_a ? m_.a_land : m_.a;
    const mma_operand& b = m_.land_b ? m_.b_land : m_.b;
    return !a.async_copy || !b.async_copy;
  }

  // TMA (mma_plan::tma): the stages' full and empty mbarriers, wait_barrier, and tma_step(step,
  // slot), which thread 0 calls: arm the stage's full barrier with the step's bytes, then issue
  // every box of both operands, each completing its bytes on that barrier. Then the prologue:
  // the first `stages` steps in flight.
  void print_tma_step() {
    const std::string S = num(m_.stages);
    print_tma_barriers();
    print_tma_lambda();
    out_.line("// prologue: the first " + S + " step(s) in flight");
    out_.line("if (tid == 0)");
    loop("for (int s = 0; s < " + S + "; ++s)");
    out_.line("  if (" + at_step("s") + " < " + step_end() + ") tma_step(" + at_step("s") +
              ", s);");
    out_.line("__syncwarp();");
  }

  // The full and empty mbarriers of every stage (empty counts the computing warps), initialised
  // by thread 0 before a block barrier, and wait_barrier(bar, phase).
  void print_tma_barriers() {
    const std::string S = num(m_.stages);
    // with a cluster the computing warps of both blocks release each stage (multicast fills it)
    const std::int64_t computing_warps = m_.warps_m * m_.warps_n * 4 * (cluster() ? 2 : 1);
    out_.line(
        "// TMA: full[s] (the boxes of stage s landed: transaction bytes) and empty[s] (every");
    out_.line("// computing warp's wgmmas on stage s completed) mbarriers, after the tiles");
    out_.line("const unsigned bar_full = smem_base + " + num(m_.barriers_offset) +
              ", bar_empty = bar_full + " + num(8 * m_.stages) + ";");
    out_.line("if (tid == 0) {");
    loop("for (int s = 0; s < " + S + "; ++s) {");
    out_.line(
        "asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\\n\" :: \"r\"(bar_full + s * 8) : "
        "\"memory\");");
    out_.line(
        "asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(bar_empty + s * "
        "8), \"r\"(" +
        num(computing_warps) + ") : \"memory\");");
    out_.line("}");
    out_.line(
        "asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");  // visible to "
        "the async proxy");
    out_.line("}");
    if (cluster()) {  // both blocks' barriers initialised before either block uses its partner's
      out_.line("asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\" ::: \"memory\");");
      out_.line("asm volatile(\"barrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\");");
    } else {
      out_.line(d_.barrier());
    }
    out_.line("// until the phase of parity `phase` of barrier `bar` has completed");
    out_.line("auto wait_barrier = [](unsigned bar, unsigned phase) {");
    out_.line("unsigned done = 0;");
    out_.line("do {");
    out_.line(
        "asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], "
        "%2;\\nselp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(done) : \"r\"(bar), \"r\"(phase) : "
        "\"memory\");");
    out_.line("} while (!done);");
    out_.line("};");
  }

  // tma_step(step, slot): arm stage `slot`'s full barrier with the step's bytes, then issue every
  // box of both operands (one thread), at the tile of m_blk, n_blk and the grid.z indices.
  void print_tma_lambda() {
    out_.line("// the boxes of one step into stage `slot` (one thread)");
    out_.line("auto tma_step = [&](int step, int slot) {");
    out_.line("const int k_blk = (step % " + num(m_.k_tiles) + ") * " + num(m_.block_k) + ";");
    if (!m_.outer_k_dims.empty())
      decode("(idx_t)(step / " + num(m_.k_tiles) + ")", m_.outer_k_dims,
             "the other pw dimensions, around the K tiles");
    out_.line("const unsigned full = bar_full + slot * 8;");
    out_.line(
        "asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\" :: "
        "\"r\"(full), \"r\"(" +
        num(m_.tma_bytes) + ") : \"memory\");");
    print_tma_boxes(m_.a, "tmap_a", "m_blk");
    print_tma_boxes(m_.b, "tmap_b", "n_blk");
    out_.line("};");
  }

  // mma_persistent: the producer warpgroup (the last) walks the block's tiles and their steps,
  // one of its threads issuing each step's boxes into stage count % stages once the stage is
  // empty; the computing warpgroups walk the same tiles, wait for each stage, compute, release
  // it, and store each tile. Steps are counted over tiles, so stages and parities run on.
  void print_wgmma_persistent() {
    const std::string S = num(m_.stages), WG = num(m_.warps_m * m_.warps_n);
    const std::int64_t tn = ceil_div(m_.size_n, m_.block_n), tm = ceil_div(m_.size_m, m_.block_m);
    // with a cluster: units of two tiles, each of the cluster's blocks one (its rank)
    const std::int64_t un = ceil_div(tn, m_.cluster_n), um = ceil_div(tm, m_.cluster_m);
    if (cluster()) {
      out_.line("// a cluster of two blocks: this block's rank, the cluster and their number");
      out_.line("unsigned crank, cid, clusters;");
      out_.line("asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(crank));");
      out_.line("asm(\"mov.u32 %0, %%clusterid.x;\" : \"=r\"(cid));");
      out_.line("asm(\"mov.u32 %0, %%nclusterid.x;\" : \"=r\"(clusters));");
    }
    print_tma_barriers();
    auto tile_indices = [&] {
      if (!cluster()) {
        out_.line("const idx_t m_blk = (idx_t)(tile / " + num(tn) + " % " + num(tm) + ") * " +
                  num(m_.block_m) + ", n_blk = (idx_t)(tile % " + num(tn) + ") * " +
                  num(m_.block_n) + ";");
      } else if (m_.cluster_n > 1) {
        out_.line("const idx_t m_blk = (idx_t)(tile / " + num(un) + " % " + num(tm) + ") * " +
                  num(m_.block_m) + ", n_blk = (idx_t)(tile % " + num(un) + " * 2 + crank) * " +
                  num(m_.block_n) + ";");
      } else {
        out_.line("const idx_t m_blk = (idx_t)(tile / " + num(tn) + " % " + num(um) +
                  " * 2 + crank) * " + num(m_.block_m) + ", n_blk = (idx_t)(tile % " + num(tn) +
                  ") * " + num(m_.block_n) + ";");
      }
      decode("(idx_t)(tile / " + num(un * um) + ")", m_.grid_dims,
             "the other ++ dimensions, one per tile");
    };
    const std::string tiles = cluster()
                                  ? "for (int tile = (int)cid; tile < " + num(m_.cluster_units) +
                                        "; tile += (int)clusters) {  // units of two tiles"
                                  : "for (int tile = " + d_.block_id(0) + "; tile < " +
                                        num(m_.tiles) + "; tile += (int)gridDim.x) {";
    out_.line("if (wg == " + WG + ") {  // the producer warpgroup");
    out_.line("if (tid == " + num(m_.warps_m * m_.warps_n * 128) + ") {");
    out_.line("int count = 0;  // steps issued, over the block's tiles");
    out_.line(tiles);
    tile_indices();
    print_tma_lambda();
    out_.line("for (int step = 0; step < " + num(m_.steps) + "; ++step, ++count) {");
    out_.line("const int slot = count % " + S + ";");
    out_.line("if (count >= " + S + ") wait_barrier(bar_empty + slot * 8, (count / " + S +
              " - 1) & 1);  // the stage's last step is done with");
    out_.line("tma_step(step, slot);");
    out_.line("}");
    out_.line("}");
    if (cluster()) {  // the partner block may still arrive on this block's empty barriers
      out_.line("// before the block exits: every stage's last fill released by both blocks");
      out_.line("for (int c = count > " + S + " ? count - " + S + " : 0; c < count; ++c)");
      out_.line("  wait_barrier(bar_empty + (c % " + S + ") * 8, (c / " + S + ") & 1);");
    }
    out_.line("}");
    out_.line("return;");
    out_.line("}");
    // descriptor bits 16-29: LBO >> 4, 32-45: SBO >> 4, 62-63: swizzle mode; 0-13: start >> 4
    out_.line("// matrix descriptors: LBO, SBO and swizzle mode; the start address is added");
    out_.line("const unsigned long long desc_a = " + std::to_string(wgmma_desc_hi(m_.a)) +
              "ull, desc_b = " + std::to_string(wgmma_desc_hi(m_.b)) + "ull;");
    out_.line("// a computing warp counts itself in the empty barrier of the stage of step c");
    out_.line("auto release = [&](int c) {");
    // in both blocks: either block's producer multicasts into both. The arrive's default
    // semantics (release at CTA scope) suffice: wgmma.wait_group has completed the stage's reads,
    // and a cluster-scope release or acquire would fence every step.
    if (cluster()) {
      out_.line("if (lane == 0)");
      out_.line("  for (unsigned r = 0; r < 2; ++r)");
      out_.line(
          "    asm volatile(\"{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n"
          "mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n\" :: "
          "\"r\"(bar_empty + (c % " +
          S + ") * 8), \"r\"(r) : \"memory\");");
    } else {
      out_.line(
          "if (lane == 0) asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: "
          "\"r\"(bar_empty + (c % " +
          S + ") * 8) : \"memory\");");
    }
    out_.line("};");
    out_.line("float acc[" + num(m_.frags_m) + "][" + num(m_.frags_n) + "][4];");
    out_.line("int count = 0;  // steps consumed, over the block's tiles");
    out_.line(tiles);
    tile_indices();
    loop("for (int i = 0; i < " + num(m_.frags_m * m_.frags_n * 4) +
         "; ++i) (&acc[0][0][0])[i] = 0.0f;");
    out_.line("for (int step = 0; step < " + num(m_.steps) + "; ++step, ++count) {");
    out_.line("const int slot = count % " + S + ";");
    out_.line("wait_barrier(bar_full + slot * 8, (count / " + S +
              ") & 1);  // the step's boxes have landed");
    print_wgmma_instructions();
    if (m_.wgmma_depth > 0)
      out_.line("if (step > 0) release(count - 1);  // its wgmmas have completed");
    else
      out_.line("release(count);");
    out_.line("}");
    if (m_.wgmma_depth > 0) {
      out_.line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");");
      out_.line("release(count - 1);");
    }
    out_.line("// the accumulators are the last wgmma's results from here on");
    loop("for (int i = 0; i < " + num(m_.frags_m * m_.frags_n * 4) +
         "; ++i) asm volatile(\"\" : \"+f\"((&acc[0][0][0])[i])::\"memory\");");
    // a unit's second tile past an odd tile count: zeros, computed for the partner's sake only
    const bool phantom = (m_.cluster_n > 1 && tn % 2 != 0) || (m_.cluster_m > 1 && tm % 2 != 0);
    if (phantom)
      out_.line(m_.cluster_n > 1 ? "if (n_blk < " + num(m_.size_n) + ") {  // a tile inside N"
                                 : "if (m_blk < " + num(m_.size_m) + ") {  // a tile inside M");
    print_epilogue();
    if (phantom) out_.line("}");
    out_.line("}");
  }

  // The boxes of operand o for one step: column block cb (atom_cols of the contiguous index) and
  // row block rb of the stage, at coordinates (innermost first) from the tile's origin.
  void print_tma_boxes(const mma_operand& o, const std::string& map, const std::string& mn_blk) {
    const std::int64_t elem = std::int64_t(size_of(o.type));
    const std::size_t col = o.k_contiguous ? o.k_dim : o.mn_dim;
    const std::size_t row = o.k_contiguous ? o.mn_dim : o.k_dim;
    const std::string col_blk = o.k_contiguous ? "k_blk" : mn_blk,
                      row_blk = o.k_contiguous ? mn_blk : "k_blk";
    const std::size_t n = o.tma_dim.size();
    std::string regs;  // %3, %4, ...: the coordinates, innermost first
    for (std::size_t j = 0; j < n; ++j) regs += (j ? ", %" : "%") + num(std::int64_t(j) + 3);
    for (std::int64_t cb = 0; cb < o.tma_col_boxes; ++cb)
      for (std::int64_t rb = 0; rb < o.tma_row_boxes; ++rb) {
        const std::int64_t box = cb * o.tma_row_boxes + rb;  // multicast: from rank box % 2
        const std::int64_t dst =
            o.offset_bytes + (cb * o.rows + rb * o.tma_box_rows) * o.atom_cols * elem;
        std::string coords;
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t d = o.tma_dim[j];
          const std::string c = d == col   ? col_blk + " + " + num(cb * o.atom_cols)
                                : d == row ? row_blk + " + " + num(rb * o.tma_box_rows)
                                           : ev(d);
          coords += ", \"r\"((int)(" + c + "))";
        }
        if (o.multicast) {  // into both blocks of the cluster, completing on both full barriers
          out_.line("if (crank == " + num(box % 2) + ")");
          out_.line("  asm volatile(\"cp.async.bulk.tensor." + num(std::int64_t(n)) +
                    "d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                    "[%0], [%1, {" +
                    regs + "}], [%2], %" + num(std::int64_t(n) + 3) +
                    ";\\n\" :: \"r\"(smem_base + " + num(dst) + " + slot * " + num(o.stage_bytes) +
                    "), \"l\"(&" + map + "), \"r\"(full)" + coords +
                    ", \"h\"((unsigned short)3) : \"memory\");");
          continue;
        }
        out_.line("asm volatile(\"cp.async.bulk.tensor." + num(std::int64_t(n)) +
                  "d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {" + regs +
                  "}], [%2];\\n\" :: \"r\"(smem_base + " + num(dst) + " + slot * " +
                  num(o.stage_bytes) + "), \"l\"(&" + map + "), \"r\"(full)" + coords +
                  " : \"memory\");");
      }
  }

  // TMA: after the wait_group of step i, this warp's wgmmas of step done = i - wgmma_depth have
  // completed: the warp counts itself in that stage's empty barrier, and thread 0, once every
  // warp has, refills the stage with step done + stages.
  void print_tma_release() {
    const std::string S = num(m_.stages);
    out_.line("{");
    out_.line("const int done = " + in_range("step") + " - " + num(m_.wgmma_depth) +
              ";  // this warp's wgmmas of that step have completed");
    out_.line("if (done >= 0) {");
    out_.line("const unsigned empty = bar_empty + (done % " + S + ") * 8;");
    out_.line(
        "if (lane == 0) asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: "
        "\"r\"(empty) : \"memory\");");
    out_.line("if (tid == 0 && " + at_step("done + " + S) + " < " + step_end() + ") {");
    out_.line("wait_barrier(empty, (done / " + S + ") & 1);  // every warp is done with the stage");
    out_.line("tma_step(" + at_step("done + " + S) + ", done % " + S + ");");
    out_.line("}");
    out_.line("}");
    out_.line("__syncwarp();  // warp 0 converged again before the next aligned wgmma.fence");
    out_.line("}");
  }

  // TF32 (wgmma reads the f32 bits of shared memory as they are): round_step(slot) rounds, by
  // cvt.rna.tf32.f32 as mma = 1 and the reference do (split TF32: mdh_tf32_hi/_lo, as mma = 1
  // splits), the elements this thread copied into buffer `slot` (the same index space as
  // print_copy's), once they have landed: chunk by chunk with 16-byte loads and stores, a landed
  // operand 4x4 block by block, transposed in registers.
  void print_round_step() {
    if (m_.split_tf32)
      out_.line(
          "// split TF32: each thread splits the elements it copied, once they have landed, into "
          "hi = tf32(x) in place and lo = x - hi (truncated to TF32) in the low tile");
    else
      out_.line("// TF32: each thread rounds the elements it copied, once they have landed");
    if (m_.land_a || m_.land_b)
      out_.line(
          "// (an operand that landed M/N-contiguous is written transposed into its tile, by the "
          "4x4 blocks each thread copied)");
    out_.line("auto round_step = [&](int slot) {");
    for (const mma_operand* o : {&m_.a, &m_.b}) {
      const bool lands = o == &m_.a ? m_.land_a : m_.land_b;
      if (lands) {
        print_transpose_blocks(*o, o == &m_.a ? m_.a_land : m_.b_land);
        continue;
      }
      const std::int64_t V = o->async_copy || o->shifted_copy ? o->chunk : 1;
      print_copy_index(*o);
      out_.line("float* const x = (float*)(mdh_smem + " + num(o->offset_bytes) + " + slot * " +
                num(o->stage_bytes) + ") + (" + tile_offset(*o, "r", "col") + ");");
      const std::string y = "(float*)(mdh_smem + " + num(o->lo_offset_bytes) + " + slot * " +
                            num(o->stage_bytes) + ") + (" + tile_offset(*o, "r", "col") + ")";
      if (V == 4) {  // a chunk: one 16-byte load, one or two 16-byte stores
        out_.line("float4 w = *(const float4*)x;");
        if (m_.split_tf32) {
          out_.line(
              "const uint4 h = make_uint4(mdh_tf32_hi(w.x), mdh_tf32_hi(w.y), "
              "mdh_tf32_hi(w.z), mdh_tf32_hi(w.w));");
          out_.line("*(float4*)(" + y +
                    ") = make_float4(__uint_as_float(mdh_tf32_lo(w.x, h.x)), "
                    "__uint_as_float(mdh_tf32_lo(w.y, h.y)), __uint_as_float(mdh_tf32_lo(w.z, "
                    "h.z)), __uint_as_float(mdh_tf32_lo(w.w, h.w)));");
          out_.line("*(uint4*)x = h;");
        } else {
          out_.line("w = make_float4(mdh_tf32(w.x), mdh_tf32(w.y), mdh_tf32(w.z), mdh_tf32(w.w));");
          out_.line("*(float4*)x = w;");
        }
      } else if (m_.split_tf32) {
        out_.line("float* const y = " + y + ";");
        loop("for (int v = 0; v < " + num(V) + "; ++v) {");
        out_.line("const unsigned int h = mdh_tf32_hi(x[v]);");
        out_.line("y[v] = __uint_as_float(mdh_tf32_lo(x[v], h));");
        out_.line("x[v] = __uint_as_float(h);");
        out_.line("}");
      } else {
        loop("for (int v = 0; v < " + num(V) + "; ++v) x[v] = mdh_tf32(x[v]);");
      }
      out_.line("}");
      out_.line("}");
    }
    out_.line("};");
  }

  // The rounding pass of a landed operand: each 4x4 block this thread copied (print_copy_index,
  // copy_rows 4), rows r..r+3 (K) of the landing tile at columns col..col+3 (M/N), read by four
  // 16-byte loads and written as four 16-byte stores along K into the K-major tile `o`.
  void print_transpose_blocks(const mma_operand& o, const mma_operand& src) {
    const std::int64_t per_row = src.cols / src.chunk, blocks = landing_blocks(src);
    loop("for (int q = 0; q < " + num(src.copies_per_thread / 4) + "; ++q) {");
    out_.line("const int c = tid + q * " + num(p_.threads) + ";");
    out_.line(blocks % p_.threads != 0 ? "if (c < " + num(blocks) + ") {" : "{");
    out_.line("const int r = " + block_row(src) + ", col = c % " + num(per_row) + " * " +
              num(src.chunk) + ";");
    out_.line("const float* const x = (const float*)(mdh_smem + " + num(src.offset_bytes) +
              " + slot * " + num(src.stage_bytes) + ");");
    out_.line("float* const t = (float*)(mdh_smem + " + num(o.offset_bytes) + " + slot * " +
              num(o.stage_bytes) + ");");
    if (m_.split_tf32)
      out_.line("float* const y = (float*)(mdh_smem + " + num(o.lo_offset_bytes) + " + slot * " +
                num(o.stage_bytes) + ");");
    for (int i = 0; i < 4; ++i)
      out_.line("const float4 w" + std::to_string(i) + " = *(const float4*)(x + (" +
                tile_offset(src, "r + " + std::to_string(i), "col") + "));");
    static const char* const lane[4] = {"x", "y", "z", "w"};
    for (int j = 0; j < 4; ++j) {  // column col + j of the block: row col + j of the K-major tile
      const std::string e = std::string(".") + lane[j];
      const std::string at = "(" + tile_offset(o, "col + " + std::to_string(j), "r") + ")";
      if (m_.split_tf32) {
        out_.line("{");
        out_.line("const uint4 h = make_uint4(mdh_tf32_hi(w0" + e + "), mdh_tf32_hi(w1" + e +
                  "), mdh_tf32_hi(w2" + e + "), mdh_tf32_hi(w3" + e + "));");
        out_.line("*(float4*)(y + " + at + ") = make_float4(__uint_as_float(mdh_tf32_lo(w0" + e +
                  ", h.x)), __uint_as_float(mdh_tf32_lo(w1" + e +
                  ", h.y)), __uint_as_float(mdh_tf32_lo(w2" + e +
                  ", h.z)), __uint_as_float(mdh_tf32_lo(w3" + e + ", h.w)));");
        out_.line("*(uint4*)(t + " + at + ") = h;");
        out_.line("}");
      } else {
        out_.line("*(float4*)(t + " + at + ") = make_float4(mdh_tf32(w0" + e + "), mdh_tf32(w1" +
                  e + "), mdh_tf32(w2" + e + "), mdh_tf32(w3" + e + "));");
      }
    }
    out_.line("}");
    out_.line("}");
  }

  // The first row of block c of a landing tile (copy_rows 4): landing_block_origin (mma_plan.hpp)
  // in C.
  std::string block_row(const mma_operand& src) const {
    const std::int64_t per_row = src.cols / src.chunk;
    return "(c / " + num(per_row) + " + c % " + num(per_row) + " / 2) % " + num(src.rows / 4) +
           " * 4";
  }

  // The head of a loop over the copy indices of operand o's tile this thread copies: q, the
  // index c, the guard, and the chunk's (or element's) row r and first column col in the tile;
  // the caller closes two braces. Landing tiles (copy_rows 4): 4x4 blocks, one per four q.
  void print_copy_index(const mma_operand& o) {
    const std::int64_t V = o.async_copy || o.shifted_copy ? o.chunk : 1;
    const std::int64_t per_row = o.cols / V, total = o.rows * per_row;
    loop("for (int q = 0; q < " + num(o.copies_per_thread) + "; ++q) {");
    if (o.copy_rows == 4) {
      const std::int64_t blocks = landing_blocks(o);
      out_.line("const int c = tid + q / 4 * " + num(p_.threads) + ";  // the thread's 4x4 block");
      out_.line(blocks % p_.threads != 0 ? "if (c < " + num(blocks) + ") {" : "{");
      out_.line("const int r = " + block_row(o) + " + q % 4, col = c % " + num(per_row) + " * " +
                num(V) + ";");
      return;
    }
    out_.line("const int c = tid + q * " + num(p_.threads) + ";");
    out_.line(total % p_.threads != 0 ? "if (c < " + num(total) + ") {" : "{");
    out_.line("const int r = c / " + num(per_row) + ", col = (c % " + num(per_row) + ") * " +
              num(V) + ";");
  }

  // load_step(step, slot): the tiles of both operands for `step` into buffer `slot`.
  void print_load_step() {
    out_.line("// the copies of one step's tiles into a buffer: cp.async 16-byte chunks or");
    out_.line("// elements, zero past the edges");
    out_.line("auto load_step = [&](int step, int slot) {");
    out_.line("const idx_t k_blk = (idx_t)(step % " + num(m_.k_tiles) + ") * " + num(m_.block_k) +
              ";");
    if (!m_.outer_k_dims.empty())
      decode("(idx_t)(step / " + num(m_.k_tiles) + ")", m_.outer_k_dims,
             "the other pw dimensions, around the K tiles");
    print_copy(m_.land_a ? m_.a_land : m_.a, "m", m_.size_m, p_.inputs[m_.a.input].name);
    print_copy(m_.land_b ? m_.b_land : m_.b, "n", m_.size_n, p_.inputs[m_.b.input].name);
    out_.line("};");
  }

  // The copy of operand o's tile (its M or N axis: `axis`, "m" or "n") from buffer `buf`.
  void print_copy(const mma_operand& o, const std::string& axis, std::int64_t mn_size,
                  const std::string& buf) {
    const std::string mn_blk = axis + "_blk";
    const std::int64_t V = o.async_copy || o.shifted_copy ? o.chunk : 1;
    const std::int64_t elem = std::int64_t(size_of(o.type));
    const std::string ty = d_.type(o.type);
    const std::string mn = axis_index(o.mn_dims, axis), k = axis_index(o.k_dims, "k");
    print_copy_index(o);
    const std::string row_dim = o.k_contiguous ? mn : k, col_dim = o.k_contiguous ? k : mn;
    const std::string row_blk = o.k_contiguous ? mn_blk : "k_blk",
                      col_blk = o.k_contiguous ? "k_blk" : mn_blk;
    const std::int64_t row_size = o.k_contiguous ? mn_size : m_.size_k,
                       col_size = o.k_contiguous ? m_.size_k : mn_size;
    out_.line("const idx_t " + row_dim + " = " + row_blk + " + r, " + col_dim + " = " + col_blk +
              " + col;");
    decode_axis(o.mn_dims, axis);
    decode_axis(o.k_dims, "k");
    const std::string offset = affine(o.coeff, o.constant);
    const std::string dst = tile_offset(o, "r", "col");
    if (o.async_copy) {
      out_.line("const idx_t left = " + row_dim + " < " + num(row_size) + " ? " + num(col_size) +
                " - " + col_dim + " : 0;");
      out_.line("const int bytes = left <= 0 ? 0 : left >= " + num(V) + " ? 16 : (int)left * " +
                num(elem) + ";");
      out_.line("const " + ty + "* src = " + buf + " + (bytes > 0 ? " + offset + " : 0);");
      out_.line("const unsigned dst = smem_base + " + num(o.offset_bytes) + " + slot * " +
                num(o.stage_bytes) + " + (" + dst + ") * " + num(elem) + ";");
      out_.line(
          "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(dst), "
          "\"l\"(src), \"r\"(bytes) : \"memory\");");
    } else if (o.shifted_copy) {
      // the chunk's start `at` lies `sh` elements into its aligned vector: both aligned vectors
      // from at - sh hold the chunk (the second only where sh > 0); at the tensor's edges, or
      // where the second vector would end past the buffer, element by element
      out_.line("uint4 x = make_uint4(0u, 0u, 0u, 0u);");
      out_.line("if (" + row_dim + " < " + num(row_size) + " && " + col_dim + " < " +
                num(col_size) + ") {");
      out_.line("const idx_t at = " + offset + ";");
      out_.line("const int sh = (int)(at & " + num(V - 1) + ");");
      out_.line("if (" + col_dim + " + " + num(V) + " <= " + num(col_size) +
                " && (sh == 0 || at - sh + " + num(2 * V) + " <= " + num(o.buffer_elements) +
                ")) {");
      out_.line("const uint4* const w = (const uint4*)(" + buf + " + (at - sh));");
      out_.line("const uint4 lo = w[0];");
      out_.line("x = sh == 0 ? lo : mdh_shift16(lo, w[1], sh * " + num(elem) + ");");
      out_.line("} else {");
      out_.line("unsigned int e[" + num(V) + "];");
      loop("for (int j = 0; j < " + num(V) + "; ++j)");
      const std::string bits =
          elem == 2 ? "(unsigned int)" + buf + "[at + j]" : "__float_as_uint(" + buf + "[at + j])";
      out_.line("e[j] = " + col_dim + " + j < " + num(col_size) + " ? " + bits + " : 0u;");
      out_.line(elem == 2 ? "x = make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << "
                            "16, e[6] | e[7] << 16);"
                          : "x = make_uint4(e[0], e[1], e[2], e[3]);");
      out_.line("}");
      out_.line("}");
      out_.line("*(uint4*)(mdh_smem + " + num(o.offset_bytes) + " + slot * " + num(o.stage_bytes) +
                " + (" + dst + ") * " + num(elem) + ") = x;");
    } else {
      out_.line("const " + ty + " v = " + row_dim + " < " + num(row_size) + " && " + col_dim +
                " < " + num(col_size) + " ? " + buf + "[" + offset + "] : (" + ty + ")0;");
      out_.line("((" + ty + "*)(mdh_smem + " + num(o.offset_bytes) + " + slot * " +
                num(o.stage_bytes) + "))[" + dst + "] = v;");
    }
    out_.line("}");
    out_.line("}");
  }

  // ldmatrix.x4 of operand o: lane's row and column in the tile for 8x8 matrix j = lane / 8.
  void ldmatrix(const mma_operand& o, const std::string& row, const std::string& col,
                const std::string& regs) {
    const std::string addr = "smem_base + " + num(o.offset_bytes) + " + slot * " +
                             num(o.stage_bytes) + " + (" + tile_offset(o, row, col, "(lane & 7)") +
                             ") * 2";
    out_.line("asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" +
              std::string(o.load == mma_fragment_load::ldmatrix_trans ? ".trans" : "") +
              ".shared.b16 {%0, %1, %2, %3}, [%4];\\n\" : " + regs + " : \"r\"(" + addr + "));");
  }

  // The f32 at tile (row, col) of o's current stage.
  std::string tf32_element(const mma_operand& o, const std::string& row,
                           const std::string& col) const {
    return "((const float*)(mdh_smem + " + num(o.offset_bytes) + " + slot * " + num(o.stage_bytes) +
           "))[" + tile_offset(o, row, col) + "]";
  }

  // A TF32 fragment element: the f32 at tile (row, col) rounded by cvt.rna.tf32.f32.
  void tf32_load(const mma_operand& o, const std::string& reg, const std::string& row,
                 const std::string& col) {
    out_.line("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(" + reg + ") : \"f\"(" +
              tf32_element(o, row, col) + "));");
  }

  // Split TF32: the f32 at tile (row, col) as hi = tf32(x) and lo = x - hi truncated to TF32
  // (the prelude's mdh_tf32_hi/_lo, mdh::split_tf32_lo).
  void tf32_split_load(const mma_operand& o, const std::string& hi, const std::string& lo,
                       const std::string& row, const std::string& col) {
    out_.line("{");
    out_.line("const float x = " + tf32_element(o, row, col) + ";");
    out_.line(hi + " = mdh_tf32_hi(x);");
    out_.line(lo + " = mdh_tf32_lo(x, " + hi + ");");
    out_.line("}");
  }

  void print_compute() {
    const bool tf32 = m_.instruction == mma_instruction::m16n8k8_tf32;
    const bool split = m_.split_tf32;
    const std::string FM = num(m_.frags_m), FN = num(m_.frags_n);
    loop("for (int kk = 0; kk < " + num(m_.block_k) + "; kk += " + num(m_.inst_k) + ") {");
    out_.line("unsigned af[" + FM + "][4], bf[" + FN + "][2];");
    if (split)
      out_.line("unsigned al[" + FM + "][4], bl[" + FN + "][2];  // the low parts (split TF32)");
    // fragment element `at` ("[fm][0]") of A or B: af/bf, and with the split al/bl
    auto load = [&](const mma_operand& o, const std::string& at, const std::string& row,
                    const std::string& col) {
      const std::string x = &o == &m_.a ? "a" : "b";
      split ? tf32_split_load(o, x + "f" + at, x + "l" + at, row, col)
            : tf32_load(o, x + "f" + at, row, col);
    };
    // A: tile rows are M (K contiguous) or K
    loop("for (int fm = 0; fm < " + FM + "; ++fm) {");
    const std::string m0 = "wm * " + num(m_.warp_m) + " + fm * 16";
    if (tf32) {
      const mma_operand& a = m_.a;
      auto at = [&](const std::string& frag, const std::string& mm, const std::string& kx) {
        a.k_contiguous ? load(a, frag, m0 + " + " + mm, "kk + " + kx)
                       : load(a, frag, "kk + " + kx, m0 + " + " + mm);
      };
      at("[fm][0]", "g", "t"), at("[fm][1]", "g + 8", "t");
      at("[fm][2]", "g", "t + 4"), at("[fm][3]", "g + 8", "t + 4");
    } else {
      const std::string regs =
          "\"=r\"(af[fm][0]), \"=r\"(af[fm][1]), \"=r\"(af[fm][2]), \"=r\"(af[fm][3])";
      if (m_.a.k_contiguous)  // matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15), rows fastest
        ldmatrix(m_.a, m0 + " + (lane & 15)", "kk + (lane >> 4) * 8", regs);
      else  // stored K x M: matrix j at k + (j / 2) * 8, m + (j % 2) * 8, transposed on load
        ldmatrix(m_.a, "kk + (lane & 7) + (lane >> 4) * 8", m0 + " + ((lane >> 3) & 1) * 8", regs);
    }
    out_.line("}");
    // B: tile rows are N (K contiguous) or K; one ldmatrix.x4 covers two n8 fragments
    if (tf32) {
      const mma_operand& b = m_.b;
      loop("for (int fn = 0; fn < " + FN + "; ++fn) {");
      const std::string n0 = "wn * " + num(m_.warp_n) + " + fn * 8 + g";
      auto at = [&](const std::string& frag, const std::string& kx) {
        b.k_contiguous ? load(b, frag, n0, "kk + " + kx) : load(b, frag, "kk + " + kx, n0);
      };
      at("[fn][0]", "t"), at("[fn][1]", "t + 4");
      out_.line("}");
    } else {
      loop("for (int fp = 0; fp < " + num(m_.frags_n / 2) + "; ++fp) {");
      const std::string n0 = "wn * " + num(m_.warp_n) + " + fp * 16";
      const std::string regs =
          "\"=r\"(bf[2 * fp][0]), \"=r\"(bf[2 * fp][1]), \"=r\"(bf[2 * fp + 1][0]), "
          "\"=r\"(bf[2 * fp + 1][1])";
      if (m_.b.k_contiguous)  // matrix j: n + (j / 2) * 8, k + (j % 2) * 8
        ldmatrix(m_.b, n0 + " + (lane & 7) + (lane >> 4) * 8", "kk + ((lane >> 3) & 1) * 8", regs);
      else  // stored K x N, transposed on load
        ldmatrix(m_.b, "kk + (lane & 7) + ((lane >> 3) & 1) * 8", n0 + " + (lane >> 4) * 8", regs);
      out_.line("}");
    }
    auto issue = [&](const std::string& a, const std::string& b, const std::string& indent) {
      out_.line(indent + "asm volatile(\"" + mma_ptx(m_.instruction) +
                " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\" : "
                "\"+f\"(acc[fm][fn][0]), "
                "\"+f\"(acc[fm][fn][1]), \"+f\"(acc[fm][fn][2]), \"+f\"(acc[fm][fn][3]) : "
                "\"r\"(" +
                a + "[fm][0]), \"r\"(" + a + "[fm][1]), \"r\"(" + a + "[fm][2]), \"r\"(" + a +
                "[fm][3]), \"r\"(" + b + "[fn][0]), \"r\"(" + b + "[fn][1]));");
    };
    loop("for (int fm = 0; fm < " + FM + "; ++fm)");
    loop("for (int fn = 0; fn < " + FN + "; ++fn)");
    if (split) {  // the small products first: lo*hi, hi*lo, then hi*hi
      out_.line("{");
      issue("al", "bf", ""), issue("af", "bl", ""), issue("af", "bf", "");
      out_.line("}");
    } else {
      issue("af", "bf", "  ");
    }
    out_.line("}");
  }

  // The loops over a thread's accumulators acc[fm][fn][i] (i in steps of `step`), each with its
  // coordinates e<m>, e<n> and, where a dimension has a partial block tile, the range guard;
  // leaves two blocks open.
  void print_accumulator_loops(std::int64_t step) {
    loop("for (int fm = 0; fm < " + num(m_.frags_m) + "; ++fm)");
    loop("for (int fn = 0; fn < " + num(m_.frags_n) + "; ++fn)");
    loop("for (int i = 0; i < 4; i += " + num(step) + ") {");
    const std::string em = axis_index(m_.m_dims, "m"), en = axis_index(m_.n_dims, "n");
    if (m_.wgmma)  // warp wq of the warpgroup holds rows 16 wq .. 16 wq + 15 of each 64
      out_.line("const idx_t " + em + " = m_blk + wm * " + num(m_.warp_m) +
                " + fm * 64 + wq * 16 + g + (i >> 1) * 8;");
    else
      out_.line("const idx_t " + em + " = m_blk + wm * " + num(m_.warp_m) +
                " + fm * 16 + g + (i >> 1) * 8;");
    out_.line("const idx_t " + en + " = n_blk + wn * " + num(m_.warp_n) +
              " + fn * 8 + 2 * t + (i & 1);");
    decode_axis(m_.m_dims, "m");
    decode_axis(m_.n_dims, "n");
    std::string guard;
    if (m_.guard_m) guard = em + " < " + num(m_.size_m);
    if (m_.guard_n) guard += (guard.empty() ? "" : " && ") + en + " < " + num(m_.size_n);
    out_.line(guard.empty() ? "{" : "if (" + guard + ") {");
  }

  // ---- the staged epilogue (mma_plan::stage_out, mma_stage) ----------------------------------

  // The staged tile's row shift of the thread's current row for stage st: access 0's flat offset
  // without N's terms, modulo the 16-byte vector (n_blk is a multiple of it).
  std::string stage_shift(const mma_stage& st) const {
    if (!st.shifted) return "0";
    std::vector<std::int64_t> coeff = st.writes.front().coeff;
    for (auto d : m_.n_dims) coeff[d] = 0;
    return "(int)((" + affine(coeff, st.writes.front().constant) + ") & " + num(st.vector - 1) +
           ")";
  }

  // Before the accumulator loops: no cp.async copy or wgmma still reads or lands in the pool,
  // every warp is done with the pipeline's tiles; the staged tiles' pointers.
  void print_stage_begin() {
    out_.line("{  // the staged epilogue: results -> shared tiles -> 16-byte stores");
    if (m_.persistent) {  // own tiles after the pipeline's, which the producer keeps filling
      out_.line(stage_barrier() + "  // every computing warp is done copying the last tile out");
    } else {
      out_.line("asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\");");
      if (m_.wgmma)  // done already (the main loop's last wait); stated where the pool is reused
        out_.line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");");
      out_.line(d_.barrier() + "  // every warp is done with the pipeline's tiles");
    }
    out_.line("unsigned char* const mdh_stage = " +
              std::string(m_.wgmma ? "mdh_smem_pool + pad;" : "mdh_smem;"));
    for (std::size_t q = 0; q < m_.staged.size(); ++q) {
      const std::string ty = d_.type(m_.staged[q].type);
      out_.line(ty + "* const mdh_st" + num(std::int64_t(q)) + " = (" + ty + "*)(mdh_stage + " +
                num(m_.staged[q].offset_bytes) + ");");
    }
  }

  // The staged epilogue's barrier: the block's, or in the persistent kernel named barrier 1 of
  // the computing warpgroups (the producer's thread may be waiting on an empty stage).
  std::string stage_barrier() const {
    if (!m_.persistent) return d_.barrier();
    return "asm volatile(\"bar.sync 1, " + num(computing_threads(m_, p_.threads)) +
           ";\\n\" ::: \"memory\");";
  }

  // Inside the accumulator loops: the tile's row and column of acc[fm][fn][i].
  void print_stage_position() {
    out_.line("const int sr = (int)(" + axis_index(m_.m_dims, "m") + " - m_blk), sc = (int)(" +
              axis_index(m_.n_dims, "n") + " - n_blk);");
  }

  // The value v0 (and, for a pair, v1 one column further) into st's tile at (sr, sc): one 4- or
  // 8-byte store where st.pair, else element by element.
  void stage_store(const mma_stage& st, const std::string& v0, const std::string& v1) {
    const std::string tile = "mdh_st" + num(std::int64_t(&st - m_.staged.data()));
    const std::string at = tile + "[sr * " + num(st.pitch) + " + " + stage_shift(st) + " + sc";
    if (v1.empty()) {
      out_.line(at + "] = " + v0 + ";");
    } else if (!st.pair) {
      out_.line(at + "] = " + v0 + ";");
      out_.line(at + " + 1] = " + v1 + ";");
    } else if (st.type == scalar_type::f32) {
      out_.line("*(float2*)&" + at + "] = make_float2(" + v0 + ", " + v1 + ");");
    } else {
      out_.line("*(unsigned*)&" + at + "] = (unsigned)" + v0 + " | ((unsigned)" + v1 + " << 16);");
    }
  }

  // After the accumulator loops: barrier, then every thread copies chunks of the staged tiles to
  // global memory (mma_stage): chunk sk of row sr is the tile's elements [sk * V, sk * V + V),
  // of which the row's columns [sh, sh + cols) are stored, at their offset in each access; a
  // whole chunk as one 16-byte store (the tile's shift puts it on the output's 16-byte grid).
  void print_stage_copy() {
    out_.line(stage_barrier() + "  // the staged tiles are complete");
    // the persistent kernel's producer warpgroup (the last) takes no part
    const std::int64_t threads = computing_threads(m_, p_.threads);
    const std::string T = num(threads);
    const std::string em = axis_index(m_.m_dims, "m");
    std::string cols = num(m_.block_n);
    if (m_.guard_n) {
      out_.line("const int cols = (int)(" + num(m_.size_n) + " - n_blk < " + num(m_.block_n) +
                " ? " + num(m_.size_n) + " - n_blk : " + num(m_.block_n) +
                ");  // the block's columns inside N");
      cols = "cols";
    }
    for (std::size_t q = 0; q < m_.staged.size(); ++q) {
      const mma_stage& st = m_.staged[q];
      const std::string tile = "mdh_st" + num(std::int64_t(q)), V = num(st.vector);
      const std::string ty = d_.type(st.type), out = p_.outputs[st.output].name;
      const std::int64_t total = m_.block_m * st.chunks_per_row;
      out_.line("// " + out + ": " + num(st.chunks_per_row) + " chunks of " + V +
                " per row, consecutive threads on consecutive chunks");
      loop("for (int sq = 0; sq < " + num(st.copies_per_thread) + "; ++sq) {");
      out_.line("const int sx = tid + sq * " + T + ";");
      out_.line("const int sr = sx / " + num(st.chunks_per_row) + ", sk = sx % " +
                num(st.chunks_per_row) + ";");
      std::string guard;
      if (total % threads != 0) guard = "sx < " + num(total);
      out_.line("const idx_t " + em + " = m_blk + sr;");
      if (m_.guard_m) guard += (guard.empty() ? "" : " && ") + em + " < " + num(m_.size_m);
      out_.line(guard.empty() ? "{" : "if (" + guard + ") {");
      decode_axis(m_.m_dims, "m");
      out_.line("const int sh = " + stage_shift(st) + ";");
      out_.line("const int lo = sk * " + V + " > sh ? sk * " + V + " : sh, hi = sk * " + V + " + " +
                V + " < sh + " + cols + " ? sk * " + V + " + " + V + " : sh + " + cols + ";");
      out_.line("const " + ty + "* const src = " + tile + " + sr * " + num(st.pitch) + ";");
      for (const mma_write& w : st.writes) {
        std::vector<std::int64_t> coeff = w.coeff;
        for (auto d : m_.n_dims) coeff[d] = 0;
        // the tile's column j at out[base + j]
        out_.line("{");
        out_.line("const idx_t base = " + affine(coeff, w.constant) + " + n_blk - sh;");
        out_.line("if (lo == sk * " + V + " && hi == sk * " + V + " + " + V + ")");
        out_.line("  *(uint4*)(" + out + " + base + sk * " + V + ") = *(const uint4*)(src + sk * " +
                  V + ");");
        out_.line("else");
        out_.line("  for (int j = lo; j < hi; ++j) " + out + "[base + j] = src[j];");
        out_.line("}");
      }
      out_.line("}");
      out_.line("}");
    }
    out_.line("}");
  }

  // The plain product staged: the converted accumulators into the tile (column pairs where
  // every row's shift is even), then print_stage_copy.
  void print_staged_epilogue() {
    const mma_stage& st = m_.staged.at(0);
    out_.line("// epilogue: accumulators -> " + std::string(short_name(m_.out_type)) +
              " -> a shared tile -> 16-byte stores through the out_view" +
              (m_.guard_m || m_.guard_n ? ", where (m, n) is in range" : ""));
    print_stage_begin();
    print_accumulator_loops(st.pair ? 2 : 1);
    print_stage_position();
    const std::string ty = d_.type(m_.out_type);
    auto value = [&](const std::string& i) {
      return convert_expr("acc[fm][fn][" + i + "]", scalar_type::f32, m_.out_type, ty);
    };
    stage_store(st, value("i"), st.pair ? value("i + 1") : "");
    out_.line("}");
    out_.line("}");
    print_stage_copy();
  }
  // ---- end the staged epilogue ------------------------------------------------------------

  // With a point-wise epilogue (ir::pointwise_epilogue, mdh::with_epilogue): each accumulator,
  // converted to the product's output type as a store and a load would, goes through
  // mdh_epilogue in registers with the epilogue's own buffers loaded at the same point, and the
  // epilogue's results are written through its outputs' views; the product itself is never
  // written. The same call as the SIMT printer's write paths make (c_printer::print_epilogue).
  void print_pointwise_epilogue() {
    const ir::pointwise_epilogue& e = *p_.comp.epilogue;
    const std::size_t D = p_.comp.rank();
    const bool pair = m_.pair_epilogue;
    out_.line("// epilogue: accumulators -> " + e.name + " in registers -> its outputs" +
              (pair ? ", two adjacent columns at a time" : "") +
              (m_.guard_m || m_.guard_n ? ", where (m, n) is in range" : ""));
    if (m_.stage_out) print_stage_begin();
    print_accumulator_loops(pair ? 2 : 1);
    if (m_.stage_out) print_stage_position();
    // element `h` of the pair (0 without pairs): accumulator i + h, the epilogue's own buffers
    // one further along N's innermost dimension
    auto call_for = [&](int h) {
      const std::string sfx = pair ? "_" + std::to_string(h) : "";
      std::string call = "mdh_epilogue(";
      std::size_t own = p_.comp.inputs.size();  // the epilogue's buffers follow the inputs
      for (std::size_t b = 0; b < e.inputs.size(); ++b) {
        if (e.result_of[b] >= 0) {
          const auto r = std::size_t(e.result_of[b]);
          const scalar_type t = p_.comp.outputs[r].type;
          call += convert_expr("acc[fm][fn][i" + std::string(h ? " + 1" : "") + "]", p_.acc_type(r),
                               t, d_.type(t)) +
                  ", ";
          continue;
        }
        const global_buffer& g = p_.inputs.at(own++);
        for (auto& a : e.inputs[b].accesses) {
          const flat_access f = flatten(a, g, D);
          call += g.name + "[" + affine(f.coeff, f.constant + h * f.coeff[m_.n_dim]) + "], ";
        }
      }
      for (std::size_t q = 0; q < e.f.results.size(); ++q) {
        const std::string y = "y" + std::to_string(q) + sfx;
        out_.line(d_.type(e.f.result_type(q)) + " " + y + ";");
        call += "&" + y + (q + 1 < e.f.results.size() ? ", " : ");");
      }
      out_.line(call);
    };
    call_for(0);
    if (pair) call_for(1);
    for (std::size_t q = 0; q < p_.outputs.size(); ++q) {
      const scalar_type t = p_.outputs[q].type;
      auto value = [&](const std::string& y) {
        return convert_expr(y, e.f.result_type(q), t, d_.type(t));
      };
      const std::string y = "y" + std::to_string(q);
      if (m_.stage_out) {  // into the output's staged tile (print_stage_copy writes it out)
        stage_store(m_.staged.at(q), pair ? value(y + "_0") : value(y),
                    pair ? value(y + "_1") : "");
        continue;
      }
      for (auto& a : e.outputs[q].accesses) {
        const flat_access f = flatten(a, p_.outputs[q], D);
        const std::string at = p_.outputs[q].name + "[" + affine(f.coeff, f.constant) + "]";
        if (!pair)
          out_.line(at + " = " + value(y) + ";");
        else if (t == scalar_type::f32)
          out_.line("*(float2*)&" + at + " = make_float2(" + value(y + "_0") + ", " +
                    value(y + "_1") + ");");
        else
          out_.line("*(unsigned*)&" + at + " = (unsigned)" + value(y + "_0") + " | ((unsigned)" +
                    value(y + "_1") + " << 16);");
      }
    }
    out_.line("}");
    out_.line("}");
    if (m_.stage_out) print_stage_copy();
  }

  void print_epilogue() {
    if (p_.comp.epilogue) return print_pointwise_epilogue();
    if (m_.stage_out) return print_staged_epilogue();
    out_.line("// epilogue: accumulators -> " + std::string(short_name(m_.out_type)) +
              ", through the out_view" +
              (m_.guard_m || m_.guard_n ? ", where (m, n) is in range" : ""));
    const std::int64_t step = m_.pair_store ? 2 : 1;
    print_accumulator_loops(step);
    const global_buffer& o = p_.outputs[0];
    const std::string ty = d_.type(m_.out_type);
    auto value = [&](const std::string& i) {
      return convert_expr("acc[fm][fn][" + i + "]", scalar_type::f32, m_.out_type, ty);
    };
    for (auto& w : m_.writes) {
      const std::string at = o.name + "[" + affine(w.coeff, w.constant) + "]";
      if (!m_.pair_store)
        out_.line(at + " = " + value("i") + ";");
      else if (m_.out_type == scalar_type::f32)
        out_.line("*(float2*)&" + at + " = make_float2(" + value("i") + ", " + value("i + 1") +
                  ");");
      else
        out_.line("*(unsigned*)&" + at + " = (unsigned)" + value("i") + " | ((unsigned)" +
                  value("i + 1") + " << 16);");
    }
    out_.line("}");
    out_.line("}");
  }
};

}  // namespace detail

// The main kernel of a tensor-core plan (p.mma.on) in dialect d (CUDA: the rules keep mma off
// elsewhere).
inline std::string print_mma_kernel(const kernel_plan& p, const c_dialect& d, const kernel& k) {
  return detail::mma_printer(p, d).print(k);
}

}  // namespace mdh::lower
