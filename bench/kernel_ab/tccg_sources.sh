#!/usr/bin/env bash
# Prints the CUDA sources of the TCCG 4-D A/B (bench/kernel_ab/README.md, "TCCG 4-D"):
# tccg_abcd_aebf_dfce and tccg_abcd_eafd_fbec at 48^6, each
#   - as its H100 parameter file is tuned (*_tuned.cu);
#   - the product start configurations of tuning/start_configurations.hpp as the new start rules
#     make them (*_s<k>.cu: two output dimensions per operand, 4-element register tiles read as
#     vectors, reductions that are an operand's contiguous index tiled 4 wide), k = 0 1 2 3 12 13
#     (prefetch 2/1/0, K tiles of 16 and 32, 8x8 and 4x4 register tiles);
#   - the first product start of the old rules (*_olds0.cu: 48 x 48 block tiles of 64 threads).
# The configurations are spelled out (NAME VALUE ...), so the same files printed by another
# printer (an older print_source, given as OLD with a tag) compare printers on the same
# configurations.
#   tccg_sources.sh PRINT_SOURCE OUT_DIR [OLD_PRINT_SOURCE TAG]
# PRINT_SOURCE must be the new print_source (its `starts` lists the new start rules').
set -euo pipefail
ps=$1 out=$2 old=${3:-} tag=${4:-old_}
mkdir -p "$out"
declare -A files=(
  [aebf]=params/h100/tccg_abcd_aebf_dfce_f3396a6a_48_48_48_48_48_48.json
  [eafd]=params/h100/tccg_abcd_eafd_fbec_a2be8728_48_48_48_48_48_48.json)
# the first start of the old rules (before 2026-11-27) at 48^6: 8 x 8 threads of 6 x 6 on b and d
# (aebf) or c and d (eafd), one element of the other two output dimensions per block, e one
# element per tile
common="blk_4 1 blk_5 1 blk_combine 1 cache_0 1 cache_1 1 pad_0 0 pad_1 0 prefetch 2 \
strided_0 0 strided_1 0 strided_2 0 strided_3 0 strided_4 0 strided_5 0 t_rm_4 1 t_rm_5 8 \
t_sm_4 1 t_sm_5 16 thr_4 1 thr_5 1 thr_combine 0 thr_map_0 0 thr_map_3 0 thr_map_4 0 \
thr_map_5 0 transpose_0 0 transpose_1 0 vec 2 t_rm_3 6 t_sm_3 48 thr_3 8 blk_3 1"
declare -A old_s0=(
  [aebf]="$common blk_0 48 blk_1 1 blk_2 48 t_rm_0 1 t_rm_1 6 t_rm_2 1 t_sm_0 1 t_sm_1 48 \
t_sm_2 1 thr_0 1 thr_1 8 thr_2 1 thr_map_1 1 thr_map_2 0 transpose_0 1"
  [eafd]="$common blk_0 48 blk_1 48 blk_2 1 t_rm_0 1 t_rm_1 1 t_rm_2 6 t_sm_0 1 t_sm_1 1 \
t_sm_2 48 thr_0 1 thr_1 1 thr_2 8 thr_map_1 0 thr_map_2 1")
# name VALUE pairs of line k (from 0) of `print_source FILE starts`
start_cfg() { "$1" "$2" starts | sed -n "$(($3 + 1))p" | cut -d: -f2- | sed 's/=/ /g'; }
one() {  # printer, output name, file, overrides...
  local p=$1 name=$2 file=$3
  shift 3
  "$p" "$file" "$@" >"$name" 2>"$name.err" || { echo "skip $name: $(cat "$name.err")"; rm -f "$name"; }
  rm -f "$name.err"
}
for c in aebf eafd; do
  f=${files[$c]}
  # a start's text leaves out vec_pw 1 and edge_split 0: not the file's (aebf's has vec_pw 2)
  d="vec_pw 1 edge_split 0"
  variants=("tuned:" "olds0:$d ${old_s0[$c]}")
  for k in 0 1 2 3 12 13; do variants+=("s$k:$d $(start_cfg "$ps" "$f" $k)"); done
  for v in "${variants[@]}"; do
    n=${v%%:*} cfg=${v#*:}
    # shellcheck disable=SC2086
    one "$ps" "$out/${c}_$n.cu" "$f" $cfg
    # shellcheck disable=SC2086
    [ -n "$old" ] && one "$old" "$out/$tag${c}_$n.cu" "$f" $cfg
  done
done
ls "$out" | wc -l
