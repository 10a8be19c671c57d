"""Workload 8: the large drive: until ls of the root answers (8a), until the mount is idle (8b), and mounted
again on the same cache (8c); on a mount system and on the reference.
"""
import os
import time

from .. import quota
from ..base import HarnessError, log, now
from ..drive_api import list_query
from ..fmt import human_kib, units_note
from ..lanes import LANE, busy_cpu, lanes_cpu, measurement_token
from ..measure import api_requests, bytes_moved, measure, proc_figures


def run_scale(ctx, emulator, system):
    """Workload 8: a fresh mount of the big drive; until ls of the root answers (8a), then until idle (8b);
    then unmounted and mounted again on the same cache directory, until ls of the root answers (8c).

    8c is what a mount costs once the drive is known: drivefs saves its index at unmount and restores it at
    the next mount, so its 8c should make only the start-up requests (files.get of the root, the start token,
    one changes.list) and no files.list. That is reported, not asserted (timings and request counts are
    figures here, not pass/fail). rclone keeps no listing on disk: its 8c is measured the same way and is a
    cold start like its 8a. Each run has its own cache directory; 8c reuses the one its 8a/8b filled."""
    size = ctx.size
    top = size["scale"][0]
    name = system.name
    runs = size["runs"]

    def ls_root():
        names = os.listdir(system.mnt)
        if len(names) != top:
            raise HarnessError("%s: ls of the scale root shows %d names, expected %d" % (name, len(names), top))

    marks = {}

    def start_clock():
        marks.update(bg=lanes_cpu(), host=busy_cpu())
        return now()

    def figures(wall, **extra):
        stats = emulator.stats()
        hwm, cpu = proc_figures(system.pid())
        bg = lanes_cpu()
        return dict(wall=wall, span=wall, requests=api_requests(stats), bytes=bytes_moved(stats), rss_kib=hwm, cpu=cpu,
                    **quota.figures(stats),
                    lane=LANE.name, background=LANE.background, host_cpu=busy_cpu() - marks["host"],
                    bg_cpu=None if bg is None else bg - marks["bg"],
                    **extra)

    def progress(wid, i, r, more=""):
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  RSS %s%s" % (
            ctx.profile_name, wid, name, i + 1, runs, r["wall"], sum(r["requests"].values()), human_kib(r["rss_kib"]) + units_note(r), more))

    for i in range(runs if ctx.here("8a", name) else 0):
        if ctx.out_of_time():
            ctx.note("8a", name, "skipped: out of the time budget")
            break
        cache = system.fresh_cache()
        token = measurement_token(not LANE.background)
        token.__enter__()  # the whole run: 8a, 8b and 8c
        emulator.reset()
        t0 = start_clock()
        system.mount(cache, emulator, timeout=300)
        try:
            ls_root()
            r = figures(now() - t0)
            ctx.add("8a", name, r)
            progress("8a", i, r)
            # Idle: no request for 3 s (bounded). The quiet window is not counted.
            last, quiet_since, t_idle = -1, now(), None
            limit = now() + size["scale_settle_max"]
            while now() < limit:
                total = emulator.stats().get("totals", {}).get("requests", 0)
                if total != last:
                    last, quiet_since = total, now()
                elif now() - quiet_since >= 3.0:
                    t_idle = quiet_since - t0
                    break
                time.sleep(0.25)
            r = figures(t_idle if t_idle is not None else now() - t0, settled=t_idle is not None)
            ctx.add("8b", name, r)
            progress("8b", i, r, "" if r["settled"] else "  (still busy at the bound)")
            # 8c: the same cache directory, mounted again (drivefs saves its index as it unmounts).
            if ctx.out_of_time():
                ctx.note("8c", name, "skipped: out of the time budget")
                continue
            system.unmount()
            emulator.reset()
            t0 = start_clock()
            system.mount(cache, emulator, timeout=300)
            ls_root()
            # after_idle: whether 8b saw the mount idle before the unmount (else the index saved may be partial)
            r = figures(now() - t0, after_idle=t_idle is not None)
            ctx.add("8c", name, r)
            listed = r["requests"].get("files.list", 0)
            progress("8c", i, r, "" if not listed or name != "drivefs" else
                     "  (%d files.list: the index was not restored whole)" % listed)
        finally:
            try:
                system.unmount()
                system.drop_cache(cache)
            finally:
                token.__exit__(None, None, None)


def run_reference_scale(ctx, emulator):
    top = ctx.size["scale"][0]
    for system, parallel in (("reference-1", False),):
        for i in range(ctx.size["runs"] if ctx.here("8a", system) else 0):
            def ls_root():
                n = len(list_query(emulator, "'root' in parents and trashed = false"))
                if n != top:
                    raise HarnessError("reference: the scale root lists %d names" % n)
            r = measure(emulator, None, ls_root, "8a")
            ctx.add("8a", system, r)
            log("[%s] 8a  %-12s run %d/%d: %8.3f s  %5d requests" % (
                ctx.profile_name, system, i + 1, ctx.size["runs"], r["wall"], sum(r["requests"].values())))
    ctx.note("8a", "reference-par", "n/a (one request)")
    # A client with nothing on disk does the same work again after a restart: 8a's figure stands for 8c.
    if "8a" in ctx.results and "reference-1" in ctx.results["8a"]:
        ctx.results.setdefault("8c", {})["reference-1"] = ctx.results["8a"]["reference-1"]
    ctx.note("8c", "reference-par", "n/a (one request)")
    ctx.note("8b", "reference-1", "n/a")
    ctx.note("8b", "reference-par", "n/a")
