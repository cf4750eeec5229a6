// SPDX-License-Identifier: MIT
// A downstream program that runs a tuned kernel: it writes a parameter file for this device (as
// mdh-tune would), loads it with mdh::load_kernel and runs the kernel against the CPU reference,
// on OpenCL (PoCL on a machine without a GPU) and on CUDA where a GPU is present. It links
// mdh::mdh and the backends only; CMakeLists.txt checks that their link interface holds no
// mdh::atf, and the static_assert below fails to compile if any tuner header came in.
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <backends/load_kernel.hpp>
#include <mdh/lower/random_config.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/parameter_file.hpp>
#include <mdh/tuning/verify.hpp>

// Declared here; defined only if a header of the tuner (atf/) was included.
namespace atf {
class search_space;
class tuner;
}  // namespace atf
template <class T>
constexpr bool defined = requires {
  sizeof(T);
};
static_assert(!defined<atf::search_space> && !defined<atf::tuner>,
              "running a tuned kernel must not include the tuner (atf/)");

namespace {

// Writes a parameter file with a non-default configuration for `device`, loads and runs it.
template <class Device>
bool load_and_run(Device& device, const std::string& backend) {
  using namespace mdh;
  auto [i, j, k] = indices<3>();
  auto mm = computation("matmul", out_view(out<float, "C">(i, j)),
                        md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                        inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
  const std::vector<std::int64_t> n{37, 29, 41};
  const auto lim = device.limits();
  std::mt19937_64 rng(11);
  lower::config cfg = lower::random_config(mm.ir(), n, lim, rng);
  while (cfg == lower::default_config(mm.ir(), n)) cfg = lower::random_config(mm.ir(), n, lim, rng);
  const auto dir = std::filesystem::temp_directory_path() / ("mdh_run_tuned_" + backend);
  std::filesystem::remove_all(dir);
  tuning::parameter_record r{tuning::workload::of(mm.ir(), n), tuning::device_id_of(backend, lim),
                             cfg, 1.0};
  tuning::write_parameter_file(dir / "matmul.json", r);

  auto kernel = load_kernel(mm, n, dir, device);
  if (!kernel.choice.record || !(kernel.choice.config == cfg)) {
    std::printf("%s: the parameter file's configuration was not loaded\n", backend.c_str());
    return false;
  }
  host_buffer A(scalar_type::f32, mm.shape("A", n)), B(scalar_type::f32, mm.shape("B", n));
  host_buffer C(scalar_type::f32, mm.shape("C", n)), want(scalar_type::f32, mm.shape("C", n));
  A.randomize(1), B.randomize(2);
  std::vector<buffer_ref> in{A, B}, out{C}, expected{want};
  reference(mm, n, std::span<const buffer_ref>(in), std::span<const buffer_ref>(expected));
  kernel(in, out);
  std::filesystem::remove_all(dir);
  const std::string why = tuning::compare(C, want, n[2]);
  std::printf("%s on %s, %s: %s\n", backend.c_str(), lim.name.c_str(),
              lower::to_string(cfg).c_str(),
              why.empty() ? "matches the CPU reference" : why.c_str());
  return why.empty();
}

}  // namespace

int main() {
  bool ok = true;
  int ran = 0;
#if MDH_WITH_OPENCL
  {
    mdh::opencl::context ctx;
    ok &= load_and_run(ctx, "opencl");
    ++ran;
  }
#endif
#if MDH_WITH_CUDA
  if (mdh::cuda::device_available()) {
    mdh::cuda::device dev(0);
    ok &= load_and_run(dev, "cuda");
    ++ran;
  } else {
    std::puts("cuda: no GPU here, not run");
  }
#endif
  if (ran == 0) std::puts("no backend could run (no OpenCL, no GPU)");
  return ok ? 0 : 1;
}
