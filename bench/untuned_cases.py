#!/usr/bin/env python3
"""The cases of an mdh_bench output (--out JSON) that ran a default configuration, comma-separated.

    python3 bench/untuned_cases.py ours.json   ->  "softmax_bf16,dot_bf16" (nothing when all tuned)

bench/device.sh's profile mode prints them: a profile of a default configuration says nothing
about the tuned kernel it was meant to explain.
"""
import json
import sys


def untuned(cases):
    return [name for name, c in cases.items() if c.get("ok") and not c.get("tuned", True)]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        print(",".join(untuned(json.load(f).get("cases", {}))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
