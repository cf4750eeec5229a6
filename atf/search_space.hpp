// SPDX-License-Identifier: MIT
// atf::search_space: the chain of trees holding exactly the valid configurations. Parameters are
// split into independent groups (one tree each) and ordered inside a group by a cost model; each
// tree is stored as flat per-level arrays (value index + cumulative leaf count), so a uniform index
// or a coordinate in [0,1)^n maps to a configuration by binary search, uniform over valid ones.
#pragma once

#include <atf/configuration.hpp>
#include <atf/constraint.hpp>
#include <atf/detail/expr_eval.hpp>
#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/tp.hpp>
#include <atf/value.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace atf {

// Exact size of a whole space: the product of the per-group (uint64) counts.
__extension__ typedef unsigned __int128 index_t;

inline std::string to_string(index_t x) {
  if (x == 0) return "0";
  std::string s;
  while (x) s += static_cast<char>('0' + static_cast<int>(x % 10)), x /= 10;
  return {s.rbegin(), s.rend()};
}

// A configuration of the space, compactly: its leaf number in every group's tree.
using point = std::vector<std::uint64_t>;
struct point_hash {
  std::size_t operator()(const point& p) const noexcept {
    std::uint64_t h = 14695981039346656037ull;
    for (auto x : p) h = (h ^ x) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};

struct space_options {
  unsigned threads = 0;  // generation threads; 0 = hardware concurrency
};

namespace detail {

inline std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;
}

// fnv1a(h, to_string(v)) without building the string for integers.
inline std::uint64_t fnv1a_value(std::uint64_t h, const value& v) {
  if (v.index() == 0) {
    text_hasher t{h};
    t.put_value(v);
    return (t.h ^ 0xff) * 1099511628211ull;
  }
  return fnv1a(h, to_string(v));
}

struct group_constraint {
  std::uint64_t mask;
  double selectivity;
};

struct param_def {
  tp src;                                    // the declaration (its range stays alive)
  const std::vector<value>* vals = nullptr;  // the declared values, or `filtered`
  std::vector<value> filtered;               // when own-value constraints removed some
  num* nums = nullptr;                       // evaluator form of each value (in the space's pool)
  bool int_valued = true;
  const std::vector<value>& values() const { return *vals; }
};

struct lambda_def {
  std::size_t owner;
  std::vector<std::size_t> reads;
  constraint::function fn;
};

struct expr_def {
  expr e;
  std::size_t owner;  // for atf::self and messages; -1 when free
  std::vector<std::size_t> refs;
  std::shared_ptr<const flat_expr> own;  // e's flat form when e is a tree
  const flat_expr* flat;                 // e's flat form
  std::size_t name_slot_off;             // where the slot of each of flat's names starts in the
                                         // build's list (-1: unknown name)
};

// Buffers of order_group, reused by every group.
struct order_scratch {
  std::vector<std::size_t> local;
  std::vector<double> dom;
  std::vector<group_constraint> cons;
  std::vector<std::uint64_t> prec;
  std::vector<num> slots;
  std::vector<double> nodes, best;
  std::vector<std::uint8_t> last;
};

struct level_plan {
  std::size_t param = 0;
  std::vector<const compiled_expr*> exprs;
  std::vector<const lambda_def*> lambdas;
  // The valid values of a level depend only on `deps`; when their combinations are few, each
  // combination's list is computed once and reused (the last levels then become plain copies).
  std::vector<std::size_t> deps;
  std::vector<std::uint64_t> strides;
  std::uint64_t keys = 0;  // 0 = not cached
  // This level's nodes in the tree's arrays: vidx[vb, vb + vn) and, but for the last level,
  // leaf_start[lb, lb + vn + 1).
  std::size_t vb = 0, vn = 0, lb = 0;
};

struct tree {
  std::vector<level_plan> levels;
  // All levels back to back (see level_plan::vb, lb): the value index of each node, and per level
  // but the last, n+1 prefix sums of leaf counts.
  std::vector<std::uint32_t> vidx;
  std::vector<std::uint64_t> leaf_start;
  std::uint64_t leaves = 0;

