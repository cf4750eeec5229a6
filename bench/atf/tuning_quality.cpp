// SPDX-License-Identifier: MIT
// Tuning quality on synthetic landscapes: AUC bandit (the default) versus random search with the
// same number of evaluations, averaged over seeds. Landscape 1 is a skewed bowl with coupled
// parameters over a constrained 6-D integer space; landscape 2 is rugged (a Rastrigin-like bowl
// with many local minima) over a constrained 5-D space. Both optima (cost 1) are known.
// Usage: atf_tuning_quality [seeds] [budget...]
#include <atf/atf.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

const std::int64_t target[6] = {23, 9, 14, 5, 30, 17};
const double weight[6] = {1.0, 3.0, 0.5, 2.0, 0.25, 1.5};

double landscape(const atf::configuration& c) {
  double x[6], cost = 1;
  for (int i = 0; i < 6; ++i)
    x[i] = static_cast<double>(c.get<std::int64_t>("p" + std::to_string(i)));
  for (int i = 0; i < 6; ++i) cost += weight[i] * (x[i] - target[i]) * (x[i] - target[i]);
  const double coupled = (x[0] - x[1]) - (target[0] - target[1]);
  return cost + 0.5 * coupled * coupled;
}

const std::int64_t target2[5] = {37, 11, 50, 4, 26};

double rugged(const atf::configuration& c) {
  double cost = 1;
  for (int i = 0; i < 5; ++i) {
    const double d =
        static_cast<double>(c.get<std::int64_t>("q" + std::to_string(i)) - target2[i]);
    cost += d * d / 8 + 10 * (1 - std::cos(2 * 3.14159265358979323846 * d / 5));
  }
  return cost;
}

template <class F>
void compare(const atf::search_space& space, F&& cost, int seeds,
             const std::vector<std::uint64_t>& budgets) {
  std::printf("space: %s valid configurations of %.0f, optimum cost 1\n",
              atf::to_string(space.size()).c_str(), space.cartesian_size());
  std::printf("%8s %16s %16s %22s %12s\n", "budget", "random (mean)", "auc_bandit (mean)",
              "auc better on seeds", "ratio");
  for (auto budget : budgets) {
    double sum_r = 0, sum_a = 0;
    int wins = 0;
    for (int s = 1; s <= seeds; ++s) {
      auto run = [&](std::unique_ptr<atf::search::technique> t) {
        atf::tuner tu;
        tu.technique(std::move(t))
            .seed(static_cast<std::uint64_t>(s))
            .progress(atf::progress_mode::off);
        tu.abort_when(atf::abort::evaluations(budget));
        return tu.tune(space, cost).best_cost;
      };
      const double r = run(std::make_unique<atf::search::random>());
      const double a = run(std::make_unique<atf::search::auc_bandit>());
      sum_r += r;
      sum_a += a;
      wins += a < r;
    }
    std::printf("%8llu %16.2f %16.2f %17d / %-3d %11.2fx\n",
                static_cast<unsigned long long>(budget), sum_r / seeds, sum_a / seeds, wins, seeds,
                (sum_r / seeds) / (sum_a / seeds));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 20;
  std::vector<std::uint64_t> budgets;
  for (int i = 2; i < argc; ++i) budgets.push_back(std::strtoull(argv[i], nullptr, 10));
  if (budgets.empty()) budgets = {25, 50, 100, 200, 400};

  std::printf("landscape 1: skewed coupled bowl\n");
  std::vector<atf::tp> ps;
  for (int i = 0; i < 6; ++i)
    ps.emplace_back("p" + std::to_string(i), atf::interval<std::int64_t>(1, 32));
  atf::search_space space(ps, {ps[0] + ps[1] <= 40, ps[2] * ps[3] <= 96, ps[4] >= ps[5]});
  compare(space, landscape, seeds, budgets);

  std::printf("\nlandscape 2: rugged (Rastrigin-like)\n");
  std::vector<atf::tp> qs;
  for (int i = 0; i < 5; ++i)
    qs.emplace_back("q" + std::to_string(i), atf::interval<std::int64_t>(0, 63));
  atf::search_space space2(qs, {qs[0] + qs[1] <= 80, qs[2] >= qs[3] * 2});
  compare(space2, rugged, seeds, budgets);
  return 0;
}
