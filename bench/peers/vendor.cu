// SPDX-License-Identifier: MIT
// The vendor peers of bench/ (issues #5, #18): cuBLAS, cuBLASLt and cuDNN, fp32 with TF32 off, or
// in the precision a case asks for (type=bf16 / type=tf32), timed with CUDA events per call and by
// CUDA-graph replay, plus the ceilings the floors are made of (device copy rate, fp32 SGEMM rate
// at 8192^3, and the bf16 / TF32 GEMM rates at 8192^3 when cases of those types are run).
//
//   vendor --cases FILE --out FILE.json [--reps N] [--only NAME,NAME] [--no-ceilings] [--list]
//   (--list: the cases and their types, parsed, then exit: no GPU needed)
//
// FILE holds one case a line, `name kind key=value ...` (bench/peers/cases.py --vendor-lines
// writes it from bench/cases.json):
//   gemm  batch m n k trans_b   row-major C[b] (m x n) = A[b] (m x k) * B[b] (k x n), or * B[b]^T
//                               with B[b] (n x k) when trans_b=1
//   dot   n                     sdot of two n-vectors, result in device memory
//   gemv  m k                   w = M v, M row-major m x k
//   conv  layout n c h w k r s stride   VALID cross-correlation; layout nchw (KCRS filter) or
//                               nhwc (KRSC filter, NHWC output)
// and optionally type=f32|bf16|tf32 (default f32):
//   f32  fp32 storage and arithmetic, no TF32 (cublasSgemm..., CUBLAS_COMPUTE_32F, FMA-math cuDNN)
//   bf16 bf16 inputs and outputs, fp32 accumulation: cublasGemmEx / cublasGemmStridedBatchedEx with
//        CUDA_R_16BF and CUBLAS_COMPUTE_32F (no reduced-precision split-K reduction on either
//        cuBLAS side), cublasDotEx (fp32 execution), cuDNN with bf16 tensors and fp32 compute
//   tf32 fp32 storage, inputs read as TF32: CUBLAS_COMPUTE_32F_FAST_TF32, cuDNN tensor-op math
// The tf32x3 cases of bench/cases.json (ours: fp32 accuracy, each product three TF32 tensor-core
// products, the user's choice) are in the fp32 accuracy class: their lines carry no type, so
// they get exactly their float32 case's call (f32, TF32 off) and its error limit.
// Each entry says in "call" and "precision" what ran; the error against float64 must fit the
// type (f32 < 1e-5, tf32 < 5e-3, bf16 < 1.5e-2), and a tf32 entry whose error is fp32's says so
// ("precision_used": "fp32 ...").
//
// Method (the same as bench/peers/frameworks.py; the lead's bench uses it too):
//   per call : write 256 MB with cudaMemsetAsync (flushes the 60 MB L2), synchronize, record an
//              event, make the library call, record an event. The GPU is idle when the first event
//              is recorded, so the time includes the library's host-side work and the launch
//              latency: what a caller waits for.
//   graph    : the call captured once into a CUDA graph; each repetition writes the 256 MB,
//              records an event, launches the graph, records an event, with no synchronization
//              in between, so the launch is hidden behind the flush: kernel time only.
//   median over the repetitions (count adapted to the call's duration, 20 to 200).
// Inputs are random, non-zero, in +-[0.05, 1] (bf16: those values rounded to bf16). A few sampled
// outputs of each product and convolution are checked against a float64 host reference of the
// same inputs (fp32: ~1e-7; TF32 would give ~1e-4; bf16 outputs ~1e-3).
//
// Every CUDA, cuBLAS and cuDNN call is checked; a failing case records its error and the run
// goes on. The JSON file is rewritten after each case, so a run cut short leaves what it had.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// cuDNN 9 marks the legacy convolution API deprecated; it is still the documented way to find and
// run a single convolution.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#pragma nv_diag_suppress 1444

namespace {

// ---------------------------------------------------------------- errors
struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string where(const char* expr, const char* file, int line) {
  return std::string(expr) + " at " + file + ":" + std::to_string(line);
}
void check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess)
    throw failure(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                  "): " + where(expr, file, line));
}
void check(cublasStatus_t e, const char* expr, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw failure(std::string("cuBLAS error ") + cublasGetStatusName(e) + ": " + where(expr, file, line));
}
void check(cudnnStatus_t e, const char* expr, const char* file, int line) {
  if (e != CUDNN_STATUS_SUCCESS)
    throw failure(std::string("cuDNN error ") + cudnnGetErrorString(e) + ": " + where(expr, file, line));
}
#define CK(x) check((x), #x, __FILE__, __LINE__)
#define CK_LAUNCH() CK(cudaGetLastError())

