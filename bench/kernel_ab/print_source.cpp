// SPDX-License-Identifier: MIT
// Prints the CUDA source mdh generates for a matmul parameter file (bf16, f16 or f32 by the
// file's workload types), optionally at other sizes or with configuration values overridden,
// headed by a line time_sources.cu reads: //@LAUNCH kernel grid.x grid.y grid.z block.x block.y
// block.z shared_bytes M N K. Lowered for an H100's limits (h200 with --h200).
//   print_source FILE.json [sizes M N K] [NAME VALUE ...] [--h200] > kernel.cu
// Build: g++ -std=c++20 -O1 -I. -I/usr/local/cuda/include bench/kernel_ab/print_source.cpp -o
// print_source
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <backends/cuda/emit.hpp>
#include <expressions/matmul.hpp>
#include <mdh/lower/lower.hpp>

namespace {
template <class T>
int print(const nlohmann::json& j, int argc, char** argv) {
  using namespace mdh;
  auto op = ops::matmul<T>();
  auto s = j.at("workload").at("sizes").get<std::vector<std::int64_t>>();
  auto c = lower::config_from_json(j.at("configuration"), op.ir());
  auto limits = lower::h100_limits();
  for (int a = 2; a < argc; ++a) {
    const std::string n = argv[a];
    if (n == "--h200") {
      limits = lower::h200_limits();
    } else if (n == "sizes" && a + 3 < argc) {
      s = {std::atoll(argv[a + 1]), std::atoll(argv[a + 2]), std::atoll(argv[a + 3])};
      a += 3;
    } else if (a + 1 < argc) {
      auto m = lower::to_full_map(c);
      if (!m.count(n)) throw error("print_source: no configuration parameter '" + n + "'");
      m[n] = std::atoll(argv[++a]);
      c = lower::from_map(m, 3, 2);
    } else {
      throw error("print_source: '" + n + "' needs a value");
    }
  }
  auto plan = lower::lower(op.ir(), s, c, limits);  // throws with the broken rule's name
  if (plan.kernels.size() != 1) throw error("print_source: the plan has several kernels");
  const auto& l = plan.kernels[0].launch;
  std::cout << "//@LAUNCH " << plan.kernels[0].name << " " << l.grid[0] << " " << l.grid[1] << " "
            << l.grid[2] << " " << l.block[0] << " " << l.block[1] << " " << l.block[2] << " "
            << l.shared_bytes << " " << s[0] << " " << s[1] << " " << s[2] << "\n"
            << cuda::emit(plan);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: print_source FILE.json [sizes M N K] [NAME VALUE ...] [--h200]\n";
    return 2;
  }
  try {
    const auto j = nlohmann::json::parse(std::ifstream(argv[1]));
    const auto types = j.at("workload").at("types").get<std::vector<std::string>>();
    if (j.at("workload").at("computation") != "matmul")
      throw mdh::error("print_source: " + std::string(argv[1]) + " is not a matmul's file");
    if (types.at(0) == "bf16") return print<mdh::bf16>(j, argc, argv);
    if (types.at(0) == "f16") return print<mdh::f16>(j, argc, argv);
    return print<float>(j, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
