#!/usr/bin/env python3
"""summarize.py - turns run.sh's summary.txt into the tables of results.md.

Usage: tests/xfstests/summarize.py SUMMARY

SUMMARY is $XFSTESTS_WORK/summary.txt (one line per test: NAME STATUS
[reason], STATUS pass, fail or notrun).  Prints markdown on stdout: the
counts, the failures (names only: their diagnosis is written by hand),
the tests not run grouped by xfstests' reason (largest group first), and
the tests that passed.  Nothing here judges a result; it only counts and
groups what run.sh recorded.
"""
import re
import sys
from collections import defaultdict


def number(name):
    return name.split("/", 1)[1]


def clean_reason(reason):
    # Paths of the run's work directory differ between runs: one wording.
    return re.sub(r"/var/tmp/[^ ]*/(scratch|test)\.img", "the image", reason).strip()


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: summarize.py SUMMARY")
    status = {}
    reasons = {}
    with open(argv[1]) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) < 2:
                continue
            status[parts[0]] = parts[1]
            if parts[1] == "notrun":
                reasons[parts[0]] = clean_reason(parts[2] if len(parts) > 2 else "")

    by_status = defaultdict(list)
    for name in sorted(status):
        by_status[status[name]].append(name)

    print("| | count |\n|---|---|")
    for s, label in (("pass", "pass"), ("fail", "fail"), ("notrun", "not run")):
        print(f"| {label} | {len(by_status[s])} |")
    print(f"| total | {len(status)} |\n")

    print(f"## Failures ({len(by_status['fail'])})\n")
    print(" ".join(number(n) for n in by_status["fail"]) + "\n")

    groups = defaultdict(list)
    for name in by_status["notrun"]:
        groups[reasons[name]].append(number(name))
    print(f"## Not run ({len(by_status['notrun'])})\n")
    print("| n | reason (xfstests' words) | tests |\n|---|---|---|")
    for reason, tests in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"| {len(tests)} | {reason} | {' '.join(tests)} |")
    print()

    print(f"## Passed ({len(by_status['pass'])})\n")
    nums = [number(n) for n in by_status["pass"]]
    for i in range(0, len(nums), 18):
        print(" ".join(nums[i:i + 18]))


if __name__ == "__main__":
    main(sys.argv)