// ---------------------------------------------------------------- JSON output
struct Json {  // a minimal writer: objects of numbers, strings, bools and nested objects
  std::string s;
  static std::string esc(const std::string& v) {
    std::string o = "\"";
    for (char ch : v) {
      switch (ch) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\t': o += "\\t"; break;
        default:
          if (static_cast<unsigned char>(ch) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", ch);
            o += b;
          } else {
            o += ch;
          }
      }
    }
    return o + "\"";
  }
  static std::string num(double v) {
    if (!std::isfinite(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
  }
};

struct Obj {  // ordered key -> raw JSON text or a nested object
  struct Val {
    std::string raw;
    std::shared_ptr<Obj> sub;
  };
  std::vector<std::pair<std::string, Val>> kv;
  Obj& put(const std::string& k, Val v) {
    for (auto& p : kv)
      if (p.first == k) {
        p.second = std::move(v);
        return *this;
      }
    kv.emplace_back(k, std::move(v));
    return *this;
  }
  Obj& set(const std::string& k, const std::string& raw) { return put(k, Val{raw, nullptr}); }
  Obj& str(const std::string& k, const std::string& v) { return set(k, Json::esc(v)); }
  Obj& num(const std::string& k, double v) { return set(k, Json::num(v)); }
  Obj& boolean(const std::string& k, bool v) { return set(k, v ? "true" : "false"); }
  Obj& obj(const std::string& k, const Obj& o) { return put(k, Val{"", std::make_shared<Obj>(o)}); }
  std::string dump(int indent = 0) const {
    std::string pad(indent + 1, ' '), o = "{";
    for (size_t i = 0; i < kv.size(); ++i)
      o += (i ? ",\n" : "\n") + pad + Json::esc(kv[i].first) + ": " +
           (kv[i].second.sub ? kv[i].second.sub->dump(indent + 1) : kv[i].second.raw);
    return o + (kv.empty() ? "}" : "\n" + std::string(indent, ' ') + "}");
  }
};

// ---------------------------------------------------------------- element types (issue 18)
enum class Ty { f32, bf16, tf32 };

Ty type_of_name(const std::string& t) {
  if (t == "f32") return Ty::f32;
  if (t == "bf16") return Ty::bf16;
  if (t == "tf32") return Ty::tf32;
  throw failure("type must be f32, bf16 or tf32, not '" + t + "'");
}
const char* name_of(Ty t) { return t == Ty::bf16 ? "bf16" : t == Ty::tf32 ? "tf32" : "f32"; }
size_t bytes_of(Ty t) { return t == Ty::bf16 ? 2 : 4; }  // tf32 is stored as fp32
cudaDataType_t cuda_type(Ty t) { return t == Ty::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
cublasComputeType_t compute_type(Ty t) {
  return t == Ty::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
const char* compute_name(Ty t) { return t == Ty::tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F"; }

// Whether an error against float64 fits the precision asked for ("" when it does): fp32 lands
// near 1e-7 and TF32 would show near 1e-4; TF32 inputs near 3e-4; bf16 outputs near 1e-3 (their
// rounding), far more if the sums were kept in bf16.
std::string precision_problem(Ty t, double err) {
  const double limit = t == Ty::f32 ? 1e-5 : t == Ty::tf32 ? 5e-3 : 1.5e-2;
  if (err < limit) return "";
  return "relative error " + Json::num(err) + " against float64, above the " + name_of(t) + " limit " +
         Json::num(limit);
}
// What the error says ran, for a tf32 request: fp32's error means TF32 was not used.
std::string precision_used(Ty t, double err) {
  if (t == Ty::tf32 && err < 1e-5) return "fp32 (the error is fp32's: TF32 was not used)";
  return name_of(t);
}

// ---------------------------------------------------------------- device buffers and inputs
__device__ float random_value(size_t i, uint64_t seed) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  float u = float(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  float mag = 0.05f + 0.95f * u;                     // [0.05, 1): never zero
  return (z & 1) ? mag : -mag;
}
__global__ void fill_random(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = random_value(i, seed);
}
__global__ void fill_random_bf16(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16_rn(random_value(i, seed));
}

__global__ void one_element(float* p) { p[0] += 1.f; }

__global__ void copy_f4(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

// n elements of fp32 (f32, tf32) or bf16; `p` is the fp32 view, `v` the untyped one.
struct DevBuf {
  float* p = nullptr;
  void* v = nullptr;
  size_t n = 0;
  Ty ty = Ty::f32;
  DevBuf() = default;
  explicit DevBuf(size_t count, Ty t = Ty::f32) : n(count), ty(t) {
    CK(cudaMalloc(&v, std::max<size_t>(count, 1) * bytes_of(t)));
    p = static_cast<float*>(v);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (v) cudaFree(v);
  }
  size_t bytes() const { return n * bytes_of(ty); }
  void random(uint64_t seed, cudaStream_t s) {
    if (ty == Ty::bf16)
      fill_random_bf16<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(v), n, seed);
    else
      fill_random<<<1024, 256, 0, s>>>(p, n, seed);
    CK_LAUNCH();
  }
  void poison(cudaStream_t s) { CK(cudaMemsetAsync(v, 0xff, bytes(), s)); }  // NaN in either type
  // The elements as float (bf16 converts exactly).
  std::vector<float> host() const {
    std::vector<float> h(n);
    if (ty != Ty::bf16) {
      CK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
      return h;
    }
    std::vector<uint16_t> b(n);
    CK(cudaMemcpy(b.data(), v, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) {
      uint32_t u = uint32_t(b[i]) << 16;
      std::memcpy(&h[i], &u, 4);
    }
    return h;
  }
};

// ---------------------------------------------------------------- timing
struct Stat {
  double median_us = NAN, min_us = NAN, mean_us = NAN;
  int reps = 0;
  Obj json() const {
    Obj o;
    o.num("median_us", median_us).num("min_us", min_us).num("mean_us", mean_us).num("reps", reps);
    return o;
  }
};

Stat summarize(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median_us = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min_us = v.front();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_us = sum / n;
  s.reps = int(n);
  return s;
}

struct Timer {
  cudaStream_t stream{};
  void* flush = nullptr;
  size_t flush_bytes = size_t(256) << 20;
  std::vector<cudaEvent_t> e0, e1;
  int max_reps;
  int reps_override = 0;

  explicit Timer(int max_reps_ = 200) : max_reps(max_reps_) {
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaMalloc(&flush, flush_bytes));
    e0.resize(max_reps);
    e1.resize(max_reps);
    for (int i = 0; i < max_reps; ++i) {
      CK(cudaEventCreate(&e0[i]));
      CK(cudaEventCreate(&e1[i]));
    }
  }
  ~Timer() {
    for (auto e : e0) cudaEventDestroy(e);
    for (auto e : e1) cudaEventDestroy(e);
    cudaFree(flush);
    cudaStreamDestroy(stream);
  }
  void do_flush(int r) { CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, stream)); }

  // A quick estimate (warm, no flush) to size the repetitions: ~0.25 s per measurement.
  int reps_for(const std::function<void()>& f) {
    if (reps_override) return std::min(reps_override, max_reps);
    for (int i = 0; i < 3; ++i) f();
    CK(cudaStreamSynchronize(stream));
    CK(cudaEventRecord(e0[0], stream));
    for (int i = 0; i < 5; ++i) f();
    CK(cudaEventRecord(e1[0], stream));
    CK(cudaEventSynchronize(e1[0]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0[0], e1[0]));
    double per = ms / 5 + 0.15;  // + flush and synchronization, ms
    return int(std::clamp(250.0 / per, 20.0, double(max_reps)));
  }

  Stat collect(int reps) {
    CK(cudaStreamSynchronize(stream));
    std::vector<double> v(reps);
    for (int r = 0; r < reps; ++r) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0[r], e1[r]));
      v[r] = ms * 1e3;
    }
    return summarize(v);
  }

  Stat per_call(const std::function<void()>& f, int reps) {
    for (int i = 0; i < 3; ++i) f();  // warm-up
    CK(cudaStreamSynchronize(stream));
    for (int r = 0; r < reps; ++r) {
      do_flush(r);
      CK(cudaStreamSynchronize(stream));
      CK(cudaEventRecord(e0[r], stream));
      f();
      CK(cudaEventRecord(e1[r], stream));
    }
    return collect(reps);
  }

  Stat graph(const std::function<void()>& f, int reps) {
    CK(cudaStreamSynchronize(stream));
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      f();
    } catch (...) {
      cudaGraph_t dummy = nullptr;
      cudaStreamEndCapture(stream, &dummy);
      if (dummy) cudaGraphDestroy(dummy);
      cudaGetLastError();
      throw;
    }
    CK(cudaStreamEndCapture(stream, &g));
    std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, decltype(&cudaGraphDestroy)> gk(g, cudaGraphDestroy);
    CK(cudaGraphInstantiate(&ge, g, 0));
    std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, decltype(&cudaGraphExecDestroy)> gek(
        ge, cudaGraphExecDestroy);
    for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, stream));
    CK(cudaStreamSynchronize(stream));
    for (int r = 0; r < reps; ++r) {
      do_flush(r);
      CK(cudaEventRecord(e0[r], stream));
      CK(cudaGraphLaunch(ge, stream));
      CK(cudaEventRecord(e1[r], stream));
    }
    return collect(reps);
  }

  // Both methods; the graph failing (capture unsupported) is recorded, not fatal.
  Obj both(const std::function<void()>& f) {
    Obj o;
    int reps = reps_for(f);
    Stat pc = per_call(f, reps);
    o.num("per_call_us", pc.median_us).obj("per_call", pc.json());
    try {
      Stat gr = graph(f, reps);
      o.num("graph_us", gr.median_us).obj("graph", gr.json());
    } catch (const std::exception& e) {
      o.set("graph_us", "null").str("graph_error", e.what());
    }
    return o;
  }
};

