#!/usr/bin/env python3
"""The ratio chart of one bench report: bench/chart.py REPORT.json OUT.png (needs matplotlib).

One group of bars per workload: drivefs/rclone, drivefs/rclone-tuned, drivefs/reference and, under the write
limit, drivefs/floor (wall-time medians),
on a log scale; below the line at 1, drivefs is faster.
"""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    report = json.load(open(sys.argv[1]))
    keys = [("drivefs/rclone", "drivefs / rclone"), ("drivefs/rclone-tuned", "drivefs / rclone tuned"),
            ("drivefs/reference", "drivefs / reference"), ("drivefs/floor", "drivefs / write limit's floor")]
    keys = [k for k in keys if any(k[0] in w["ratios"] for w in report["workloads"])]
    rows = [w for w in report["workloads"] if w["ratios"]]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) + 2), 4.5))
    width = 0.8 / len(keys)
    for k, (key, label) in enumerate(keys):
        xs, ys = [], []
        for i, w in enumerate(rows):
            if key in w["ratios"]:
                xs.append(i + (k - (len(keys) - 1) / 2) * width)
                ys.append(w["ratios"][key])
        ax.bar(xs, ys, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([w["id"] for w in rows])
    ax.set_xlabel("workload (docs/benchmarks.md)")
    ax.set_ylabel("wall-time ratio (below 1: drivefs faster)")
    ax.set_title("drivefs bench, profile %s (%s run, %s)" % (report["profile"], report["size"], report["date"][:10]))
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
