// SPDX-License-Identifier: MIT
// The CPU reference: evaluates a computation by its definition, the oracle every generated
// kernel is checked against. For each point of the concatenation dimensions it folds f over all
// reduction points with ⊕ (Lemma 1 makes the order irrelevant up to rounding), carrying the fold
// along a prefix-sum dimension, and writes the results through out_view. Parallel over the
// concatenation points; the scalar function runs as compiled C++, not interpreted.
#pragma once

#include <algorithm>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <mdh/computation.hpp>
#include <mdh/tensor.hpp>

namespace mdh {

namespace detail {

// An access as a linear function of the iteration point: offset = base + sum_d step[d] * i_d.
struct linear_access {
  std::int64_t base = 0;
  std::vector<std::int64_t> step;
};

inline linear_access linearize(const ir::access& a, const shape_t& shape, std::size_t rank) {
  linear_access l;
  l.step.assign(rank, 0);
  std::int64_t stride = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    l.base += a.index[k].offset * stride;
    for (std::size_t d = 0; d < rank; ++d) l.step[d] += a.index[k].coeff[d] * stride;
    stride *= shape[k];
  }
  return l;
}

// Checks count, element type and every extent of the given buffers against the description.
inline void check_buffers(const ir::computation& c, const std::vector<std::int64_t>& sizes,
                          const std::vector<ir::buffer>& expected,
                          std::span<const buffer_ref> given, const char* what, const char* where) {
  if (given.size() != expected.size()) {
    std::string names;
    for (auto& b : expected) names += (names.empty() ? "" : ", ") + b.name;
    throw error(std::string(where) + "(" + c.name + "): " + std::to_string(given.size()) + " " +
                what + " buffers given, expected " + std::to_string(expected.size()) + " (" +
                names + ")");
  }
  std::size_t k = 0;
  for (const buffer_ref& g : given) {
    const ir::buffer& b = expected[k++];
    std::string id = std::string(where) + "(" + c.name + "): " + what + " '" + b.name + "'";
    if (g.type != b.type)
      throw error(id + " has element type " + std::string(short_name(g.type)) + ", expected " +
                  std::string(short_name(b.type)));
    shape_t want = ir::buffer_shape(c, b, sizes);
    if (g.shape.size() != want.size())
      throw error(id + " has rank " + std::to_string(g.shape.size()) + ", expected " +
                  std::to_string(want.size()) + " (shape " + to_string(want) + ")");
    for (std::size_t d = 0; d < want.size(); ++d)
      if (g.shape[d] != want[d])
        throw error(id + " dimension " + std::to_string(d) + " has extent " +
                    std::to_string(g.shape[d]) + ", expected " + std::to_string(want[d]) +
                    " (shape " + to_string(want) + " for sizes " + to_string(sizes) + ")");
    if (!g.data && g.size() > 0) throw error(id + " has no data (null pointer)");
  }
}

}  // namespace detail

