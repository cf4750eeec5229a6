// SPDX-License-Identifier: MIT
// atf::configuration (name -> value for every parameter) and atf::partial_config (the values
// fixed so far, as seen by a constraint while the space is generated).
#pragma once

#include <atf/error.hpp>
#include <atf/value.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace atf {

class configuration {
 public:
  using entry = std::pair<std::string, value>;

  configuration() = default;
  explicit configuration(std::vector<entry> entries) : entries_(std::move(entries)) {}

  // Throws atf::error naming the parameter when it is missing or of another type.
  template <class T>
  T get(std::string_view name) const {
    const value& v = at(name);
    T out{};
    if (!detail::try_value_as(v, out))
      throw error("configuration: parameter '" + std::string(name) + "' holds a " +
                  detail::type_name(v) + " (" + atf::to_string(v) + "), not the requested type");
    return out;
  }

  const value& at(std::string_view name) const {
    if (const value* v = find(name)) return *v;
    throw error("configuration: no parameter named '" + std::string(name) + "'");
  }
  const value* find(std::string_view name) const {
    for (const auto& [n, v] : entries_)
      if (n == name) return &v;
    return nullptr;
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  void set(std::string name, value v) {
    for (auto& [n, old] : entries_)
      if (n == name) return void(old = std::move(v));
    entries_.emplace_back(std::move(name), std::move(v));
  }

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  const std::vector<entry>& entries() const { return entries_; }

  nlohmann::json to_json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [n, v] : entries_) j[n] = atf::to_json(v);
    return j;
  }
  static configuration from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw error("configuration: expected a JSON object, got " + j.dump());
    configuration c;
    for (const auto& [n, v] : j.items()) c.entries_.emplace_back(n, value_from_json(v, n));
    return c;
  }

  // Stable text form, independent of entry order: "a=1;b=2.5;c=true;d=\"x\"" sorted by name.
  std::string key() const {
    std::vector<const entry*> sorted;
    for (const auto& e : entries_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(),
              [](const entry* a, const entry* b) { return a->first < b->first; });
    std::string s;
    for (const entry* e : sorted) {
      if (!s.empty()) s += ';';
      s += e->first + '=' + atf::to_string(e->second);
    }
    return s;
  }
  std::string to_string() const { return "{" + key() + "}"; }

  friend bool operator==(const configuration& a, const configuration& b) {
    return a.key() == b.key();
  }

 private:
  std::vector<entry> entries_;
};

// What a constraint sees during generation: the parameters fixed so far. Reading a parameter that
// the constraint did not list among its dependencies is an error (the order would be wrong).
class partial_config {
 public:
  partial_config(const std::unordered_map<std::string, std::size_t>* index,
                 const value* const* current, const std::string* owner,
                 const std::vector<std::size_t>* reads = nullptr)
      : index_(index), current_(current), owner_(owner), reads_(reads) {}

  // The k-th parameter of the constraint's `reads` (duplicates and its own parameter left
  // out), without a look-up by name: for constraints evaluated at every node of a large tree.
  template <class T>
  T get_read(std::size_t k) const {
    if (!reads_ || k >= reads_->size())
      throw error("constraint of '" + *owner_ + "' reads its parameter " + std::to_string(k) +
                  ", beyond its dependency list");
    const value* v = current_[(*reads_)[k]];
    T out{};
    if (!v || !detail::try_value_as(*v, out))
      throw error("constraint of '" + *owner_ + "': its parameter " + std::to_string(k) +
                  " is not set or not of the requested type");
    return out;
  }

  template <class T>
  T get(std::string_view name) const {
    const value& v = at(name);
    T out{};
    if (!detail::try_value_as(v, out))
      throw error("constraint of '" + *owner_ + "': parameter '" + std::string(name) +
                  "' holds a " + detail::type_name(v) + ", not the requested type");
    return out;
  }
  const value& at(std::string_view name) const {
    auto it = index_->find(std::string(name));
    if (it == index_->end())
      throw error("constraint of '" + *owner_ + "' reads unknown parameter '" + std::string(name) +
                  "'");
    const value* v = current_[it->second];
    if (!v)
      throw error("constraint of '" + *owner_ + "' reads '" + std::string(name) +
                  "', which is not in its dependency list");
    return *v;
  }

 private:
  const std::unordered_map<std::string, std::size_t>* index_;
  const value* const* current_;
  const std::string* owner_;
  const std::vector<std::size_t>* reads_;
};

}  // namespace atf
