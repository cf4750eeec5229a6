// SPDX-License-Identifier: MIT
// atf::tp: a tuning parameter = (name, range, constraints). Copies share one definition, and a tp
// is also an expression handle, so `a * b <= 1024` builds a constraint.
#pragma once

#include <atf/constraint.hpp>
#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/range.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace atf {

class tp {
 public:
  tp(std::string name, range r) : d_(std::make_shared<data>()) {
    if (name.empty()) throw error("tp: a parameter needs a name");
    if (r.empty()) throw error("tp '" + name + "': range is empty");
    d_->name = std::move(name);
    d_->range = std::move(r);
  }
  template <class C>
  tp(std::string name, range r, C&& c) : tp(std::move(name), std::move(r)) {
    constrain(constraint(std::forward<C>(c)));
  }

  // Adds one more constraint (all must hold).
  tp& constrain(constraint c) {
    d_->constraints.push_back(std::move(c));
    return *this;
  }

  const std::string& name() const { return d_->name; }
  const range& values() const { return d_->range; }
  const std::vector<constraint>& constraints() const { return d_->constraints; }
  expr to_expr() const { return param(d_->name); }
  operator expr() const { return to_expr(); }  // NOLINT: a parameter is an expression

 private:
  struct data {
    std::string name;
    atf::range range;
    std::vector<constraint> constraints;
  };
  std::shared_ptr<data> d_;
};

}  // namespace atf
