// SPDX-License-Identifier: MIT
// Times bf16 or f32 matmul kernels from sources that print_source wrote (its //@LAUNCH line gives
// the launch and the sizes), each beside cublasGemmEx at the same sizes, in one process: for A/B
// comparisons of printer changes on the device without rebuilding the benchmark (f32 beside
// cublasSgemm, TF32 off). Per source:
// NVRTC for sm_90 (sm_90a for wgmma kernels), 10 warm-up launches, then the best of 5 means of
// 20 back-to-back launches (no L2 flush), registers, and a spot check of 3 elements against a
// double-precision dot.
// Other plain contractions (print_source's //@EINSUM line, e.g. the TCCG 4-D cases): every
// //@LAUNCH kernel in order (an atomic combine's _init first), random inputs of the sizes the
// line gives, //@SCRATCH buffers zeroed once; a spot check of 64 output points against a
// double-precision sum, and beside it cublasSgemm on the contraction's GEMM view (M = the output
// dimensions only the first input reads, N = those only the second reads, K = the reductions;
// batch dimensions, read by both, as a strided batch), on operands already laid out for it: what
// a transpose-then-GEMM peer pays for the product alone.
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
#include <cstdint>
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

// A plain contraction, from print_source's //@LAUNCH (one or more), //@EINSUM and //@SCRATCH lines.
struct einsum {
  std::vector<launch> kernels;  // in launch order; grid, block, shared
  std::vector<long> sizes;
  struct buffer {
    std::string name;
    bool output = false;
    std::vector<int> dims;  // per coordinate, row-major
  };
  std::vector<buffer> buffers;  // inputs, then outputs: the kernel parameters' order
  std::vector<long> scratch;    // bytes of each parameter after the outputs
};

bool read_einsum(const std::string& src, einsum& e) {
  std::istringstream lines(src);
  std::string line;
  bool found = false;
  while (std::getline(lines, line) && line.rfind("//@", 0) == 0) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "//@LAUNCH") {
      launch l{};
      in >> l.kernel >> l.grid[0] >> l.grid[1] >> l.grid[2] >> l.block[0] >> l.block[1] >>
          l.block[2] >> l.shared;
      e.kernels.push_back(l);
    } else if (tag == "//@EINSUM") {
      found = true;
      std::string w;
      while (in >> w && w != ";") e.sizes.push_back(std::stol(w));
      einsum::buffer b;
      bool have = false;
      while (in >> w) {
        if (w == ";") {
          e.buffers.push_back(b), b = {}, have = false;
        } else if (w == "in" || w == "out") {
          b.output = w == "out";
        } else if (!have) {
          b.name = w, have = true;
        } else {
          b.dims.push_back(std::stoi(w));
        }
      }
      if (have) e.buffers.push_back(b);
    } else if (tag == "//@SCRATCH") {
      long n;
      while (in >> n) e.scratch.push_back(n);
    }
  }
  return found;
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
CUfunction kernel_of(CUmodule mod, const launch& l) {
  CUfunction fn;
  CHECK(cuModuleGetFunction(&fn, mod, l.kernel.c_str()));
  if (l.shared > 48 * 1024)
    CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(l.shared)));
  return fn;
}

