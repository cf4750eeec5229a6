#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints the sources of the wgmma A/B (mma = 2 against each size's tuned kernel, mostly mma = 1)
# into a folder for time_sources: per size (2048x3072x768, 2048x768x768, 1024^3, 997x1009x769)
# the size's tuned parameter file as it is ("tuned"), and wgmma configurations on top of the
# tuned 2048x3072x768 file (its axes; warpgroups wm x wn of tm x tn, tile_k, stages).
#   bench/kernel_ab/wgmma_sources.sh PRINT_SOURCE OUT_DIR
set -euo pipefail
ps=$1
out=$2
mkdir -p "$out"
base=params/h100/bf16/matmul_d30ce5c1_2048_3072_768.json
# name: wm wn tm tn tk stages
configs=(
  "w2x1_64x128_k64_s4:2 1 64 128 64 4"
  "w2x1_64x256_k64_s3:2 1 64 256 64 3"
  "w2x1_128x128_k64_s3:2 1 128 128 64 3"
  "w1x2_128x128_k64_s3:1 2 128 128 64 3"
  "w2x2_64x128_k64_s3:2 2 64 128 64 3"
  "w2x1_64x128_k32_s5:2 1 64 128 32 5"
  "w1x1_64x128_k64_s4:1 1 64 128 64 4"
  "w1x1_64x256_k64_s3:1 1 64 256 64 3"
)
for size in "2048 3072 768" "2048 768 768" "1024 1024 1024" "997 1009 769"; do
  tag=${size// /x}
  own=params/h100/bf16/matmul_d30ce5c1_${size// /_}.json
  "$ps" "$own" > "$out/${tag}_tuned.cu"
  for c in "${configs[@]}"; do
    name=${c%%:*}
    read -r wm wn tm tn tk st <<< "${c#*:}"
    "$ps" "$base" sizes $size mma 2 mma_warps_m "$wm" mma_warps_n "$wn" mma_tile_m "$tm" \
      mma_tile_n "$tn" mma_tile_k "$tk" mma_stages "$st" mma_swizzle 1 > "$out/${tag}_${name}.cu"
  done
done
ls "$out" | wc -l
