"""Workload 10: an editor's save loop.

A file of 10 KiB is made in a folder of the mount and left to reach Drive (its Drive ID noted, unmeasured). Then
`saves` saves the way editors save: the new content written to a temporary file beside it, fsync'd, closed and
renamed over the original; each save's content is a different length (10 KiB + k bytes), so that the emulator's
usage (files and bytes, not a counted request) tells when the last one is on Drive and nothing else is left. The
clock stops there (drivefs is told with `drivefs unmount`, as in the other writes). Reported beside the time: the
writes the emulator admitted and refused (what the write limit charges), whether the file on Drive keeps the
Drive ID it had before the first save (links and shares to it survive), and whether Drive ends with exactly the
one file, of the last content.
"""
import hashlib
import os
import time

from .. import quota
from ..base import HarnessError, log, now
from ..drive_api import api_child, api_get, api_list
from ..fmt import units_note
from ..measure import measure
from ..systems import REFERENCES
from .writable import NOT_WRITABLE, NotWritable, probe_writable

BASE = 10 * 1024


def content(k):
    """Save k's bytes: 10 KiB + k, so that each version has its own length."""
    line = b"save %06d\n" % k
    return (line * ((BASE + k) // len(line) + 1))[:BASE + k]


def wait_exact(emulator, files, nbytes, bound, what):
    """Until the drive holds exactly `files` files of exactly `nbytes` bytes (polled every 20 ms)."""
    limit = now() + bound
    while True:
        u = emulator.usage()
        if u["files"] == files and u["bytes"] == nbytes:
            return
        if now() > limit:
            raise HarnessError("%s: not on Drive within %.0f s (the drive holds %d files, %d bytes; expected %d, %d)" % (
                what, bound, u["files"], u["bytes"], files, nbytes))
        time.sleep(0.02)


def save(path, tmp, data):
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def run_save_loop(ctx, emulator, system, run):
    """One run of workload 10 on a mount system, on the write emulator's drive."""
    name, size = system.name, ctx.size
    saves, bound = size["saves"], ctx.size["land_max"]
    root = api_get(emulator, "drive/v3/files/root", dict(fields="id"))["id"]
    folder_name = "w10-%s-%d" % (name, run)
    cache = system.fresh_cache()
    system.mount(cache, emulator)
    try:
        probe_writable(system)
        folder = os.path.join(system.mnt, folder_name)
        try:
            os.mkdir(folder)
        except OSError as e:
            if e.errno in NOT_WRITABLE:
                raise NotWritable("not writable yet (mkdir: %s)" % NOT_WRITABLE[e.errno])
            raise
        path, tmp = os.path.join(folder, "doc.txt"), os.path.join(folder, ".doc.txt.tmp")
        u0 = emulator.usage()
        first = content(0)
        save(path, tmp, first)
        wait_exact(emulator, u0["files"] + 1, u0["bytes"] + len(first), bound, "%s: workload 10's first version" % name)
        fid = api_child(emulator, root, folder_name)["id"]
        original = api_child(emulator, fid, "doc.txt")["id"]
        last = content(saves)

        def loop():
            for k in range(1, saves + 1):
                save(path, tmp, content(k))
            system.finish_writes()
            wait_exact(emulator, u0["files"] + 1, u0["bytes"] + len(last), bound, "%s: workload 10" % name)
        if quota.limits_writes(ctx.profile.get("limits")):
            time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)  # the write budget full, as for the other writes
        r = measure(emulator, system, loop, "10")
        items = api_list(emulator, "'%s' in parents and trashed = false" % fid)
        docs = [x for x in items if x["name"] == "doc.txt"]
        r.update(keeps_id=len(docs) == 1 and docs[0]["id"] == original, drive_items=len(items),
                 right_content=len(docs) == 1 and docs[0].get("md5Checksum") == hashlib.md5(last).hexdigest())
        if not r["right_content"] or len(items) != 1:
            raise HarnessError("%s: workload 10: the folder on Drive holds %s, not one doc.txt of the last save" % (
                name, sorted(x["name"] for x in items)))
        ctx.add("10", name, r)
        log("[%s] 10  %-12s run %d/%d: %8.3f s  %5d requests  writes %s%s, keeps its Drive ID: %s%s" % (
            ctx.profile_name, name, run + 1, size["write_runs"], r["wall"], sum(r["requests"].values()),
            r.get("writes"), "" if not r.get("writes_refused") else " (+%d refused)" % r["writes_refused"],
            "yes" if r["keeps_id"] else "no", units_note(r)))
    finally:
        system.unmount()
        system.drop_cache(cache)


def note_reference(ctx):
    for system in REFERENCES:
        ctx.note("10", system, "n/a (no mount: an editor saves through a filesystem)")
