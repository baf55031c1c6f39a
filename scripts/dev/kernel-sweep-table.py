#!/usr/bin/env python3
"""The medians of a kernel sweep (scripts/dev/kernel-sweep.sh's sweep.txt,
three rounds of `TIME file tier ms TFLOP/s` lines): each NAME-before /
NAME-after pair with the speedup, then the kernels timed alone.

  kernel-sweep-table.py sweep.txt
"""
import collections
import re
import statistics
import sys


def main():
    times = collections.OrderedDict()
    for line in open(sys.argv[1]):
        m = re.match(r"TIME (\S+)\.ptx\s+\S+\s+([\d.]+) ms", line)
        if m:
            times.setdefault(m.group(1), []).append(float(m.group(2)))
    med = {name: statistics.median(ms) for name, ms in times.items()}
    print("| kernel | before ms | after ms | speedup | after, each round |")
    print("| --- | --- | --- | --- | --- |")
    for name in times:
        if name.endswith("-before") and name[:-7] + "-after" in med:
            base = name[:-7]
            after = base + "-after"
            print("| %s | %.4f | %.4f | %.3f | %s |" % (
                base, med[name], med[after], med[name] / med[after],
                " ".join("%.4f" % t for t in times[after])))
    alone = [n for n in times if not n.endswith("-before") and not n.endswith("-after")]
    if alone:
        print("\n| kernel | ms | each round |\n| --- | --- | --- |")
        for name in alone:
            print("| %s | %.4f | %s |" % (name, med[name], " ".join("%.4f" % t for t in times[name])))


if __name__ == "__main__":
    main()
