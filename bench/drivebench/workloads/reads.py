"""Workloads 1-4: cold, warm and remounted listings (ls -lR, find -ls), stat deep in a tree, sequential reads
of the big file cold and warm, random 4 KiB reads; on a mount system and on the reference.
"""
import hashlib
import os

from ..base import HarnessError, log
from ..data import stat_paths, tree_entries
from ..drive_api import curl_ranges, curl_whole, file_id, walk
from ..fmt import human_bytes, units_note
from ..lanes import LANE
from ..measure import count_find, count_ls, measure, random_offsets, read_all
from ..systems import REFERENCES


def run_mount_workloads(ctx, emulator, system, seed_dir):
    """Workloads 1-4 on a mount system, each run on a fresh cache and a fresh mount; only those ctx.here()
    keeps (a step another needs, such as the cold ls -lR before the warm one, runs unmeasured when left out)."""
    size = ctx.size
    n_tree, stats_rel = tree_entries(size), stat_paths(size)
    big = os.path.join(seed_dir, "big", "big.bin")
    big_size = os.path.getsize(big)
    runs = size["runs"]
    name = system.name
    here = lambda wid: ctx.here(wid, name)

    def progress(wid, i, r):
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s%s" % (
            ctx.profile_name, wid, name, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r),
            "  (%s)" % LANE.name if LANE.background else ""))

    def step(wid, i, action, mount=None):
        """Measured when wid is kept here, else only run (a later step needs it). A cold step passes mount:
        its clock starts before the mount does (measure)."""
        if not here(wid):
            if mount:
                mount()
            action()
            return None
        r = measure(emulator, system, action, wid, mount=mount)
        ctx.add(wid, name, r)
        progress(wid, i, r)
        return r

    def out_of_time(wids):
        if ctx.out_of_time():
            for wid in wids:
                if here(wid):
                    ctx.note(wid, name, "skipped: out of the time budget")
            return True
        return False

    group = ("1a", "1b", "1e", "1c")
    for i in range(runs if any(here(w) for w in group) else 0):
        if out_of_time(group):
            break
        cache = system.fresh_cache()
        start = lambda: system.mount(cache, emulator)
        tree = os.path.join(system.mnt, "tree")
        try:
            wanted = [w for w in ("1a", "1b", "1e") if here(w)]
            for wid, action in (("1a", lambda: count_ls(tree, n_tree)), ("1b", lambda: count_ls(tree, n_tree)),
                                ("1e", lambda: count_find(tree, n_tree))):
                if wanted and wid in wanted or wid == "1a":
                    step(wid, i, action, mount=start if wid == "1a" else None)
                if wanted and wid == wanted[-1]:
                    break
        finally:
            system.unmount()
        if not here("1c"):
            system.drop_cache(cache)
            continue
        try:
            step("1c", i, lambda: count_ls(tree, n_tree), mount=lambda: system.mount(cache, emulator))
        finally:
            system.unmount()
            system.drop_cache(cache)

    for i in range(runs if here("1d") else 0):
        if out_of_time(("1d",)):
            break
        cache = system.fresh_cache()
        try:
            step("1d", i, lambda: count_find(os.path.join(system.mnt, "tree"), n_tree),
                 mount=lambda: system.mount(cache, emulator))
        finally:
            system.unmount()
            system.drop_cache(cache)

    for i in range(runs if here("2") else 0):
        if out_of_time(("2",)):
            break
        cache = system.fresh_cache()
        try:
            paths = [os.path.join(system.mnt, p) for p in stats_rel]

            def stat_all():
                for p in paths:
                    st = os.stat(p)
                    if st.st_size != len(p[len(system.mnt) + 1:]) + 1:
                        raise HarnessError("stat %s: size %d" % (p, st.st_size))
            step("2", i, stat_all, mount=lambda: system.mount(cache, emulator))
        finally:
            system.unmount()
            system.drop_cache(cache)

    want_md5 = None
    for i in range(runs if here("3a") or here("3b") else 0):
        if out_of_time(("3a", "3b")):
            break
        cache = system.fresh_cache()
        try:
            path = os.path.join(system.mnt, "big", "big.bin")
            for wid in ("3a", "3b") if here("3b") else ("3a",):
                r = step(wid, i, lambda: read_all(path), mount=(lambda: system.mount(cache, emulator)) if wid == "3a" else None)
                if r:
                    r["mib_per_s"] = big_size / 1048576 / r["wall"]
            if i == 0:  # the bytes are right (after the timing, from the cache)
                if want_md5 is None:
                    h = hashlib.md5()
                    read_all(big, h)
                    want_md5 = h.hexdigest()
                h = hashlib.md5()
                read_all(path, h)
                if h.hexdigest() != want_md5:
                    raise HarnessError("%s: the big file read back differs" % name)
        finally:
            system.unmount()
            system.drop_cache(cache)

    if not here("4"):
        return
    offsets = random_offsets(big_size, size["random_reads"])
    with open(big, "rb") as f:
        expected = [os.pread(f.fileno(), 4096, o) for o in offsets]
    for i in range(runs):
        if out_of_time(("4",)):
            break
        cache = system.fresh_cache()
        try:
            path = os.path.join(system.mnt, "big", "big.bin")
            got = []

            def random_reads():
                del got[:]
                fd = os.open(path, os.O_RDONLY)
                try:
                    for o in offsets:
                        got.append(os.pread(fd, 4096, o))
                finally:
                    os.close(fd)
            step("4", i, random_reads, mount=lambda: system.mount(cache, emulator))
            if got != expected:
                raise HarnessError("%s: random reads returned wrong bytes" % name)
        finally:
            system.unmount()
            system.drop_cache(cache)