// Times a plain contraction's kernels (all of them per call) and cuBLAS on its GEMM view.
void time_einsum(const einsum& e, CUmodule mod, const char* file, cublasHandle_t blas,
                 cudaEvent_t e0, cudaEvent_t e1, std::map<std::string, double>& blas_us) {
  const std::size_t D = e.sizes.size();
  std::vector<CUfunction> fns;
  for (auto& k : e.kernels) fns.push_back(kernel_of(mod, k));
  int regs = 0;
  cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fns.back());
  // buffers: inputs random in [-1, 1), outputs zero
  std::vector<std::vector<float>> host;
  std::vector<void*> dev;
  std::uint64_t seed = 12345;
  for (auto& b : e.buffers) {
    long n = 1;
    for (int d : b.dims) n *= e.sizes.at(d);
    std::vector<float> h(n, 0.0f);
    if (!b.output)
      for (auto& x : h) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = float((seed >> 40) % 2000) / 1000.0f - 1.0f;
      }
    void* d = nullptr;
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    host.push_back(std::move(h));
    dev.push_back(d);
  }
  for (long bytes : e.scratch) {
    void* d = nullptr;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemset(d, 0, bytes));
    dev.push_back(d);
  }
  std::vector<void*> args;
  for (auto& d : dev) args.push_back(&d);
  auto call = [&] {
    for (std::size_t k = 0; k < fns.size(); ++k) {
      const launch& l = e.kernels[k];
      CHECK(cuLaunchKernel(fns[k], unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
                           unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]),
                           unsigned(l.shared), nullptr, args.data(), nullptr));
    }
  };
  const double us = 1000 * best_mean_ms(e0, e1, call);
  // spot check: 64 output points against a double sum over the reductions
  std::size_t out = 0;
  while (out < e.buffers.size() && !e.buffers[out].output) ++out;
  const auto& ob = e.buffers.at(out);
  std::vector<float>& got = host[out];
  CHECK(cudaMemcpy(got.data(), dev[out], got.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<bool> in_out(D, false);
  for (int d : ob.dims) in_out[d] = true;
  std::vector<int> red;
  for (std::size_t d = 0; d < D; ++d)
    if (!in_out[d]) red.push_back(int(d));
  auto flat = [&](const einsum::buffer& b, const std::vector<long>& x) {
    long f = 0;
    for (int d : b.dims) f = f * e.sizes[d] + x[d];
    return f;
  };
  double err = 0, flops = 2;
  for (long n : e.sizes) flops *= n;
  for (int s = 0; s < 64; ++s) {
    std::vector<long> x(D, 0);
    long p = (long(s) * 2654435761l) % long(got.size());
    for (std::size_t k = ob.dims.size(); k-- > 0;)
      x[ob.dims[k]] = p % e.sizes[ob.dims[k]], p /= e.sizes[ob.dims[k]];
    double want = 0;
    long terms = 1;
    for (int r : red) terms *= e.sizes[r];
    for (long t = 0; t < terms; ++t) {
      long q = t;
      for (std::size_t k = red.size(); k-- > 0;)
        x[red[k]] = q % e.sizes[red[k]], q /= e.sizes[red[k]];
      double prod = 1;
      for (std::size_t b = 0; b < e.buffers.size(); ++b)
        if (!e.buffers[b].output) prod *= host[b][flat(e.buffers[b], x)];
      want += prod;
    }
    err = std::max(err, std::abs(want - got[flat(ob, x)]) / (std::abs(want) + 1));
  }
  // the GEMM view: M (only the first input), N (only the second), K (reductions), batch (both)
  long M = 1, N = 1, K = 1, batch = 1;
  for (std::size_t d = 0; d < D; ++d) {
    bool r0 = false, r1 = false;
    for (int x : e.buffers.at(0).dims) r0 = r0 || x == int(d);
    for (int x : e.buffers.at(1).dims) r1 = r1 || x == int(d);
    long& m = !in_out[d] ? K : r0 && r1 ? batch : r0 ? M : N;
    m *= e.sizes[d];
  }
  const std::string shape = "gemm " + std::to_string(batch) + "x" + std::to_string(M) + "x" +
                            std::to_string(N) + "x" + std::to_string(K);
  if (!blas_us.count(shape)) {
    float *a = nullptr, *b = nullptr, *c = nullptr;
    CHECK(cudaMalloc(&a, batch * M * K * 4));
    CHECK(cudaMalloc(&b, batch * K * N * 4));
    CHECK(cudaMalloc(&c, batch * M * N * 4));
    CHECK(cudaMemset(a, 0, batch * M * K * 4));
    CHECK(cudaMemset(b, 0, batch * K * N * 4));
    const float one = 1, zero = 0;
    blas_us[shape] = 1000 * best_mean_ms(e0, e1, [&] {
                       CHECK(cublasSgemmStridedBatched(
                           blas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, b, int(N),
                           K * N, a, int(K), M * K, &zero, c, int(N), M * N, int(batch)));
                     });
    cudaFree(a), cudaFree(b), cudaFree(c);
  }
  std::printf(
      "%-44s %s regs %3d smem %6ld %9.2f us %6.1f TF/s  cuBLAS %8.2f us  ratio %.2f  err %.1e\n",
      file, shape.c_str(), regs, e.kernels.back().shared, us, flops / us * 1e-6, blas_us[shape],
      blas_us[shape] / us, err);
  for (auto& d : dev) cudaFree(d);
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
    einsum ein;
    const bool generic = read_einsum(src, ein);
    const launch l = generic ? launch{} : read_launch(src, argv[f]);
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
    if (generic) {
      time_einsum(ein, mod, argv[f], blas, e0, e1, blas_us);
      cuModuleUnload(mod);
      continue;
    }
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
