// SPDX-License-Identifier: MIT
// Which generation of generated kernels this mdh prints. A tuning log records the generation its
// costs were measured with; a log of another generation is set aside (its best configurations
// still start the search), since a configuration's cost is its kernel's, and the kernel of the
// same configuration may have changed.
#pragma once

namespace mdh {

// Bump whenever a change alters generated sources (backends_source_hashes fails, and rewriting
// tests/backends/source_hashes.txt refuses to, until the generation differs from the one that
// file was written with).
//  1: the first with a tag (2026-11-27): unguarded register slots, shifted tile copies
//     (edge_split 2). Logs without a generation are older.
//  2: shifted tile copies taken out again (measured slower on an H100 at every unaligned size).
//  3: tensor-core kernels pass two adjacent columns through a point-wise epilogue and store them
//     as one word (as they store a plain product).
//  4: shared tiles stored with the buffer's first dimension innermost (transpose 2, rank >= 3)
//     are filled in their stored order (copy_schedule's copy_order): a warp stores consecutive
//     words instead of one bank (2026-11-27).
//  5: the persistent wgmma kernel reads its warpgroup index through __shfl_sync (warp-uniform to
//     ptxas, whose wgmmas in the role branches were otherwise serialized for some tiles), and its
//     header counts the producer warpgroup (2026-11-27).
//  6: the tensor-core attention tests bounds only where a tile reaches past the sizes (its
//     row blocks or key steps), and p = ex2(...) without a select (2026-11-28).
//  7: a tensor-core attention whose results are all 16-bit divides by div.full.f32 (2 ulp)
//     instead of the IEEE division (2026-11-28).
//  8: 16-bit buffers (bf16, f16) read and written as vectors along vec / vec_pw groups (2, 4
//     or 8 elements: up to 16 bytes) instead of element by element; their spaces offer 8
//     (2026-11-28).
//  9: where every output is 16-bit, float exp and division print as ex2.approx and
//     div.full.f32 (kernel_plan::approx_math; the bf16 softmax was issue-bound on the IEEE
//     ones) (2026-11-28).
// 10: a fused pair's second stage reads an input the first stage read alike (same thread, same
//     register slot) from the first stage's registers (fuse.hpp keep_in_registers), its rm-step
//     loops unrolled (2026-11-28).
// 11: every CUDA kernel starts with mdh_grid_dependency() (griddepcontrol.wait, then
//     .launch_dependents, on sm_90 on): the wait that programmatic dependent launch needs; a
//     no-op for kernels launched without it (2026-11-29).
// 12: split TF32 (precision tf32x3) splits by integer arithmetic (the prelude's mdh_tf32_hi/_lo:
//     lo = x - hi truncated to TF32) instead of two cvt.rna.tf32.f32, which sm_90 runs as
//     sequences with a NaN test (2026-11-29).
// 13: a fused pair's second stage also takes the first stage's results (softmax's max and sum,
//     layernorm's sums) from registers where every thread holds them after the combine, and
//     then, using no shared memory, runs without a block barrier after the first (2026-11-29).
// 14: the tensor-core attention writes its results through shared memory as 16-byte stores,
//     waits for a step's values only before p V (the scores start on the column operands
//     alone), and folds each row's max and sum in two chains (2026-11-29)
// 15: the first stage of a 16-bit fused pair whose float outputs (softmax's statistics, float
//     since generation 14's session) only feed the 16-bit results approximates exp and division
//     as the second stage does (2026-11-29)
// 16: TF32 wgmma kernels round their tiles chunk by chunk with 16-byte loads and stores, and a
//     landed (M/N-contiguous) operand is copied in 4x4 blocks per thread and transposed from
//     registers, its 16-byte stores on distinct banks (before: one element per store, 16 lanes
//     of a warp on one bank) (2026-11-29)
inline constexpr int kernel_generation = 16;

}  // namespace mdh