// ---------------------------------------------------------------- case description
struct Case {
  std::string name, kind;
  std::map<std::string, std::string> kv;
  long long i(const std::string& k) const {
    auto it = kv.find(k);
    if (it == kv.end()) throw failure("case " + name + ": missing " + k);
    return std::stoll(it->second);
  }
  std::string s(const std::string& k) const {
    auto it = kv.find(k);
    if (it == kv.end()) throw failure("case " + name + ": missing " + k);
    return it->second;
  }
  Ty type() const { return kv.count("type") ? type_of_name(kv.at("type")) : Ty::f32; }
};

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw failure("cannot read " + path);
  std::vector<Case> v;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    Case c;
    ls >> c.name >> c.kind;
    std::string tok;
    while (ls >> tok) {
      auto eq = tok.find('=');
      if (eq == std::string::npos) throw failure("bad token '" + tok + "' in: " + line);
      c.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    if (!c.name.empty()) v.push_back(c);
  }
  return v;
}

double rel_err(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// ---------------------------------------------------------------- the libraries
struct Libs {
  cublasHandle_t blas{};
  cublasLtHandle_t lt{};
  cudnnHandle_t dnn{};
  void* blas_ws = nullptr;
  size_t blas_ws_bytes = size_t(64) << 20;
  void* lt_ws = nullptr;
  size_t lt_ws_bytes = size_t(64) << 20;
  explicit Libs(cudaStream_t s) {
    CK(cublasCreate(&blas));
    CK(cublasSetStream(blas, s));
    CK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));  // fp32 compute; no TF32 (that is opt-in)
    CK(cudaMalloc(&blas_ws, blas_ws_bytes));
    CK(cublasSetWorkspace(blas, blas_ws, blas_ws_bytes));  // no allocation during graph capture
    CK(cublasLtCreate(&lt));
    CK(cudaMalloc(&lt_ws, lt_ws_bytes));
    CK(cudnnCreate(&dnn));
    CK(cudnnSetStream(dnn, s));
  }
  ~Libs() {
    cudnnDestroy(dnn);
    cublasLtDestroy(lt);
    cublasDestroy(blas);
    cudaFree(lt_ws);
    cudaFree(blas_ws);
  }
};

// Row-major C[b] = A[b] * op(B[b]) through column-major cuBLAS: C^T = op(B)^T * A^T.
void sgemm_rm(Libs& L, int batch, int m, int n, int k, bool trans_b, const float* A, const float* B, float* C) {
  const float one = 1.f, zero = 0.f;
  cublasOperation_t opB = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = trans_b ? k : n;
  if (batch == 1) {
    CK(cublasSgemm(L.blas, opB, CUBLAS_OP_N, n, m, k, &one, B, ldb, A, k, &zero, C, n));
  } else {
    CK(cublasSgemmStridedBatched(L.blas, opB, CUBLAS_OP_N, n, m, k, &one, B, ldb, (long long)n * k, A, k,
                                 (long long)m * k, &zero, C, n, (long long)m * n, batch));
  }
}

// The same for bf16 (CUDA_R_16BF, fp32 accumulation) and tf32 (fp32 storage, inputs read as
// TF32): cublasGemmEx / cublasGemmStridedBatchedEx.
void gemm_ex_rm(Libs& L, Ty t, int batch, int m, int n, int k, bool trans_b, const void* A, const void* B,
                void* C) {
  const float one = 1.f, zero = 0.f;
  cublasOperation_t opB = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = trans_b ? k : n;
  const cudaDataType_t d = cuda_type(t);
  if (batch == 1) {
    CK(cublasGemmEx(L.blas, opB, CUBLAS_OP_N, n, m, k, &one, B, d, ldb, A, d, k, &zero, C, d, n, compute_type(t),
                    CUBLAS_GEMM_DEFAULT));
  } else {
    CK(cublasGemmStridedBatchedEx(L.blas, opB, CUBLAS_OP_N, n, m, k, &one, B, d, ldb, (long long)n * k, A, d, k,
                                  (long long)m * k, &zero, C, d, n, (long long)m * n, batch, compute_type(t),
                                  CUBLAS_GEMM_DEFAULT));
  }
}

