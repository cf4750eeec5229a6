#!/usr/bin/env bash
# ncu and a SASS instruction count of printed sources (print_source), on the device:
#   OUT=dir bash bench/kernel_ab/profile_sources.sh a.cu b.cu ...
# Per source: $OUT/<name>.ncu.csv (one launch after warm-up: SpeedOfLight, Occupancy,
# WarpStateStats, InstructionStats, MemoryWorkloadAnalysis) and a line of SASS counts in
# $OUT/sass_counts.txt (cubin from nvcc for sm_90, cuobjdump -sass).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
[ -x /tmp/time_sources ] ||
  nvcc -O2 -arch=sm_90 bench/kernel_ab/time_sources.cu -o /tmp/time_sources -lcublas -lnvrtc -lcuda ||
  exit 1
stalls=$(for s in long_scoreboard barrier mio_throttle short_scoreboard math_pipe_throttle \
  lg_throttle wait not_selected dispatch_stall; do
  printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$s"; done)
stalls=${stalls%,}
for f in "$@"; do
  n=$(basename "$f" .cu)
  timeout 120 ncu --clock-control none -k 'regex:^mdh_' --launch-skip 5 -c 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats \
    --section MemoryWorkloadAnalysis --section LaunchStats --metrics "$stalls" --csv --page details \
    /tmp/time_sources "$f" >"$OUT/$n.ncu.csv" 2>"$OUT/$n.ncu.err"
  nvcc -arch=sm_90 -cubin -o "/tmp/$n.cubin" -x cu "$f" 2>/dev/null &&
    cuobjdump -sass "/tmp/$n.cubin" >"/tmp/$n.sass" &&
    echo "$n $(for op in FFMA 'LDS.128' 'LDS.64' LDS 'LDG[.A-Z0-9]*128' 'LDG[.A-Z0-9]*' 'STS.128' STS BAR 'ISETP[.A-Z]*' BRA; do
      printf '%s=%s ' "$op" "$(grep -cE "[[:space:]]$op[[:space:];]" "/tmp/$n.sass")"; done)" |
      tee -a "$OUT/sass_counts.txt"
done
python3 - "$OUT" "$@" <<'PY'
import csv, os, sys
out = sys.argv[1]
want = ["Duration", "Registers Per Thread", "Achieved Occupancy", "Compute (SM) Throughput",
        "Memory Throughput", "L1/TEX Hit Rate", "Executed Ipc Active",
        "Issue Slots Busy", "Warp Cycles Per Issued Instruction", "Executed Instructions",
        "L2 Hit Rate", "DRAM Throughput", "Theoretical Occupancy"]
for f in sys.argv[2:]:
    n = os.path.basename(f)[:-3]
    try:
        lines = open(os.path.join(out, n + ".ncu.csv")).read().splitlines()
        head = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))  # after ncu's notes
        rows = list(csv.DictReader(lines[head:]))
    except Exception as e:
        print(n, "no ncu csv:", e); continue
    vals = {r["Metric Name"]: r["Metric Value"] + " " + r["Metric Unit"] for r in rows
            if r.get("Metric Name") in want or "issue_stalled" in r.get("Metric Name", "")}
    short = lambda k: k.replace("smsp__average_warps_issue_stalled_", "stall ").replace(
        "_per_issue_active.ratio", "")
    print(n, "; ".join(f"{short(k)}: {v}" for k, v in vals.items()))
PY