  const std::uint32_t* vidx_of(std::size_t k) const { return vidx.data() + levels[k].vb; }
  // Node at level k whose leaf range contains leaf L.
  std::size_t node_of(std::size_t k, std::uint64_t L) const {
    if (k + 1 == levels.size()) return static_cast<std::size_t>(L);
    const std::uint64_t* ls = leaf_start.data() + levels[k].lb;
    return static_cast<std::size_t>(std::upper_bound(ls, ls + levels[k].vn + 1, L) - ls - 1);
  }
  std::uint64_t begin_of(std::size_t k, std::size_t j) const {
    return k + 1 == levels.size() ? j : leaf_start[levels[k].lb + j];
  }
  std::uint64_t end_of(std::size_t k, std::size_t j) const {
    return k + 1 == levels.size() ? j + 1 : leaf_start[levels[k].lb + j + 1];
  }
};

// Output of one generation task: the nodes of levels [first, n) below one prefix, in DFS order.
struct subtree {
  std::vector<std::vector<std::uint32_t>> vidx;
  std::vector<std::vector<std::uint32_t>> nchild;
};

// Generation state of one task: current values and per-level caches of valid values.
struct gen_cache_entry {
  std::uint32_t offset = 0, size = 0;
  bool done = false;
};
struct gen_level_cache {
  std::vector<gen_cache_entry> entries;
  std::vector<std::uint32_t> pool;  // all lists of the level, back to back
};
struct gen_state {
  std::vector<num> slots;
  std::vector<const value*> cur;
  std::vector<std::uint32_t> vi;
  std::vector<gen_level_cache> cache;
  // Ready for a tree of n levels over P parameters, keeping the storage of earlier trees.
  void reset(std::size_t P, std::size_t n) {
    if (slots.size() != P) {
      slots.assign(P, num{});
      cur.assign(P, nullptr);
      vi.assign(P, 0);
    }
    if (cache.size() < n) cache.resize(n);
    for (std::size_t k = 0; k < n; ++k) cache[k].entries.clear(), cache[k].pool.clear();
  }
};

}  // namespace detail