// Runs `comp` on host buffers: inputs in inp_view order of first appearance, outputs in out_view
// order. Throws mdh::error naming the buffer and dimension on any mismatch, before writing.
template <class C>
void reference(const C& comp, const std::vector<std::int64_t>& sizes,
               std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs,
               unsigned threads = 0) {
  const ir::computation& c = comp.ir();
  comp.check_sizes(sizes);
  detail::check_buffers(c, sizes, c.inputs, inputs, "input", "mdh::reference");
  detail::check_buffers(c, sizes, c.outputs, outputs, "output", "mdh::reference");

  constexpr std::size_t D = C::rank, A = C::num_args, R = C::num_results;
  using result_tuple = typename C::result_tuple;
  using arg_types = typename C::arg_types;

  // Per lambda argument: data pointer and linear access; per output: the same.
  std::array<const void*, A> arg_ptr{};
  std::array<detail::linear_access, A> arg_lin;
  std::vector<buffer_ref> in(inputs.begin(), inputs.end()), out(outputs.begin(), outputs.end());
  for (std::size_t k = 0; k < A; ++k) {
    auto [b, a] = comp.arg_source()[k];
    arg_ptr[k] = in[b].data;
    arg_lin[k] = detail::linearize(c.inputs[b].accesses[a], in[b].shape, D);
  }
  std::vector<std::vector<detail::linear_access>> out_lin(R);
  for (std::size_t r = 0; r < R; ++r)
    for (auto& a : c.outputs[r].accesses)
      out_lin[r].push_back(detail::linearize(a, out[r].shape, D));

  std::vector<std::size_t> outer, inner;  // concatenation dims; pw dims
  int scan = -1;
  for (std::size_t d = 0; d < D; ++d) {
    if (c.dims[d].combine == ir::combine_kind::concat)
      outer.push_back(d);
    else if (c.dims[d].combine == ir::combine_kind::pointwise)
      inner.push_back(d);
    else
      scan = int(d);
  }

  // An input element as f reads it: f32 rounded to TF32 when the computation asks for it.
  const bool tf32 = ir::reads_tf32(c);
  auto read = [tf32]<class T>(const T& x) -> T {
    if constexpr (std::is_same_v<T, float>)
      return tf32 ? round_tf32(x) : x;
    else
      return x;
  };
  auto eval = [&](const std::array<std::int64_t, A>& off) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return comp.apply(
          read(static_cast<const std::tuple_element_t<K, arg_types>*>(arg_ptr[K])[off[K]])...);
    }
    (std::make_index_sequence<A>{});
  };
  auto store = [&](const std::array<std::int64_t, D>& idx, const result_tuple& v) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            // stored as the output's element type (bf16/f16: rounded to nearest even)
            using T = std::tuple_element_t<K, typename C::output_tuple>;
            for (auto& l : out_lin[K]) {
              std::int64_t o = l.base;
              for (std::size_t d = 0; d < D; ++d) o += l.step[d] * idx[d];
              static_cast<T*>(out[K].data)[o] = static_cast<T>(std::get<K>(v));
            }
          }(),
          ...);
    }
    (std::make_index_sequence<R>{});
  };
  // ⊕ over all points of the pw dims, with the other coordinates fixed in idx.
  auto fold_inner = [&](std::array<std::int64_t, D> idx) {
    std::array<std::int64_t, A> off;
    for (std::size_t k = 0; k < A; ++k) {
      off[k] = arg_lin[k].base;
      for (std::size_t d = 0; d < D; ++d) off[k] += arg_lin[k].step[d] * idx[d];
    }
    result_tuple acc = eval(off);
    if (inner.empty()) return acc;
    const std::size_t last = inner.back();
    const std::int64_t n_last = sizes[last];
    for (;;) {
      // innermost pw dimension: consecutive points, offsets advance by a constant step
      for (std::int64_t x = idx[last] + 1; x < n_last; ++x) {
        for (std::size_t k = 0; k < A; ++k) off[k] += arg_lin[k].step[last];
        acc = comp.combine(acc, eval(off));
      }
      for (std::size_t k = 0; k < A; ++k)
        off[k] -= arg_lin[k].step[last] * (n_last - 1 - idx[last]);
      idx[last] = 0;
      // odometer over the remaining pw dims
      std::size_t p = inner.size() - 1;
      for (;;) {
        if (p == 0) return acc;
        std::size_t d = inner[--p];
        if (idx[d] + 1 < sizes[d]) {
          ++idx[d];
          for (std::size_t k = 0; k < A; ++k) off[k] += arg_lin[k].step[d];
          break;
        }
        for (std::size_t k = 0; k < A; ++k) off[k] -= arg_lin[k].step[d] * idx[d];
        idx[d] = 0;
      }
      acc = comp.combine(acc, eval(off));
    }
  };

  std::int64_t points = 1;
  for (auto d : outer) points *= sizes[d];
  auto run_range = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      std::array<std::int64_t, D> idx{};
      std::int64_t rest = p;
      for (std::size_t q = outer.size(); q-- > 0;) {
        idx[outer[q]] = rest % sizes[outer[q]];
        rest /= sizes[outer[q]];
      }
      if (scan < 0) {
        store(idx, fold_inner(idx));
      } else {
        result_tuple acc{};
        for (std::int64_t s = 0; s < sizes[scan]; ++s) {
          idx[scan] = s;
          result_tuple part = fold_inner(idx);
          acc = s == 0 ? part : comp.combine(acc, part);
          store(idx, acc);
        }
      }
    }
  };

  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  unsigned n_threads = threads ? threads : hw;
  std::int64_t work = points;
  for (auto d : inner) work *= sizes[d];
  if (scan >= 0) work *= sizes[scan];
  if (work < (1 << 16)) n_threads = 1;  // not worth a thread
  n_threads = unsigned(std::min<std::int64_t>(n_threads, points));
  if (n_threads <= 1) return run_range(0, points);
  std::vector<std::thread> pool;
  std::exception_ptr failure;
  std::mutex m;
  for (unsigned t = 0; t < n_threads; ++t)
    pool.emplace_back([&, t] {
      try {
        run_range(points * t / n_threads, points * (t + 1) / n_threads);
      } catch (...) {
        std::lock_guard lock(m);
        failure = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

template <class C>
void reference(const C& comp, const std::vector<std::int64_t>& sizes,
               std::initializer_list<buffer_ref> inputs, std::initializer_list<buffer_ref> outputs,
               unsigned threads = 0) {
  reference(comp, sizes, std::span<const buffer_ref>(inputs.begin(), inputs.size()),
            std::span<const buffer_ref>(outputs.begin(), outputs.size()), threads);
}

}  // namespace mdh
