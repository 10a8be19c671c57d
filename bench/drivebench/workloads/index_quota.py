"""Workload 11: the large drive's index built under Google's limits, with a user's `ls` of 20 folders during it.

The scale drive (workload 8's: 200,000 files in 100 folders of 20 subfolders of 100 files; smoke: 400 files),
served by an emulator started with `--limits google` on both profiles (lan: no shaping; wan: its shaping and its
limits, the same), so that quota units are charged and refused as Google charges and refuses them (325,000 a
user and 1,000,000 a project in any minute, files.list 100). A fresh mount on a fresh cache; the clock and the
counters start before the mount does (as 8a's). As soon as the mount is up, the user lists LISTINGS leaf folders
(tNNN/sMM, spread over the drive, from its end, which a breadth-first crawl reaches last; none of them listed by
anything the user did before), one after the other, each timed, while drivefs builds its index.

- 11a: drivefs: until its log says "index built:" (polled every 20 ms; drivefs's own figure, from its crawl's
  start, kept beside it as `index_s`), bounded by size["index_max"]. rclone builds no index: its 11a is from the
  mount's start until its last `ls` answered (what it does with the same 20 folders).
- 11b: the p99 of the 20 `ls` (p50 beside it), and how many of them ended before the index was built.
Both rows are one run: the units and refusals (quota, write limit, legacy rate limit) are the run's, counted once
both the index and the listings are done. The emulator's minute is not given back between runs (only the
counters are zeroed): what the minute held when a run started is kept as `minute_units_at_start`.
Mount systems only: the reference has no index and no mount.
"""
import datetime
import os
import re
import statistics
import threading
import time

from . import backlog
from ..base import HarnessError, log, now
from ..fmt import human_s, units_note
from ..measure import measure
from ..systems import REFERENCES

LISTINGS = 20  # the user's ls, as the issue asks
# drivefs's log line (Log.swift: an RFC 3339 stamp in milliseconds, the level, the area) when its index is whole.
INDEX_BUILT = re.compile(r"(?m)^(\S+) \S+ +index: index built: (\d+) items in (\d+) folders, ([0-9.]+) s(; (\d+) folder)?")


def folders(size):
    """LISTINGS leaf folders, relative to the mount: tNNN from the last down, sMM from the last down, so that
    they are spread over the drive and reached late by a crawl that goes in the root's order."""
    top, sub, _ = size["scale"]
    out = []
    for k in range(LISTINGS):
        a, b = top - 1 - (k * top) // LISTINGS, sub - 1 - k % sub
        out.append("t%03d/s%02d" % (a, b))
    if len(set(out)) != len(out):
        raise HarnessError("workload 11: the drive has fewer than %d leaf folders" % LISTINGS)
    return out


class IndexWatch:
    """Watches a drivefs log file for its "index built:" line, every 20 ms, in a thread. `at` is when the line
    was written, on the now() clock: its stamp, placed by the wall clock read beside now() at `origin`
    (the poll only says that it is there)."""

    def __init__(self, path, origin):
        self.path, self.origin, self.at, self.line = path, origin, None, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.is_set():
            try:
                with open(self.path, errors="replace") as f:
                    m = INDEX_BUILT.search(f.read())
            except OSError:
                m = None
            if m:
                seen = now()
                try:
                    stamp = datetime.datetime.fromisoformat(m.group(1)).timestamp()
                    at = self.origin[0] + (stamp - self.origin[1])
                except ValueError:
                    at = seen
                self.at, self.line = min(at, seen), m
                return
            self.done.wait(0.02)

    def wait(self, until):
        self.thread.join(max(0.0, until - now()))
        self.done.set()
        self.thread.join(1)
        return self.at


def minute_units(emulator):
    users = emulator.stats().get("users") or {}
    return sum(int(u.get("unitsLastMinute", 0)) for u in users.values())


def run_index_quota(ctx, emulator, system):
    """11a and 11b on a mount system, against an emulator under --limits google serving the scale drive."""
    name, size = system.name, ctx.size
    if not (ctx.here("11a", name) or ctx.here("11b", name)):
        return
    targets, files = folders(size), size["scale"][2]
    indexes = name == "drivefs"
    for i in range(size["runs"]):
        if ctx.out_of_time():
            for wid in ("11a", "11b"):
                ctx.note(wid, name, "skipped: out of the time budget")
            return
        cache = system.fresh_cache()
        marks = dict(watch=None)
        at_start = minute_units(emulator)

        def start():
            marks["t0"] = now()
            origin = (now(), time.time())
            system.mount(cache, emulator, timeout=300)
            if indexes:
                marks["watch"] = IndexWatch(system.logfile, origin)  # a fresh cache: a log file of its own

        def action():
            t0, latencies, ends = marks["t0"], [], []
            for rel in targets:
                t = now()
                names = os.listdir(os.path.join(system.mnt, rel))
                latencies.append(now() - t)
                ends.append(now())
                if len(names) != files:
                    raise HarnessError("%s: workload 11: ls %s listed %d names, expected %d" % (name, rel, len(names), files))
            extra = dict(probes=dict(ls=latencies), p50=statistics.median(latencies),
                         p99=backlog.percentile(latencies, 99), minute_units_at_start=at_start)
            if not indexes:
                return dict(extra, wall=ends[-1] - t0, settled=None)
            built = marks["watch"].wait(t0 + size["index_max"])
            m = marks["watch"].line
            extra.update(settled=built is not None, during=sum(1 for e in ends if built is None or e <= built),
                         index_s=float(m.group(4)) if m else None, index_items=int(m.group(2)) if m else None,
                         index_left=int(m.group(6) or 0) if m else None)
            return dict(extra, wall=(built if built is not None else now()) - t0)
        try:
            r = measure(emulator, system, action, "11", mount=start)
        finally:
            system.unmount()
            system.drop_cache(cache)
        r["refusals"] = sum(r.get(k) or 0 for k in ("quota_refused", "writes_refused", "refused"))
        user = ("probes", "p50", "p99", "during")
        ctx.add("11a", name, {k: v for k, v in r.items() if k not in user})
        ctx.add("11b", name, dict({k: v for k, v in r.items() if not k.startswith("index_")}, wall=r["p99"]))
        what = ("index built" if r["settled"] else "index still building at the bound") if indexes else "20 ls done"
        during = "" if not indexes else ", %d of %d during the build" % (r["during"], LISTINGS)
        log("[%s] 11  %-12s run %d/%d: %s at %s; ls p50 %s, p99 %s%s; %d requests, %d refused%s" % (
            ctx.profile_name, name, i + 1, size["runs"], what, human_s(r["wall"]), human_s(r["p50"]),
            human_s(r["p99"]), during, sum(r["requests"].values()), r["refusals"], units_note(r)))


def note_reference(ctx):
    for wid in ("11a", "11b"):
        for system in REFERENCES:
            ctx.note(wid, system, "n/a (no mount, no index)")
