// SPDX-License-Identifier: MIT
// The generated source, pinned: every configuration the CI sweeps compile (NVRTC and PoCL,
// fused pairs included) and every committed parameter file, printed in both dialects (CUDA C and
// OpenCL C), hashed with FNV-1a and compared with tests/backends/source_hashes.txt. A change of
// the lowering that is meant to leave the kernels alone must leave every hash alone. Needs no GPU
// and no OpenCL device: it only lowers and prints.
//
// The configurations are enumerated here, the way the sweeps did when the list was written (same
// samples, sizes, seeds and limits), so shrinking a sweep does not change this test.
// To rewrite the list after a deliberate change of the kernels:
//   MDH_WRITE_SOURCE_HASHES=tests/backends/source_hashes.txt
//   build/tests/backends/backends_source_hashes
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <backends/cuda/emit.hpp>
#include <backends/opencl/emit.hpp>
#include <expressions/all.hpp>
#include <expressions/benchmark_cases.hpp>
#include <expressions/bert_layer.hpp>
#include <expressions/catalog.hpp>
#include <mdh/fused.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/kernel_generation.hpp>
#include <mdh/lower/fuse.hpp>
#include <mdh/lower/lower.hpp>
#include <mdh/lower/producer_passes.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/tuning/parameter_file.hpp>

#include "fused_cases.hpp"
#include "ir_samples.hpp"

using namespace mdh;
using mdh::test::layernorm_pair;
using mdh::test::map_then_rowsum;
using mdh::test::map_then_scan;
using mdh::test::softmax_pair;
namespace fs = std::filesystem;

