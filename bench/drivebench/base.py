"""What every part of the harness uses: where the bench and the repository are, the error of a broken step, the
progress log with its clock, and running a tool.
"""
import os
import subprocess
import time


BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/
REPO = os.path.dirname(BENCH)
HARNESS = os.path.join(BENCH, "harness.py")  # the entry point; its `inner` subcommand is a lane (lane_process)


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


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"
