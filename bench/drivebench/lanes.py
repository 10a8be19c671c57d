"""Lanes: the pacer-bound runs beside the rest, and the two rules that keep the figures honest (the measurement
token, the books). Which lanes each profile runs is BACKGROUND; lane_process starts and collects them.
"""
import contextlib
import fcntl
import os
import threading
import time

from .base import HarnessError, now


# rclone with its default pacer sleeps between requests (10 a second after a burst of 100): its cold listings
# (1a, 1c, 1d: 252 files.list each) and its writes (5, 7: thousands of requests) take minutes of wall time and
# almost no CPU. In a full run they would not fit the 30 minutes one after the other, so they run in
# background lanes: each lane is a process of its own (rclone's: a namespace of its own, with its own emulator,
# TLS front and shaping, on a copy of the state), started with the run, while the foreground measures
# everything else, one measurement at a time. Two rules keep the figures honest:
# - the token: a foreground measurement holds an exclusive lock (flock on the run's TOKEN file) while its clock
#   runs; a background measurement that needs the CPU (BG_CPU_BOUND: the warm 1b and 1e, served from rclone's
#   cache) takes it too, so it never runs beside a foreground measurement; the pacer-bound ones run without it.
# - the books: each background lane publishes the CPU seconds its processes have used so far (LaneBooks, a file
#   rewritten every 0.2 s); every foreground measurement records what the background lanes used while its clock
#   ran (`bg_cpu`), and every measurement the whole machine's busy CPU seconds (`host_cpu`, /proc/stat).
# The tables mark the background lanes' figures and say what they cost the foreground (docs/benchmarks.md).

# profile -> background lanes: a name, the systems it runs, which of their workloads, and whether it is a
# namespace (rclone's) or a process on the host (the reference's curl).
# - rclone's default pacer (both profiles): the cold listings (252 files.list at 10 a second after a burst of
#   100: 15 s), the writes 5 and 7 (2,000 and 4,000+ requests: minutes), on wan also 2 (50 ms a listing, one
#   after the other). The warm 1b and 1e come along (they need 1a's mount) and take the token.
# - on wan, what waits for the emulator's 50 ms per request or its 40 MiB/s per connection: rclone tuned's
#   listings (1a-1e, 2: 252 listings one after the other, 14 s) and the reference's one stream (curl: 1a, 2,
#   3a at 40 MiB/s, 4's 250 ranges, 5's 1,000 uploads, 6 at 40 MiB/s).
# What stays in the foreground needs the CPU (lan) or the link (the reads through the mounts).
RCLONE_LISTINGS = ["1a", "1b", "1c", "1d", "1e"]
WRITE_WORKLOADS = ("5", "6", "7", "10")  # on an empty drive of their own (the "write" part)
BACKLOG_WORKLOADS = ("9a", "9b")  # on a copy of the seeded drive (the "backlog" part)
QUOTA_WORKLOADS = ("11a", "11b")  # on the scale drive, the emulator under --limits google (the "quota" part)


def workload_part(wid):
    """Which part of a lane runs workload wid: write (an empty drive), backlog (a copy of the seeded drive),
    main (the seeded reads), scale, or quota (the scale drive under Google's limits)."""
    if wid in WRITE_WORKLOADS:
        return "write"
    if wid in BACKLOG_WORKLOADS:
        return "backlog"
    if wid in QUOTA_WORKLOADS:
        return "quota"
    return "scale" if wid.startswith("8") else "main"
BACKGROUND = {
    "lan": [dict(name="rclone-pacer", systems=["rclone"], workloads=RCLONE_LISTINGS + ["5", "7"])],
    "wan": [dict(name="rclone-pacer", systems=["rclone"], workloads=RCLONE_LISTINGS + ["2", "5", "7"]),
            dict(name="rclone-tuned-latency", systems=["rclone-tuned"], workloads=RCLONE_LISTINGS + ["2"]),
            dict(name="reference-1-latency", systems=["reference-1"], workloads=["1a", "2", "3a", "4", "5", "6"],
                 namespace=False)],
}
# Measurements of a background lane that need the CPU rather than wait (warm reads from the cache): they take
# the token, like the foreground's.
BG_CPU_BOUND = {"1b", "1e"}
TOKEN_WAIT = 1800.0  # the longest a measurement waits for the token (a foreground write can take minutes)


class LaneState:
    """This process's lane: its name, whether it is a background lane, the token file and (foreground) the
    background lanes' books."""

    def __init__(self):
        self.name, self.background, self.token_path, self.books = "foreground", False, None, []


LANE = LaneState()


@contextlib.contextmanager
def measurement_token(exclusive):
    """Holds the run's measurement token (exclusive flock) while the body runs; nothing when not exclusive
    or when the run has no background lane."""
    if not exclusive or not LANE.token_path:
        yield
        return
    fd = os.open(LANE.token_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        limit = now() + TOKEN_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if now() > limit:
                    raise HarnessError("the measurement token stayed taken for %.0f s" % TOKEN_WAIT)
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock


def busy_cpu():
    """The machine's busy CPU seconds so far (/proc/stat: every state but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def tree_cpu():
    """CPU seconds of this process and its descendants (utime + stime, with those of the children they have
    waited for); in a lane's own PID namespace, where this process is 1, that is the whole namespace."""
    stats, children = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stats[int(entry)] = sum(int(x) for x in fields[11:15])
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    total, todo, seen = 0, [os.getpid()], set()
    while todo and len(seen) < 100000:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += stats.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


class LaneBooks:
    """A background lane's CPU seconds so far, published in `path` ("cpu seconds, unix time") every 0.2 s."""

    def __init__(self, path):
        self.path, self.done = path, threading.Event()
        self.write()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def write(self):
        cpu = tree_cpu()
        with open(self.path + ".tmp", "w") as f:
            f.write("%.3f %.3f\n" % (cpu, time.time()))
        os.replace(self.path + ".tmp", self.path)
        return cpu

    def loop(self):
        while not self.done.wait(0.2):
            try:
                self.write()
            except OSError:
                pass

    def stop(self):
        self.done.set()
        self.thread.join(5)
        return self.write()


def lanes_cpu():
    """CPU seconds the background lanes have used so far, from their books (None without background lanes)."""
    if not LANE.books:
        return None
    total = 0.0
    for path in LANE.books:
        try:
            with open(path) as f:
                total += float(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # not started yet
    return total
