#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's "Memory across a walk" section, made from the raw output of the runs
(scripts/bench-memory.sh, `drivefs debug index-restore --walk`), kept in bench/results/.

Usage: bench/memory_table.py RUN.txt... : one markdown table of every figure line (a label in 58 columns, then
its value) the runs have, a column a run (headed by its file's name), in the order of the first run's lines. Lines that are not figures
(headers, the synthetic drive's description) are left out.
"""
import os
import sys


def figures(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if len(line) <= 58 or line[58] != " ":
                continue
            label, value = line[:58].rstrip(), line[58:].strip()
            if label and value:
                out.append((label, value))
    return out


def main(paths):
    runs = [dict(figures(p)) for p in paths]
    labels = [label for label, _ in figures(paths[0])]
    print("| figure | " + " | ".join(os.path.splitext(os.path.basename(p))[0] for p in paths) + " |")
    print("|---|" + "---|" * len(paths))
    for label in labels:
        print("| %s | %s |" % (label.replace("|", "\\|"), " | ".join(r.get(label, "—") for r in runs)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
