// SPDX-License-Identifier: MIT
// A second program that only runs: it finds the parameter file that 01_quickstart (or mdh-tune)
// wrote for this workload and device, and runs that kernel on its own data. Without a record it
// says how to make one and runs the default configuration. It links mdh::mdh and a backend
// (mdh::cuda, mdh::opencl), not the tuner.
//   03_load_and_run [params folder=params]
#include <cstdio>
#include <filesystem>
#include <vector>

#include <backends/load_kernel.hpp>
#include <expressions/matmul.hpp>
#include <mdh/mdh.hpp>
#include <mdh/tuning/verify.hpp>

// Runs the kernel of `params` for a matmul of sizes `n` (on `device`) against the CPU reference.
template <class Device>
int run(Device& device, const std::filesystem::path& params, const std::vector<std::int64_t>& n) {
  using namespace mdh;
  auto matmul = ops::matmul();
  auto kernel = load_kernel(matmul, n, params, device);
  if (kernel.choice.record)
    std::printf("using %s: tuned on %s, %.1f us when tuned\n", kernel.choice.origin.c_str(),
                kernel.choice.record->device.name.c_str(), kernel.choice.record->cost);
  host_buffer A(scalar_type::f32, matmul.shape("A", n)), B(scalar_type::f32, matmul.shape("B", n));
  host_buffer C(scalar_type::f32, matmul.shape("C", n)),
      want(scalar_type::f32, matmul.shape("C", n));
  A.randomize(2024), B.randomize(2025);
  std::vector<buffer_ref> in{A, B}, out{C}, expected{want};
  reference(matmul, n, std::span<const buffer_ref>(in), std::span<const buffer_ref>(expected));
  kernel(in, out);
  const std::string why = tuning::compare(C, want, tuning::reduction_length(matmul.ir(), n));
  if (!why.empty()) {
    std::printf("matmul %s: %s\n", to_string(n).c_str(), why.c_str());
    return 1;
  }
  std::printf("matmul %s: matches the CPU reference\n", to_string(n).c_str());
  return 0;
}

int main(int argc, char** argv) {
  std::filesystem::path params = argc > 1 ? argv[1] : "params";
#if MDH_WITH_CUDA
  if (mdh::cuda::device_available()) {
    mdh::cuda::device dev(0);
    return run(dev, params, {1024, 1024, 1024});
  }
#endif
#if MDH_WITH_OPENCL
  mdh::opencl::context ctx;
  return run(ctx, params, {96, 80, 64});
#else
  std::puts("03_load_and_run: no GPU, and built without the OpenCL backend");
  return 77;
#endif
}
