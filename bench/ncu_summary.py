#!/usr/bin/env python3
"""One line per kernel from an Nsight Compute CSV (`ncu --csv --page details`, as written by
`bench/device.sh profile`): the launch shape and the metrics that say what bounds a kernel.

  python3 bench/ncu_summary.py ncu_ours.csv [--all]

Each kernel name and launch shape is shown once (its last profiled launch; --all: every launch).
"""
import csv
import sys

METRICS = [
    ("Duration", "time"),
    ("DRAM Throughput", "dram"),
    ("Compute (SM) Throughput", "sm"),
    ("Issue Slots Busy", "issue"),
    ("Registers Per Thread", "regs"),
    ("Achieved Occupancy", "occ"),
    ("Theoretical Occupancy", "occ_max"),
    ("Dynamic Shared Memory Per Block", "smem"),
    ("L1/TEX Hit Rate", "l1_hit"),
    ("L2 Hit Rate", "l2_hit"),
    ("Mem Busy", "mem_busy"),
    ("Warp Cycles Per Issued Instruction", "cyc/issue"),
    ("Waves Per SM", "waves"),
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        raise SystemExit(__doc__)
    every = "--all" in sys.argv
    # ncu prints its own lines (==PROF==, the program's output) before the CSV rows
    lines = [line for line in open(args[0], errors="replace") if line.startswith('"')]
    launches = {}
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"], r["Grid Size"], r["Block Size"])
        launches.setdefault(key, {})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    shown = {}
    for (lid, name, grid, block), m in sorted(launches.items(), key=lambda kv: int(kv[0][0])):
        k = (lid,) if every else (name, grid, block)
        shown[k] = (name, grid, block, m)
    for name, grid, block, m in shown.values():
        parts = []
        for metric, label in METRICS:
            if metric in m:
                value, unit = m[metric]
                unit = {"%": "%", "ns": " ns", "us": " us", "byte/block": " B"}.get(unit, "")
                parts.append(f"{label}={value.replace(',', '')}{unit}")
        print(f"{name[:70]} grid{grid} block{block}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
