// SPDX-License-Identifier: MIT
// Reads a search space from JSON: the community T1 format (ConfigurationSpace.TuningParameters and
// Conditions) or the plain form {"parameters": [{"name", "values"}], "constraints": ["..."]}.
#pragma once

#include <atf/error.hpp>
#include <atf/expr.hpp>
#include <atf/expression_parser.hpp>
#include <atf/range.hpp>
#include <atf/search_space.hpp>
#include <atf/tp.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace atf {

struct space_description {
  std::string name;
  std::vector<tp> parameters;
  std::vector<expr> constraints;
  std::vector<std::string> constraint_texts;
  std::optional<std::uint64_t> valid_count;  // when the file states one
};

namespace detail {

// where() names the parameter in messages (built only for one).
template <class Where>
std::vector<value> json_values(const nlohmann::json& j, const Where& where,
                               std::string_view type) {
  std::vector<value> vals;
  if (j.is_string()) {
    try {
      vals = parse_values(j.get_ref<const std::string&>());
    } catch (const error& e) {
      throw error(where() + ": " + e.what());
    }
  } else if (j.is_array()) {
    vals.reserve(j.size());
    for (const auto& v : j) {
      if (v.is_number_integer())  // the common case, without a temporary variant
        vals.emplace_back(v.get<std::int64_t>());
      else
        vals.push_back(value_from_json(v, where()));
    }
  } else {
    throw error(where() + ": values must be a list or a string");
  }
  if (type == "float")
    for (auto& v : vals)
      if (auto* i = std::get_if<std::int64_t>(&v)) v = static_cast<double>(*i);
  if (vals.empty()) throw error(where() + ": range is empty");
  return vals;
}

}  // namespace detail

inline space_description parse_space_json(const nlohmann::json& doc, const std::string& where) {
  space_description d;
  auto add_param = [&](std::string name, std::vector<value> vals) {
    std::string desc;
    desc.reserve(name.size() + 12);
    desc.append("values of '").append(name).append("'");
    d.parameters.emplace_back(std::move(name), range(std::move(vals), std::move(desc)));
  };
  std::vector<std::string> texts;
  try {
    if (doc.contains("ConfigurationSpace")) {
      const auto& cs = doc.at("ConfigurationSpace");
      std::size_t i = 0;
      d.parameters.reserve(cs.at("TuningParameters").size());
      for (const auto& p : cs.at("TuningParameters")) {
        std::string name = p.at("Name").get<std::string>();
        std::string type = p.value("Type", std::string("int"));
        auto vals = detail::json_values(
            p.at("Values"), [&] { return where + ": parameter '" + name + "'"; }, type);
        add_param(std::move(name), std::move(vals));
        ++i;
      }
      if (cs.contains("Conditions"))
        for (const auto& c : cs.at("Conditions"))
          texts.push_back(c.at("Expression").get<std::string>());
      d.name = doc.value("name", std::string("T1 space"));
    } else {
      d.parameters.reserve(doc.at("parameters").size());
      for (const auto& p : doc.at("parameters")) {
        std::string name = p.at("name").get<std::string>();
        auto vals = detail::json_values(
            p.at("values"), [&] { return where + ": parameter '" + name + "'"; },
            p.value("type", std::string()));
        add_param(std::move(name), std::move(vals));
      }
      if (doc.contains("constraints"))
        for (const auto& c : doc.at("constraints")) texts.push_back(c.get<std::string>());
      d.name = doc.value("name", std::string());
      if (doc.contains("valid_count")) d.valid_count = doc.at("valid_count").get<std::uint64_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw error(where + ": not a search-space description: " + e.what());
  }
  // Known names as a sorted list (they live in d.parameters, which no longer grows).
  std::vector<std::string_view> known;
  known.reserve(d.parameters.size());
  for (const auto& p : d.parameters) known.emplace_back(p.name());
  std::sort(known.begin(), known.end());
  d.constraints.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    try {
      d.constraints.push_back(parse_expression(texts[i], known));
    } catch (const error& e) {
      throw error(where + ": constraint " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  d.constraint_texts = std::move(texts);
  return d;
}

inline space_description read_space_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw error("cannot open search-space file " + path.string());
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw error(path.string() + ": invalid JSON: " + e.what());
  }
  return parse_space_json(doc, path.string());
}

inline search_space make_space(const space_description& d, space_options opts = {}) {
  return search_space(d.parameters, d.constraints, opts);
}

}  // namespace atf
