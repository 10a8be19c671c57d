"""Workload 9: the mount stays usable while a backlog of uploads drains.

On a fresh mount of a copy of the seeded drive (so that there is something to look at), left to settle (no
request for QUIET seconds, bounded), backlog_files files of 4 KiB are copied in with `cp -r` (it returns once the
mount has them locally); at once, while they drain (on wan under the write limit: about 3 a second), the probes
run one after the other and each is timed: `stat` of uncached paths (stat/…), `ls` of folders not listed yet
(tree/dirNN/subMM), and 1 MiB reads at offsets of the big file never read on this mount. 9a is their latency
during the backlog, 9b the same probes on a fresh, settled, idle mount; the table's figure is the p99, p50 beside
it. The backlog is not waited for: the mount is unmounted after the probes (fusermount -u; a daemon that lingers
is stopped, harness.unmount) and the drive copy is thrown away. Mount systems only: the reference has no mount.
"""
import os
import statistics
import time

from ..base import HarnessError, log, now
from ..data import stat_paths
from ..fmt import human_s, units_note
from ..measure import measure
from ..systems import REFERENCES
from .writable import NotWritable, probe_writable, run_tool

QUIET = 1.0          # seconds without a request that count as settled
SETTLE_MAX = 60.0    # the longest a fresh mount is given to settle


def percentile(values, p):
    """The p-th percentile (nearest rank) of values."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def probe_targets(size, big_size):
    """(stat paths, folders, read offsets), relative to the mount: spread over what the seed holds."""
    n_stat, n_ls, n_read = size["backlog_probes"]
    stats = stat_paths(size)
    stats = [stats[(k * len(stats)) // n_stat] for k in range(min(n_stat, len(stats)))]
    folders = ["tree/dir%02d/sub%02d" % (a, b) for b in range(size["tree_sub"]) for a in range(size["tree_top"])]
    folders = [folders[(k * len(folders)) // n_ls] for k in range(min(n_ls, len(folders)))]
    span = max(1, (big_size - (1 << 20)) // max(1, n_read))
    offsets = [k * span for k in range(n_read)]
    return stats, folders, offsets


def settle(emulator):
    """Waits until the emulator has seen no request for QUIET seconds (bounded by SETTLE_MAX)."""
    last, since, limit = -1, now(), now() + SETTLE_MAX
    while now() < limit:
        total = emulator.stats().get("totals", {}).get("requests", 0)
        if total != last:
            last, since = total, now()
        elif now() - since >= QUIET:
            return True
        time.sleep(0.1)
    return False


def run_probes(mnt, targets):
    """Each probe's latency in seconds, by kind."""
    stats, folders, offsets = targets
    out = dict(stat=[], ls=[], read=[])
    for rel in stats:
        t0 = now()
        os.stat(os.path.join(mnt, rel))
        out["stat"].append(now() - t0)
    for rel in folders:
        t0 = now()
        names = os.listdir(os.path.join(mnt, rel))
        out["ls"].append(now() - t0)
        if not names:
            raise HarnessError("workload 9: ls %s listed nothing" % rel)
    path = os.path.join(mnt, "big", "big.bin")
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in offsets:
            t0 = now()
            got = os.pread(fd, 1 << 20, off)
            out["read"].append(now() - t0)
            if not got:
                raise HarnessError("workload 9: read of %s at %d returned nothing" % (path, off))
    finally:
        os.close(fd)
    return out


def summarize_probes(latencies):
    every = [x for values in latencies.values() for x in values]
    kinds = {k: dict(p50=statistics.median(v), p99=percentile(v, 99), n=len(v)) for k, v in latencies.items() if v}
    return dict(wall=percentile(every, 99), p50=statistics.median(every), probes=latencies, by_kind=kinds)


def run_backlog(ctx, emulator, system, data, seed_dir):
    """9a and 9b on a mount system, against an emulator serving a copy of the seeded drive."""
    name, size = system.name, ctx.size
    if not (ctx.here("9a", name) or ctx.here("9b", name)):
        return
    if ctx.out_of_time():
        for wid in ("9a", "9b"):
            ctx.note(wid, name, "skipped: out of the time budget")
        return
    targets = probe_targets(size, os.path.getsize(os.path.join(seed_dir, "big", "big.bin")))
    n = data.backlog_count

    def progress(wid, r, more=""):
        log("[%s] %-3s %-12s p50 %s, p99 %s over %d probes%s%s" % (
            ctx.profile_name, wid, name, human_s(r["p50"]), human_s(r["wall"]),
            sum(len(v) for v in r["probes"].values()), more, units_note(r)))

    for wid in ("9b", "9a"):  # idle first: the same probes, nothing queued
        if not ctx.here(wid, name):
            continue
        cache = system.fresh_cache()
        system.mount(cache, emulator)
        try:
            if wid == "9a":
                probe_writable(system)
            settled = settle(emulator)
            u0 = emulator.usage()
            target = os.path.join(system.mnt, "w9-%s" % name)

            def action():
                extra = {}
                if wid == "9a":
                    t0 = now()
                    run_tool(["cp", "-r", data.backlog_dir, target], 1800)
                    extra["copied"] = now() - t0
                    extra["queued_at_start"] = n - (emulator.usage()["files"] - u0["files"])
                    extra["backlog"] = n
                latencies = run_probes(system.mnt, targets)
                if wid == "9a":
                    extra["queued_at_end"] = n - (emulator.usage()["files"] - u0["files"])
                return dict(summarize_probes(latencies), settled=settled, **extra)
            r = measure(emulator, system, action, wid)
            ctx.add(wid, name, r)
            more = ""
            if wid == "9a":
                more = "; %d of %d files still to upload at the first probe, %d after the last" % (
                    r["queued_at_start"], n, r["queued_at_end"])
            progress(wid, r, more)
        except NotWritable as e:
            ctx.note(wid, name, str(e))
        finally:
            system.unmount()
            system.drop_cache(cache)


def note_reference(ctx):
    for wid in ("9a", "9b"):
        for system in REFERENCES:
            ctx.note(wid, system, "n/a (no mount)")