// A product in the case's type: fp32 through the classic entry points, bf16/tf32 through the Ex ones.
// bf16: partial sums of a split-K stay in fp32 (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
// as ours do; the math mode is the handle's, so it is set for the call and put back.
void any_gemm_rm(Libs& L, Ty t, int batch, int m, int n, int k, bool trans_b, DevBuf& A, DevBuf& B, DevBuf& C) {
  if (t == Ty::f32) {
    sgemm_rm(L, batch, m, n, k, trans_b, A.p, B.p, C.p);
    return;
  }
  if (t == Ty::bf16)
    CK(cublasSetMathMode(L.blas, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  std::shared_ptr<void> reset(nullptr, [&](void*) { cublasSetMathMode(L.blas, CUBLAS_DEFAULT_MATH); });
  gemm_ex_rm(L, t, batch, m, n, k, trans_b, A.v, B.v, C.v);
}

// Sets the fields every entry of a type other than f32 carries, and judges the error.
void judge(Obj& o, Ty t, double err, const std::string& precision) {
  std::string problem = precision_problem(t, err);
  o.num("rel_err", err).boolean("ok", problem.empty());
  if (!problem.empty()) o.str("error", problem);
  if (t != Ty::f32) o.str("type", name_of(t)).str("precision", precision).str("precision_used", precision_used(t, err));
}

Obj run_gemm(Libs& L, Timer& T, const Case& c) {
  const int batch = int(c.i("batch")), m = int(c.i("m")), n = int(c.i("n")), k = int(c.i("k"));
  const bool tb = c.i("trans_b") != 0;
  const Ty ty = c.type();
  DevBuf A(size_t(batch) * m * k, ty), B(size_t(batch) * k * n, ty), C(size_t(batch) * m * n, ty);
  A.random(1, T.stream);
  B.random(2, T.stream);
  Obj out;

  // Sampled check against a float64 host reference.
  auto check_C = [&](const char* what) {
    auto hA = A.host(), hB = B.host(), hC = C.host();
    std::mt19937_64 rng(7);
    std::vector<double> got, ref;
    for (int t = 0; t < 256; ++t) {
      size_t b = rng() % batch, i = rng() % m, j = rng() % n;
      double acc = 0;
      for (int kk = 0; kk < k; ++kk) {
        double a = hA[(b * m + i) * k + kk];
        double bb = tb ? hB[(b * n + j) * k + kk] : hB[(b * k + kk) * n + j];
        acc += a * bb;
      }
      ref.push_back(acc);
      got.push_back(hC[(b * m + i) * n + j]);
    }
    (void)what;
    return rel_err(got, ref);
  };

  // cuBLAS
  try {
    C.poison(T.stream);
    any_gemm_rm(L, ty, batch, m, n, k, tb, A, B, C);
    CK(cudaStreamSynchronize(T.stream));
    double err = check_C("cublas");
    Obj o = T.both([&] { any_gemm_rm(L, ty, batch, m, n, k, tb, A, B, C); });
    if (ty == Ty::f32) {
      o.num("rel_err", err).boolean("ok", err < 1e-5).str(
          "call", batch == 1 ? "cublasSgemm (CUBLAS_DEFAULT_MATH)" : "cublasSgemmStridedBatched (CUBLAS_DEFAULT_MATH)");
      if (!(err < 1e-5)) o.str("error", "relative error " + Json::num(err) + " against float64");
    } else {
      std::string what = std::string(batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx") + " (" +
                         (ty == Ty::bf16 ? "CUDA_R_16BF" : "CUDA_R_32F") + ", " + compute_name(ty) + ")";
      judge(o, ty, err,
            ty == Ty::bf16 ? "bf16 in and out, fp32 accumulation, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION"
                           : "fp32 in and out, inputs read as TF32, fp32 accumulation");
      o.str("call", what);
    }
    out.obj("cublas", o);
  } catch (const std::exception& e) {
    Obj o;
    o.boolean("ok", false).str("error", e.what());
    out.obj("cublas", o);
    cudaGetLastError();
  }

  // cuBLASLt: fp32 compute (CUBLAS_COMPUTE_32F, not _FAST_TF32); best of the heuristic's algorithms.
  try {
    cublasLtMatmulDesc_t desc{};
    cublasLtMatrixLayout_t la{}, lb{}, lc{};
    cublasLtMatmulPreference_t pref{};
    CK(cublasLtMatmulDescCreate(&desc, compute_type(ty), CUDA_R_32F));  // fp32 scale in every type
    std::shared_ptr<void> g1(nullptr, [&](void*) {
      if (desc) cublasLtMatmulDescDestroy(desc);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (lc) cublasLtMatrixLayoutDestroy(lc);
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
    });
    cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    // Lt's A is our B (n x k as op(.)), Lt's B is our A viewed k x m, C is n x m (column-major).
    const cudaDataType_t dt = cuda_type(ty);
    if (tb)
      CK(cublasLtMatrixLayoutCreate(&la, dt, k, n, k));
    else
      CK(cublasLtMatrixLayoutCreate(&la, dt, n, k, n));
    CK(cublasLtMatrixLayoutCreate(&lb, dt, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&lc, dt, n, m, n));
    if (batch > 1) {
      int32_t bc = batch;
      int64_t sa = int64_t(n) * k, sb = int64_t(m) * k, sc = int64_t(m) * n;
      for (auto [l, st] : {std::pair{la, sa}, std::pair{lb, sb}, std::pair{lc, sc}}) {
        CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
        CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st));
      }
    }
    CK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = L.lt_ws_bytes;
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    if (ty == Ty::bf16) {  // split-K partial sums kept in fp32 (the compute type), never in bf16
      uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask));
    }
    cublasLtMatmulHeuristicResult_t res[8];
    int nres = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(L.lt, desc, la, lb, lc, lc, pref, 8, res, &nres));
    if (nres == 0) throw failure("cuBLASLt heuristic returned no algorithm");
    const float one = 1.f, zero = 0.f;
    auto call = [&](int a) {
      CK(cublasLtMatmul(L.lt, desc, &one, B.v, la, A.v, lb, &zero, C.v, lc, C.v, lc, &res[a].algo, L.lt_ws,
                        L.lt_ws_bytes, T.stream));
    };
    // Pick the fastest of the heuristic's candidates (warm, quick), then time it properly.
    int best = -1;
    double best_us = INFINITY;
    for (int a = 0; a < nres; ++a) {
      if (res[a].state != CUBLAS_STATUS_SUCCESS) continue;
      try {
        for (int w = 0; w < 2; ++w) call(a);
        CK(cudaStreamSynchronize(T.stream));
        CK(cudaEventRecord(T.e0[0], T.stream));
        for (int w = 0; w < 10; ++w) call(a);
        CK(cudaEventRecord(T.e1[0], T.stream));
        CK(cudaEventSynchronize(T.e1[0]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, T.e0[0], T.e1[0]));
        if (ms * 100 < best_us) best_us = ms * 100, best = a;
      } catch (const std::exception&) {
        cudaGetLastError();
      }
    }
    if (best < 0) throw failure("no cuBLASLt algorithm ran");
    C.poison(T.stream);
    call(best);
    CK(cudaStreamSynchronize(T.stream));
    double err = check_C("cublaslt");
    Obj o = T.both([&] { call(best); });
    if (ty == Ty::f32) {
      o.num("rel_err", err).boolean("ok", err < 1e-5).num("algos_tried", nres).num("algo_index", best).str(
          "call", "cublasLtMatmul (CUBLAS_COMPUTE_32F), fastest of the heuristic's candidates");
      if (!(err < 1e-5)) o.str("error", "relative error " + Json::num(err) + " against float64");
    } else {
      judge(o, ty, err,
            ty == Ty::bf16 ? "bf16 in and out (CUDA_R_16BF), fp32 accumulation, split-K reduction in fp32 only"
                           : "fp32 in and out, inputs read as TF32, fp32 accumulation");
      o.num("algos_tried", nres).num("algo_index", best).str(
          "call", std::string("cublasLtMatmul (") + compute_name(ty) + "), fastest of the heuristic's candidates");
    }
    out.obj("cublaslt", o);
  } catch (const std::exception& e) {
    Obj o;
    o.boolean("ok", false).str("error", e.what());
    out.obj("cublaslt", o);
    cudaGetLastError();
  }
  return out;
}

