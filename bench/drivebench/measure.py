"""Measuring one run: the clock, the emulator's counters, the filesystem process's RSS and CPU, and what ran
beside it (measure); and the checks the read workloads time (ls -lR, find -ls, whole reads) and the writes'
wait until Drive holds everything.
"""
import os
import random
import re
import subprocess
import threading
import time

from . import quota
from .base import HarnessError, now, run
from .fmt import human_bytes
from .lanes import BG_CPU_BOUND, LANE, busy_cpu, lanes_cpu, measurement_token


def api_requests(stats):
    """Requests by method, the OAuth endpoints left out."""
    return {k: v["requests"] for k, v in stats.get("methods", {}).items()
            if k not in ("token", "oauth.authorize") and v["requests"]}


def bytes_moved(stats):
    t = stats.get("totals", {})
    return t.get("bytesOut", 0) + t.get("bytesIn", 0)


def refused(stats):
    """Requests the per-user rate limit refused (403 userRateLimitExceeded)."""
    return stats.get("totals", {}).get("rateLimited", 0)


def proc_figures(pid):
    """(VmHWM KiB, CPU seconds) of pid, or (None, None)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return hwm, cpu
    except (OSError, AttributeError, IndexError, ValueError):
        return None, None


class ProcSampler:
    """The figures of a process that may exit during a measurement (drivefs unmounting at the end of a
    write): sampled every 50 ms, the last sample stands for the end."""

    def __init__(self, pid):
        self.pid, self.last, self.done = pid, (None, None), threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.wait(0.05):
            hwm, cpu = proc_figures(self.pid)
            if hwm is None:
                return
            self.last = (max(hwm, self.last[0] or 0), cpu)

    def stop(self):
        self.done.set()
        self.thread.join(5)
        hwm, cpu = proc_figures(self.pid)
        return (hwm, cpu) if hwm is not None else self.last


def measure(emulator, system, action, wid, settle=0.3, mount=None):
    """Runs action() once; its wall time, the emulator's counters, the daemon's figures and what ran beside it
    (host_cpu: the machine's busy CPU seconds; bg_cpu: the background lanes'). Holds the measurement token
    unless this is a background lane's pacer-bound measurement.

    A cold run passes mount (a callable that starts the mount): then the clock and the counters start before
    the mount does, so that what the daemon sends from its start (drivefs's crawl begins at FUSE init, before
    the harness sees the mount) is counted, and its CPU is the new daemon's from zero."""
    emulator.reset()
    pid = system.pid() if system is not None and mount is None else None
    with measurement_token(not LANE.background or wid in BG_CPU_BOUND):
        _, cpu0 = proc_figures(pid) if pid else (None, None)
        sampler = ProcSampler(pid) if pid else None
        bg0, host0 = lanes_cpu(), busy_cpu()
        t0 = now()
        try:
            if mount is not None:
                mount()
                pid, cpu0 = system.pid(), 0.0
                sampler = ProcSampler(pid) if pid else None
            extra = action()
        finally:
            wall = span = now() - t0
            bg1, host1 = lanes_cpu(), busy_cpu()
            hwm, cpu1 = sampler.stop() if sampler else (None, None)
    time.sleep(settle)  # byte counts trail the answers by a moment
    stats = emulator.stats()
    if pid:
        later = proc_figures(pid)
        if later[0] is not None:
            hwm, cpu1 = later
    result = dict(wall=wall, requests=api_requests(stats), bytes=bytes_moved(stats), refused=refused(stats),
                  **quota.figures(stats), rss_kib=hwm, cpu=(cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None,
                  lane=LANE.name, background=LANE.background, host_cpu=host1 - host0, span=span,
                  bg_cpu=None if bg0 is None else bg1 - bg0)
    if isinstance(extra, dict):
        result.update(extra)
    return result


def count_ls(path, expected_entries):
    out = run(["ls", "-lR", path], 600, stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout
    # each file and folder shows as one line starting with its type
    entries = sum(1 for line in out.splitlines() if line[:1] in (b"-", b"d", b"l"))
    if entries != expected_entries:
        raise HarnessError("ls -lR %s listed %d entries, expected %d" % (path, entries, expected_entries))


def count_find(path, expected_entries):
    out = run(["find", path, "-ls"], 600, stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout
    entries = out.count(b"\n") - 1  # the top folder itself
    if entries != expected_entries:
        raise HarnessError("find -ls %s listed %d entries, expected %d" % (path, entries, expected_entries))


def read_all(path, hasher=None):
    with open(path, "rb", buffering=0) as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            if hasher:
                hasher.update(chunk)


def random_offsets(size, count):
    rng = random.Random(42)
    return [rng.randrange(0, size // 4096) * 4096 for _ in range(count)]


def wait_landed(emulator, files, nbytes, bound, what):
    """Polls the emulator's usage (every 20 ms; not a counted request) until the drive holds `files` files of
    `nbytes` bytes in all; raises when that takes longer than `bound` seconds."""
    limit = now() + bound
    while True:
        u = emulator.usage()
        if u["files"] >= files and u["bytes"] >= nbytes:
            return
        if now() > limit:
            raise HarnessError("%s: not on Drive within %.0f s (the drive holds %d files, %s; expected %d, %s)" % (
                what, bound, u["files"], human_bytes(u["bytes"]), files, human_bytes(nbytes)))
        time.sleep(0.02)
