// SPDX-License-Identifier: MIT
// Start configurations: a few configurations of the generic template that experience says are
// good for the shape of a computation, measured before the search (atf::tuner::start_with).
// The search space is huge and mostly slow for products (a random point rarely has a register
// tile, cached operands and a block size that fills the device at the same time); starting the
// local search from the best of these finds fast kernels within seconds instead of hours.
//
// The shapes recognised, from the computation alone (no operator names):
//   product   a reduction and an input that does not depend on one of the two innermost
//             concatenation dimensions (it is reused across them): 2-D register tiles
//             (thread tile x threads per block), both operands cached in shared memory, the
//             one whose last index is the reduction transposed, prefetch (two shared buffers,
//             or registers only, or none), vector stores; split
//             over blocks along the reduction when the tiles alone give too few blocks; at odd
//             sizes (has_edge_split_parameter) also with edge tiles (edge_split = 1).
//   streaming everything else: vector (or thread-strided) accesses along the innermost
//             dimension, the rest of the block on the next dimension, reductions split over
//             threads and, when the output is small, over blocks; an innermost reduction also
//             with blocked register tiles read as vectors (vec_pw).
// Those are a GPU's. On a CPU (device_limits::cpu: an OpenCL CPU device such as PoCL) a product
// starts instead from one work-item per group with a large register tile and nothing in local
// memory (cpu_product_starts); the GPU's start there was 10-40x slower than the default.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <atf/configuration.hpp>
#include <mdh/ir/computation.hpp>
#include <mdh/lower/check.hpp>
#include <mdh/lower/config.hpp>
#include <mdh/lower/device_limits.hpp>
#include <tuning/search_space.hpp>