namespace {

// One printed source: the hash of its configuration's text (to tell a changed enumeration from a
// changed kernel), the hash of the source, and the configuration (for messages; not stored).
struct entry {
  std::string config_hash;
  std::string hash;
  std::string config;
};
using entries = std::map<std::string, entry>;

std::string fnv_hex(const std::string& text) {
  ir::fnv1a h;
  h.bytes(text.data(), text.size());
  return ir::hex16(h.value());
}

std::string sizes_text(const std::vector<std::int64_t>& s) {
  std::string t;
  for (auto v : s) t += (t.empty() ? "" : "x") + std::to_string(v);
  return t;
}

// Lowers and prints in both dialects; a configuration that fails to lower is pinned by its message.
template <class Comp, class Config>
void pin(entries& out, const std::string& key, const Comp& comp,
         const std::vector<std::int64_t>& sizes, const Config& cfg,
         const lower::device_limits& lim) {
  const std::string text = lower::to_string(cfg), text_hash = fnv_hex(text);
  try {
    auto plan = lower::lower(comp, sizes, cfg, lim);
    out[key + "/cuda"] = {text_hash, fnv_hex(cuda::emit(plan)), text};
    out[key + "/opencl"] = {text_hash, fnv_hex(opencl::emit(plan)), text};
  } catch (const std::exception& e) {
    out[key + "/error"] = {text_hash, fnv_hex(e.what()), text};
  }
}

// The limits the OpenCL sweeps read from PoCL on the CI machine (pthread device, 2 compute units,
// 1 MiB local memory, work-groups up to 4096), named "pocl-cpu" as the sweeps name them.
lower::device_limits sweep_pocl_limits() {
  lower::device_limits l;
  l.name = "pocl-cpu";
  l.max_threads_per_block = 4096;
  for (int a = 0; a < 3; ++a) l.max_block[a] = 4096, l.max_grid[a] = 2147483647;
  l.shared_per_block = l.shared_per_block_optin = 1024 * 1024;
  l.sm_count = 2;
  l.warp_size = 1;
  return l;
}

// The IR samples of the sweeps (tests/backends/ir_samples.hpp), at the sweeps' sizes.
std::vector<test::sample> samples() {
  return {{test::matmul(), {13, 17, 19}},
          {test::max_count(), {7, 23}},
          {test::softmax_stats(), {5, 37}},
          {test::jacobi2d(), {11, 29}},
          {test::scan_rows(), {6, 19}},
          {test::scan_reduce(), {5, 7, 9}},
          {test::broadcast4d(), {2, 3, 5, 7}},
          {test::sum_sumsq(), {9, 31}},
          {test::conv1d_s2(), {23, 5}},
          {test::imax(), {7, 13}},
          {test::ddot(), {101}},
          {test::broadcast4d(), {2, 3, 5, 16}},
          {test::matmul(), {6, 20, 7}}};
}

// The operator library at the sweeps' small sizes (tests/backends/expression_cases.hpp).
template <class Visit>
void for_each_operator_case(Visit&& visit) {
  using namespace mdh::ops;
  using sz = std::vector<std::int64_t>;
  visit(std::string_view("attn_mask_add"), attn_mask_add(), sz{2, 3, 5, 7});
  visit(std::string_view("batch_matmul_nt"), batch_matmul<float, false, true>(), sz{2, 3, 5, 7, 6});
  visit(std::string_view("batch_matmul_tn"), batch_matmul<float, true, false>(), sz{2, 1, 5, 7, 6});
  visit(std::string_view("bert_mask"), bert_mask(), sz{2, 1, 7, 9});
  visit(std::string_view("bias_add"), bias_add(), sz{2, 3, 5, 7});
  visit(std::string_view("bias_add_grad"), bias_add_grad(), sz{37, 11});
  visit(std::string_view("bias_gelu"), bias_gelu(), sz{7, 13});
  visit(std::string_view("bmatmul"), bmatmul(), sz{2, 5, 7, 9});
  visit(std::string_view("ccsd_t"), ccsd_t(), sz{3, 2, 3, 2, 3, 2, 3});
  visit(std::string_view("conv2d"), conv2d(), sz{7, 6, 3, 3});
  visit(std::string_view("dot"), dot(), sz{257});
  visit(std::string_view("expand_dims"), expand_dims<1, 3>(), sz{3, 1, 5});
  visit(std::string_view("histogram"), histogram(), sz{97, 11});
  visit(std::string_view("jacobi1d"), jacobi1d(), sz{29});
  visit(std::string_view("jacobi2d"), jacobi2d(), sz{9, 11});
  visit(std::string_view("jacobi3d"), jacobi3d(), sz{5, 6, 7});
  visit(std::string_view("layernorm_stats"), layernorm_stats(), sz{7, 33});
  visit(std::string_view("layernorm_normalize"), layernorm_normalize(33), sz{7, 33});
  visit(std::string_view("matmul"), matmul(), sz{13, 17, 19});
  visit(std::string_view("matmul_t"), matmul_t(), sz{13, 17, 19});
  visit(std::string_view("matvec"), matvec(), sz{13, 29});
  visit(std::string_view("mbbs"), mbbs(), sz{9, 7});
  visit(std::string_view("mcc_s2"), mcc(2, 2), sz{2, 3, 3, 4, 3, 3, 2});
  visit(std::string_view("mcc_capsule"), mcc_capsule(), sz{2, 2, 2, 2, 2, 2, 2, 2, 2, 2});
  visit(std::string_view("mcc_nchw"), mcc_nchw(), sz{2, 3, 4, 4, 2, 3, 3});
  visit(std::string_view("multiply"), multiply(), sz{7, 13});
  visit(std::string_view("prl"), prl(), sz{13, 17});
  visit(std::string_view("reduce"), reduce(), sz{101});
  visit(std::string_view("reduce_sum_max"), reduce_sum_max(), sz{101});
  visit(std::string_view("scan"), scan(), sz{37});
  visit(std::string_view("softmax_stats"), softmax_stats(), sz{5, 37});
  visit(std::string_view("softmax_normalize"), softmax_normalize(), sz{5, 37});
  visit(std::string_view("subtract"), subtract(), sz{7, 13});
}

// The fused pairs of tests/backends/test_fused.cpp.

// Every configuration of the sweeps and every parameter file, hashed.
entries current() {
  entries out;
  // backends_cuda_nvrtc: edge + 20 random configurations per sample, then per operator; one
  // generator for all of them.
  {
    const auto lim = lower::h200_limits();
    std::mt19937_64 rng(99);
    for (auto& s : samples()) {
      auto cfgs = lower::edge_configs(s.comp, s.sizes, lim);
      for (int k = 0; k < 20; ++k) cfgs.push_back(lower::random_config(s.comp, s.sizes, lim, rng));
      const std::string stem = "nvrtc/" + s.comp.name + "_" + sizes_text(s.sizes) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), s.comp, s.sizes, cfgs[k], lim);
    }
    for_each_operator_case([&](std::string_view name, const auto& op, const auto& sizes) {
      const ir::computation& c = mdh::describe(op);
      auto cfgs = lower::edge_configs(c, sizes, lim);
      for (int k = 0; k < 20; ++k) cfgs.push_back(lower::random_config(c, sizes, lim, rng));
      const std::string stem = "nvrtc/expressions/" + std::string(name) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), c, sizes, cfgs[k], lim);
    });
  }
  // backends_opencl: per sample, seed 1234; backends_expressions_opencl: per operator, seeded by
  // the name's std::hash.
  {
    const auto lim = sweep_pocl_limits();
    for (auto& s : samples()) {
      std::mt19937_64 rng(1234);
      auto cfgs = lower::edge_configs(s.comp, s.sizes, lim);
      for (int k = 0; k < 20; ++k)
        cfgs.push_back(lower::random_config(s.comp, s.sizes, lim, rng, {64, 2000}));
      const std::string stem = "pocl/" + s.comp.name + "_" + sizes_text(s.sizes) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), s.comp, s.sizes, cfgs[k], lim);
    }
    for_each_operator_case([&](std::string_view name, const auto& op, const auto& sizes) {
      const ir::computation& c = mdh::describe(op);
      std::mt19937_64 rng(std::hash<std::string_view>{}(name));
      auto cfgs = lower::edge_configs(c, sizes, lim);
      for (int k = 0; k < 20; ++k)
        cfgs.push_back(lower::random_config(c, sizes, lim, rng, {64, 2000}));
      const std::string stem = "pocl/expressions/" + std::string(name) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), c, sizes, cfgs[k], lim);
    });
  }
  // backends_fused: the OpenCL sweeps (default + randoms, one generator per call) and the NVRTC
  // sweep (one generator over four pairs).
  {
    const auto lim = sweep_pocl_limits();
    auto sweep = [&](const auto& f, const std::vector<std::int64_t>& sizes, int randoms,
                     std::uint64_t seed) {
      std::mt19937_64 rng(seed);
      std::vector<lower::fused_config> cfgs{lower::default_config(f.ir(), sizes)};
      for (int k = 0; k < randoms; ++k)
        cfgs.push_back(lower::random_config(f.ir(), sizes, lim, rng, {64, 2000}));
      const std::string stem = "pocl/fused/" + f.name() + "_" + sizes_text(sizes) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), f.ir(), sizes, cfgs[k], lim);
    };
    sweep(softmax_pair(), {37, 50}, 12, 11);
    sweep(softmax_pair(), {8, 128}, 8, 12);
    sweep(layernorm_pair(96), {19, 96}, 12, 13);
    sweep(layernorm_pair(5), {64, 5}, 6, 14);
    sweep(map_then_rowsum(), {29, 40}, 10, 15);
    sweep(map_then_scan(), {23, 31}, 10, 16);
  }
  {
    const auto lim = lower::h200_limits();
    std::mt19937_64 rng(5);
    auto sweep = [&](const auto& f, const std::vector<std::int64_t>& sizes) {
      std::vector<lower::fused_config> cfgs{lower::default_config(f.ir(), sizes)};
      for (int k = 0; k < 6; ++k)
        cfgs.push_back(lower::random_config(f.ir(), sizes, lim, rng, {1024, 2000}));
      const std::string stem = "nvrtc/fused/" + f.name() + "_" + sizes_text(sizes) + "/";
      for (std::size_t k = 0; k < cfgs.size(); ++k)
        pin(out, stem + std::to_string(k), f.ir(), sizes, cfgs[k], lim);
    };
    sweep(softmax_pair(), {24576, 128});
    sweep(layernorm_pair(768), {2048, 768});
    sweep(map_then_rowsum(), {1000, 300});
    sweep(map_then_scan(), {1000, 300});
  }
  // Every committed parameter file, found by its workload's hash among the library's operators.
  const char* src = std::getenv("MDH_SOURCE_DIR");
  REQUIRE_MESSAGE(src, "MDH_SOURCE_DIR (set by CTest) names the repository");
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(fs::path(src) / "params"))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (auto& file : files) {
    auto rec = tuning::read_parameter_file(file);
    // by model ("NVIDIA H100 80GB HBM3" is an H100)
    auto is = [&](const char* model) { return rec.device.name.rfind(model, 0) == 0; };
    const auto lim = is("NVIDIA H200")   ? lower::h200_limits()
                     : is("NVIDIA H100") ? lower::h100_limits()
                                         : lower::pocl_cpu_limits();
    const std::string key =
        "params/" + fs::relative(file, fs::path(src) / "params").generic_string();
    bool found = false;
    auto try_one = [&](const auto& comp) {
      if (found) return;
      if constexpr (is_fused_v<std::decay_t<decltype(comp)>> ||
                    is_produced_v<std::decay_t<decltype(comp)>>) {
        if (ir::structural_hash_hex(comp.ir()) != rec.work.hash) return;
        found = true;
        pin(out, key, comp.ir(), rec.work.sizes,
            lower::config_from_json(rec.configuration, comp.ir()), lim);
      } else {
        const ir::computation& c = mdh::describe(comp);
        if (ir::structural_hash_hex(c) != rec.work.hash) return;
        found = true;
        pin(out, key, c, rec.work.sizes, lower::config_from_json(rec.configuration, c), lim);
      }
    };
    ops::for_each_operator(
        [&](const ops::catalog_entry&, const auto& make) { try_one(make(rec.work.sizes)); });
    ops::for_each_benchmark_case_of_every_type(  // the bf16 and tf32 variants' files too
        [&](std::string_view, const auto& comp, const auto&) { try_one(comp); });
    // The BERT layer's stages (mdh-tune-layer's files): the attention reads the QKV rows
    // through views that depend on the layer's shape, so it is rebuilt from their sizes: (B, H,
    // S, D, S, D) for the one-kernel attention, and for the three-kernel attention of earlier
    // layers' files (B, H, S, S, D) for the scores and (B, H, S, D, S) for the context.
    const auto& z = rec.work.sizes;
    for (std::size_t d_at : {std::size_t(3), std::size_t(4)}) {
      if (found || key.find("/bert_layer/") == std::string::npos) break;
      ops::bert_shape shape;
      if (z.size() == 5 || z.size() == 6) shape = {z[0], z[2], z[1] * z[d_at], z[1], shape.ffn};
      auto each_stage = [&](const ops::bert_stage&, const auto& comp) { try_one(comp); };
      ops::for_each_bert_stage<float>(shape, each_stage);
      ops::for_each_bert_stage<float>(shape, each_stage, ops::attention_form::one_kernel,
                                      ir::precision::tf32x3);  // fp32 with tf32x3 products
      ops::for_each_bert_stage<bf16>(shape, each_stage);
      ops::for_each_bert_stage<f16>(shape, each_stage);
      auto three_kernel = [&](auto type) {
        using T = decltype(type);
        try_one(ops::attention_scores<T>(shape));
        try_one(ops::attention_context<T>(shape));
      };
      three_kernel(float{}), three_kernel(bf16{}), three_kernel(f16{});
    }
    CHECK_MESSAGE(found, file.string(), ": no operator of the library has the hash ",
                  rec.work.hash);
  }
  return out;
}

