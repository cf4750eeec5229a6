// SPDX-License-Identifier: MIT
// Canonical form of a recorded scalar function. C++ leaves the evaluation order of function
// arguments unspecified, so the order in which a lambda creates nodes differs between compilers;
// the canonical form (post-order from the results, children left to right, equal nodes merged)
// makes the pool, and with it hashes, printed code and parameter-file keys, compiler-independent.
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include <mdh/ir/scalar_expr.hpp>

namespace mdh::ir {

inline scalar_function canonicalize(const scalar_function& f) {
  scalar_function g;
  g.arg_types = f.arg_types;
  using key = std::tuple<int, int, int, int, int, int, double>;
  std::map<key, int> seen;  // structural identity -> node in g
  std::vector<int> mapped(f.nodes.size(), -1);
  // Iterative post-order (deep trees must not overflow the stack).
  auto visit = [&](int root) {
    std::vector<std::pair<int, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [n, expanded] = stack.back();
      stack.pop_back();
      if (mapped[n] >= 0) continue;
      const node& x = f.nodes[n];
      if (!expanded) {
        stack.push_back({n, true});
        auto kids = children(x);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back({*it, false});
        continue;
      }
      node y = x;
      if (y.a >= 0) y.a = mapped[y.a];
      if (y.b >= 0) y.b = mapped[y.b];
      if (y.c >= 0) y.c = mapped[y.c];
      if (y.kind != op::constant) y.value = 0;
      if (y.kind != op::arg) y.index = -1;
      key k{int(y.kind), int(y.type), y.a, y.b, y.c, y.index, y.value};
      auto [it, fresh] = seen.try_emplace(k, int(g.nodes.size()));
      if (fresh) g.nodes.push_back(y);
      mapped[n] = it->second;
    }
  };
  for (int r : f.results) {
    visit(r);
    g.results.push_back(mapped[r]);
  }
  return g;
}

}  // namespace mdh::ir
