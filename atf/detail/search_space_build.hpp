// SPDX-License-Identifier: MIT
// Construction of atf::search_space: checks, grouping, ordering and (parallel) tree generation.
#pragma once

#include <atf/search_space.hpp>

#include <cstdio>

namespace atf {

namespace detail {

// Union-find over parameter indices.
struct dsu {
  std::vector<std::size_t> p;
  explicit dsu(std::size_t n) : p(n) { std::iota(p.begin(), p.end(), 0); }
  std::size_t find(std::size_t x) { return p[x] == x ? x : p[x] = find(p[x]); }
  void unite(std::size_t a, std::size_t b) {
    a = find(a), b = find(b);
    if (a != b) p[std::max(a, b)] = std::min(a, b);
  }
};

}  // namespace detail

inline void search_space::build(std::vector<tp> tps, std::vector<expr> frees, space_options opts) {
  const auto t0 = std::chrono::steady_clock::now();
  if (tps.empty()) throw error("search_space: no tuning parameters");
  std::uint64_t h = 14695981039346656037ull;
  params_.reserve(tps.size());
  names_.reserve(tps.size());
  std::size_t total_values = 0;
  bool any_callable = false;
  for (const auto& t : tps) {
    names_.push_back(t.name());
    total_values += t.values().size();
    for (const auto& c : t.constraints()) any_callable |= !c.is_expression();
  }
  // Look-up by name: a sorted list of views into names_ (which no longer grows).
  sorted_names_.reserve(tps.size());
  for (std::size_t i = 0; i < names_.size(); ++i) sorted_names_.emplace_back(names_[i], i);
  std::sort(sorted_names_.begin(), sorted_names_.end());
  std::size_t first_dup = static_cast<std::size_t>(-1);  // first parameter declared a second time
  for (std::size_t i = 1; i < sorted_names_.size(); ++i)
    if (sorted_names_[i].first == sorted_names_[i - 1].first)
      first_dup = std::min(first_dup, sorted_names_[i].second);
  auto find_slot = [&](std::string_view name) {
    auto it = std::lower_bound(
        sorted_names_.begin(), sorted_names_.end(), name,
        [](const std::pair<std::string_view, std::size_t>& a, std::string_view b) { return a.first < b; });
    return it == sorted_names_.end() || it->first != name ? static_cast<std::size_t>(-1)
                                                          : it->second;
  };
  nums_.reserve(total_values);
  for (std::size_t i = 0; i < tps.size(); ++i) {
    const auto& t = tps[i];
    if (i == first_dup) throw error("search_space: parameter '" + t.name() + "' declared twice");
    detail::param_def d{t, &t.values().values(), {}, nums_.data() + nums_.size(), true};
    if (d.values().empty())
      throw error("search_space: parameter '" + t.name() + "' has an empty range");
    for (const auto& v : d.values()) {
      nums_.push_back(detail::to_num(v, strings_));
      d.int_valued &= v.index() == 0 || v.index() == 2;
      h = detail::fnv1a_value(h, v);
    }
    h = detail::fnv1a(h, t.name());
    cartesian_ *= static_cast<double>(d.values().size());
    params_.push_back(std::move(d));
  }
  if (any_callable) {  // partial_config looks names up in a map
    slot_of_.reserve(tps.size());
    for (std::size_t i = 0; i < names_.size(); ++i) slot_of_.emplace(names_[i], i);
  }
  const std::size_t P = params_.size();

  auto index_or_throw = [&](const std::string& name, const std::string& where) {
    const std::size_t i = find_slot(name);
    if (i == static_cast<std::size_t>(-1))
      throw error(where + " refers to unknown parameter '" + name + "'");
    return i;
  };
  std::vector<std::size_t> name_slots;  // every expression's name -> slot map, back to back
  auto add_expr = [&](const expr& e, std::size_t owner) {
    detail::expr_def d{e, owner, {}, nullptr, nullptr, name_slots.size()};
    // Parsed expressions are flat already; trees built with C++ operators are flattened here.
    const detail::flat_expr* f = e.flat();
    if (!f) {
      auto own = std::make_shared<detail::flat_expr>();
      detail::flatten_into(*e.node(), *own);
      f = own.get();
      d.own = std::move(own);
    }
    d.flat = f;
    // Parameter slots (deduplicated) and whether atf::self occurs.
    bool self = false, unknown = false;
    d.refs.reserve(f->names.size() + 1);
    for (std::size_t i = 0; i < f->names.size(); ++i) {
      const std::size_t slot = find_slot(f->name(i));
      name_slots.push_back(slot);
      if (slot == static_cast<std::size_t>(-1)) {
        unknown = true;
      } else if (std::find(d.refs.begin(), d.refs.end(), slot) == d.refs.end()) {
        d.refs.push_back(slot);
      }
    }
    for (const auto& n : f->nodes) self |= n.k == detail::op::self;
    if (unknown) {  // report the first unknown name in sorted order, with the constraint's text
      std::string where = owner == static_cast<std::size_t>(-1)
                              ? std::string("constraint")
                              : "constraint of '" + names_[owner] + "'";
      for (const auto& n : e.parameters()) index_or_throw(n, where + " '" + e.text() + "'");
    }
    if (self) {
      if (owner == static_cast<std::size_t>(-1))
        throw error("constraint '" + e.text() + "' uses atf::self but belongs to no parameter");
      if (std::find(d.refs.begin(), d.refs.end(), owner) == d.refs.end()) d.refs.push_back(owner);
    }
    std::sort(d.refs.begin(), d.refs.end());
    h = owner == static_cast<std::size_t>(-1) ? e.hash_text(h) : e.hash_text(h, names_[owner]);
    exprs_.push_back(std::move(d));
  };
  {
    std::size_t n = frees.size();
    for (const auto& t : tps) n += t.constraints().size();
    exprs_.reserve(n);
    compiled_.reserve(n);
    name_slots.reserve(4 * n);
  }
  for (std::size_t i = 0; i < tps.size(); ++i)
    for (const auto& c : tps[i].constraints()) {
      if (c.is_expression()) {
        add_expr(*c.expression(), i);
      } else {
        detail::lambda_def l{i, {}, c.callable()};
        for (const auto& n : c.reads()) {
          auto r = index_or_throw(n, "constraint of '" + names_[i] + "'");
          if (r != i && std::find(l.reads.begin(), l.reads.end(), r) == l.reads.end())
            l.reads.push_back(r);
        }
        h = detail::fnv1a(h, "lambda:" + names_[i]);
        for (auto r : l.reads) h = detail::fnv1a(h, names_[r]);
        lambdas_.push_back(std::move(l));
      }
    }
  for (const auto& e : frees) add_expr(e, static_cast<std::size_t>(-1));

  // A cycle among callable constraints (a reads b, b reads a) has no valid generation order.
  if (!lambdas_.empty()) {
    std::vector<std::vector<std::size_t>> deps(P);
    for (const auto& l : lambdas_)
      for (auto r : l.reads) deps[l.owner].push_back(r);
    std::vector<int> colour(P, 0);
    std::vector<std::size_t> stack;
    std::function<void(std::size_t)> visit = [&](std::size_t u) {
      colour[u] = 1;
      stack.push_back(u);
      for (auto v : deps[u]) {
        if (colour[v] == 1) {
          std::string cyc;
          auto it = std::find(stack.begin(), stack.end(), v);
          for (; it != stack.end(); ++it) cyc += names_[*it] + " -> ";
          throw error("cyclic dependency between constraints: " + cyc + names_[v]);
        }
        if (colour[v] == 0) visit(v);
      }
      stack.pop_back();
      colour[u] = 2;
    };
    for (std::size_t u = 0; u < P; ++u)
      if (colour[u] == 0) visit(u);
  }

  // Compile every expression once; those over at most one parameter filter its range up front.
  std::vector<detail::num> slots(P);
  std::vector<const value*> cur(P, nullptr);
  std::vector<char> used(exprs_.size(), 0);
  // Keeps the values of pd listed in `kept` (ascending): a copy only when some were removed.
  std::vector<std::uint32_t> kept;
  auto keep_values = [&](detail::param_def& pd) {
    if (kept.size() == pd.values().size()) return;
    std::vector<value> vals;
    vals.reserve(kept.size());
    for (std::size_t j = 0; j < kept.size(); ++j) {
      vals.push_back(pd.values()[kept[j]]);
      pd.nums[j] = pd.nums[kept[j]];  // in place: kept[j] >= j
    }
    pd.filtered = std::move(vals);
    pd.vals = &pd.filtered;
  };
  for (std::size_t i = 0; i < exprs_.size(); ++i) {
    auto& d = exprs_[i];
    bool ints = true;
    for (auto r : d.refs) ints &= params_[r].int_valued;
    compiled_.emplace_back(d.e, *d.flat, name_slots.data() + d.name_slot_off, d.owner,
                           d.owner == static_cast<std::size_t>(-1) ? nullptr : &names_[d.owner],
                           ints, strings_);
    const auto& ce = compiled_.back();
    if (d.refs.empty()) {
      if (!ce.test(slots.data()))
        throw error("search space has no valid configuration: constraint '" + ce.text() +
                    "' is never true");
      used[i] = 1;
    } else if (d.refs.size() == 1) {
      auto& pd = params_[d.refs[0]];
      const std::string& pname = names_[d.refs[0]];
      kept.clear();
      for (std::size_t v = 0; v < pd.values().size(); ++v) {
        slots[d.refs[0]] = pd.nums[v];
        bool ok;
        try {
          ok = ce.test(slots.data());
        } catch (const std::exception& e) {
          throw error("constraint '" + ce.text() + "' failed for " + pname + " = " +
                      to_string(pd.values()[v]) + ": " + e.what());
        }
        if (ok) kept.push_back(static_cast<std::uint32_t>(v));
      }
      if (kept.empty())
        throw error("search space has no valid configuration: no value of '" + pname + "' in " +
                    pd.src.values().description() + " satisfies '" + ce.text() + "'");
      keep_values(pd);
      used[i] = 1;
    }
  }
  std::vector<char> lambda_used(lambdas_.size(), 0);
  for (std::size_t i = 0; i < lambdas_.size(); ++i) {
    auto& l = lambdas_[i];
    if (!l.reads.empty()) continue;
    auto& pd = params_[l.owner];
    const std::string& pname = names_[l.owner];
    kept.clear();
    for (std::size_t v = 0; v < pd.values().size(); ++v) {
      cur[l.owner] = &pd.values()[v];
      partial_config pc(&slot_of_, cur.data(), &names_[l.owner]);
      bool ok;
      try {
        ok = l.fn(pd.values()[v], pc);
      } catch (const std::exception& e) {
        throw error("constraint of '" + pname + "' threw for " + pname + " = " +
                    to_string(pd.values()[v]) + ": " + e.what());
      }
      if (ok) kept.push_back(static_cast<std::uint32_t>(v));
    }
    cur[l.owner] = nullptr;
    if (kept.empty())
      throw error("search space has no valid configuration: no value of '" + pname + "' in " +
                  pd.src.values().description() + " satisfies its constraint");
    keep_values(pd);
    lambda_used[i] = 1;
  }

  // Independent groups: parameters linked by any constraint over two or more of them.
  detail::dsu sets(P);
  for (std::size_t i = 0; i < exprs_.size(); ++i)
    if (!used[i])
      for (auto r : exprs_[i].refs) sets.unite(exprs_[i].refs[0], r);
  for (std::size_t i = 0; i < lambdas_.size(); ++i)
    if (!lambda_used[i])
      for (auto r : lambdas_[i].reads) sets.unite(lambdas_[i].owner, r);
  // Groups by root (the smallest index of each group), in ascending order of roots.
  // Members of all groups back to back (ascending within a group), groups in ascending order of
  // roots.
  std::vector<std::size_t> roots, member_flat(P), group_begin;
  {
    std::vector<std::size_t> group_of(P);
    for (std::size_t i = 0; i < P; ++i) {
      const std::size_t r = sets.find(i);
      if (r == i) group_of[i] = roots.size(), roots.push_back(i);
      group_of[i] = group_of[r];
    }
    group_begin.assign(roots.size() + 1, 0);
    for (std::size_t i = 0; i < P; ++i) ++group_begin[group_of[i] + 1];
    for (std::size_t g = 0; g < roots.size(); ++g) group_begin[g + 1] += group_begin[g];
    std::vector<std::size_t> fill(group_begin.begin(), group_begin.end() - 1);
    for (std::size_t i = 0; i < P; ++i) member_flat[fill[group_of[i]]++] = i;
  }
  trees_.reserve(roots.size());
  detail::gen_state scratch;  // generation state and output, reused by every tree
  detail::subtree scratch_out;
  detail::order_scratch order_sc;
  std::vector<std::size_t> members, order, pos(P, 0);

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = opts.threads ? opts.threads : hw;
  for (std::size_t g = 0; g < roots.size(); ++g) {
    const std::size_t root = roots[g];
    members.assign(member_flat.begin() + static_cast<std::ptrdiff_t>(group_begin[g]),
                   member_flat.begin() + static_cast<std::ptrdiff_t>(group_begin[g + 1]));
    double est = 0;
    order_group(members, order, est, order_sc);
    detail::tree t;
    t.levels.reserve(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      detail::level_plan lp;
      lp.param = order[k];
      t.levels.push_back(std::move(lp));
      pos[order[k]] = k;
    }
    for (std::size_t i = 0; i < exprs_.size(); ++i) {
      if (used[i] || sets.find(exprs_[i].refs[0]) != root) continue;
      std::size_t k = 0;
      for (auto r : exprs_[i].refs) k = std::max(k, pos[r]);
      t.levels[k].exprs.push_back(&compiled_[i]);
      for (auto r : exprs_[i].refs)  // the parameters the expression reads (atf::self included)
        if (r != t.levels[k].param) t.levels[k].deps.push_back(r);
    }
    for (std::size_t i = 0; i < lambdas_.size(); ++i)
      if (!lambda_used[i] && sets.find(lambdas_[i].owner) == root)
        t.levels[pos[lambdas_[i].owner]].lambdas.push_back(&lambdas_[i]);
    for (auto& L : t.levels) {
      auto& deps = L.deps;
      for (const auto* ld : L.lambdas)
        for (auto r : ld->reads)
          if (r != L.param) deps.push_back(r);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      std::uint64_t keys = 1;
      for (auto d : L.deps) {
        L.strides.push_back(keys);
        keys *= params_[d].values().size();
        if (keys > 4096) break;
      }
      L.keys = keys <= 4096 ? keys : 0;
    }
    generate(t, threads, est, scratch, scratch_out);
    if (t.leaves == 0) {
      std::string ns;
      for (auto m : members) ns += (ns.empty() ? "" : ", ") + names_[m];
      throw error("search space has no valid configuration: the constraints on {" + ns +
                  "} are never satisfied together");
    }
    trees_.push_back(std::move(t));
  }
  // Lambda constraints without reads were applied as range filters; keep them nowhere else.

  size_ = 1;
  for (const auto& t : trees_) {
    if (size_ > std::numeric_limits<index_t>::max() / t.leaves)
      throw error("search space has more than 2^128 valid configurations");
    size_ *= t.leaves;
  }
  h = detail::fnv1a(h, to_string(size_));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  hash_ = buf;
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Orders a group so that constraints are checked as early as possible and the expected number of
// constraint checks (nodes of a level times the next range size) is smallest. Exact dynamic
// programming over subsets for small groups, greedy with one step of look-ahead beyond that.
inline void search_space::order_group(const std::vector<std::size_t>& members,
                                      std::vector<std::size_t>& order, double& est_checks,
                                      detail::order_scratch& sc) {
  const std::size_t m = members.size();
  order.clear();
  if (m == 1) {
    order = members;
    est_checks = static_cast<double>(params_[members[0]].values().size());
    return;
  }
  auto& local = sc.local;
  local.assign(params_.size(), static_cast<std::size_t>(-1));
  for (std::size_t i = 0; i < m; ++i) local[members[i]] = i;
  auto& dom = sc.dom;
  dom.resize(m);
  for (std::size_t i = 0; i < m; ++i)
    dom[i] = static_cast<double>(params_[members[i]].values().size());

  if (m > 64) {  // beyond mask width: declaration order, callable dependencies first
    std::vector<char> placed(params_.size(), 0);
    while (order.size() < m)
      for (auto p : members) {
        if (placed[p]) continue;
        bool ready = true;
        for (const auto& l : lambdas_)
          if (l.owner == p)
            for (auto r : l.reads) ready &= placed[r] != 0;
        if (ready) order.push_back(p), placed[p] = 1;
      }
    est_checks = 1e12;
    return;
  }

  // Selectivity of each expression by sampling (only where the group is big enough for the order
  // to matter); callables and small groups count one half per constraint.
  auto& cons = sc.cons;
  cons.clear();
  auto& prec = sc.prec;
  prec.assign(m, 0);
  double product = 1;
  for (double d : dom) product *= d;
  const bool sample = product > 4096;
  std::uint64_t rng_state = 0x9e3779b97f4a7c15ull;
  auto next_random = [&] {  // splitmix64: cheap and deterministic
    std::uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto& slots = sc.slots;
  if (sample) slots.resize(params_.size());
  for (std::size_t i = 0; i < exprs_.size(); ++i) {
    const auto& d = exprs_[i];
    if (d.refs.size() < 2 || local[d.refs[0]] == static_cast<std::size_t>(-1)) continue;
    std::uint64_t mask = 0;
    for (auto r : d.refs) mask |= 1ull << local[r];
    double sel = 0.5;
    if (sample) {
      int hits = 0;
      const int samples = 64;
      for (int s = 0; s < samples; ++s) {
        for (auto r : d.refs) slots[r] = params_[r].nums[next_random() % params_[r].values().size()];
        try {
          hits += compiled_[i].test(slots.data()) ? 1 : 0;
        } catch (...) {
        }
      }
      sel = (hits + 0.5) / (samples + 1.0);
    }
    cons.push_back({mask, sel});
  }
  for (const auto& l : lambdas_) {
    if (l.reads.empty() || local[l.owner] == static_cast<std::size_t>(-1)) continue;
    std::uint64_t mask = 1ull << local[l.owner];
    for (auto r : l.reads) mask |= 1ull << local[r], prec[local[l.owner]] |= 1ull << local[r];
    cons.push_back({mask, 0.5});
  }
  auto nodes_of = [&](std::uint64_t mask) {
    double n = 1;
    for (std::size_t i = 0; i < m; ++i)
      if (mask >> i & 1) n *= dom[i];
    for (const auto& c : cons)
      if ((c.mask & mask) == c.mask) n *= c.selectivity;
    return n;
  };

  if (m <= 16) {
    const std::size_t full = (std::size_t{1} << m) - 1;
    auto& nodes = sc.nodes;
    auto& best = sc.best;
    auto& last = sc.last;
    nodes.resize(full + 1);
    best.assign(full + 1, std::numeric_limits<double>::infinity());
    last.assign(full + 1, 0);
    for (std::size_t s = 0; s <= full; ++s) nodes[s] = nodes_of(s);
    best[0] = 0;
    for (std::size_t s = 0; s < full; ++s) {
      if (!std::isfinite(best[s])) continue;
      for (std::size_t p = 0; p < m; ++p) {
        if (s >> p & 1 || (prec[p] & ~static_cast<std::uint64_t>(s)) != 0) continue;
        const std::size_t t = s | (std::size_t{1} << p);
        const double c = best[s] + nodes[s] * dom[p];
        if (c < best[t] * (1 - 1e-12)) best[t] = c, last[t] = static_cast<std::uint8_t>(p);
      }
    }
    est_checks = best[full];
    order.resize(m);
    std::size_t at = m;
    for (std::size_t s = full; s;) {
      order[--at] = members[last[s]];
      s &= ~(std::size_t{1} << last[s]);
    }
    return;
  }

  std::uint64_t placed = 0;
  est_checks = 0;
  double cur_nodes = 1;
  while (order.size() < m) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t pick = m;
    for (std::size_t p = 0; p < m; ++p) {
      if (placed >> p & 1 || (prec[p] & ~placed) != 0) continue;
      const std::uint64_t s1 = placed | 1ull << p;
      const double n1 = nodes_of(s1);
      double ahead = 0;
      bool any = false;
      for (std::size_t q = 0; q < m; ++q) {
        if (s1 >> q & 1 || (prec[q] & ~s1) != 0) continue;
        const double v = n1 * dom[q];
        ahead = any ? std::min(ahead, v) : v;
        any = true;
      }
      const double score = cur_nodes * dom[p] + ahead;
      if (score < best) best = score, pick = p;
    }
    est_checks += cur_nodes * dom[pick];
    placed |= 1ull << pick;
    cur_nodes = nodes_of(placed);
    order.push_back(members[pick]);
  }
}

inline std::string search_space::describe_partial(const detail::tree& t, std::size_t upto,
                                                  const std::vector<const value*>& cur) const {
  std::string s = "{";
  for (std::size_t k = 0; k <= upto && k < t.levels.size(); ++k) {
    auto p = t.levels[k].param;
    if (!cur[p]) continue;
    s += (s.size() > 1 ? ", " : "") + names_[p] + "=" + to_string(*cur[p]);
  }
  return s + "}";
}

// Depth-first generation that keeps only nodes with at least one valid leaf below them. Large
// groups are split below a prefix of levels; the subtrees are built on threads and concatenated.
inline void search_space::generate(detail::tree& t, unsigned threads, double est_checks,
                                   detail::gen_state& scratch, detail::subtree& scratch_out) {
  const std::size_t n = t.levels.size();
  const std::size_t P = params_.size();
  if (n == 1 && t.levels[0].exprs.empty() && t.levels[0].lambdas.empty()) {
    // A lone parameter (its own constraints already filtered its range): every value is a leaf.
    const auto nv = static_cast<std::uint32_t>(params_[t.levels[0].param].values().size());
    t.vidx.resize(nv);
    std::iota(t.vidx.begin(), t.vidx.end(), 0u);
    t.levels[0].vb = 0, t.levels[0].vn = nv;
    t.leaf_start.clear();
    t.leaves = nv;
    return;
  }
  using state = detail::gen_state;
  auto fresh_state = [&] {
    state s;
    s.reset(P, n);
    return s;
  };
  auto set_value = [&](state& s, std::size_t k, std::uint32_t v) {
    const auto p = t.levels[k].param;
    s.slots[p] = params_[p].nums[v];
    s.cur[p] = &params_[p].values()[v];
    s.vi[p] = v;
  };

  auto check = [&](state& s, std::size_t k) -> bool {
    const auto& L = t.levels[k];
    try {
      for (const auto* ce : L.exprs)
        if (!ce->test(s.slots.data())) return false;
      for (const auto* ld : L.lambdas) {
        partial_config pc(&slot_of_, s.cur.data(), &names_[ld->owner], &ld->reads);
        if (!ld->fn(*s.cur[ld->owner], pc)) return false;
      }
    } catch (const std::exception& e) {
      throw error("constraint at parameter '" + names_[L.param] + "' failed for " +
                  describe_partial(t, k, s.cur) + ": " + e.what());
    }
    return true;
  };

  // Appends to dst the values of level k that pass its constraints, in ascending order, and
  // leaves the level's state as checking them one at a time would (at the last value). Levels
  // whose constraints are all column-wise checkable run each expression once per chunk of
  // values; should that throw, the level is checked again one value at a time, which reports
  // the error exactly as before.
  std::vector<char> batch(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const auto& L = t.levels[k];
    bool ok = L.lambdas.empty();
    for (const auto* ce : L.exprs) ok &= ce->batchable();
    batch[k] = ok;
  }
  auto pass_values = [&](state& s, std::size_t k, std::vector<std::uint32_t>& dst) {
    const auto p = t.levels[k].param;
    const auto nv = static_cast<std::uint32_t>(params_[p].values().size());
    const std::size_t at = dst.size();
    if (batch[k]) {
      try {
        constexpr std::uint32_t W = detail::compiled_expr::kLanes;
        std::uint32_t idx[W];
        for (std::uint32_t v0 = 0; v0 < nv; v0 += W) {
          std::uint32_t c = std::min(W, nv - v0);
          for (std::uint32_t i = 0; i < c; ++i) idx[i] = v0 + i;
          for (const auto* ce : t.levels[k].exprs) {
            if (c == 0) break;
            c = ce->filter(s.slots.data(), p, params_[p].nums, idx, c);
          }
          dst.insert(dst.end(), idx, idx + c);
        }
        set_value(s, k, nv - 1);
        return;
      } catch (...) {
        dst.resize(at);
      }
    }
    for (std::uint32_t v = 0; v < nv; ++v) {
      set_value(s, k, v);
      if (check(s, k)) dst.push_back(v);
    }
  };

  // The values of level k that pass its constraints, from the cache when the level has one.
  struct span32 {
    const std::uint32_t* b = nullptr;
    const std::uint32_t* e = nullptr;
    const std::uint32_t* begin() const { return b; }
    const std::uint32_t* end() const { return e; }
    bool empty() const { return b == e; }
  };
  auto candidates = [&](state& s, std::size_t k, span32& out) -> bool {
    const auto& L = t.levels[k];
    if (!L.keys) return false;
    std::uint64_t key = 0;
    for (std::size_t i = 0; i < L.deps.size(); ++i) key += s.vi[L.deps[i]] * L.strides[i];
    auto& lc = s.cache[k];
    if (lc.entries.empty()) {
      lc.entries.resize(L.keys);
      // Room for every list at once (bounded), instead of growing by doubling.
      const std::uint64_t most = L.keys * params_[L.param].values().size();
      lc.pool.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(most, 1u << 16)));
    }
    auto& e = lc.entries[key];
    if (!e.done) {
      e.offset = static_cast<std::uint32_t>(lc.pool.size());
      pass_values(s, k, lc.pool);
      e.size = static_cast<std::uint32_t>(lc.pool.size()) - e.offset;
      e.done = true;
    }
    out.b = lc.pool.data() + e.offset;
    out.e = out.b + e.size;
    return true;
  };