Obj run_dot(Libs& L, Timer& T, const Case& c) {
  const int n = int(c.i("n"));
  const Ty ty = c.type();
  if (ty == Ty::tf32) throw failure("dot: no TF32 variant (a memory-bound reduction)");
  DevBuf a(n, ty), b(n, ty), r(1, ty);
  a.random(3, T.stream);
  b.random(4, T.stream);
  Obj out;
  try {
    CK(cublasSetPointerMode(L.blas, CUBLAS_POINTER_MODE_DEVICE));  // no host round trip
    std::shared_ptr<void> reset(nullptr, [&](void*) { cublasSetPointerMode(L.blas, CUBLAS_POINTER_MODE_HOST); });
    auto call = [&] {
      if (ty == Ty::bf16)  // bf16 vectors and result, fp32 execution
        CK(cublasDotEx(L.blas, n, a.v, CUDA_R_16BF, 1, b.v, CUDA_R_16BF, 1, r.v, CUDA_R_16BF, CUDA_R_32F));
      else
        CK(cublasSdot(L.blas, n, a.p, 1, b.p, 1, r.p));
    };
    r.poison(T.stream);
    call();
    CK(cudaStreamSynchronize(T.stream));
    auto ha = a.host(), hb = b.host();
    double ref = 0, asum = 0;
    for (int i = 0; i < n; ++i) ref += double(ha[i]) * hb[i], asum += std::fabs(double(ha[i]) * hb[i]);
    double got = r.host()[0];
    double err = std::fabs(got - ref) / asum;  // relative to sum |a_i b_i|: the sum cancels
    Obj o = T.both(call);
    if (ty == Ty::f32) {
      o.num("rel_err", err).boolean("ok", std::isfinite(got) && err < 1e-5).str(
          "call", "cublasSdot (device pointer mode)");
    } else {
      judge(o, ty, std::isfinite(got) ? err : INFINITY, "bf16 vectors and result, fp32 execution");
      o.str("call", "cublasDotEx (CUDA_R_16BF, execution CUDA_R_32F, device pointer mode)");
    }
    out.obj("cublas", o);
  } catch (const std::exception& e) {
    Obj o;
    o.boolean("ok", false).str("error", e.what());
    out.obj("cublas", o);
    cudaGetLastError();
  }
  return out;
}

