// SPDX-License-Identifier: MIT
// Times bf16 or f32 matmul kernels from sources that print_source wrote (its //@LAUNCH line gives
// the launch and the sizes), each beside cublasGemmEx at the same sizes, in one process: for A/B
// comparisons of printer changes on the device without rebuilding the benchmark (f32 beside
// cublasSgemm, TF32 off). Per source:
// NVRTC for sm_90 (sm_90a for wgmma kernels), 10 warm-up launches, then the best of 5 means of
// 20 back-to-back launches (no L2 flush), registers, and a spot check of 3 elements against a
// double-precision dot.
//   time_sources a.cu b.cu ...
// Build (on the GPU machine): nvcc -O2 -arch=sm_90 bench/kernel_ab/time_sources.cu -o time_sources
//   -lcublas -lnvrtc -lcuda
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    if (auto r = (x); r) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, int(r)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace {
struct launch {
  std::string kernel;
  long grid[3], block[3], shared, M, N, K;
  bool f32 = false;
};

launch read_launch(const std::string& src, const char* file) {
  launch l{};
  std::istringstream in(src.substr(0, src.find('\n')));
  std::string tag;
  in >> tag >> l.kernel >> l.grid[0] >> l.grid[1] >> l.grid[2] >> l.block[0] >> l.block[1] >>
      l.block[2] >> l.shared >> l.M >> l.N >> l.K;
  if (tag != "//@LAUNCH" || !in) {
    std::fprintf(stderr, "%s: no //@LAUNCH line (write it with print_source)\n", file);
    std::exit(2);
  }
  l.f32 = src.find("out_view<f32>") != std::string::npos;
  if (!l.f32 && src.find("out_view<bf16>") == std::string::npos) {
    std::fprintf(stderr, "%s: not a bf16 or f32 matmul (time_sources times those only)\n", file);
    std::exit(2);
  }
  return l;
}

template <class F>
float best_mean_ms(cudaEvent_t e0, cudaEvent_t e1, F&& f) {
  for (int i = 0; i < 10; ++i) f();
  CHECK(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    for (int i = 0; i < 20; ++i) f();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    best = std::min(best, ms / 20);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: time_sources a.cu [b.cu ...]\n");
    return 2;
  }
  CHECK(cudaFree(nullptr));
  cublasHandle_t blas;
  CHECK(cublasCreate(&blas));
  CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));  // f32: no TF32
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::map<std::string, double> blas_us;
  for (int f = 1; f < argc; ++f) {
    std::ifstream in(argv[f]);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string src = ss.str();
    const launch l = read_launch(src, argv[f]);
    nvrtcProgram prog;
    CHECK(nvrtcCreateProgram(&prog, src.c_str(), "kernel.cu", 0, nullptr, nullptr));
    // wgmma kernels (mma = 2) exist only in the architecture-specific sm_90a target
    const bool wgmma = src.find("wgmma.mma_async") != std::string::npos;
    const char* opts[] = {wgmma ? "--gpu-architecture=sm_90a" : "--gpu-architecture=sm_90",
                          "-default-device", "--std=c++17"};
    if (nvrtcCompileProgram(prog, 3, opts) != NVRTC_SUCCESS) {
      size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      std::fprintf(stderr, "%s: NVRTC failed:\n%s\n", argv[f], log.c_str());
      return 1;
    }
    size_t n = 0;
    CHECK(nvrtcGetCUBINSize(prog, &n));
    std::vector<char> cubin(n);
    CHECK(nvrtcGetCUBIN(prog, cubin.data()));
    nvrtcDestroyProgram(&prog);
    CUmodule mod;
    CUfunction fn;
    CHECK(cuModuleLoadData(&mod, cubin.data()));
    CHECK(cuModuleGetFunction(&fn, mod, l.kernel.c_str()));
    if (l.shared > 48 * 1024)
      CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(l.shared)));
    int regs = 0;
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);

    const long M = l.M, N = l.N, K = l.K;
    const long es = l.f32 ? 4 : 2;  // bytes per element
    std::vector<float> a(M * K), b(K * N), c(M * N);
    for (long i = 0; i < M * K; ++i) a[i] = (i % 7) * 0.1f - 0.3f;
    for (long i = 0; i < K * N; ++i) b[i] = (i % 5) * 0.1f - 0.2f;
    auto to_device = [&](const std::vector<float>& h) {  // as the kernel's element type
      void* d = nullptr;
      CHECK(cudaMalloc(&d, h.size() * es));
      if (l.f32) {
        cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
      } else {
        std::vector<__nv_bfloat16> x(h.size());
        for (std::size_t i = 0; i < h.size(); ++i) x[i] = __float2bfloat16(h[i]);
        cudaMemcpy(d, x.data(), h.size() * 2, cudaMemcpyHostToDevice);
      }
      return d;
    };
    void *A = to_device(a), *B = to_device(b), *C = to_device(c);
    void* args[] = {&A, &B, &C};
    const double us =
        1000 * best_mean_ms(e0, e1, [&] {
          CHECK(cuLaunchKernel(fn, unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
                               unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]),
                               unsigned(l.shared), nullptr, args, nullptr));
        });
    if (l.f32) {
      cudaMemcpy(c.data(), C, M * N * 4, cudaMemcpyDeviceToHost);
    } else {
      std::vector<__nv_bfloat16> x(M * N);
      cudaMemcpy(x.data(), C, M * N * 2, cudaMemcpyDeviceToHost);
      for (long i = 0; i < M * N; ++i) c[i] = __bfloat162float(x[i]);
    }
    auto stored = [&](float v) { return l.f32 ? v : __bfloat162float(__float2bfloat16(v)); };
    double err = 0;
    for (long s = 0; s < 3; ++s) {
      const long i = (s * 977) % M, j = (s * 1231) % N;
      double want = 0;
      for (long k = 0; k < K; ++k) want += double(stored(a[i * K + k])) * stored(b[k * N + j]);
      err = std::max(err, std::abs(want - c[i * N + j]) / (std::abs(want) + 1));
    }
    const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" +
                              std::to_string(K) + (l.f32 ? " f32" : " bf16");
    if (!blas_us.count(shape)) {  // row-major C = A B is column-major C^T = B^T A^T
      const float one = 1, zero = 0;
      blas_us[shape] =
          1000 * best_mean_ms(e0, e1, [&] {
            if (l.f32)
              CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one,
                                (const float*)B, int(N), (const float*)A, int(K), &zero, (float*)C,
                                int(N)));
            else
              CHECK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, B,
                                 CUDA_R_16BF, int(N), A, CUDA_R_16BF, int(K), &zero, C, CUDA_R_16BF,
                                 int(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
          });
    }
    std::printf(
        "%-44s %s regs %3d smem %6ld %9.2f us %6.1f TF/s  cuBLAS %8.2f us  ratio %.2f  err %.1e\n",
        argv[f], shape.c_str(), regs, l.shared, us, 2.0 * M * N * K / us * 1e-6, blas_us[shape],
        blas_us[shape] / us, err);
    cudaFree(A), cudaFree(B), cudaFree(C);
    cuModuleUnload(mod);
  }
  return 0;
}
