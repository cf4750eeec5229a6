// SPDX-License-Identifier: MIT
// How well atf's kNN cost model (atf/search/cost_model.hpp) ranks configurations it has not
// seen, replayed on tuning logs measured on a GPU: trained on a log's first TRAIN records (in the
// order the search measured them), asked about the next TEST ones, compared with what was
// measured. No GPU needed: the logs hold the measurements.
//   cost_model_replay [--train N=300] [--test N=2000] [--no-fit] [--min-precision P] LOG.jsonl...
// Per log: the Spearman rank correlation of predicted and measured cost; the share of the true
// best tenth that the model's best tenth holds (chance: 0.10); the best measured cost inside
// the model's best tenth over the best of all TEST records (1.000: the model's tenth holds the
// best), against the same for the first tenth in the search's own order.
// The model fits its feature weights on the TRAIN records first (knn_cost_model::fit_weights),
// as the surrogate search does; --no-fit: every feature weighs 1.
// --min-precision P: exit 1 when the mean top-tenth share is below P.
#include <atf/atf.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace {

struct record {
  atf::configuration config;
  double cost;  // +inf: invalid
};

std::vector<record> read_records(const std::string& path, std::vector<std::string>& names) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<record> out;
  std::string line;
  std::size_t n = 0;
  nlohmann::json header;  // names a format-3 record's configuration values
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(n) + ": not JSON (" + e.what() + ")");
    }
    if (j.contains("parameters")) {
      names = j["parameters"].get<std::vector<std::string>>();
      header = j;
      continue;
    }
    if (!j.contains("configuration")) continue;
    const bool valid = j.value("valid", false);
    out.push_back(
        {atf::configuration::from_json(atf::named_configuration(header, j["configuration"])),
         valid ? j.at("cost").get<double>() : atf::search::invalid_cost});
  }
  return out;
}

// The log's parameters with the values it holds, in increasing order, as an unconstrained
// space: enough for the features (each value's place in its parameter's range).
atf::search_space space_of(const std::vector<record>& rs, const std::vector<std::string>& names) {
  std::vector<atf::tp> tps;
  for (const auto& name : names) {
    std::vector<atf::value> vals;
    for (const auto& r : rs)
      if (const atf::value* v = r.config.find(name);
          v && std::find(vals.begin(), vals.end(), *v) == vals.end())
        vals.push_back(*v);
    std::sort(vals.begin(), vals.end());
    tps.emplace_back(name, atf::set(vals));
  }
  return atf::search_space(tps);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t train = 300, test = 2000;
  double min_precision = -1;
  bool fit = true;
  std::vector<std::string> logs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--train")
      train = std::stoul(next());
    else if (a == "--test")
      test = std::stoul(next());
    else if (a == "--no-fit")
      fit = false;
    else if (a == "--min-precision")
      min_precision = std::stod(next());
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "cost_model_replay: unknown option %s\n", a.c_str());
      return 2;
    } else
      logs.push_back(a);
  }
  if (logs.empty()) {
    std::fprintf(stderr,
                 "usage: cost_model_replay [--train N] [--test N] [--no-fit] [--min-precision P] "
                 "LOG...\n");
    return 2;
  }
  std::printf(
      "| log | records | train | test | Spearman | top tenth held | best in model's tenth "
      "| best in search order's first tenth |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  double sum_precision = 0;
  int counted = 0;
  for (const auto& path : logs) {
    std::vector<std::string> names;
    auto rs = read_records(path, names);
    const auto name = path.substr(path.find_last_of('/') + 1);
    if (rs.size() < train + 50) {
      std::printf("| %s | %zu | too few records for --train %zu |\n", name.c_str(), rs.size(),
                  train);
      continue;
    }
    auto space = space_of(rs, names);
    atf::search::point_features features(space);
    atf::search::knn_cost_model model;
    for (std::size_t i = 0; i < train; ++i)
      model.add(features(*space.find(rs[i].config)), rs[i].cost);
    if (fit) model.fit_weights();
    // invalid test records count as the worst valid cost times four, as the model counts them
    double worst = 0;
    for (const auto& r : rs)
      if (std::isfinite(r.cost)) worst = std::max(worst, r.cost);
    std::vector<double> predicted, measured;
    for (std::size_t i = train; i < rs.size() && i < train + test; ++i) {
      predicted.push_back(model.predict(features(*space.find(rs[i].config))));
      measured.push_back(std::log(std::isfinite(rs[i].cost) ? rs[i].cost : 4 * worst));
    }
    const std::size_t tenth = std::max<std::size_t>(1, measured.size() / 10);
    auto order = [](const std::vector<double>& v) {
      std::vector<std::size_t> o(v.size());
      std::iota(o.begin(), o.end(), std::size_t{0});
      std::stable_sort(o.begin(), o.end(), [&](auto a, auto b) { return v[a] < v[b]; });
      return o;
    };
    auto by_model = order(predicted), by_truth = order(measured);
    std::vector<std::size_t> a(by_model.begin(), by_model.begin() + tenth),
        b(by_truth.begin(), by_truth.begin() + tenth);
    std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
    std::vector<std::size_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    const double precision = static_cast<double>(both.size()) / static_cast<double>(tenth);
    double best = measured[by_truth[0]], best_model = 1e300, best_first = 1e300;
    for (auto i : a) best_model = std::min(best_model, measured[i]);
    for (std::size_t i = 0; i < tenth; ++i) best_first = std::min(best_first, measured[i]);
    std::printf("| %s | %zu | %zu | %zu | %.2f | %.2f | %.3f | %.3f |\n", name.c_str(), rs.size(),
                train, measured.size(), atf::search::rank_correlation(predicted, measured),
                precision, std::exp(best_model - best), std::exp(best_first - best));
    sum_precision += precision, ++counted;
  }
  if (counted == 0) return 1;
  const double mean = sum_precision / counted;
  std::printf("\nmean share of the true best tenth in the model's best tenth: %.2f (chance 0.10)\n",
              mean);
  if (min_precision >= 0 && mean < min_precision) {
    std::printf("below --min-precision %.2f\n", min_precision);
    return 1;
  }
  return 0;
}