def run_reference_workloads(ctx, emulator, seed_dir):
    size = ctx.size
    runs = size["runs"]
    n_tree, n_stat_files = tree_entries(size), len(stat_paths(size))
    big_size = os.path.getsize(os.path.join(seed_dir, "big", "big.bin"))
    fid = file_id(emulator, "big", "big.bin")
    streams = size["par_streams"]
    part = -(-big_size // streams)
    par_ranges = [(a, min(a + part, big_size) - 1) for a in range(0, big_size, part)]
    offsets = random_offsets(big_size, size["random_reads"])

    def check_tree(parallel):
        seen = walk(emulator, "tree", parallel)
        if seen != n_tree:
            raise HarnessError("reference: the tree walk saw %d entries, expected %d" % (seen, n_tree))

    def check_stat(parallel):
        seen = walk(emulator, "stat", parallel)
        if seen < n_stat_files:
            raise HarnessError("reference: the stat walk saw %d entries" % seen)

    plan = [
        ("1a", "reference-1", lambda: check_tree(False)), ("1a", "reference-par", lambda: check_tree(True)),
        ("2", "reference-1", lambda: check_stat(False)), ("2", "reference-par", lambda: check_stat(True)),
        ("3a", "reference-1", lambda: curl_whole(emulator, fid)),
        ("3a", "reference-par", lambda: curl_ranges(emulator, fid, par_ranges, True)),
        ("4", "reference-1", lambda: curl_ranges(emulator, fid, [(o, o + 4095) for o in offsets], False)),
    ]
    for wid, system, action in plan:
        for i in range(runs if ctx.here(wid, system) else 0):
            if ctx.out_of_time():
                ctx.note(wid, system, "skipped: out of the time budget")
                break
            r = measure(emulator, None, action, wid)
            if wid == "3a":
                r["mib_per_s"] = big_size / 1048576 / r["wall"]
            ctx.add(wid, system, r)
            log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s" % (
                ctx.profile_name, wid, system, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r)))
    # The same network work stands for the cold listing after a remount and the cold find.
    for wid in ("1c", "1d"):
        for system in REFERENCES:
            if "1a" in ctx.results and system in ctx.results["1a"]:
                ctx.results.setdefault(wid, {})[system] = ctx.results["1a"][system]
    for wid in ("1b", "1e", "3b"):
        for system in REFERENCES:
            ctx.note(wid, system, "n/a (no cache)")
    ctx.note("4", "reference-par", "n/a (one reader waits for each read)")
