#!/usr/bin/env bash
# Prints the fp32 matmul sources of the edge-tile A/B (bench/kernel_ab/README.md, "Odd sizes"):
# for the odd development products and 1024^3, tile shapes of three origins - the H100 file
# tuned for 997x1009x769, the product start's 128x128, and the H200's tuned 1024^3 and
# 2048x768x768 files - each with edge_split 0, 1 and 2, printed by the printer given.
#   edge_sources.sh PRINT_SOURCE OUT_DIR [tag]
set -euo pipefail
ps=$1 out=$2 tag=${3:-}
mkdir -p "$out"
f=params/h100/matmul_127c1d4b_997_1009_769.json
h1024=params/h200/matmul_127c1d4b_1024_1024_1024.json
h768=params/h200/matmul_127c1d4b_2048_768_768.json
# name: base file, then overrides (without blk_0/blk_1, derived from the sizes below)
declare -A shapes=([997]="997 1009 769" [1023]="1023 1025 1027" [4095]="4095 4097 33" [1024]="1024 1024 1024")
for s in 997 1023 4095 1024; do
  read -r M N K <<<"${shapes[$s]}"
  for cfg in tuned s128 h1024 h768; do
    case $cfg in
      tuned) base=$f; sm0=32 sm1=32 ov="" ;;
      s128) base=$f; sm0=128 sm1=128
        ov="t_rm_0 8 t_rm_1 8 thr_0 16 thr_1 16 t_sm_0 128 t_sm_1 128 t_sm_2 8 blk_2 1" ;;
      h1024) base=$h1024; sm0=64 sm1=128 ov="" ;;
      h768) base=$h768; sm0=128 sm1=192 ov="" ;;
    esac
    blk="blk_0 $(((M + sm0 - 1) / sm0)) blk_1 $(((N + sm1 - 1) / sm1))"
    for e in 0 1 2; do
      [ -n "$tag" ] && [ $e != 0 ] && continue  # the old printer: edge_split 0 only
      name="$out/${tag}m${s}_${cfg}_e${e}.cu"
      extra=""
      [ $e != 0 ] && extra="edge_split $e"
      # shellcheck disable=SC2086
      "$ps" "$base" sizes "$M" "$N" "$K" $ov $blk $extra >"$name" 2>"$name.err" ||
        { echo "skip $name: $(cat "$name.err")"; rm -f "$name"; }
      rm -f "$name.err"
    done
  done
done
# committed files whose source the change touches, as they are (H200 files lowered for an H100)
for p in params/h200/matmul_127c1d4b_10_500_64.json params/h200/matmul_127c1d4b_16_1000_2048.json \
  params/h100/matmul_127c1d4b_4095_4097_33.json params/h100/matmul_127c1d4b_1023_1025_1027.json; do
  n=$(basename "$p" .json)
  name="$out/${tag}file_${n#matmul_127c1d4b_}.cu"
  "$ps" "$p" >"$name" 2>/dev/null || { echo "skip $name: several kernels"; rm -f "$name"; }
done
