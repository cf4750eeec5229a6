// SPDX-License-Identifier: MIT
// How the tensor cores read an f32 operand of a TF32 instruction that is not already a TF32
// value: its low 13 significand bits cut off (truncation), rounded (to nearest, ties away, as
// cvt.rna.tf32.f32 does), or used. mdh rounds every TF32 operand itself (the reference does the
// same); if the hardware truncates, a kernel that skipped the rounding would compute the
// truncated products instead, which is the question this answers before anyone relies on it.
//
// One mma.sync.m16n8k8 TF32 per warp with a single non-zero product D(0,0) = x * y: exact in
// f32 for TF32 inputs (11-bit significands), so D tells which inputs the multiplier saw.
// Build and run on the GPU machine (sm_80 or later):
//   nvcc -arch=sm_90a -O2 bench/probes/tf32_inputs.cu -o /tmp/tf32_inputs && /tmp/tf32_inputs
// Prints how many of N random pairs match each reading; exit status 0 when one reading
// explains every pair, 1 otherwise.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

__global__ void probe(const float* x, const float* y, float* d, int n) {
  const int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
  if (w >= n) return;
  // A(0,0) = x (lane 0's a0), B(0,0) = y (lane 0's b0), every other element 0
  const unsigned a0 = lane == 0 ? __float_as_uint(x[w]) : 0u;
  const unsigned b0 = lane == 0 ? __float_as_uint(y[w]) : 0u;
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(0u), "r"(0u), "r"(0u), "r"(b0), "r"(0u));
  if (lane == 0) d[w] = c0;  // D(0,0)
}

static float bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static std::uint32_t word(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float truncated(float f) { return bits(word(f) & 0xffffe000u); }
static float rounded(float f) { return bits((word(f) + 0x1000u) & 0xffffe000u); }  // ties away

int main() {
  const int n = 1 << 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(0.5f, 2.0f);
  std::vector<float> x(n), y(n), d(n);
  for (int i = 0; i < n; ++i) {  // random values whose low 13 bits are random too
    x[i] = bits((word(mag(rng)) & 0xffffe000u) | (rng() & 0x1fffu)) * (i % 2 ? -1.f : 1.f);
    y[i] = bits((word(mag(rng)) & 0xffffe000u) | (rng() & 0x1fffu));
  }
  float *dx, *dy, *dd;
  cudaMalloc(&dx, n * 4), cudaMalloc(&dy, n * 4), cudaMalloc(&dd, n * 4);
  cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), n * 4, cudaMemcpyHostToDevice);
  probe<<<n * 32 / 256, 256>>>(dx, dy, dd, n);
  if (cudaError_t e = cudaMemcpy(d.data(), dd, n * 4, cudaMemcpyDeviceToHost); e != cudaSuccess) {
    std::printf("tf32_inputs: CUDA error: %s\n", cudaGetErrorString(e));
    return 2;
  }
  int trunc_n = 0, round_n = 0, full_n = 0;
  for (int i = 0; i < n; ++i) {
    trunc_n += d[i] == truncated(x[i]) * truncated(y[i]);
    round_n += d[i] == rounded(x[i]) * rounded(y[i]);
    full_n += d[i] == x[i] * y[i];
  }
  std::printf(
      "%d random pairs, D = x * y by one TF32 mma.sync: matches truncated inputs %d, "
      "rounded (to nearest, ties away) %d, the f32 inputs as they are %d\n",
      n, trunc_n, round_n, full_n);
  return trunc_n == n || round_n == n || full_n == n ? 0 : 1;
}