  auto dfs = [&](auto& self, state& s, std::size_t k, std::size_t first,
                 detail::subtree& out) -> bool {
    const auto& L = t.levels[k];
    auto& vk = out.vidx[k - first];
    span32 cs;
    const bool cached = candidates(s, k, cs);
    if (k + 1 == n) {
      if (cached) {
        vk.insert(vk.end(), cs.begin(), cs.end());
        return !cs.empty();
      }
      const std::size_t before = vk.size();
      pass_values(s, k, vk);
      s.cur[L.param] = nullptr;
      return vk.size() != before;
    }
    bool any = false;
    auto visit = [&](std::uint32_t v) {
      const std::size_t before = out.vidx[k + 1 - first].size();
      if (self(self, s, k + 1, first, out)) {
        vk.push_back(v);
        out.nchild[k - first].push_back(
            static_cast<std::uint32_t>(out.vidx[k + 1 - first].size() - before));
        any = true;
      }
    };
    if (cached) {
      // Deeper levels only grow their own pools, so this level's list stays in place.
      for (auto v : cs) set_value(s, k, v), visit(v);
    } else {
      const auto nv = static_cast<std::uint32_t>(params_[L.param].values().size());
      for (std::uint32_t v = 0; v < nv; ++v) {
        set_value(s, k, v);
        if (check(s, k)) visit(v);
      }
    }
    s.cur[L.param] = nullptr;
    return any;
  };

