#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/compact_logs.py without a GPU: a format-2 log becomes format 3 with every record equal
once named, a torn last line kept, format 1 and 3 left alone, a record that does not name the
header's parameters leaves its log untouched (exit status 1)."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "compact_logs.py")
NAMES = ["thr_0", "blk_0", "mma"]


def write_log(path, version, records, torn=""):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"atf_log": version, "space_hash": "00ff", "parameters": NAMES}) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write(torn)


def record(thr, blk, mma, cost):
    return {"configuration": {"blk_0": blk, "mma": mma, "thr_0": thr}, "valid": cost is not None,
            "cost": cost, "invalidity": "correct" if cost is not None else "compile",
            "error": "" if cost is not None else "nvrtc: ≤ limit", "elapsed_s": 0.25}


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_compacts_and_keeps_everything(d):
    log = os.path.join(d, "a.json.log.jsonl")
    records = [record(16, 8, 1, 12.5), record(32, 4, 0, None), record(8, 2, 2, 0.1 + 0.2)]
    torn = '{"configuration":{"blk_0":1,"mm'
    write_log(log, 2, records, torn)
    size = os.path.getsize(log)
    r = run(d)
    assert r.returncode == 0, r.stderr
    assert "compacted: 1" in r.stdout, r.stdout
    text = open(log, encoding="utf-8").read()
    lines = text.split("\n")
    header = json.loads(lines[0])
    assert header["atf_log"] == 3 and header["compacted_from"] == 2
    assert lines[-1] == torn  # the torn tail, as it was
    back = [json.loads(l) for l in lines[1:-1]]
    assert len(back) == len(records)
    for got, want in zip(back, records):
        assert got["configuration"] == [want["configuration"][n] for n in NAMES]
        got["configuration"] = dict(zip(NAMES, got["configuration"]))
        assert got == want, (got, want)  # costs (0.1 + 0.2 too), errors, times: unchanged
    assert os.path.getsize(log) < size
    again = run(log)
    assert again.returncode == 0 and "skipped: format 3: 1" in again.stdout, again.stdout


def test_format_1_and_mismatches_are_left_alone(d):
    old = os.path.join(d, "v1.log.jsonl")
    write_log(old, 1, [record(16, 8, 1, 3.0)])
    bad = os.path.join(d, "bad.log.jsonl")
    wrong = record(16, 8, 1, 3.0)
    del wrong["configuration"]["mma"]
    write_log(bad, 2, [record(16, 8, 1, 3.0), wrong])
    before = {p: open(p, encoding="utf-8").read() for p in (old, bad)}
    r = run(old, bad)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "bad.log.jsonl:3: a configuration that does not name the header's 3 parameters" in r.stderr
    assert "skipped: format 1: 1" in r.stdout
    for p, text in before.items():
        assert open(p, encoding="utf-8").read() == text, p
    assert not [f for f in os.listdir(d) if f.startswith(".compact_")]  # no temporary left


def main():
    failed = 0
    for name, fn in sorted(globals().items()):
        if not name.startswith("test_"):
            continue
        with tempfile.TemporaryDirectory() as d:
            try:
                fn(d)
                print(f"ok   {name}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {name}: {e}")
    print(f"{'all passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
