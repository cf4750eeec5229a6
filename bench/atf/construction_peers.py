# SPDX-License-Identifier: MIT
"""Times the construction of the published search spaces by python-constraint2, Kernel Tuner and
pyATF (construction = every valid configuration enumerable by index), each exactly REPEATS times.
Usage: construction_peers.py SPACES_DIR [TOOLS] [REPEATS]. Prints one JSON line per (tool, space):
{"tool", "space", "count", "seconds" (best), "median", "runs"} or {"tool", "space", "error"}."""
import json
import statistics
import sys
import time
import traceback

SPACES = ["dedispersion", "hotspot", "atf_prl_2x2", "atf_prl_4x4", "atf_prl_8x8"]


def pc_build(spec):
    from constraint import Problem, OptimizedBacktrackingSolver
    problem = Problem(OptimizedBacktrackingSolver())
    for p in spec["parameters"]:
        problem.addVariable(p["name"], p["values"])
    for c in spec["constraints"]:
        problem.addConstraint(c)
    names = [p["name"] for p in spec["parameters"]]
    solutions, index, size = problem.getSolutionsAsListDict(order=names)
    return size


def kt_build(spec):
    from kernel_tuner.searchspace import Searchspace
    tune_params = {p["name"]: p["values"] for p in spec["parameters"]}
    ss = Searchspace(tune_params, list(spec["constraints"]), 1024)
    return ss.size


def pyatf_build(spec):
    from pyatf import TP, Set
    from pyatf.search_space import SearchSpace
    import re
    names = [p["name"] for p in spec["parameters"]]
    pos = {n: i for i, n in enumerate(names)}
    per_tp = {n: [] for n in names}
    for c in spec["constraints"]:
        used = [n for n in names if re.search(r"\b%s\b" % re.escape(n), c)]
        owner = max(used, key=lambda n: pos[n])  # the last declared parameter it reads
        per_tp[owner].append((c, used))
    tps = []
    for p in spec["parameters"]:
        n = p["name"]
        cons = per_tp[n]
        fn = None
        if cons:
            args = sorted({u for _, us in cons for u in us} | {n}, key=lambda x: pos[x])
            body = " and ".join("(%s)" % c for c, _ in cons)
            fn = eval("lambda %s: %s" % (", ".join(args), body))
        tps.append(TP(n, Set(*p["values"]), fn))
    ss = SearchSpace(*tps, enable_1d_access=True, verbosity=0)
    return ss.constrained_size


TOOLS = {"python-constraint2": pc_build, "kernel_tuner": kt_build, "pyatf": pyatf_build}


def main():
    spaces_dir = sys.argv[1]
    tools = sys.argv[2].split(",") if len(sys.argv) > 2 else list(TOOLS)
    # as many runs as atf's space_construction --repeats: best and median of the same number
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    if repeats < 1:
        sys.exit("repeats must be at least 1, not %d" % repeats)
    for space in SPACES:
        spec = json.load(open("%s/%s.json" % (spaces_dir, space)))
        for tool in tools:
            rec = {"tool": tool, "space": space}
            try:
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    count = TOOLS[tool](spec)
                    times.append(time.perf_counter() - t0)
                rec.update(count=int(count), seconds=min(times), median=statistics.median(times),
                           runs=len(times))
            except Exception as e:  # report honestly, keep going
                rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                traceback.print_exc(file=sys.stderr)
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
