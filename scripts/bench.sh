#!/usr/bin/env bash
# make bench: measurements of what exists today, on this machine.
#
#   1. FUSE bridge, smoke tree mounted with --direct-io (every read is a FUSE request):
#      time to mount; sequential read throughput of /data/1MiB.bin with 128 KiB reads;
#      4 KiB read requests per second; lookups per second (stat of a missing name: never cached).
#   2. drivefs-emulator: POST /token (refresh grant) requests per second over one keep-alive
#      connection, and the same with a fresh connection per request.
#   3. drivefs-emulator as the Drive server of the drivefs / rclone comparison
#      (scripts/emulator-bench.py): seeding a 20,000-child folder, listing it with rclone's query
#      and fields mask, name lookups, files.get, changes.list after 10,000 changes, small GETs/s
#      over 8 keep-alive connections, resumable upload and alt=media download of BENCH_BIG_MIB
#      (default 256) MiB, and the emulator's RSS. About a minute.
#   4. drivefs mount's read side (scripts/bench-mount.sh): only with BENCH_MOUNT=1. Its measurements
#      (cold and warm sequential reads against one stream, cold and warm ls -lR of 250 folders, 1,000
#      random 4 KiB reads) are folded into bench/harness.py, which `make bench` runs next, beside
#      rclone mount and the raw limit.
#   5. The metadata index restore at a size the emulator cannot seed in the bench's time
#      (`drivefs debug index-restore`): a synthetic index of BENCH_INDEX_ITEMS (default 1,000,000)
#      items, its file size, IndexStore.load's time, the time until the root and a first folder are
#      listed, and the restore's peak RSS; then a walk through the table (every folder visited once,
#      then let go as an idle mount lets it go): its time, its peak RSS and the RSS after it. The
#      index alone, not a mount's network start-up (the harness's workload 8c measures that). A few
#      seconds.
#   6. The daemon's memory across a walk of a 200,000-file drive (scripts/bench-memory.sh): RSS with
#      the index built, after `find` of the whole mount and after 30 s idle, and `find`'s time.
#      BENCH_MEMORY=0 skips it. A few minutes.
#
# Usage: scripts/bench.sh BIN_DIR (release build: make bench). Needs root (or FUSE access) and python3.
# Environment: BENCH_SECONDS per measurement (default 3); BENCH_FOLDERS (default 20000) and
# BENCH_BIG_MIB (default 256) size the emulator section; BENCH_INDEX_ITEMS (default 1000000) the index one.
set -euo pipefail

bin_dir=$(cd "${1:?usage: scripts/bench.sh BIN_DIR}" && pwd)
script_dir=$(cd "$(dirname "$0")" && pwd)
seconds=${BENCH_SECONDS:-3}
drivefs="$bin_dir/drivefs"
emulator="$bin_dir/drivefs-emulator"
for tool in "$drivefs" "$emulator"; do
    [[ -x "$tool" ]] || { echo "bench: $tool is not built (make bench builds it)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "bench: python3 is needed (apt-get install python3)" >&2; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/drivefs-bench.XXXXXX")
