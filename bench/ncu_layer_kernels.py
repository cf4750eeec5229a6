#!/usr/bin/env python3
"""Where the layer's time goes, kernel by kernel, from `ncu --csv --metrics ...` of
bench/layer_bench (written by `bench/device.sh layer_kernels`).

  python3 bench/ncu_layer_kernels.py [--title T] [--all] layer_kernels.csv

layer_bench runs each stage, then the whole layer, last of all its graph replay: the last
launch of each kernel (name and grid) is the one inside the layer, with the caches as the
previous kernel left them. Those are printed in launch order with their share of the sum
(--all: every launch).
"""
import csv
import sys

COLUMNS = [
    ("gpu__time_duration.sum", "us", 1e-3),
    ("dram__bytes_read.sum", "dram rd MB", 1e-6),
    ("dram__bytes_write.sum", "dram wr MB", 1e-6),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm %", 1),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "mem %", 1),
    ("launch__grid_size", "grid", 1),
    ("launch__block_size", "block", 1),
    ("launch__registers_per_thread", "regs", 1),
]
# ncu scales units on its own (ns/us, byte/Kbyte/Mbyte): back to the base unit first
UNIT = {"ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "nsecond": 1,
        "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def value(text, unit):
    v = float(text.replace(",", ""))
    return v * UNIT.get(unit, 1)


def main():
    argv = sys.argv[1:]
    title = ""
    if "--title" in argv:
        i = argv.index("--title")
        title = argv[i + 1]
        del argv[i:i + 2]
    every = "--all" in argv
    files = [a for a in argv if not a.startswith("--")]
    if len(files) != 1:
        raise SystemExit(__doc__)
    lines = [line for line in open(files[0], errors="replace") if line.startswith('"')]
    if not lines:
        print(f"== {title}: no ncu rows in {files[0]}")
        for line in open(files[0], errors="replace").readlines()[-15:]:
            print("   " + line.rstrip())
        return
    launches = {}
    for r in csv.DictReader(lines):
        key = int(r["ID"])
        launches.setdefault(key, {"name": r["Kernel Name"]})[r["Metric Name"]] = value(
            r["Metric Value"], r["Metric Unit"])
    order = sorted(launches)
    if not every:
        last = {}
        for i in order:
            k = launches[i]
            last[(k["name"], k.get("launch__grid_size"))] = i
        order = sorted(last.values())
    total = sum(launches[i].get("gpu__time_duration.sum", 0) for i in order) * 1e-3
    print(f"== {title}: {len(order)} kernels, {total:.1f} us in all "
          f"({'every launch' if every else 'the last launch of each: the layer graph'})")
    print(f"{'kernel':46s} " + " ".join(f"{c[1]:>10s}" for c in COLUMNS) + "   share")
    for i in order:
        k = launches[i]
        cells = []
        for metric, _, scale in COLUMNS:
            v = k.get(metric)
            cells.append(f"{'-':>10s}" if v is None else f"{v * scale:10.1f}")
        t = k.get("gpu__time_duration.sum", 0) * 1e-3
        print(f"{k['name'][:46]:46s} " + " ".join(cells) + f"  {100 * t / total if total else 0:5.1f}%")


if __name__ == "__main__":
    main()