class search_space {
 public:
  search_space(std::vector<tp> params, std::vector<expr> constraints = {},
               space_options opts = {}) {
    build(std::move(params), std::move(constraints), opts);
  }
  template <class... A>
  requires(sizeof...(A) > 0 &&
           ((std::is_same_v<std::remove_cvref_t<A>, tp> || std::is_convertible_v<A, expr> ||
             detail::exprish<std::remove_cvref_t<A>>)&&...)) explicit search_space(A&&... args) {
    std::vector<tp> ps;
    std::vector<expr> cs;
    auto add = [&](auto&& a) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, tp>)
        ps.push_back(a);
      else
        cs.push_back(detail::as_expr(a));
    };
    (add(args), ...);
    build(std::move(ps), std::move(cs), {});
  }

  // Number of valid configurations (exact).
  index_t size() const { return size_; }
  std::size_t num_groups() const { return trees_.size(); }
  std::uint64_t group_size(std::size_t g) const { return trees_.at(g).leaves; }
  std::size_t dimensions() const { return params_.size(); }
  double cartesian_size() const { return cartesian_; }
  double construction_seconds() const { return seconds_; }
  const std::vector<std::string>& names() const { return names_; }
  // A hash of parameter names, ranges, constraints and size: identifies the space in logs.
  const std::string& hash() const { return hash_; }
  // The groups, each as its parameters in generation order.
  std::vector<std::vector<std::string>> groups() const {
    std::vector<std::vector<std::string>> out;
    for (const auto& t : trees_) {
      out.emplace_back();
      for (const auto& l : t.levels) out.back().push_back(names_[l.param]);
    }
    return out;
  }
  // The values a parameter may take (after its own-value constraints), in range order.
  const std::vector<value>& values_of(std::string_view name) const {
    return params_[index_of_param(name)].values();
  }

  // ---- configuration-level access ----
  configuration at(index_t index) const { return to_configuration(point_at(index)); }
  configuration at_coordinates(std::span<const double> c) const {
    return to_configuration(point_at_coordinates(c));
  }
  bool contains(const configuration& c) const { return find(c).has_value(); }
  std::vector<configuration> neighbours(const configuration& c) const {
    auto p = find(c);
    if (!p) throw error("neighbours: configuration " + c.to_string() + " is not in the space");
    std::vector<configuration> out;
    for (const auto& q : neighbours(*p)) out.push_back(to_configuration(q));
    return out;
  }

  // ---- point-level access (what search techniques use) ----
  point point_at(index_t index) const {
    if (index >= size_)
      throw error("search_space: index " + to_string(index) + " out of range (size " +
                  to_string(size_) + ")");
    point p(trees_.size());
    for (std::size_t g = trees_.size(); g-- > 0;) {
      p[g] = static_cast<std::uint64_t>(index % trees_[g].leaves);
      index /= trees_[g].leaves;
    }
    return p;
  }
  index_t index_of(const point& p) const {
    index_t i = 0;
    for (std::size_t g = 0; g < trees_.size(); ++g) i = i * trees_[g].leaves + p[g];
    return i;
  }
  // Each level's coordinate picks a child weighted by leaf counts: uniform coordinates give
  // uniform configurations, and nearby coordinates stay nearby in leaf order.
  point point_at_coordinates(std::span<const double> c) const {
    if (c.size() != params_.size())
      throw error("at_coordinates: expected " + std::to_string(params_.size()) +
                  " coordinates, got " + std::to_string(c.size()));
    point p(trees_.size());
    std::size_t d = 0;
    for (std::size_t g = 0; g < trees_.size(); ++g) {
      const auto& t = trees_[g];
      std::uint64_t a = 0, b = t.leaves;
      for (std::size_t k = 0; k < t.levels.size(); ++k, ++d) {
        double x = std::isfinite(c[d]) ? std::clamp(c[d], 0.0, 1.0) : 0.0;
        auto off = static_cast<std::uint64_t>(x * static_cast<double>(b - a));
        std::uint64_t L = a + std::min(off, b - a - 1);
        std::size_t j = t.node_of(k, L);
        a = t.begin_of(k, j);
        b = t.end_of(k, j);
      }
      p[g] = a;
    }
    return p;
  }
  // The centre of the point's cell in coordinate space (inverse of point_at_coordinates).
  std::vector<double> coordinates_of(const point& p) const {
    std::vector<double> c;
    c.reserve(params_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g) {
      const auto& t = trees_[g];
      std::uint64_t a = 0, b = t.leaves;
      for (std::size_t k = 0; k < t.levels.size(); ++k) {
        std::size_t j = t.node_of(k, p[g]);
        std::uint64_t ja = t.begin_of(k, j), jb = t.end_of(k, j);
        c.push_back((static_cast<double>(ja - a) + 0.5 * static_cast<double>(jb - ja)) /
                    static_cast<double>(b - a));
        a = ja;
        b = jb;
      }
    }
    return c;
  }
  template <class Rng>
  point random_point(Rng& rng) const {
    point p(trees_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g)
      p[g] = std::uniform_int_distribution<std::uint64_t>(0, trees_[g].leaves - 1)(rng);
    return p;
  }
  configuration to_configuration(const point& p) const {
    std::vector<std::uint32_t> vi(params_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g) leaf_values(g, p.at(g), vi);
    std::vector<configuration::entry> e;
    e.reserve(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i)
      e.emplace_back(names_[i], params_[i].values()[vi[i]]);
    return configuration(std::move(e));
  }
  std::optional<point> find(const configuration& c) const {
    std::vector<std::uint32_t> vi(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const value* v = c.find(names_[i]);
      if (!v) return std::nullopt;
      const auto& vals = params_[i].values();
      auto it = std::find(vals.begin(), vals.end(), *v);
      if (it == vals.end()) return std::nullopt;
      vi[i] = static_cast<std::uint32_t>(it - vals.begin());
    }
    if (c.size() != params_.size()) return std::nullopt;
    return find_indices(vi);
  }
  // The index of each parameter's value (into values_of(names()[i])) at a point, in names() order.
  std::vector<std::uint32_t> value_indices(const point& p) const {
    std::vector<std::uint32_t> vi(params_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g) leaf_values(g, p.at(g), vi);
    return vi;
  }
  // For each parameter, the nearest valid configuration in each direction of its range with all
  // other parameters unchanged.
  std::vector<point> neighbours(const point& p) const {
    std::vector<std::uint32_t> vi(params_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g) leaf_values(g, p.at(g), vi);
    std::vector<point> out;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const auto n = static_cast<std::int64_t>(params_[i].values().size());
      for (int dir : {-1, 1}) {
        auto w = vi;
        for (std::int64_t x = static_cast<std::int64_t>(vi[i]) + dir; x >= 0 && x < n; x += dir) {
          w[i] = static_cast<std::uint32_t>(x);
          if (auto q = find_indices(w)) {
            out.push_back(std::move(*q));
            break;
          }
        }
      }
    }
    return out;
  }

 private:
  void leaf_values(std::size_t g, std::uint64_t L, std::vector<std::uint32_t>& vi) const {
    const auto& t = trees_[g];
    if (L >= t.leaves) throw error("search_space: leaf out of range in group " + std::to_string(g));
    for (std::size_t k = 0; k < t.levels.size(); ++k)
      vi[t.levels[k].param] = t.vidx_of(k)[t.node_of(k, L)];
  }
  std::optional<point> find_indices(const std::vector<std::uint32_t>& vi) const {
    point p(trees_.size());
    for (std::size_t g = 0; g < trees_.size(); ++g) {
      const auto& t = trees_[g];
      std::uint64_t a = 0, b = t.leaves;
      for (std::size_t k = 0; k < t.levels.size(); ++k) {
        std::size_t lo = t.node_of(k, a), hi = t.node_of(k, b - 1) + 1;
        const std::uint32_t* v = t.vidx_of(k);
        const std::uint32_t* it = std::lower_bound(v + lo, v + hi, vi[t.levels[k].param]);
        if (it == v + hi || *it != vi[t.levels[k].param]) return std::nullopt;
        std::size_t j = static_cast<std::size_t>(it - v);
        a = t.begin_of(k, j);
        b = t.end_of(k, j);
      }
      p[g] = a;
    }
    return p;
  }

  std::size_t index_of_param(std::string_view name) const {
    auto it = std::lower_bound(sorted_names_.begin(), sorted_names_.end(), name,
                               [](const std::pair<std::string_view, std::size_t>& a,
                                  std::string_view b) { return a.first < b; });
    if (it == sorted_names_.end() || it->first != name)
      throw error("search_space: no parameter named '" + std::string(name) + "'");
    return it->second;
  }

  void build(std::vector<tp> tps, std::vector<expr> free_constraints, space_options opts);
  void order_group(const std::vector<std::size_t>& members, std::vector<std::size_t>& order,
                   double& est_checks, detail::order_scratch& sc);
  void generate(detail::tree& t, unsigned threads, double est_checks, detail::gen_state& scratch,
                detail::subtree& scratch_out);
  std::string describe_partial(const detail::tree& t, std::size_t upto,
                               const std::vector<const value*>& cur) const;

  std::vector<detail::param_def> params_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string_view, std::size_t>> sorted_names_;  // into names_, by name
  std::unordered_map<std::string, std::size_t> slot_of_;  // only for callable constraints
  std::vector<detail::num> nums_;                         // every parameter's values
  std::vector<detail::lambda_def> lambdas_;
  std::vector<detail::expr_def> exprs_;
  std::vector<detail::compiled_expr> compiled_;  // reserved: never moves
  detail::string_table strings_;
  std::vector<detail::tree> trees_;
  index_t size_ = 0;
  double cartesian_ = 1;
  double seconds_ = 0;
  std::string hash_;
};

}  // namespace atf

#include <atf/detail/search_space_build.hpp>