mnt="$scratch/mnt"
mkdir -p "$mnt"
fuse_pid=""
emulator_pid=""
cleanup() {
    if grep -q " $mnt fuse" /proc/mounts; then
        timeout 5 fusermount -u "$mnt" 2>/dev/null || timeout 5 fusermount -uz "$mnt" 2>/dev/null || true
    fi
    for pid in $fuse_pid $emulator_pid; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    grep -q " $mnt fuse" /proc/mounts || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "drivefs bench ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, ${seconds} s per measurement)"
echo

# 1. FUSE bridge.
if [[ -e /dev/fuse ]] && command -v fusermount >/dev/null; then
    start_ns=$(date +%s%N)
    "$drivefs" debug smoke-mount "$mnt" -f --direct-io >"$scratch/drivefs.log" 2>&1 &
    fuse_pid=$!
    for _ in $(seq 400); do grep -q " $mnt fuse.drivefs" /proc/mounts && break; sleep 0.005; done
    grep -q " $mnt fuse.drivefs" /proc/mounts || { echo "bench: the smoke mount did not appear:" >&2; cat "$scratch/drivefs.log" >&2; exit 1; }
    mount_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
    printf '%-58s %10s\n' "FUSE: drivefs debug smoke-mount until mounted" "${mount_ms} ms"
    timeout $((seconds * 4 + 30)) python3 - "$mnt" "$seconds" <<'PY'
import os, sys, time
mnt, seconds = sys.argv[1], float(sys.argv[2])
path = os.path.join(mnt, "data/1MiB.bin")

def timed(op):
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        count += op()
    return count, time.perf_counter() - start

def read_all(block):
    def op():
        fd = os.open(path, os.O_RDONLY)
        total = 0
        try:
            while True:
                chunk = os.read(fd, block)
                if not chunk:
                    break
                total += len(chunk)
        finally:
            os.close(fd)
        return total
    return op

n, t = timed(read_all(128 * 1024))
print("%-58s %10.0f MB/s" % ("FUSE: sequential read, 128 KiB requests (direct I/O)", n / t / 1e6))
fd = os.open(path, os.O_RDONLY)
def small():
    for off in range(0, 1 << 20, 4096 * 16):
        os.pread(fd, 4096, off)
    return 16
n, t = timed(small)
os.close(fd)
print("%-58s %10.0f /s" % ("FUSE: 4 KiB read requests", n / t))
def lookups():
    for i in range(100):
        try:
            os.stat(os.path.join(mnt, "missing-%d" % i))
        except FileNotFoundError:
            pass
    return 100
n, t = timed(lookups)
print("%-58s %10.0f /s" % ("FUSE: lookups of a missing name (stat -> ENOENT)", n / t))
PY
    timeout 10 fusermount -u "$mnt"
    wait "$fuse_pid" || true
    fuse_pid=""
else
    echo "FUSE: skipped (/dev/fuse or fusermount missing)"
fi

# 2. Emulator.
# The log exists before the background child opens it: a read of it before then fails.
: >"$scratch/emulator.log"
"$emulator" --port 0 --state-dir "$scratch/state" >"$scratch/emulator.log" 2>&1 &
emulator_pid=$!
url=""
for _ in $(seq 300); do
    url=$(sed -n 's#^listening on \(http://[^ ]*/\)$#\1#p' "$scratch/emulator.log" | head -n 1)
    [[ -n "$url" ]] && break
    sleep 0.1
done
[[ -n "$url" ]] || { echo "bench: the emulator did not start:" >&2; cat "$scratch/emulator.log" >&2; exit 1; }
timeout $((seconds * 3 + 30)) python3 - "$url" "$seconds" <<'PY'
import http.client, sys, time, urllib.parse
url, seconds = urllib.parse.urlsplit(sys.argv[1]), float(sys.argv[2])
body = "grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=bench&client_secret=bench"
headers = {"Content-Type": "application/x-www-form-urlencoded"}

def run(reuse):
    conn, count, start = None, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if conn is None:
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        conn.request("POST", "/token", body, headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            sys.exit("bench: /token answered %d" % response.status)
        count += 1
        if not reuse:
            conn.close()
            conn = None
    return count / (time.perf_counter() - start)

print("%-58s %10.0f /s" % ("emulator: POST /token, one keep-alive connection", run(True)))
print("%-58s %10.0f /s" % ("emulator: POST /token, a new connection each", run(False)))
PY
kill -TERM "$emulator_pid" 2>/dev/null || true
wait "$emulator_pid" 2>/dev/null || true
emulator_pid=""

# 3. Emulator under the load of a Drive client benchmark (starts its own emulator).
echo
echo "drivefs-emulator as a Drive server (one process; client: python http.client)"
timeout 600 python3 "$script_dir/emulator-bench.py" "$emulator" --folders "${BENCH_FOLDERS:-20000}" \
    --big-mib "${BENCH_BIG_MIB:-256}" --changes 10000 --seconds "$seconds"

# 4. The mount's read side (folded into bench/harness.py; BENCH_MOUNT=1 runs the old script too).
if [[ "${BENCH_MOUNT:-0}" == 1 ]]; then
    echo
    timeout 900 "$script_dir/bench-mount.sh" "$bin_dir"
fi

# 5. The index restore of a synthetic drive (docs/benchmarks.md, "Restoring a 1,000,000-item index").
echo
echo "metadata index: restoring a synthetic drive (drivefs debug index-restore; no network)"
timeout 600 "$drivefs" debug index-restore --walk --items "${BENCH_INDEX_ITEMS:-1000000}"

# 6. The daemon's memory across a walk of a 200,000-file drive (docs/benchmarks.md, "Memory across a
# walk"; scripts/bench-memory.sh; a few minutes). BENCH_MEMORY=0 skips it.
if [[ "${BENCH_MEMORY:-1}" == 1 ]]; then
    echo
    timeout 1800 "$script_dir/bench-memory.sh" "$bin_dir"
fi
