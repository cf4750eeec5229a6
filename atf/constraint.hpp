// SPDX-License-Identifier: MIT
// atf::constraint: what a parameter's value must satisfy. Either an expression (dependencies read
// off the tree) or a C++ callable over the own value and the values fixed so far, with the list of
// parameter names it reads.
#pragma once

#include <atf/configuration.hpp>
#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/value.hpp>

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace atf {

class constraint {
 public:
  using function = std::function<bool(const value&, const partial_config&)>;

  // A callable over (own value, partial_config) that reads the parameters named in `reads`.
  template <class F>
  constraint(std::vector<std::string> reads, F f) : reads_(std::move(reads)) {
    fn_ = [f = std::move(f)](const value& v, const partial_config& c) -> bool {
      return std::visit(
          [&](const auto& x) -> bool {
            if constexpr (std::is_invocable_r_v<bool, const F&, decltype(x), const partial_config&>)
              return f(x, c);
            else
              throw error(std::string("constraint cannot take a ") + detail::type_name(v) +
                          " value");
          },
          v);
    };
  }

  // A callable over the own value only.
  template <class F>
  requires(!std::is_convertible_v<F, expr> && !detail::exprish<F> &&
           !std::is_same_v<std::remove_cvref_t<F>, constraint>)
      constraint(F f)  // NOLINT: implicit so tp("x", r, lambda) works
      : constraint(std::vector<std::string>{},
                   [f = std::move(f)](const auto& x, const partial_config&) -> bool {
                     if constexpr (std::is_invocable_r_v<bool, const F&, decltype(x)>)
                       return f(x);
                     else
                       throw error("constraint cannot take this value type");
                   }) {}

  constraint(expr e) : expr_(std::move(e)) {}  // NOLINT
  template <detail::exprish E>
  constraint(const E& e) : expr_(e.to_expr()) {}  // NOLINT

  bool is_expression() const { return expr_.has_value(); }
  const std::optional<expr>& expression() const { return expr_; }
  const function& callable() const { return fn_; }
  const std::vector<std::string>& reads() const { return reads_; }

 private:
  std::optional<expr> expr_;
  function fn_;
  std::vector<std::string> reads_;
};

}  // namespace atf
