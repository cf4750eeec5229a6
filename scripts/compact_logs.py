#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rewrites atf tuning logs of format 2 as format 3 (atf/log.hpp): each record's configuration
becomes the array of its values in the header's "parameters" order instead of an object that
names every value, about a third of the bytes. Nothing measured changes: every record keeps its
cost, validity, times and error text; the header gains "compacted_from": 2.

  python3 scripts/compact_logs.py params            # every *.log.jsonl under params/
  python3 scripts/compact_logs.py a.log.jsonl ...   # these logs

A log is rewritten in full or not at all (a temporary file renamed over it). Left as they are:
logs of format 3 already, of format 1 (the tuner upgrades those to format 2 first), and any log
with a record whose configuration does not name exactly the header's parameters (said on stderr,
exit status 1). A last line cut off by a killed run is kept as it is (atf reads past it).
"""
import json
import os
import sys
import tempfile


def compact(path):
    """'compacted', 'skipped: <why>' or raises ValueError naming the line."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    torn = lines.pop() if lines and lines[-1] != "" else None  # text ends without a newline
    if torn == "":
        torn = None
    if not lines:
        return "skipped: empty"
    header = json.loads(lines[0])
    version = header.get("atf_log")
    if version != 2:
        return f"skipped: format {version}"
    names = header.get("parameters")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}:1: the header names no parameters")
    out = []
    header["atf_log"] = 3
    header["compacted_from"] = 2
    out.append(json.dumps(header, separators=(",", ":"), ensure_ascii=False))
    for no, line in enumerate(lines[1:], start=2):
        if line == "":
            continue
        record = json.loads(line)
        config = record.get("configuration")
        if not isinstance(config, dict) or sorted(config) != sorted(names):
            raise ValueError(f"{path}:{no}: a configuration that does not name the header's "
                             f"{len(names)} parameters")
        record["configuration"] = [config[n] for n in names]
        out.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
    body = "\n".join(out) + "\n" + (torn if torn is not None else "")
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".compact_", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return "compacted"


def logs_under(arg):
    if os.path.isdir(arg):
        for root, _, files in os.walk(arg):
            for f in sorted(files):
                if f.endswith(".log.jsonl"):
                    yield os.path.join(root, f)
    else:
        yield arg


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    failed = 0
    counts = {}
    before = after = 0
    for arg in argv:
        for path in logs_under(arg):
            size = os.path.getsize(path)
            try:
                what = compact(path)
            except (ValueError, json.JSONDecodeError) as e:
                print(f"compact_logs: {e}; left as it is", file=sys.stderr)
                failed = 1
                continue
            counts[what] = counts.get(what, 0) + 1
            before += size
            after += os.path.getsize(path)
    for what, n in sorted(counts.items()):
        print(f"{what}: {n}")
    print(f"bytes: {before} -> {after}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
