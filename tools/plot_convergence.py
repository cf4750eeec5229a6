#!/usr/bin/env python3
"""Plots a tuning run's convergence from its atf log (JSON lines): the best time found so far
against the number of evaluations and against wall time, with the peers' times as horizontal
lines when given.

  python3 tools/plot_convergence.py LOG.jsonl [LOG2.jsonl ...] -o convergence.png \
      [--peer "cuBLAS=57.7" --peer "torch.compile=64.0"] [--title TEXT]
      [--mark-time 60] [--line "NAME=US"] [--normalize] [--ymax Y] [--label NAME]...

Several logs are drawn as several curves (e.g. two techniques). The parameter file beside a log
(LOG without ".log.jsonl", or --params FILE for the first log) gives the default configuration's
time, measured in the same run: it is drawn as a dotted line, marked "kept" when no evaluated
configuration beat it and the parameter file holds the default ("chosen": "default").
--mark-time S draws a vertical line at S seconds of wall time (e.g. 60: the issue-19 minute);
--line NAME=Y a horizontal line that is not a peer (e.g. the final best + 5 %); --normalize
divides each curve by its own final best (several cases on one picture; --line and --ymax in those
units then); --ymax cuts the y axis there; --label names the logs' curves in order (default: the
file names). Needs matplotlib (Debian: python3-matplotlib; scripts/setup.sh installs it)."""
import os
import argparse
import json
import sys
from datetime import datetime


def seconds(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_log(path):
    """Returns [(evaluation number, seconds since the run started, best cost so far)]; the clock
    is the records' timestamps (evaluations overlap: compiles run in parallel), resumed sessions
    are laid end to end."""
    points, best, n, t0 = [], float("inf"), 0, None
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_convergence: {path}:{line_no}: not JSON ({e})")
            if "atf_log" in rec:
                continue  # the header (a resumed run appends records to the same file)
            if "configuration" not in rec:
                sys.exit(f"plot_convergence: {path}:{line_no}: not an atf evaluation record")
            n += 1
            now = seconds(rec["timestamp"]) if "timestamp" in rec else float(n)
            if t0 is None:
                t0 = now - float(rec.get("elapsed_s", 0.0))
            t = now - t0
            if rec.get("valid") and rec.get("cost") is not None and rec["cost"] < best:
                best = rec["cost"]
            if best < float("inf"):
                points.append((n, t, best))
    if not points:
        sys.exit(f"plot_convergence: {path}: no valid evaluation")
    return points


def read_default(log_path, params_path=None):
    """The default configuration's time and whether it was kept, from the parameter file of a
    log; None when there is no such file (or it holds no default time)."""
    path = params_path or (log_path[: -len(".log.jsonl")] if log_path.endswith(".log.jsonl") else None)
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            tuning = json.load(f).get("tuning", {})
    except (OSError, ValueError) as e:
        sys.exit(f"plot_convergence: {path}: not a parameter file ({e})")
    cost = tuning.get("default_cost")
    if not isinstance(cost, (int, float)) or cost != cost or cost == float("inf"):
        return None
    return float(cost), tuning.get("chosen") == "default"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("-o", "--output", default="convergence.png")
    ap.add_argument("--peer", action="append", default=[], help="NAME=MICROSECONDS")
    ap.add_argument("--title", default="")
    ap.add_argument("--params", default=None,
                    help="the parameter file of the first log (default: beside the log)")
    ap.add_argument("--mark-time", action="append", type=float, default=[],
                    help="SECONDS: a vertical line on the wall-time axis")
    ap.add_argument("--line", action="append", default=[], help="NAME=Y: a horizontal line")
    ap.add_argument("--normalize", action="store_true", help="each curve divided by its final best")
    ap.add_argument("--ymax", type=float, default=None, help="the top of the y axis")
    ap.add_argument("--label", action="append", default=[], help="the curves' names, in order")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_convergence: matplotlib is missing (Debian: apt-get install python3-matplotlib)")
    peers, lines = [], []
    for opt, given, into in (("--peer", args.peer, peers), ("--line", args.line, lines)):
        for p in given:
            name, _, value = p.partition("=")
            try:
                into.append((name, float(value)))
            except ValueError:
                sys.exit(f"plot_convergence: {opt} '{p}' is not NAME=NUMBER")

    fig, (ax_n, ax_t) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for k, path in enumerate(args.logs):
        pts = read_log(path)
        label = args.label[k] if k < len(args.label) else path.rsplit("/", 1)[-1].replace(".log.jsonl", "")
        scale = pts[-1][2] if args.normalize else 1.0
        line, = ax_n.step([p[0] for p in pts], [p[2] / scale for p in pts], where="post", label=label)
        ax_t.step([p[1] for p in pts], [p[2] / scale for p in pts], where="post", label=label)
        default = read_default(path, args.params if k == 0 else None)
        if default is None or args.normalize:  # several cases: their defaults would crowd it
            continue
        us, kept = default
        text = f"default configuration {us:.2f} µs" + (": kept (no evaluation beat it)" if kept else "")
        for ax, x in ((ax_n, pts[-1][0]), (ax_t, pts[-1][1])):
            ax.axhline(us, linestyle=":", linewidth=1.2, color=line.get_color())
            if kept:  # what the parameter file holds, at the end of the run
                ax.plot([x], [us], marker="*", markersize=12, color=line.get_color(), zorder=5)
            ax.annotate(text, (ax.get_xlim()[0], us), ha="left", va="bottom", fontsize=8,
                        color=line.get_color())
        print(f"plot_convergence: {path}: {text}")
    for style, drawn in (("--", peers), (":", lines)):
        for name, us in drawn:
            for ax in (ax_n, ax_t):
                ax.axhline(us, linestyle=style, linewidth=1, color="gray")
                ax.annotate(name, (ax.get_xlim()[1], us), ha="right", va="bottom", fontsize=8, color="gray")
    for s in args.mark_time:
        ax_t.axvline(s, linestyle="--", linewidth=1, color="black")
        ax_t.annotate(f"{s:g} s", (s, 1), xycoords=("data", "axes fraction"), ha="left", va="top",
                      fontsize=8)
    ax_n.set_xlabel("evaluations")
    ax_t.set_xlabel("wall time (s)")
    ax_n.set_ylabel("best so far / final best" if args.normalize else "best time so far (µs)")
    for ax in (ax_n, ax_t):
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        if args.ymax is not None:
            ax.set_ylim(top=args.ymax)
    ax_n.legend(fontsize=8)
    fig.suptitle(args.title or "tuning convergence")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot_convergence: wrote {args.output}")


if __name__ == "__main__":
    main()