  // Split below a prefix when the expected work pays for threads.
  std::vector<std::vector<std::uint32_t>> prefixes{{}};
  std::size_t split = 0;
  if (threads > 1 && est_checks > 2e5 && n > 1) {
    state s = fresh_state();
    while (split + 1 < n && prefixes.size() < 16 * threads) {
      std::vector<std::vector<std::uint32_t>> next;
      for (const auto& pre : prefixes) {
        for (std::size_t k = 0; k < split; ++k) set_value(s, k, pre[k]);
        const auto& pd = params_[t.levels[split].param];
        for (std::uint32_t v = 0; v < pd.values().size(); ++v) {
          set_value(s, split, v);
          if (!check(s, split)) continue;
          next.push_back(pre);
          next.back().push_back(v);
        }
        s.cur[t.levels[split].param] = nullptr;
      }
      prefixes = std::move(next);
      ++split;
      if (prefixes.empty()) break;
    }
    if (prefixes.empty()) {
      t.vidx.clear();
      t.leaf_start.assign(n - 1, 0);
      for (std::size_t k = 0; k < n; ++k) t.levels[k].vb = 0, t.levels[k].vn = 0, t.levels[k].lb = k;
      t.leaves = 0;
      return;
    }
  }

  // One prefix (the usual case): build into the scratch output, reused across trees.
  std::vector<detail::subtree> outs(prefixes.size() == 1 ? 0 : prefixes.size());
  auto out_of = [&](std::size_t i) -> detail::subtree& { return outs.empty() ? scratch_out : outs[i]; };
  auto run_task = [&](state& s, std::size_t i) {
    auto& out = out_of(i);
    if (out.vidx.size() < n - split) out.vidx.resize(n - split), out.nchild.resize(n - split);
    for (std::size_t x = 0; x < n - split; ++x) out.vidx[x].clear(), out.nchild[x].clear();
    for (std::size_t k = 0; k < split; ++k) set_value(s, k, prefixes[i][k]);
    dfs(dfs, s, split, split, out);
  };
  if (prefixes.size() == 1) {
    scratch.reset(P, n);
    run_task(scratch, 0);
  } else {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr err;
    std::mutex err_mutex;
    auto worker = [&] {
      state s = fresh_state();
      for (std::size_t i; !failed && (i = next++) < prefixes.size();) {
        try {
          run_task(s, i);
        } catch (...) {
          std::lock_guard lock(err_mutex);
          if (!err) err = std::current_exception();
          failed = true;
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < std::min<std::size_t>(threads, prefixes.size()); ++i)
      pool.emplace_back(worker);
    worker();
    for (auto& th : pool) th.join();
    if (err) std::rethrow_exception(err);
  }

  // Concatenate: prefix levels from the prefixes that kept a subtree, then the subtrees.
  std::vector<std::vector<std::uint32_t>> merged_v, merged;
  const std::vector<std::vector<std::uint32_t>>* lv = &merged_v;  // per level: value indices
  const std::vector<std::vector<std::uint32_t>>* nch = &merged;   // per level: child counts
  if (split == 0) {
    lv = &scratch_out.vidx;
    nch = &scratch_out.nchild;
  } else {
    merged_v.resize(n);
    merged.resize(n);
    auto& nchild = merged;
    const std::vector<std::uint32_t>* prev = nullptr;
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
      auto& o = out_of(i);
      if (o.vidx[0].empty()) continue;
      const auto& pre = prefixes[i];
      std::size_t j = 0;
      if (prev)
        while (j < split && pre[j] == (*prev)[j]) ++j;
      for (std::size_t k = j; k < split; ++k) {
        merged_v[k].push_back(pre[k]);
        nchild[k].push_back(0);
        if (k > 0) ++nchild[k - 1].back();
      }
      nchild[split - 1].back() += static_cast<std::uint32_t>(o.vidx[0].size());
      for (std::size_t x = 0; x < n - split; ++x) {
        merged_v[split + x].insert(merged_v[split + x].end(), o.vidx[x].begin(), o.vidx[x].end());
        nchild[split + x].insert(nchild[split + x].end(), o.nchild[x].begin(), o.nchild[x].end());
      }
      if (!outs.empty()) o = {};
      prev = &pre;
    }
  }
  // Into the tree's flat arrays: one for the value indices of all levels, one for the leaf
  // prefix sums of all levels but the last.
  std::size_t total_v = 0, total_ls = 0;
  for (std::size_t k = 0; k < n; ++k) {
    auto& L = t.levels[k];
    L.vb = total_v;
    L.vn = (*lv)[k].size();
    L.lb = total_ls;
    total_v += L.vn;
    if (k + 1 < n) total_ls += L.vn + 1;
  }
  t.vidx.resize(total_v);
  for (std::size_t k = 0; k < n; ++k)
    std::copy((*lv)[k].begin(), (*lv)[k].end(), t.vidx.begin() + static_cast<std::ptrdiff_t>(t.levels[k].vb));
  const auto& nchild = *nch;
  t.leaf_start.resize(total_ls);
  for (std::size_t k = n - 1; k-- > 0;) {
    std::uint64_t* ls = t.leaf_start.data() + t.levels[k].lb;
    const std::uint64_t* next = t.leaf_start.data() + t.levels[k + 1].lb;
    ls[0] = 0;
    std::uint64_t c = 0;
    for (std::size_t j = 0; j < t.levels[k].vn; ++j) {
      c += nchild[k][j];
      ls[j + 1] = k + 2 == n ? c : next[c];
    }
  }
  t.leaves = n == 1 ? t.levels[0].vn : t.leaf_start[t.levels[0].lb + t.levels[0].vn];
}

}  // namespace atf