Obj run_gemv(Libs& L, Timer& T, const Case& c) {
  const int m = int(c.i("m")), k = int(c.i("k"));
  const Ty ty = c.type();
  if (ty == Ty::tf32) throw failure("gemv: no TF32 variant (memory-bound)");
  DevBuf M(size_t(m) * k, ty), v(k, ty), w(m, ty);
  M.random(5, T.stream);
  v.random(6, T.stream);
  Obj out;
  try {
    const float one = 1.f, zero = 0.f;
    // Row-major M (m x k) is column-major M^T (k x m), ld k: w = (M^T)^T v.
    // bf16: cuBLAS has no plain bf16 gemv; cublasGemmEx with n = 1 (m x 1 = op(M^T) * v) is
    // the documented way, and it dispatches to a gemv kernel.
    auto call = [&] {
      if (ty == Ty::bf16) {
        CK(cublasSetMathMode(L.blas,
                             cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
        std::shared_ptr<void> reset(nullptr, [&](void*) { cublasSetMathMode(L.blas, CUBLAS_DEFAULT_MATH); });
        CK(cublasGemmEx(L.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, 1, k, &one, M.v, CUDA_R_16BF, k, v.v, CUDA_R_16BF, k,
                        &zero, w.v, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      } else {
        CK(cublasSgemv(L.blas, CUBLAS_OP_T, k, m, &one, M.p, k, v.p, 1, &zero, w.p, 1));
      }
    };
    w.poison(T.stream);
    call();
    CK(cudaStreamSynchronize(T.stream));
    auto hM = M.host(), hv = v.host(), hw = w.host();
    std::vector<double> got, ref;
    for (int i = 0; i < m; i += 7) {
      double acc = 0;
      for (int kk = 0; kk < k; ++kk) acc += double(hM[size_t(i) * k + kk]) * hv[kk];
      ref.push_back(acc);
      got.push_back(hw[i]);
    }
    double err = rel_err(got, ref);
    Obj o = T.both(call);
    if (ty == Ty::f32) {
      o.num("rel_err", err).boolean("ok", err < 1e-5).str("call", "cublasSgemv (CUBLAS_OP_T on the row-major matrix)");
    } else {
      judge(o, ty, err, "bf16 matrix, vector and result, fp32 accumulation");
      o.str("call", "cublasGemmEx, n = 1 (CUDA_R_16BF, CUBLAS_COMPUTE_32F)");
    }
    out.obj("cublas", o);
  } catch (const std::exception& e) {
    Obj o;
    o.boolean("ok", false).str("error", e.what());
    out.obj("cublas", o);
    cudaGetLastError();
  }
  return out;
}

const char* math_name(cudnnMathType_t t) {
  switch (t) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "FMA_MATH";
  }
  return "?";
}

Obj run_conv(Libs& L, Timer& T, const Case& c) {
  const std::string layout = c.s("layout");
  const int n = int(c.i("n")), ch = int(c.i("c")), h = int(c.i("h")), wd = int(c.i("w")), k = int(c.i("k")),
            r = int(c.i("r")), s = int(c.i("s")), st = int(c.i("stride"));
  if (layout != "nchw" && layout != "nhwc") throw failure("conv layout must be nchw or nhwc");
  const bool nhwc = layout == "nhwc";
  const cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  // f32: fp32 FMA math only; bf16: bf16 tensors, fp32 compute, any math (tensor cores read bf16
  // as it is); tf32: fp32 tensors, tensor-op math allowed (TF32), the fastest of any math.
  const Ty ty = c.type();
  const cudnnDataType_t data = ty == Ty::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  const cudnnMathType_t ask = ty == Ty::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  Obj out;
  try {
    cudnnTensorDescriptor_t xd{}, yd{};
    cudnnFilterDescriptor_t wdsc{};
    cudnnConvolutionDescriptor_t cd{};
    std::shared_ptr<void> guard(nullptr, [&](void*) {
      if (xd) cudnnDestroyTensorDescriptor(xd);
      if (yd) cudnnDestroyTensorDescriptor(yd);
      if (wdsc) cudnnDestroyFilterDescriptor(wdsc);
      if (cd) cudnnDestroyConvolutionDescriptor(cd);
    });
    CK(cudnnCreateTensorDescriptor(&xd));
    CK(cudnnCreateTensorDescriptor(&yd));
    CK(cudnnCreateFilterDescriptor(&wdsc));
    CK(cudnnCreateConvolutionDescriptor(&cd));
    CK(cudnnSetTensor4dDescriptor(xd, fmt, data, n, ch, h, wd));
    CK(cudnnSetFilter4dDescriptor(wdsc, data, fmt, k, ch, r, s));
    CK(cudnnSetConvolution2dDescriptor(cd, 0, 0, st, st, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CK(cudnnSetConvolutionMathType(cd, ask));  // f32: FMA, no TF32 tensor cores
    int on, oc, oh, ow;
    CK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wdsc, &on, &oc, &oh, &ow));
    CK(cudnnSetTensor4dDescriptor(yd, fmt, data, on, oc, oh, ow));
    DevBuf X(size_t(n) * ch * h * wd, ty), W(size_t(k) * ch * r * s, ty), Y(size_t(on) * oc * oh * ow, ty);
    X.random(8, T.stream);
    W.random(9, T.stream);
    CK(cudaStreamSynchronize(T.stream));

    int nalg = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CK(cudnnFindConvolutionForwardAlgorithm(L.dnn, xd, wdsc, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nalg, perf));
    std::string found;
    int pick = -1;
    for (int a = 0; a < nalg; ++a) {
      char b[160];
      std::snprintf(b, sizeof b, "%salgo %d: %s %.1f us, %zu B, %s", a ? "; " : "", int(perf[a].algo),
                    perf[a].status == CUDNN_STATUS_SUCCESS ? "ok" : "fail", perf[a].time * 1e3,
                    perf[a].memory, math_name(perf[a].mathType));
      found += b;
      if (pick < 0 && perf[a].status == CUDNN_STATUS_SUCCESS && (ty != Ty::f32 || perf[a].mathType == CUDNN_FMA_MATH))
        pick = a;  // the results come sorted, fastest first
    }
    for (int a = 0; a < nalg && pick < 0; ++a)  // else DEFAULT_MATH: fp32 under NVIDIA_TF32_OVERRIDE=0,
      if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].mathType == CUDNN_DEFAULT_MATH)  // checked below
        pick = a;
    if (pick < 0)
      throw failure(std::string("cuDNN found no ") + (ty == Ty::f32 ? "fp32 (non-tensor-op)" : name_of(ty)) +
                    " algorithm: " + found);
    const cudnnConvolutionFwdAlgo_t algo = perf[pick].algo;
    CK(cudnnSetConvolutionMathType(cd, perf[pick].mathType));
    size_t ws_bytes = 0;
    CK(cudnnGetConvolutionForwardWorkspaceSize(L.dnn, xd, wdsc, cd, yd, algo, &ws_bytes));
    DevBuf ws((ws_bytes + 3) / 4 + 1);
    const float one = 1.f, zero = 0.f;
    auto call = [&] {
      CK(cudnnConvolutionForward(L.dnn, &one, xd, X.v, wdsc, W.v, cd, algo, ws.p, ws_bytes, &zero, yd, Y.v));
    };
    Y.poison(T.stream);
    call();
    CK(cudaStreamSynchronize(T.stream));
    // Sampled float64 check.
    auto hX = X.host(), hW = W.host(), hY = Y.host();
    for (float y : hY)
      if (!std::isfinite(y)) throw failure("cuDNN left unwritten (NaN) outputs");
    std::mt19937_64 rng(11);
    std::vector<double> got, ref;
    for (int t = 0; t < 128; ++t) {
      size_t b = rng() % on, kk = rng() % oc, p = rng() % oh, q = rng() % ow;
      double acc = 0;
      for (int cc = 0; cc < ch; ++cc)
        for (int rr = 0; rr < r; ++rr)
          for (int ss = 0; ss < s; ++ss) {
            size_t hi = p * st + rr, wi = q * st + ss;
            double xv = nhwc ? hX[((b * h + hi) * wd + wi) * ch + cc] : hX[((b * ch + cc) * h + hi) * wd + wi];
            double wv = nhwc ? hW[((kk * r + rr) * s + ss) * ch + cc] : hW[((kk * ch + cc) * r + rr) * s + ss];
            acc += xv * wv;
          }
      ref.push_back(acc);
      got.push_back(nhwc ? hY[((b * oh + p) * ow + q) * oc + kk] : hY[((b * oc + kk) * oh + p) * ow + q]);
    }
    double err = rel_err(got, ref);
    Obj o = T.both(call);
    char algo_s[96];
    std::snprintf(algo_s, sizeof algo_s, "algo %d, %s, workspace %zu B", int(algo), math_name(perf[pick].mathType),
                  ws_bytes);
    if (ty == Ty::f32) {
      o.num("rel_err", err).boolean("ok", err < 1e-5).str("algo", algo_s).str("find", found).str(
          "call", std::string("cudnnConvolutionForward, ") + (nhwc ? "NHWC/KRSC" : "NCHW/KCRS") +
                      ", fastest fp32 algorithm of cudnnFindConvolutionForwardAlgorithm");
      if (!(err < 1e-5)) o.str("error", "relative error " + Json::num(err) + " against float64");
    } else {
      judge(o, ty, err,
            ty == Ty::bf16 ? "bf16 tensors, fp32 compute (CUDNN_DATA_FLOAT), tensor-op math allowed"
                           : "fp32 tensors, TF32 tensor-op math allowed (CUDNN_TENSOR_OP_MATH)");
      o.str("algo", algo_s).str("find", found).str(
          "call", std::string("cudnnConvolutionForward, ") + (nhwc ? "NHWC/KRSC" : "NCHW/KCRS") +
                      ", fastest algorithm of cudnnFindConvolutionForwardAlgorithm");
    }
    out.obj("cudnn", o);
  } catch (const std::exception& e) {
    Obj o;
    o.boolean("ok", false).str("error", e.what());
    out.obj("cudnn", o);
    cudaGetLastError();
  }
  return out;
}

// ---------------------------------------------------------------- ceilings
// The GEMM rate at 8192^3 of one type, as <prefix>_flops_per_s, _us, _rel_err, _method:
// sgemm_* for f32 (no TF32), bf16_gemm_* (bf16 in and out, fp32 accumulation), tf32_gemm_* (the
// rate is left out, with tf32_gemm_error, when the error shows that TF32 was not used, as under
// NVIDIA_TF32_OVERRIDE=0).
void gemm_ceiling(Libs& L, Timer& T, Ty ty, Obj& o) {
  const std::string key = ty == Ty::f32 ? "sgemm" : std::string(name_of(ty)) + "_gemm";
  try {
    const int N = 8192;
    DevBuf A(size_t(N) * N, ty), B(size_t(N) * N, ty), C(size_t(N) * N, ty);
    A.random(13, T.stream);
    B.random(14, T.stream);
    auto f = [&] { any_gemm_rm(L, ty, 1, N, N, N, false, A, B, C); };
    for (int i = 0; i < 2; ++i) f();
    std::vector<double> v;
    for (int r = 0; r < 8; ++r) {
      CK(cudaEventRecord(T.e0[r], T.stream));
      f();
      CK(cudaEventRecord(T.e1[r], T.stream));
    }
    CK(cudaStreamSynchronize(T.stream));
    for (int r = 0; r < 8; ++r) {
      float ms;
      CK(cudaEventElapsedTime(&ms, T.e0[r], T.e1[r]));
      v.push_back(ms * 1e3);
    }
    Stat s = summarize(v);
    // Spot check the precision: TF32 would show ~1e-4 here.
    auto hA = A.host(), hB = B.host(), hC = C.host();
    std::vector<double> got, ref;
    std::mt19937_64 rng(3);
    for (int t = 0; t < 32; ++t) {
      size_t i = rng() % N, j = rng() % N;
      double acc = 0;
      for (int kk = 0; kk < N; ++kk) acc += double(hA[i * N + kk]) * hB[size_t(kk) * N + j];
      ref.push_back(acc);
      got.push_back(hC[i * N + j]);
    }
    const double err = rel_err(got, ref);
    const double rate = 2.0 * N * N * double(N) / (s.median_us * 1e-6);
    if (ty == Ty::tf32 && err < 1e-5)
      o.str(key + "_error", "TF32 was not used (fp32's error " + Json::num(err) +
                                "; NVIDIA_TF32_OVERRIDE=0?): rate " + Json::num(rate) + " not a TF32 ceiling");
    else
      o.num(key + "_flops_per_s", rate);
    o.num(key + "_us", s.median_us).num(key + "_rel_err", err);
    if (ty == Ty::f32)
      o.str("sgemm_method", "cublasSgemm 8192^3, CUBLAS_DEFAULT_MATH (fp32, no TF32), median of 8");
    else
      o.str(key + "_method", std::string("cublasGemmEx 8192^3, ") + (ty == Ty::bf16 ? "CUDA_R_16BF" : "CUDA_R_32F") +
                                 ", " + compute_name(ty) + ", median of 8");
  } catch (const std::exception& e) {
    o.str(key + "_error", e.what());
    cudaGetLastError();
  }
}

// The copy rate, the one-element kernel and the GEMM rates of f32 and of the other `types` run.
Obj ceilings(Libs& L, Timer& T, const std::set<Ty>& types) {
  Obj o;
  try {  // device copy: 1 GiB -> 1 GiB, bytes read + written
    const size_t bytes = size_t(1) << 30;
    DevBuf a(bytes / 4), b(bytes / 4);
    a.random(12, T.stream);
    auto timed = [&](const std::function<void()>& f) {
      for (int i = 0; i < 3; ++i) f();
      std::vector<double> v;
      for (int r = 0; r < 20; ++r) {
        CK(cudaEventRecord(T.e0[r], T.stream));
        f();
        CK(cudaEventRecord(T.e1[r], T.stream));
      }
      CK(cudaStreamSynchronize(T.stream));
      for (int r = 0; r < 20; ++r) {
        float ms;
        CK(cudaEventElapsedTime(&ms, T.e0[r], T.e1[r]));
        v.push_back(ms * 1e3);
      }
      return summarize(v);
    };
    Stat m = timed([&] { CK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, T.stream)); });
    Stat k = timed([&] {
      copy_f4<<<132 * 16, 256, 0, T.stream>>>(reinterpret_cast<const float4*>(a.p), reinterpret_cast<float4*>(b.p),
                                              bytes / 16);
      CK_LAUNCH();
    });
    double memcpy_Bps = 2.0 * bytes / (m.median_us * 1e-6), kernel_Bps = 2.0 * bytes / (k.median_us * 1e-6);
    o.num("copy_bytes_per_s", std::max(memcpy_Bps, kernel_Bps))
        .num("copy_memcpy_bytes_per_s", memcpy_Bps)
        .num("copy_kernel_bytes_per_s", kernel_Bps)
        .str("copy_method", "1 GiB device-to-device, bytes read + written, median of 20; the larger of "
                            "cudaMemcpyAsync and a float4 copy kernel");
  } catch (const std::exception& e) {
    o.str("copy_error", e.what());
    cudaGetLastError();
  }
  try {  // the per-call floor of the method: one launch of a one-element kernel
    DevBuf x(1);
    x.random(15, T.stream);
    Obj oe = T.both([&] {
      one_element<<<1, 1, 0, T.stream>>>(x.p);
      CK_LAUNCH();
    });
    o.obj("one_element_kernel", oe);
  } catch (const std::exception& e) {
    o.str("one_element_error", e.what());
    cudaGetLastError();
  }
  gemm_ceiling(L, T, Ty::f32, o);
  for (Ty t : {Ty::bf16, Ty::tf32})
    if (types.count(t)) gemm_ceiling(L, T, t, o);
  return o;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cases_path, out_path, only;
  int reps = 0;
  bool do_ceilings = true, list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--cases") cases_path = next();
    else if (a == "--out") out_path = next();
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--only") only = "," + next() + ",";
    else if (a == "--no-ceilings") do_ceilings = false;
    else if (a == "--list") list = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: %s --cases FILE --out FILE.json [--reps N] [--only A,B] [--no-ceilings] [--list]\n",
                  argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (cases_path.empty() || (out_path.empty() && !list)) {
    std::fprintf(stderr, "usage: %s --cases FILE --out FILE.json\n", argv[0]);
    return 2;
  }
  Obj root, cases_obj;
  auto write = [&] {
    root.obj("cases", cases_obj);
    std::ofstream f(out_path);
    f << root.dump() << "\n";
  };
  try {
    std::vector<Case> cases = read_cases(cases_path);
    for (const Case& c : cases) c.type();  // a bad type= fails here, before any GPU work
    if (list) {  // what would run, and in which type: no GPU needed
      for (const Case& c : cases)
        if (only.empty() || only.find("," + c.name + ",") != std::string::npos)
          std::printf("%-28s %-5s %s\n", c.name.c_str(), name_of(c.type()), c.kind.c_str());
      return 0;
    }
    int dev = 0, rt = 0, drv = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp p{};
    CK(cudaGetDeviceProperties(&p, dev));
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    root.str("tool", "bench/peers/vendor.cu")
        .str("date", now_utc())
        .str("device", p.name)
        .num("sm_count", p.multiProcessorCount)
        .num("l2_bytes", p.l2CacheSize)
        .num("cuda_runtime", rt)
        .num("cuda_driver", drv)
        .num("cublas_version", double(cublasLtGetVersion()))
        .num("cudnn_version", double(cudnnGetVersion()))
        .str("tf32_override_env", std::getenv("NVIDIA_TF32_OVERRIDE") ? std::getenv("NVIDIA_TF32_OVERRIDE") : "")
        .str("method",
             "per_call: 256 MB cudaMemsetAsync (L2 flush), synchronize, event, call, event (includes host "
             "dispatch); graph: flush, event, cudaGraphLaunch of the captured call, event (no synchronization: "
             "kernel time); median of 20-200 repetitions");
    std::printf("vendor: %s, CUDA runtime %d, driver %d, cuBLAS %zu, cuDNN %zu\n", p.name, rt, drv,
                cublasLtGetVersion(), cudnnGetVersion());
    Timer T(200);
    T.reps_override = reps;
    Libs L(T.stream);
    write();
    if (do_ceilings) {
      std::set<Ty> types;
      for (const Case& c : cases)
        if (only.empty() || only.find("," + c.name + ",") != std::string::npos) types.insert(c.type());
      Obj ce = ceilings(L, T, types);
      root.obj("ceilings", ce);
      write();
      std::printf("%s\n", ce.dump().c_str());
    }
    for (const Case& c : cases) {
      if (!only.empty() && only.find("," + c.name + ",") == std::string::npos) continue;
      auto t0 = std::chrono::steady_clock::now();
      Obj o;
      try {
        if (c.kind == "gemm") o = run_gemm(L, T, c);
        else if (c.kind == "dot") o = run_dot(L, T, c);
        else if (c.kind == "gemv") o = run_gemv(L, T, c);
        else if (c.kind == "conv") o = run_conv(L, T, c);
        else throw failure("unknown kind " + c.kind);
      } catch (const std::exception& e) {
        o.str("error", e.what());
        cudaGetLastError();
      }
      cases_obj.obj(c.name, o);
      write();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-22s %5.1f s\n", c.name.c_str(), s);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    root.str("error", e.what());
    write();
    std::fprintf(stderr, "vendor: %s\n", e.what());
    return 1;
  }
  write();
  return 0;
}