namespace mdh::tuning {

namespace detail {

inline bool uses(const ir::buffer& b, std::size_t d) {
  for (auto& a : b.accesses)
    for (auto& ix : a.index)
      if (ix.coeff[d] != 0) return true;
  return false;
}

inline std::int64_t pow2_floor(std::int64_t n) {
  std::int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Threads and register tile of one dimension shrunk so that one block step does not exceed
// twice the dimension's size (a 128-wide tile over 10 elements wastes 92 % of the block). Where
// the shrunk step does not divide the size, a step that does, at least half as wide, with the
// largest register tile (a TCCG extent of 48: 8 threads x 6, not 16 x 4 = 64 with 16 idle).
inline void fit(std::int64_t n, std::int64_t& thr, std::int64_t& t_rm) {
  const std::int64_t thr0 = thr, rm0 = t_rm;
  while (thr * t_rm >= 2 * n && t_rm > 1) t_rm /= 2;
  while (thr * t_rm >= 2 * n && thr > 1) thr /= 2;
  if (thr * t_rm <= n || n % (thr * t_rm) == 0) return;
  std::int64_t best_thr = 0, best_rm = 0;
  for (std::int64_t r : {8, 6, 4, 3, 2, 1}) {
    if (r > rm0) continue;
    for (std::int64_t t = thr0; t >= 1; t /= 2) {
      const std::int64_t step = t * r;
      if (step > n || n % step != 0 || 2 * step < thr * t_rm) continue;
      if (step > best_thr * best_rm) best_thr = t, best_rm = r;
    }
  }
  if (best_thr > 0) thr = best_thr, t_rm = best_rm;
}

// One dimension walked by blocks of `thr` threads taking `t_rm` elements each per step, the
// step being the shared-memory tile (t_sm_steps = 1), as many blocks as steps fit.
inline void tile_dim(lower::dim_config& x, std::int64_t n, std::int64_t thr, std::int64_t t_rm,
                     int axis, bool strided = false) {
  x.thr = thr, x.t_rm = t_rm, x.t_sm = thr * t_rm, x.strided = strided, x.thr_map = axis;
  x.blk = lower::ceil_div(n, x.t_sm);
  x.blk_map = 0;
}

// Blocks along dimension d so that a chunk is walked in whole steps: chunk = ceil(n / blk),
// the sm tile the whole chunk (t_sm_steps = 0 in the space).
// A shared-memory tile already smaller than the chunk (a product's k tile) is kept: a whole
// 256-deep chunk as one tile would not fit in shared memory.
inline void split_dim(lower::dim_config& x, std::int64_t n, std::int64_t blk) {
  x.blk = std::max<std::int64_t>(1, std::min(blk, n));
  const std::int64_t step = x.thr * x.t_rm, chunk = lower::ceil_div(n, x.blk);
  const std::int64_t whole = lower::ceil_div(chunk, step) * step;
  if (x.t_sm >= whole || x.t_sm % step != 0) x.t_sm = whole;
}

// The largest register tile of at most `r` and `n` elements (a value of the space: 8, 6, 4, 3,
// 2, 1), with `dividing` one that divides `n`: a tile that does not divide its dimension guards
// every element, which a CPU pays in every tile (matmul 96x80x64, 8x6 tiles: 168 us, 8x8: 10 us).
inline std::int64_t dividing_tile(std::int64_t n, std::int64_t r, bool dividing = true) {
  for (std::int64_t t : {8, 6, 4, 3, 2})
    if (t <= r && t <= n && (!dividing || n % t == 0)) return t;
  return 1;
}

// Whether every coordinate of b that reads dimension d is d alone with coefficient 1 (a tensor
// contraction's index; not a convolution's p + r).
inline bool plain(const ir::buffer& b, std::size_t d) {
  for (auto& a : b.accesses)
    for (auto& ix : a.index) {
      if (ix.coeff[d] == 0) continue;
      if (ix.coeff[d] != 1 || ix.offset != 0) return false;
      for (std::size_t e = 0; e < ix.coeff.size(); ++e)
        if (e != d && ix.coeff[e] != 0) return false;
    }
  return true;
}

// Whether b's last coordinate, contiguous in memory, is dimension d alone (in every access).
inline bool innermost(const ir::buffer& b, std::size_t d) {
  if (b.rank == 0 || b.accesses.empty()) return false;
  for (auto& a : b.accesses) {
    const auto& ix = a.index.back();
    for (std::size_t e = 0; e < ix.coeff.size(); ++e)
      if (ix.coeff[e] != (e == d ? 1 : 0)) return false;
  }
  return true;
}

// The tile layout (transpose_b) that stores dimension d innermost in b's shared tile: 0 when it
// is b's last coordinate, 1 the second last, 2 the first (rank >= 3); -1 when none does (or d is
// not one plain coordinate of b).
inline int transpose_for(const ir::buffer& b, std::size_t d) {
  if (b.accesses.size() != 1 || !plain(b, d)) return -1;
  const auto& ix = b.accesses[0].index;
  const std::size_t r = ix.size();
  auto at = [&](std::size_t k) { return k < r && ix[k].coeff[d] == 1; };
  if (r >= 1 && at(r - 1)) return 0;
  if (r >= 2 && at(r - 2)) return 1;
  if (r >= 3 && at(0)) return 2;
  return -1;
}

// The inputs that read dimension d.
inline std::vector<bool> readers(const ir::computation& comp, std::size_t d) {
  std::vector<bool> v;
  for (auto& b : comp.inputs) v.push_back(uses(b, d));
  return v;
}

// One side of a product's block tile (i's or j's: the output dimensions one operand reads and
// the other does not) over two dimensions: `inner`, whose register tile of up to 4 is read from
// the shared tile as one vector, with the threads whose steps divide its size, and `outer` with
// the remaining threads and register tile. A TCCG extent of 48 and a 16 x 8 side: inner 4
// threads x 4 (three steps of 16), outer 4 threads x 2: a 128-wide side with an 8-element
// register tile, where one dimension alone held 8 threads x 6 (48 wide, scalar or 2-element
// reads). False (nothing changed) when no such inner step exists.
inline bool tile_side(lower::config& c, const std::vector<std::int64_t>& sizes, std::size_t inner,
                      std::size_t outer, std::int64_t thr, std::int64_t t_rm, int axis) {
  const std::int64_t n = sizes[inner], r4 = std::min<std::int64_t>(t_rm, 4);
  std::int64_t t = 0, r = 0;
  // a register tile of 4 (one 16-byte read), else 6 or 3 where 4 leaves a step under 16 wide
  // (24 = 4 threads x 6, 72 = 4 x 6 in 3 steps)
  for (std::int64_t rr : {r4, std::int64_t{6}, std::int64_t{3}}) {
    if (rr != r4 && rr > t_rm) continue;
    std::int64_t q = thr;
    while (q >= 1 && !(q * rr <= n && n % (q * rr) == 0)) q /= 2;
    if (q >= 1 && (t == 0 || (t * r < 16 && q * rr > t * r))) t = q, r = rr;
  }
  if (t == 0) return false;
  std::int64_t to = thr / t, ro = std::max<std::int64_t>(1, t_rm / r);
  fit(sizes[outer], to, ro);
  tile_dim(c.dims[inner], n, t, r, axis);
  tile_dim(c.dims[outer], sizes[outer], to, ro, axis);
  return true;
}

inline std::int64_t block_count(const lower::config& c) {
  std::int64_t b = 1;
  for (auto& x : c.dims) b *= x.blk;
  return b;
}

}  // namespace detail

// The starts of a product (output dimensions i, j; the register-tiled reduction k) on a CPU
// (limits.cpu). A work-group runs as a loop over its work-items on one core, and PoCL does not
// vectorise that loop when each work-item holds an array of accumulators (matmul 96x80x64 on
// PoCL, kernel time: 16 work-items of 8 rows each 122 us, the default configuration 32 us), so:
// one work-item per group holding a register tile of up to 8x8 outputs and 4 reduction steps,
// read as scalars for the compiler to vectorise (vec = 1: float4 reads measured 2x slower),
// nothing in local memory (ordinary memory on a CPU: the copy is pure overhead), no prefetch;
// 10-13 us. Tiles of the sizes given and the largest that divide the dimensions (a ragged last
// tile guards every tile); one tile per group (many short groups: a core that is busy with
// something else leaves its share to the others), then all of it in a single group (no second
// core to wake; a few long groups measured 4x slower on a loaded machine: the last one waits).
// `base()` makes the configuration the rules start from, `keep(c)` keeps those passing check().
template <class Base, class Keep>
void cpu_product_starts(const ir::computation& comp, const std::vector<std::int64_t>& sizes,
                        std::size_t i, std::size_t j, std::size_t k, Base&& base, Keep&& keep) {
  using std::int64_t;
  struct shape {
    int64_t ri, rj, rk;
  };
  auto make = [&](shape sh, bool dividing) {
    lower::config c = base();
    int64_t ti = 1, tj = 1, ri = sh.ri, rj = sh.rj;
    // tiles of the space's values, at most the dimension's size
    ri = detail::dividing_tile(sizes[i], ri, dividing);
    rj = detail::dividing_tile(sizes[j], rj, dividing);
    detail::fit(sizes[i], ti, ri);
    detail::fit(sizes[j], tj, rj);
    detail::tile_dim(c.dims[i], sizes[i], 1, ri, 1);
    detail::tile_dim(c.dims[j], sizes[j], 1, rj, 0);
    auto& x = c.dims[k];
    x.t_rm = std::min(sh.rk, detail::pow2_floor(sizes[k]));
    x.t_sm = lower::ceil_div(sizes[k], x.t_rm) * x.t_rm;  // the whole reduction in one tile
    c.vec = 1, c.prefetch = 0;
    return c;
  };
  for (shape sh : {shape{8, 8, 4}, shape{8, 8, 1}, shape{4, 8, 4}, shape{8, 4, 4}, shape{4, 4, 4}})
    for (bool dividing : {true, false}) keep(make(sh, dividing));
  lower::config one = make({8, 8, 4}, true);
  for (std::size_t d = 0; d < comp.rank(); ++d)
    if (!comp.is_reduction(d)) detail::split_dim(one.dims[d], sizes[d], 1);
  keep(one);
}

// The SIMT start configurations of `comp` at `sizes` (mma = 0): each passes lower::check.
inline std::vector<lower::config> simt_start_configurations(const ir::computation& comp,
                                                            const std::vector<std::int64_t>& sizes,
                                                            const lower::device_limits& limits) {
  using detail::pow2_floor;
  using std::int64_t;
  std::vector<lower::config> out;
  const std::size_t D = comp.rank();
  std::vector<std::size_t> concat, reduce;
  for (std::size_t d = 0; d < D; ++d) {
    if (comp.dims[d].combine == ir::combine_kind::prefix_sum) return out;  // scans: no rules
    (comp.is_reduction(d) ? reduce : concat).push_back(d);
  }
  const int64_t sms = std::max(limits.sm_count, 1);
  const int64_t max_thr = std::min<int64_t>(limits.max_threads_per_block, 1024);
  auto keep = [&](const lower::config& c) {
    try {
      lower::check(c, comp, sizes, limits);
    } catch (const error&) {
      return;
    }
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  auto base = [&] {
    lower::config c;
    c.dims.resize(D);
    c.inputs.resize(comp.inputs.size());
    for (std::size_t d = 0; d < D; ++d) {
      c.dims[d].blk = sizes[d];  // one block per element unless a rule below says otherwise
      c.dims[d].t_sm = 1;
      c.dims[d].thr_map = 0;
    }
    for (auto d : reduce) c.dims[d].blk = 1, c.dims[d].t_sm = sizes[d];
    c.blk_combine = lower::block_combine::second_kernel;
    return c;
  };
  // Splits the reduction dimension r over blocks until the grid holds ~2 blocks per SM; the
  // blocks' partial results combined by the last block (one launch, deterministic) or atomics.
  auto with_split = [&](lower::config c, std::size_t r) {
    keep(c);
    const int64_t blocks = detail::block_count(c);
    if (blocks >= 2 * sms) return;
    const int64_t want = pow2_floor(std::max<int64_t>(1, 2 * sms / blocks));
    for (int64_t f : {want, 2 * want}) {
      if (f < 2) continue;  // one block along r is the unsplit configuration kept above
      lower::config s = c;
      detail::split_dim(s.dims[r], sizes[r], f);
      s.blk_combine = lower::block_combine::last_block;
      keep(s);
      s.blk_combine = lower::block_combine::atomic;
      keep(s);
    }
  };

  // At most this many: a start costs one evaluation (an NVRTC compile and a measurement).
  constexpr std::size_t max_starts = 64;
  // The edge-tile starts (edge_split, odd sizes: at most one per shape) are all kept, the others
  // thinned evenly to the rest, in their order.
  auto thin = [&] {
    if (out.size() <= max_starts) return out;
    std::vector<lower::config> edge, rest, t;
    for (auto& c : out) (c.edge_split ? edge : rest).push_back(c);
    const std::size_t n = max_starts - std::min(edge.size(), max_starts);
    for (std::size_t k = 0; k < n; ++k) t.push_back(rest[k * rest.size() / n]);
    for (std::size_t k = 0; k < max_starts - n; ++k) t.push_back(edge[k]);
    return t;
  };

  // ---- products
  bool product = !reduce.empty() && concat.size() >= 2;
  // The two tiled output dimensions: j the innermost, i the innermost one that an input reading
  // j does not read (matmul's rows; an NCHW convolution's output channels, not its image rows)
  const std::size_t j = product ? concat.back() : 0;
  std::size_t i = product ? concat[concat.size() - 2] : 0;
  bool i_found = !product;
  for (std::size_t n = product ? concat.size() - 1 : 0; n-- > 0 && !i_found;)
    for (auto& b : comp.inputs)
      if (sizes[concat[n]] > 1 && detail::uses(b, j) && !detail::uses(b, concat[n])) {
        i = concat[n], i_found = true;
        break;
      }
  if (product) {
    bool reused = false;
    for (auto& b : comp.inputs) reused = reused || !detail::uses(b, i) || !detail::uses(b, j);
    product = reused;
  }
  // Odd shapes (997 x 1009 x 769): products also start with edge tiles (edge_split = 1), where
  // the space has the parameter.
  const bool edges = has_edge_split_parameter(comp, sizes);
  if (product) {
    // the register-tiled reduction: the longest one (a convolution's channels, not its 3x3
    // window), the innermost among equals
    std::size_t k = reduce.back();
    for (auto r : reduce)
      if (sizes[r] >= sizes[k]) k = r;
    if (limits.cpu) {
      cpu_product_starts(comp, sizes, i, j, k, base, keep);
      return thin();
    }
    // Which inputs the start caches: those that do not read both i and j (reused across one).
    std::vector<bool> cached(comp.inputs.size(), false);
    for (std::size_t b = 0; b < comp.inputs.size(); ++b)
      cached[b] = lower::detail::accesses_share_coefficients(comp.inputs[b]) &&
                  !(detail::uses(comp.inputs[b], i) && detail::uses(comp.inputs[b], j));
    // A tensor contraction's side partner of i (and of j): another output dimension read by the
    // same inputs as plain coordinates (C[a,b,c,d] = A[a,e,b,f] B[d,f,c,e]: i = b with a, j = d
    // with c); an input's last coordinate first (A(d, e, g, a): a, whose tile rows are
    // contiguous), then the largest, the innermost among equals. With extents smaller than a
    // block tile (TCCG's 48), one dimension per side made 48 x 48 block tiles, one element of a
    // and of c per block: B's tile was reused by one row of A's.
    auto last_of_reader = [&](std::size_t n) {
      for (auto& b : comp.inputs)
        if (detail::uses(b, n) && detail::innermost(b, n)) return true;
      return false;
    };
    auto partner = [&](std::size_t x) {
      std::size_t best = D;
      for (auto n : concat) {
        if (n == i || n == j || sizes[n] < 2 ||
            detail::readers(comp, n) != detail::readers(comp, x))
          continue;
        bool ok = true;
        for (auto& b : comp.inputs) ok = ok && detail::plain(b, n) && detail::plain(b, x);
        if (!ok) continue;
        if (best == D ||
            std::pair(last_of_reader(n), sizes[n]) >= std::pair(last_of_reader(best), sizes[best]))
          best = n;
      }
      return best;
    };
    const std::size_t pi = partner(i), pj = partner(j);
    // The side's dimension that carries the vector register tile: the one that some transpose
    // stores innermost in every cached input reading it (b for A(a, e, b, f) transposed 1, d for
    // B(d, f, c, e) transposed 2), x itself where both can.
    auto inner_of = [&](std::size_t x, std::size_t other) {
      auto placeable = [&](std::size_t d) {
        for (std::size_t b = 0; b < comp.inputs.size(); ++b)
          if (cached[b] && detail::uses(comp.inputs[b], d) &&
              detail::transpose_for(comp.inputs[b], d) < 0)
            return false;
        return true;
      };
      return placeable(x) || other == D || !placeable(other) ? x : other;
    };
    // Reductions other than k that are the last, contiguous coordinate of a cached input (f of
    // A(a, e, b, f) when k is e): a tile of one element along them read that input 4 bytes per
    // row, a separate 32-byte sector per element; they get 4 (16-byte rows), and k the rest of
    // the step's kt elements, at least 4 where it is such a coordinate itself.
    auto memory_innermost = [&](std::size_t r) {
      for (std::size_t b = 0; b < comp.inputs.size(); ++b)
        if (cached[b] && detail::innermost(comp.inputs[b], r)) return true;
      return false;
    };
    struct shape {
      int64_t ti, tj, ri, rj;
    };
    // 6-element register tiles make 96-wide block tiles, which fill the SMs where 128-wide
    // ones leave a partial wave (2048 x 768: 16 x 8 = 128 blocks instead of 16 x 6 = 96)
    const shape shapes[] = {{16, 16, 8, 8}, {16, 16, 4, 8}, {16, 16, 8, 4}, {16, 16, 4, 4},
                            {8, 16, 4, 4},  {16, 8, 4, 4},  {8, 8, 4, 4},   {8, 32, 2, 4},
                            {8, 32, 8, 4},  {16, 16, 8, 6}, {16, 16, 6, 8}};
    for (const shape& sh : shapes)
      for (int64_t kt : {16, 32, 8}) {
        lower::config c = base();
        // each side over two dimensions where it has a partner and its own extent holds no
        // whole 16 x 8 (or the shape's) step; the inner one (vector reads) decided per side
        std::size_t side_inner[2] = {D, D};
        const std::size_t xs[2] = {i, j}, ps[2] = {pi, pj};
        const int64_t ts[2] = {sh.ti, sh.tj}, rs[2] = {sh.ri, sh.rj};
        for (int sd = 0; sd < 2; ++sd) {
          const std::size_t xd = xs[sd], px = ps[sd];
          const int axis = sd == 0 ? 1 : 0;
          const bool small = sizes[xd] < ts[sd] * rs[sd] || sizes[xd] % (ts[sd] * rs[sd]) != 0;
          if (px < D && small) {
            const std::size_t in = inner_of(xd, px), o = in == xd ? px : xd;
            if (detail::tile_side(c, sizes, in, o, ts[sd], rs[sd], axis) &&
                c.dims[in].thr * c.dims[in].t_rm >= std::min<int64_t>(16, sizes[in])) {
              side_inner[sd] = in;
              continue;
            }
            c.dims[in] = base().dims[in], c.dims[o] = base().dims[o];
          }
          int64_t t = ts[sd], r = rs[sd];
          detail::fit(sizes[xd], t, r);
          detail::tile_dim(c.dims[xd], sizes[xd], t, r, axis);
        }
        const int64_t rj = c.dims[j].t_rm;
        // the reduction: a register tile of up to 8 steps, kt elements per shared tile
        // other reductions: whole when small (a filter window), 4 when the last coordinate of
        // a cached input, else one element per tile (a TCCG's second reduction of 48: whole, the
        // tiles overflowed shared memory)
        int64_t runs = 1;  // the product of those runs of 4
        for (auto r : reduce) {
          if (r == k) continue;
          auto& y = c.dims[r];
          y.t_sm = sizes[r] <= 8 ? sizes[r] : memory_innermost(r) ? 4 : 1;
          if (sizes[r] > 8) runs *= y.t_sm;
        }
        auto& x = c.dims[k];
        x.thr = 1, x.t_rm = std::min<int64_t>(8, pow2_floor(sizes[k]));
        x.t_sm = std::min(kt, sizes[k]);
        if (runs > 1 && kt > 8) {
          // the step's kt elements over k and the other reductions' runs
          x.t_sm = std::min(sizes[k], std::max(kt / runs, memory_innermost(k) ? int64_t{4} : 1));
          x.t_rm = std::min(x.t_rm, pow2_floor(x.t_sm));
        }
        if (x.t_sm % x.t_rm != 0) x.t_sm = x.t_rm;
        bool any_cached = false;
        std::vector<std::size_t> rotatable;
        for (std::size_t b = 0; b < comp.inputs.size(); ++b) {
          const auto& buf = comp.inputs[b];
          if (!lower::detail::accesses_share_coefficients(buf)) continue;
          if (detail::uses(buf, i) && detail::uses(buf, j)) continue;  // no reuse: stream it
          c.inputs[b].cache = lower::cache_kind::shared;
          // the operand whose rows run along the reduction is stored reduction-major, so a
          // thread's register tile reads consecutive shared-memory words
          const auto& last = buf.accesses[0].index.back();
          const auto& first = buf.accesses[0].index.front();
          c.inputs[b].transpose = buf.rank >= 2 && last.coeff[k] != 0 && last.coeff[j] == 0;
          // a two-dimensional side: its inner dimension (the vector register tile) innermost
          for (auto in : side_inner)
            if (in < D && detail::uses(buf, in) && detail::transpose_for(buf, in) >= 0)
              c.inputs[b].transpose = detail::transpose_for(buf, in);
          // a convolution's weights w[k][r][s][c]: also with the output channels (i or j)
          // innermost (transpose 2), so a thread's register tile reads consecutive words
          const bool channels_first = (first.coeff[j] != 0 && last.coeff[j] == 0) ||
                                      (first.coeff[i] != 0 && last.coeff[i] == 0);
          if (buf.rank >= 3 && channels_first) rotatable.push_back(b);
          any_cached = true;
        }
        c.vec = rj % 4 == 0 ? 4 : rj % 2 == 0 ? 2 : 1;
        c.prefetch = any_cached ? 2 : 0;  // registers + two shared buffers
        with_split(c, k);
        if (edges && kt == 16) {
          // odd sizes: the same tiles in whole-tile chunks, the interior path unguarded
          lower::config e = c;
          e.edge_split = 1;
          keep(e);
        }
        if (!rotatable.empty()) {
          lower::config r = c;
          for (auto b : rotatable) r.inputs[b].transpose = 2;
          keep(r);
        }
        if (kt != 16) continue;
        c.prefetch = any_cached ? 1 : 0;  // registers only: half the shared memory
        keep(c);
        c.prefetch = 0;
        keep(c);
      }
    return thin();
  }

  // ---- streaming (memory-bound) computations: vectors of 16 bytes at most (8 16-bit elements)
  const std::size_t inner = D - 1;
  const int64_t widest = lower::detail::widest_vector(comp);
  if (!comp.is_reduction(inner)) {
    // innermost ++ dimension on x with vectors; the rest of the block on the next dimension
    const std::size_t j = inner;
    for (int64_t tj : {64, 128, 256, 32})
      for (int64_t rj : {4, 8, 1}) {
        for (int64_t block : {256, 512}) {
          lower::config c = base();
          int64_t t = std::min(tj, max_thr), r = rj;
          detail::fit(sizes[j], t, r);
          detail::tile_dim(c.dims[j], sizes[j], t, r, 0);
          c.vec = r % widest == 0 ? widest : r % 4 == 0 ? 4 : r % 2 == 0 ? 2 : 1;
          std::size_t next = D;
          for (std::size_t d = j; d-- > 0;)
            if (sizes[d] > 1) {
              next = d;
              break;
            }
          if (next < D) {
            int64_t ty = std::max<int64_t>(1, block / t), ry = 1;
            detail::fit(sizes[next], ty, ry);
            detail::tile_dim(c.dims[next], sizes[next], ty, ry, 1);
            if (comp.is_reduction(next)) {
              // a column reduction: threads on y combine, blocks split the rest
              c.dims[next].blk = 1;
              c.dims[next].t_sm = lower::ceil_div(sizes[next], ty) * ty;
              with_split(c, next);
              continue;
            }
          }
          keep(c);
        }
      }
    return thin();
  }
  // innermost dimension a reduction: threads (and maybe blocks) along it, coalesced (strided),
  // or each thread a blocked run of t_rm read as 16-byte vectors (vec_pw)
  const std::size_t k = inner;
  for (int64_t tk : {32, 128, 256, 512, 1024})
    for (int64_t rk : {4, 8, 1})
      for (bool vector : {false, true}) {
        if (vector && (rk == 1 || tk == 1024)) continue;
        lower::config c = base();
        int64_t t = std::min(tk, max_thr), r = rk;
        detail::fit(sizes[k], t, r);
        if (vector && r % 2 != 0) continue;
        auto& x = c.dims[k];
        x.thr = t, x.t_rm = r, x.strided = !vector, x.thr_map = 0;
        x.blk = 1, x.t_sm = lower::ceil_div(sizes[k], t * r) * t * r;
        c.vec_pw = !vector ? 1 : r % widest == 0 ? widest : r % 4 == 0 ? 4 : 2;
        c.thr_combine =
            limits.cuda ? lower::thread_combine::warp_shuffle : lower::thread_combine::shared_tree;
        if (!concat.empty() && t < 256) {
          // more output points per block on y
          const std::size_t i = concat.back();
          int64_t ti = 256 / t, ri = 1;
          detail::fit(sizes[i], ti, ri);
          detail::tile_dim(c.dims[i], sizes[i], ti, ri, 1);
        }
        with_split(c, k);
      }
  return thin();
}

// The tensor-core starts (on a CUDA device, for a contraction of a tensor-core type): the
// innermost M, N and K dimensions (fused with the others of their role first, see below), block
// tiles of 128x128, 128x256, 256x128 and 64x64 from warp
// tiles of 64x64 (32x32 for the small one), 3 or 4 cp.async stages, swizzled (TF32: padded);
// on sm_90 then six warpgroup-MMA (mma = 2) starts, fourteen fed by TMA (eight of them
// persistent, four of those in clusters) and up to three wave-fit ones (tiles chosen for the
// shape's waves on the SMs); each start whose tiles leave SMs idle is followed by its split-K
// variant (mma_split); where the output outweighs the K steps, the first start of each kind
// again with the staged epilogue (mma_stage_out).
// The parameters they do not read are those of `base` (a point of the space).
inline std::vector<lower::config> mma_start_configurations(const ir::computation& comp,
                                                           const std::vector<std::int64_t>& sizes,
                                                           const lower::device_limits& limits,
                                                           const lower::config& base) {
  std::vector<lower::config> out;
  const lower::mma_support s = lower::mma_supported(comp);
  if (!limits.cuda || !s) return out;
  const bool tf32 = *s.instruction == lower::mma_instruction::m16n8k8_tf32;
  const auto& ct = *s.contraction;
  lower::config c = base;
  c.mma.on = 1;
  c.mma.m = std::int64_t(ct.dims_of(ir::contraction_role::m).back());
  c.mma.n = std::int64_t(ct.dims_of(ir::contraction_role::n).back());
  c.mma.k = std::int64_t(ct.dims_of(ir::contraction_role::k).back());
  c.mma.swizzle = tf32 ? 0 : 1;
  const std::int64_t tk = tf32 ? 16 : 32;
  struct shape {
    std::int64_t wm, wn, tm, tn, stages;
  };
  // Where a role has several dimensions (a convolution, a tensor contraction), first the axes
  // fused whole (the implicit GEMM), then M and N fused with K alone (whose contiguous copies
  // may then be cp.async), then one dimension per axis.
  auto others = [&](ir::contraction_role r, std::int64_t innermost) {
    std::int64_t mask = 0;
    for (auto d : ct.dims_of(r))
      if (std::int64_t(d) != innermost) mask |= std::int64_t(1) << d;
    return mask;
  };
  const std::int64_t fm = others(ir::contraction_role::m, c.mma.m),
                     fn = others(ir::contraction_role::n, c.mma.n),
                     fk = others(ir::contraction_role::k, c.mma.k);
  struct fusion {
    std::int64_t m, n, k;
  };
  std::vector<fusion> fusions;
  // The blocks of x's plan where x passes check (what check() runs, once), else 0.
  auto checked_blocks = [&](const lower::config& x) -> std::int64_t {
    try {
      lower::check_config(x, comp, sizes, limits);
      const lower::kernel_plan plan = lower::passes::run_all(comp, sizes, x, limits);
      lower::check_plan(plan);
      return plan.blocks;
    } catch (const error&) {
      return 0;
    }
  };
  // A start that passes check; where its tiles leave SMs idle (1024^3 in 128x128 tiles: 64 of
  // 132), then the same start with the K steps split over the most blocks per tile that still
  // fit one wave.
  // (add_checked: x's blocks already known from checked_blocks, not 0)
  auto add_checked = [&](lower::config x, std::int64_t tiles) {
    out.push_back(x);
    for (std::int64_t k : detail::mma_split_values)
      if (tiles * k <= limits.sm_count) x.mma.split = k;  // ascending: the last that fits
    if (x.mma.split > 1 && checked_blocks(x) != 0) out.push_back(x);
  };
  auto add = [&](const lower::config& x) {
    if (const std::int64_t tiles = checked_blocks(x)) add_checked(x, tiles);
  };
  if (fm || fn || fk) fusions.push_back({fm, fn, fk});
  if ((fm || fn) && fk) fusions.push_back({fm, fn, 0});
  fusions.push_back({0, 0, 0});
  for (fusion f : fusions)
    for (shape x : {shape{2, 2, 64, 64, 3}, shape{2, 2, 64, 64, 4}, shape{2, 4, 64, 64, 3},
                    shape{4, 2, 64, 64, 3}, shape{2, 2, 32, 32, 4}}) {
      c.mma.warps_m = x.wm, c.mma.warps_n = x.wn, c.mma.tile_m = x.tm, c.mma.tile_n = x.tn;
      c.mma.tile_k = tk, c.mma.stages = x.stages;
      c.mma.fuse_m = f.m, c.mma.fuse_n = f.n, c.mma.fuse_k = f.k;
      add(c);
    }
  // On sm_90, then the warpgroup MMA (mma = 2, docs/lowering.md 7.1): 2x1 warpgroups of 64x128
  // (4 stages), 64x256 and 128x128 (3 stages), 1x2 of 128x128; then the small tiles that mid-size
  // products (1024^3, 2048x768x768) tuned to on an H100 and a search from scratch did not reach
  // in 515 s (bench/convergence/README.md): 2x1 of 64x64 (5 stages), one of 64x64 (4); K steps
  // of 128 bytes.
  if (limits.cc_major == 9) {
    c.mma.on = 2, c.mma.swizzle = 1, c.mma.flip_a = c.mma.flip_b = 0;
    for (fusion f : fusions)
      for (shape x : {shape{2, 1, 64, 128, 4}, shape{2, 1, 64, 256, 3}, shape{2, 1, 128, 128, 3},
                      shape{1, 2, 128, 128, 3}, shape{2, 1, 64, 64, 5}, shape{1, 1, 64, 64, 4}}) {
        c.mma.warps_m = x.wm, c.mma.warps_n = x.wn, c.mma.tile_m = x.tm, c.mma.tile_n = x.tn;
        c.mma.tile_k = tf32 ? 32 : 64, c.mma.stages = x.stages;
        c.mma.fuse_m = f.m, c.mma.fuse_n = f.n, c.mma.fuse_k = f.k;
        add(c);
      }
    // Then fed by TMA (mma_tma, where each operand's tile is a box of its buffer: add() drops
    // the rest), with the deeper pipelines and wider tiles its lower register and issue cost
    // leaves room for: 2x1 warpgroups of 64x128 and 64x64 (5 stages), 64x256 and 128x128 (4),
    // 1x2 of 192x64 (5; 192-row tiles divide a wave better where 128 leave half a wave), one of
    // 64x64 (4); then the large ones persistent and warp-specialised (mma_persistent: a
    // producer warpgroup issues the boxes, running ahead across the tiles a block walks); then
    // four of those in clusters of two blocks that share one operand's tile (mma_cluster_*:
    // TMA multicast halves that operand's L2 reads).
    struct tma_shape {
      shape x;
      std::int64_t persistent, cluster_m = 1, cluster_n = 1;
    };
    c.mma.tma = 1;
    for (fusion f : fusions)
      for (tma_shape t :
           {tma_shape{{2, 1, 64, 128, 5}, 0}, tma_shape{{2, 1, 64, 256, 4}, 0},
            tma_shape{{2, 1, 128, 128, 4}, 0}, tma_shape{{1, 2, 192, 64, 5}, 0},
            tma_shape{{2, 1, 64, 64, 5}, 0}, tma_shape{{1, 1, 64, 64, 4}, 0},
            tma_shape{{2, 1, 64, 256, 4}, 1}, tma_shape{{1, 2, 192, 64, 5}, 1},
            tma_shape{{2, 1, 64, 128, 5}, 1}, tma_shape{{2, 1, 128, 128, 4}, 1},
            tma_shape{{1, 2, 192, 64, 5}, 1, 1, 2}, tma_shape{{2, 1, 64, 256, 4}, 1, 2, 1},
            tma_shape{{2, 1, 128, 128, 4}, 1, 1, 2}, tma_shape{{2, 1, 64, 128, 5}, 1, 2, 1}}) {
        const shape& x = t.x;
        c.mma.warps_m = x.wm, c.mma.warps_n = x.wn, c.mma.tile_m = x.tm, c.mma.tile_n = x.tn;
        c.mma.tile_k = 64, c.mma.stages = x.stages, c.mma.persistent = t.persistent;
        c.mma.cluster_m = t.cluster_m, c.mma.cluster_n = t.cluster_n;
        c.mma.fuse_m = f.m, c.mma.fuse_n = f.n, c.mma.fuse_k = f.k;
        add(c);
      }
    // Then the block tiles that fit this shape's output onto the SMs in the fewest, fullest
    // waves (2048 x 768 on 132 SMs: 128 x 96 tiles make 128 blocks, one wave 97 % full, where
    // 128 x 128 make 96 and leave 36 SMs idle): every warpgroup arrangement of the space (check
    // drops those past the accumulator bound) whose block reuses each loaded element at least as
    // often as 128 x 96 does (bm bn / (bm + bn)), ranked by the share of the waves' tile slots that
    // holds output, then by that reuse; the best two that pass check, TMA-fed where the operands
    // are boxes (else by cp.async), with 4 stages, the best also persistent (5 stages, TMA only).
    {
      const fusion f = fusions.front();
      auto extent = [&](ir::contraction_role r, std::int64_t inner, std::int64_t mask) {
        std::int64_t e = 1;
        for (auto d : ct.dims_of(r))
          if (std::int64_t(d) == inner || ((mask >> d) & 1)) e *= sizes[d];
        return e;
      };
      const std::int64_t M = extent(ir::contraction_role::m, c.mma.m, f.m),
                         N = extent(ir::contraction_role::n, c.mma.n, f.n);
      std::int64_t points = 1;  // output points: every dimension but K's
      for (std::size_t d = 0; d < sizes.size(); ++d)
        if (ct.roles[d] != ir::contraction_role::k && ct.roles[d] != ir::contraction_role::k_one)
          points *= sizes[d];
      const std::int64_t sms = std::max<std::int64_t>(limits.sm_count, 1);
      struct fit {
        shape x;
        double filled, reuse;
      };
      std::vector<fit> fits;
      for (std::int64_t wm : {1, 2})
        for (std::int64_t wn : {1, 2})
          for (std::int64_t tm : {64, 128, 192, 256})
            for (std::int64_t tn : {64, 96, 128, 192, 256}) {
              const std::int64_t bm = wm * tm, bn = wn * tn;
              const double reuse = double(bm * bn) / double(bm + bn);
              if (reuse < 128.0 * 96 / (128 + 96)) continue;
              const std::int64_t tiles = lower::ceil_div(M, bm) * lower::ceil_div(N, bn) *
                                         std::max<std::int64_t>(1, points / (M * N));
              const double slots = double(lower::ceil_div(tiles, sms) * sms * bm * bn);
              fits.push_back({{wm, wn, tm, tn, 4}, double(points) / slots, reuse});
            }
      std::stable_sort(fits.begin(), fits.end(), [](const fit& a, const fit& b) {
        return a.filled != b.filled ? a.filled > b.filled : a.reuse > b.reuse;
      });
      c.mma.tile_k = tf32 ? 32 : 64, c.mma.cluster_m = c.mma.cluster_n = 1;
      c.mma.fuse_m = f.m, c.mma.fuse_n = f.n, c.mma.fuse_k = f.k;
      int added = 0;
      for (const fit& t : fits) {
        if (added == 2) break;
        c.mma.warps_m = t.x.wm, c.mma.warps_n = t.x.wn, c.mma.tile_m = t.x.tm;
        c.mma.tile_n = t.x.tn, c.mma.stages = t.x.stages, c.mma.persistent = 0, c.mma.split = 1;
        c.mma.tma = 1;
        std::int64_t tiles = checked_blocks(c);
        if (tiles == 0) c.mma.tma = 0, tiles = checked_blocks(c);  // no TMA box (997 x 1009)
        if (tiles == 0 || std::find(out.begin(), out.end(), c) != out.end()) continue;
        add_checked(c, tiles);
        if (added++ == 0 && c.mma.tma == 1) {
          lower::config p = c;
          p.mma.persistent = 1, p.mma.stages = 5;
          if (std::find(out.begin(), out.end(), p) == out.end() && checked_blocks(p) != 0)
            out.push_back(p);
        }
      }
    }
    c.mma.tma = 0, c.mma.persistent = 0, c.mma.cluster_m = c.mma.cluster_n = 1;
  }
  // ---- the staged epilogue: where a tile's output outweighs a quarter of what its K steps read
  // (4095x4097x33: 2 steps), the first start of each kind (mma = 1, 2) again with
  // mma_stage_out = 1, after the others (whose order stays) ----
  const std::size_t before = out.size();
  for (std::int64_t kind : {1, 2})
    for (std::size_t i = 0; i < before; ++i) {
      if (out[i].mma.on != kind || out[i].mma.split != 1) continue;
      lower::config x = out[i];
      x.mma.stage_out = 1;
      try {  // what check() runs, once
        lower::check_config(x, comp, sizes, limits);
        const lower::kernel_plan plan = lower::passes::run_all(comp, sizes, x, limits);
        lower::check_plan(plan);
        const lower::mma_plan& m = plan.mma;
        const std::int64_t written = m.block_m * m.block_n * std::int64_t(size_of(m.out_type));
        const std::int64_t read =
            m.steps * m.block_k * (m.block_m + m.block_n) * std::int64_t(size_of(m.a.type));
        if (4 * written >= read) out.push_back(x);
      } catch (const error&) {
      }
      break;
    }
  // ---- shifted tile copies: where a tile row may start off the 16-byte grid, the first start
  // of each kind again with mma_shift = 1, last ----
  if (lower::mma_shift_applies(comp, sizes)) {
    const std::size_t unshifted = out.size();
    for (std::int64_t kind : {1, 2})
      for (std::size_t i = 0; i < unshifted; ++i) {
        if (out[i].mma.on != kind) continue;
        lower::config x = out[i];
        x.mma.shift = 1;
        if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
        break;
      }
  }
  return out;
}

// The start configurations of `comp` at `sizes`: the tensor-core ones first (where there are
// any), then the SIMT ones; each passes lower::check for `limits`.
inline std::vector<lower::config> start_configurations(const ir::computation& comp,
                                                       const std::vector<std::int64_t>& sizes,
                                                       const lower::device_limits& limits) {
  std::vector<lower::config> simt = simt_start_configurations(comp, sizes, limits);
  std::vector<lower::config> out = mma_start_configurations(
      comp, sizes, limits, simt.empty() ? lower::default_config(comp, sizes) : simt.front());
  for (auto& c : simt) out.push_back(std::move(c));
  return out;
}

// Start configurations of a fused pair: the first stage's starts with every dimension that
// reduces in either stage kept in one block, each with the second stage on the same tiling
// (inputs from global memory, the widest vector stores that pass: 16 bytes at most), and the
// default; only those that pass check, without repeats.
inline std::vector<lower::fused_config> start_configurations(const ir::fused& f,
                                                             const std::vector<std::int64_t>& sizes,
                                                             const lower::device_limits& limits) {
  std::vector<lower::fused_config> out;
  auto add = [&](const lower::fused_config& c) {
    try {
      lower::check(c, f, sizes, limits);
    } catch (const error&) {
      return false;
    }
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    return true;
  };
  // The first stage's starts, and each with 1 to 16 threads on its innermost ++ dimension
  // (rows per block, for a row-wise pair like softmax).
  std::vector<lower::config> firsts;
  std::size_t inner = f.first.rank();
  for (std::size_t d = 0; d < f.first.rank(); ++d)
    if (!f.first.is_reduction(d) && !f.second.is_reduction(d)) inner = d;
  for (const lower::config& s : simt_start_configurations(f.first, sizes, limits)) {
    firsts.push_back(s);
    if (inner == f.first.rank()) continue;
    for (std::int64_t t : {1, 2, 4, 8, 16}) {
      lower::config v = s;
      auto& x = v.dims[inner];
      x.thr = t;
      x.t_sm = t * x.t_rm;
      x.blk = lower::ceil_div(sizes[inner], x.t_sm);
      firsts.push_back(v);
    }
  }
  for (lower::config s : firsts) {
    for (std::size_t d = 0; d < f.first.rank(); ++d) {
      if (!f.first.is_reduction(d) && !f.second.is_reduction(d)) continue;
      auto& x = s.dims[d];
      if (lower::fused_scans(f, d)) x.thr = 1, x.t_rm = 1;  // one thread walks a scan
      const std::int64_t step = x.thr * x.t_rm;
      const bool whole = x.t_sm == lower::ceil_div(lower::ceil_div(sizes[d], x.blk), step) * step;
      x.blk = 1;
      if (whole) x.t_sm = lower::ceil_div(sizes[d], step) * step;
    }
    s.blk_combine = lower::block_combine::second_kernel;
    lower::fused_config c{s, lower::default_config(f.second, sizes)};
    c.second.dims = s.dims;
    c.second.blk_combine = lower::block_combine::second_kernel;
    c.second.thr_combine =
        f.second.has_reduction() ? s.thr_combine : lower::thread_combine::shared_tree;
    for (std::int64_t v : {std::int64_t(8), std::int64_t(4), std::int64_t(2), std::int64_t(1)}) {
      if (v > lower::detail::widest_vector(f.second)) continue;  // 8: 16-bit buffers only
      c.second.vec = v;
      if (add(c)) break;
    }
  }
  add(lower::default_config(f, sizes));
  return out;
}

}  // namespace mdh::tuning
