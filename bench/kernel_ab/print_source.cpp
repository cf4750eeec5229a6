// SPDX-License-Identifier: MIT
// Prints the CUDA source mdh generates for a parameter file of a catalog operator (the file's
// workload.computation: matmul, tccg_abcd_aebf_dfce, ...; bf16, f16 or f32 by the file's
// workload types), optionally at other sizes or with configuration values overridden, headed by
// a line time_sources.cu reads: //@LAUNCH kernel grid.x grid.y grid.z block.x block.y block.z
// shared_bytes M N K for a matmul; for any other operator //@LAUNCH kernel grid block shared and
// a line //@EINSUM with the sizes and, per input and output (kernel parameter order), the
// dimension of each coordinate ("//@EINSUM 48 48 48 48 48 48 ; in A 0 4 1 5 ; in B 3 5 2 4 ; out
// C 0 1 2 3"), and //@SCRATCH with the bytes of each partials or counters parameter (a block
// combine's), which follow the outputs. Only plain contractions (every coordinate one dimension
// with coefficient 1) get the //@EINSUM line; time_sources refuses other operators. Lowered for an
// H100's limits (h200 with
// --h200).
//   print_source FILE.json [sizes S0 S1 ...] [start N] [NAME VALUE ...] [--h200] > kernel.cu
//   print_source FILE.json [sizes S0 S1 ...] starts [--h200]      (lists the SIMT starts)
// (sizes takes one value per dimension of the operator: M N K for a matmul; `start N` replaces
// the file's configuration by the N-th SIMT start configuration of tuning/start_configurations
// at these sizes, counted from 0 as `starts` lists them; overrides after it apply to it.)
// Build: g++ -std=c++20 -O1 -I. -I/usr/local/cuda/include bench/kernel_ab/print_source.cpp -o
// print_source
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>

#include <backends/cuda/emit.hpp>
#include <expressions/catalog.hpp>
#include <mdh/lower/lower.hpp>
#include <tuning/start_configurations.hpp>

namespace {
// " ; in A 0 4 1 5 ; in B 3 5 2 4 ; out C 0 1 2 3", or nothing when some coordinate is not one
// dimension with coefficient 1 or a buffer is accessed more than once.
std::optional<std::string> einsum_buffers(const mdh::ir::computation& c) {
  std::ostringstream o;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& b : pass == 0 ? c.inputs : c.outputs) {
      if (b.accesses.size() != 1) return std::nullopt;
      o << (pass == 0 ? " ; in " : " ; out ") << b.name;
      for (const auto& f : b.accesses[0].index) {
        int dim = -1;
        for (std::size_t d = 0; d < f.coeff.size(); ++d)
          if (f.coeff[d] != 0) {
            if (dim >= 0 || f.coeff[d] != 1) return std::nullopt;
            dim = int(d);
          }
        if (dim < 0 || f.offset != 0) return std::nullopt;
        o << " " << dim;
      }
    }
  }
  return o.str();
}

template <class Comp>
int print(const Comp& op, const nlohmann::json& j, int argc, char** argv) {
  using namespace mdh;
  const auto& ir = op.ir();
  const bool matmul = ir.name == "matmul";
  auto s = j.at("workload").at("sizes").get<std::vector<std::int64_t>>();
  auto c = lower::config_from_json(j.at("configuration"), ir);
  auto limits = lower::h100_limits();
  for (int a = 2; a < argc; ++a)
    if (std::string(argv[a]) == "--h200") limits = lower::h200_limits();
  for (int a = 2; a < argc; ++a) {
    const std::string n = argv[a];
    if (n == "--h200") {
    } else if (n == "starts") {
      const auto starts = tuning::simt_start_configurations(ir, s, limits);
      for (std::size_t k = 0; k < starts.size(); ++k)
        std::cout << k << ": " << lower::to_string(starts[k]) << "\n";
      return 0;
    } else if (n == "start" && a + 1 < argc) {
      const auto starts = tuning::simt_start_configurations(ir, s, limits);
      const auto k = std::size_t(std::atoll(argv[++a]));
      if (k >= starts.size())
        throw error("print_source: start " + std::to_string(k) + " of " +
                    std::to_string(starts.size()));
      c = starts[k];
    } else if (n == "sizes" && a + int(ir.rank()) < argc) {
      for (std::size_t d = 0; d < ir.rank(); ++d) s[d] = std::atoll(argv[++a]);
    } else if (a + 1 < argc) {
      auto m = lower::to_full_map(c);
      if (!m.count(n)) throw error("print_source: no configuration parameter '" + n + "'");
      m[n] = std::atoll(argv[++a]);
      c = lower::from_map(m, ir.rank(), ir.inputs.size());
    } else {
      throw error("print_source: '" + n + "' needs a value");
    }
  }
  auto plan = lower::lower(ir, s, c, limits);  // throws with the broken rule's name
  if (matmul && plan.kernels.size() != 1) throw error("print_source: the plan has several kernels");
  for (const auto& k : plan.kernels) {  // in launch order (an atomic combine's _init first)
    const auto& l = k.launch;
    std::cout << "//@LAUNCH " << k.name << " " << l.grid[0] << " " << l.grid[1] << " " << l.grid[2]
              << " " << l.block[0] << " " << l.block[1] << " " << l.block[2] << " "
              << l.shared_bytes;
    if (matmul) std::cout << " " << s[0] << " " << s[1] << " " << s[2];
    std::cout << "\n";
  }
  if (!matmul) {
    if (auto e = einsum_buffers(ir)) {
      std::cout << "//@EINSUM";
      for (auto x : s) std::cout << " " << x;
      std::cout << *e << "\n";
    }
    // the parameters after the outputs: partials and counters, zeroed once before the launches
    if (!plan.partials.empty() || !plan.counters.empty()) {
      std::cout << "//@SCRATCH";
      for (const auto* v : {&plan.partials, &plan.counters})
        for (const auto& g : *v)
          std::cout << " " << g.elements * 8;  // bytes, 8 per element at most
      std::cout << "\n";
    }
  }
  std::cout << cuda::emit(plan);
  return 0;
}

template <class T>
int print_operator(const std::string& name, const nlohmann::json& j, int argc, char** argv) {
  int rc = -1;
  mdh::ops::for_each_operator<T>([&](const mdh::ops::catalog_entry& e, auto make) {
    if (rc != -1 || e.name != name) return;
    auto comp = make(j.at("workload").at("sizes").get<std::vector<std::int64_t>>());
    if constexpr (mdh::is_fused_v<decltype(comp)>)
      throw mdh::error("print_source: " + name + " is a fused pair (not printed here)");
    else
      rc = print(comp, j, argc, argv);
  });
  if (rc == -1) throw mdh::error("print_source: no catalog operator '" + name + "'");
  return rc;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: print_source FILE.json [sizes S0 S1 ...] [start N | starts] [NAME VALUE "
                 "...] [--h200]\n";
    return 2;
  }
  try {
    const auto j = nlohmann::json::parse(std::ifstream(argv[1]));
    const auto types = j.at("workload").at("types").get<std::vector<std::string>>();
    const auto name = j.at("workload").at("computation").get<std::string>();
    if (types.at(0) == "bf16") return print_operator<mdh::bf16>(name, j, argc, argv);
    if (types.at(0) == "f16") return print_operator<mdh::f16>(name, j, argc, argv);
    return print_operator<float>(name, j, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
