// SPDX-License-Identifier: MIT
// Prints a computation in MDH notation: out_view ∘ md_hom ∘ inp_view, then the scalar function.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>

#include <mdh/ir/computation.hpp>

namespace mdh::ir {

inline std::string format_number(double v, scalar_type t) {
  if (v != v) return "nan";
  if (v == std::numeric_limits<double>::infinity()) return "inf";
  if (v == -std::numeric_limits<double>::infinity()) return "-inf";
  char buf[64];
  if (is_floating(t))
    std::snprintf(buf, sizeof buf, "%.17g", v);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

inline std::string to_string(const affine& f, const std::vector<dimension>& dims) {
  std::string s;
  for (std::size_t d = 0; d < f.coeff.size(); ++d) {
    std::int64_t c = f.coeff[d];
    if (c == 0) continue;
    if (!s.empty())
      s += c < 0 ? " - " : " + ";
    else if (c < 0)
      s += "-";
    std::int64_t m = c < 0 ? -c : c;
    if (m != 1) s += std::to_string(m) + "*";
    s += d < dims.size() ? dims[d].name : "d" + std::to_string(d);
  }
  if (f.offset != 0 || s.empty()) {
    if (s.empty())
      s = std::to_string(f.offset);
    else
      s += (f.offset < 0 ? " - " : " + ") + std::to_string(f.offset < 0 ? -f.offset : f.offset);
  }
  return s;
}

inline std::string to_string(const access& a, const std::vector<dimension>& dims) {
  std::string s = "(";
  for (std::size_t k = 0; k < a.index.size(); ++k)
    s += (k ? ", " : "") + to_string(a.index[k], dims);
  return s + ")";
}

// Infix form of one node; `arg_names` names the leaves.
inline std::string to_string(const scalar_function& f, int n,
                             const std::vector<std::string>& arg_names) {
  const node& x = f.nodes.at(n);
  auto sub = [&](int k) { return to_string(f, k, arg_names); };
  auto infix = [&](const char* o) { return "(" + sub(x.a) + " " + o + " " + sub(x.b) + ")"; };
  switch (x.kind) {
    case op::arg:
      return x.index < int(arg_names.size()) ? arg_names[x.index] : "arg" + std::to_string(x.index);
    case op::constant:
      return format_number(x.value, x.type);
    case op::neg:
      return "-" + sub(x.a);
    case op::logical_not:
      return "!" + sub(x.a);
    case op::cast:
      return std::string(short_name(x.type)) + "(" + sub(x.a) + ")";
    case op::add:
      return infix("+");
    case op::sub:
      return infix("-");
    case op::mul:
      return infix("*");
    case op::div:
      return infix("/");
    case op::lt:
      return infix("<");
    case op::le:
      return infix("<=");
    case op::gt:
      return infix(">");
    case op::ge:
      return infix(">=");
    case op::eq:
      return infix("==");
    case op::ne:
      return infix("!=");
    case op::logical_and:
      return infix("&&");
    case op::logical_or:
      return infix("||");
    case op::min:
    case op::max:
      return std::string(name(x.kind)) + "(" + sub(x.a) + ", " + sub(x.b) + ")";
    case op::select:
      return "select(" + sub(x.a) + ", " + sub(x.b) + ", " + sub(x.c) + ")";
    default:
      return std::string(name(x.kind)) + "(" + sub(x.a) + ")";
  }
}

inline std::vector<std::string> arg_names(const computation& c) {
  std::vector<std::string> names;
  for (auto& b : c.inputs)
    for (std::size_t a = 0; a < b.accesses.size(); ++a)
      names.push_back(b.accesses.size() == 1 ? b.name : b.name + "#" + std::to_string(a));
  return names;
}

inline std::string combine_symbol(const computation& c, const dimension& d) {
  switch (d.combine) {
    case combine_kind::concat:
      return "++";
    case combine_kind::pointwise:
      return "pw(" + c.reduction.name + ")";
    case combine_kind::prefix_sum:
      return "ps(" + c.reduction.name + ")";
  }
  return "?";
}

// The MDH notation of the whole computation (stable: used in golden tests and dumps).
inline std::string to_string(const computation& c) {
  std::ostringstream os;
  std::string dims = "(";
  for (std::size_t d = 0; d < c.rank(); ++d) dims += (d ? "," : "") + c.dims[d].name;
  dims += ")";
  auto view = [&](const char* kind, const std::vector<buffer>& bufs) {
    os << kind << "<";
    for (std::size_t b = 0; b < bufs.size(); ++b) os << (b ? "," : "") << short_name(bufs[b].type);
    os << ">(";
    for (std::size_t b = 0; b < bufs.size(); ++b) {
      os << (b ? ", " : "") << bufs[b].name << ": " << dims << " -> ";
      for (std::size_t a = 0; a < bufs[b].accesses.size(); ++a)
        os << (a ? ", " : "") << to_string(bufs[b].accesses[a], c.dims);
    }
    os << ")";
  };
  os << c.name << " = ";
  view("out_view", c.outputs);
  os << "\n  o md_hom(f, (";
  for (std::size_t d = 0; d < c.rank(); ++d) os << (d ? ", " : "") << combine_symbol(c, c.dims[d]);
  os << "))\n  o ";
  view("inp_view", c.inputs);
  auto names = arg_names(c);
  os << "\n  f(";
  for (std::size_t a = 0; a < names.size(); ++a) os << (a ? ", " : "") << names[a];
  os << ") = ";
  if (c.f.results.size() != 1) os << "(";
  for (std::size_t r = 0; r < c.f.results.size(); ++r)
    os << (r ? ", " : "") << to_string(c.f, c.f.results[r], names);
  if (c.f.results.size() != 1) os << ")";
  if (c.reduction.kind == builtin::custom) {
    std::size_t m = c.reduction.identity.size();
    std::vector<std::string> cn;
    for (std::size_t r = 0; r < m; ++r) cn.push_back("l" + std::to_string(r));
    for (std::size_t r = 0; r < m; ++r) cn.push_back("r" + std::to_string(r));
    os << "\n  " << c.reduction.name << "(l, r) = (";
    for (std::size_t r = 0; r < c.reduction.custom.results.size(); ++r)
      os << (r ? ", " : "") << to_string(c.reduction.custom, c.reduction.custom.results[r], cn);
    os << "), identity (";
    for (std::size_t r = 0; r < m; ++r)
      os << (r ? ", " : "") << format_number(c.reduction.identity[r], c.outputs.at(r).type);
    os << ")";
  }
  bool converts = false;
  for (std::size_t r = 0; r < c.outputs.size() && r < c.f.results.size(); ++r)
    converts = converts || c.f.result_type(r) != c.outputs[r].type;
  if (converts) {  // bf16/f16 outputs or pw(op, accumulate<T>)
    os << "\n  computed in (";
    for (std::size_t r = 0; r < c.f.results.size(); ++r)
      os << (r ? "," : "") << short_name(c.f.result_type(r));
    os << "), stored as out_view's types";
  }
  if (reads_tf32(c)) os << "\n  precision tf32 (f32 inputs read as TF32)";
  if (splits_tf32(c)) os << "\n  precision tf32x3 (fp32 products as three TF32 products)";
  if (c.epilogue) {  // over the results, in registers: then name = out_view o inp_view, g(...)
    const pointwise_epilogue& e = *c.epilogue;
    os << "\n  then " << e.name << " = ";
    view("out_view", e.outputs);
    os << " o ";
    view("inp_view", e.inputs);
    std::vector<std::string> names;
    for (auto& b : e.inputs)
      for (std::size_t a = 0; a < b.accesses.size(); ++a)
        names.push_back(b.accesses.size() == 1 ? b.name : b.name + "#" + std::to_string(a));
    os << "\n  g(";
    for (std::size_t a = 0; a < names.size(); ++a) os << (a ? ", " : "") << names[a];
    os << ") = ";
    if (e.f.results.size() != 1) os << "(";
    for (std::size_t r = 0; r < e.f.results.size(); ++r)
      os << (r ? ", " : "") << to_string(e.f, e.f.results[r], names);
    if (e.f.results.size() != 1) os << ")";
  }
  return os.str();
}

}  // namespace mdh::ir