constexpr const char* generation_line = "# kernel generation ";

// The kernel generation (mdh/kernel_generation.hpp) a pin list was written with; 0 if none.
int list_generation(const fs::path& path) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (line.rfind(generation_line, 0) == 0)
      return std::stoi(line.substr(std::string(generation_line).size()));
  return 0;
}

entries read_list(const fs::path& path) {
  entries e;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string key, config_hash, hash;
    is >> key >> config_hash >> hash;
    e[key] = {config_hash, hash, ""};
  }
  return e;
}

}  // namespace

TEST_CASE("the generated source of every swept configuration and parameter file is unchanged") {
  const entries now = current();
  if (const char* w = std::getenv("MDH_WRITE_SOURCE_HASHES")) {
    // A kernel that changed for the same configuration makes the tuning logs measured with the
    // old one stale: they are set aside only if the generation says so.
    const entries before = read_list(w);
    int changed = 0;
    for (auto& [k, e] : before) {
      auto it = now.find(k);
      if (it != now.end() && it->second.config_hash == e.config_hash && it->second.hash != e.hash)
        ++changed;
    }
    REQUIRE_MESSAGE((changed == 0 || list_generation(w) != mdh::kernel_generation), changed,
                    " generated sources changed for the same configuration, but "
                    "mdh::kernel_generation is still ",
                    mdh::kernel_generation,
                    ", the generation of the pinned list: bump it (mdh/kernel_generation.hpp) so "
                    "that tuning logs measured with the old kernels are set aside; ",
                    std::string(w), " left as it was");
    std::ofstream f(w, std::ios::binary);
    f << "# key (sweep/computation/configuration index/dialect), FNV-1a of the configuration's\n"
         "# text, FNV-1a of the generated source. Written by backends_source_hashes with\n"
         "# MDH_WRITE_SOURCE_HASHES set.\n"
      << generation_line << mdh::kernel_generation << "\n";
    for (auto& [k, e] : now) f << k << " " << e.config_hash << " " << e.hash << "\n";
    MESSAGE("wrote ", now.size(), " hashes to ", w);
    return;
  }
  const char* src = std::getenv("MDH_SOURCE_DIR");
  REQUIRE(src);
  const entries want = read_list(fs::path(src) / "tests/backends/source_hashes.txt");
  REQUIRE_MESSAGE(!want.empty(), "tests/backends/source_hashes.txt is missing or empty");
  CHECK_MESSAGE(
      list_generation(fs::path(src) / "tests/backends/source_hashes.txt") == mdh::kernel_generation,
      "tests/backends/source_hashes.txt was written for kernel generation ",
      list_generation(fs::path(src) / "tests/backends/source_hashes.txt"),
      ", mdh/kernel_generation.hpp says ", mdh::kernel_generation,
      ": write the list again (MDH_WRITE_SOURCE_HASHES)");
  int changed = 0, missing = 0, extra = 0;
  for (auto& [k, e] : want) {
    auto it = now.find(k);
    if (it == now.end()) {
      if (++missing <= 20) MESSAGE("no longer generated: ", k);
    } else if (it->second.hash != e.hash) {
      if (++changed <= 20) {
        if (it->second.config_hash != e.config_hash)
          MESSAGE("the enumerated configuration changed at ", k,
                  " (the sweep's generator or "
                  "rules changed, not necessarily the printer); now: ",
                  it->second.config);
        else
          MESSAGE("source changed: ", k, " config: ", it->second.config);
      }
    }
  }
  for (auto& [k, e] : now)
    if (!want.count(k) && ++extra <= 20) MESSAGE("not in the list: ", k, " (", e.config, ")");
  MESSAGE(now.size(), " sources hashed, ", changed, " changed, ", missing, " missing, ", extra,
          " new");
  CHECK(changed == 0);
  CHECK(missing == 0);
  CHECK(extra == 0);
}
