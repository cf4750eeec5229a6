// SPDX-License-Identifier: MIT
// Tuning quality on a synthetic landscape: AUC bandit (the default) versus random search with the
// same number of evaluations, averaged over seeds. The landscape is a skewed bowl with coupled
// parameters over a constrained 6-D integer space; its optimum (cost 1) is known.
// Usage: atf_tuning_quality [seeds] [budget...]
#include <atf/atf.hpp>

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

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 20;
  std::vector<std::uint64_t> budgets;
  for (int i = 2; i < argc; ++i) budgets.push_back(std::strtoull(argv[i], nullptr, 10));
  if (budgets.empty()) budgets = {50, 100, 200, 400};

  std::vector<atf::tp> ps;
  for (int i = 0; i < 6; ++i)
    ps.emplace_back("p" + std::to_string(i), atf::interval<std::int64_t>(1, 32));
  atf::search_space space(ps, {ps[0] + ps[1] <= 40, ps[2] * ps[3] <= 96, ps[4] >= ps[5]});
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
        return tu.tune(space, landscape).best_cost;
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
  return 0;
}
