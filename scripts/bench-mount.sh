#!/usr/bin/env bash
# The read side of `drivefs mount`, against drivefs-emulator with a per-connection bandwidth cap:
#
#   1. one HTTP stream of a BENCH_SEQ_MIB (default 1024) MiB file with curl: the single-stream limit;
#   2. a cold sequential read of that file through the mount (read-ahead in parallel range streams),
#      its ratio to one stream, then a warm read (from the block cache);
#   3. a cold `ls -lR` of 250 folders / ~5,000 entries: time and Drive API requests, then warm;
#   4. 1,000 random 4 KiB reads in the cold file: bytes downloaded and drivefs's resident memory.
#
# Usage: scripts/bench-mount.sh BIN_DIR (release binaries; make bench runs it). Needs root (or
# FUSE access), curl and python3. Environment: BENCH_SEQ_MIB (default 1024), BENCH_BANDWIDTH (bytes/s per
# connection, default 33554432 = 32 MiB/s).
set -euo pipefail

bin_dir=$(cd "${1:?usage: scripts/bench-mount.sh BIN_DIR}" && pwd)
drivefs="$bin_dir/drivefs"
emulator="$bin_dir/drivefs-emulator"
seq_mib=${BENCH_SEQ_MIB:-1024}
bandwidth=${BENCH_BANDWIDTH:-33554432}
if [[ ! -e /dev/fuse ]] || ! command -v fusermount >/dev/null; then
    echo "mount: skipped (/dev/fuse or fusermount missing)"
    exit 0
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/drivefs-bench-mount.XXXXXX")
mnt="$scratch/mnt"
mkdir -p "$mnt" "$scratch/seed/big" "$scratch/seed/tree"
emulator_pid=""
mount_pid=""
unmount() {
    if grep -qs " $mnt fuse" /proc/mounts; then
        timeout 10 fusermount -u "$mnt" 2>/dev/null || timeout 10 fusermount -uz "$mnt" 2>/dev/null || true
    fi
    if [[ -n "$mount_pid" ]]; then wait "$mount_pid" 2>/dev/null || true; mount_pid=""; fi
}
cleanup() {
    unmount
    if [[ -n "$emulator_pid" ]]; then kill -TERM "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
    grep -qs " $mnt fuse" /proc/mounts || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The seed: one big file, and a tree of 10 folders x 24 subfolders x 19 files.
head -c $((seq_mib * 1024 * 1024)) /dev/urandom >"$scratch/seed/big/big.bin"
python3 - "$scratch/seed/tree" <<'PY'
import os, sys
root = sys.argv[1]
for a in range(10):
    for b in range(24):
        d = os.path.join(root, "dir%d" % a, "sub%d" % b)
        os.makedirs(d)
        for c in range(19):
            with open(os.path.join(d, "file%d.txt" % c), "w") as f:
                f.write("%d/%d/%d\n" % (a, b, c))
PY

# The log exists before the background child opens it: a read of it before then fails.
: >"$scratch/emulator.log"
"$emulator" --port 0 --state-dir "$scratch/state" --seed "$scratch/seed" --bandwidth "$bandwidth" >"$scratch/emulator.log" 2>&1 &
emulator_pid=$!
url=""
for _ in $(seq 600); do
    url=$(sed -n 's#^listening on \(http://[^ ]*/\)$#\1#p' "$scratch/emulator.log" | head -n 1)
    [[ -n "$url" ]] && break
    sleep 0.1
done
[[ -n "$url" ]] || { echo "bench: the emulator did not start:" >&2; cat "$scratch/emulator.log" >&2; exit 1; }

export XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state-home"
"$drivefs" auth login --no-browser --client-id bench --client-secret bench --timeout 30 \
    --api-url="$url" --token-url="${url}token" --auth-url="${url}o/oauth2/v2/auth" \
    >"$scratch/login.out" 2>"$scratch/login.err" </dev/null &
login_pid=$!
for _ in $(seq 100); do grep -q "o/oauth2/v2/auth?" "$scratch/login.err" && break; sleep 0.1; done
curl -s -L -o /dev/null "$(grep -o "${url}o/oauth2/v2/auth?[^ ]*" "$scratch/login.err" | head -n 1)"
wait "$login_pid" || { echo "bench: login failed:" >&2; cat "$scratch/login.err" >&2; exit 1; }

token=$(curl -s "${url}token" -d grant_type=refresh_token -d refresh_token=drivefs-emulator-refresh-token \
    -d client_id=bench -d client_secret=bench | sed -n 's/.*"access_token" *: *"\([^"]*\)".*/\1/p')
stats() { curl -s "${url}__emulator/stats"; }
# requests: total Drive API requests in a stats document (the token endpoint excluded);
# media: bytes sent by the media routes.
count() {
    python3 -c '
import json, sys
m = json.load(sys.stdin)["methods"]
if sys.argv[1] == "requests":
    print(sum(v["requests"] for k, v in m.items() if k not in ("token", "oauth.authorize")))
else:
    print(sum(v["bytesOut"] for k, v in m.items() if k.endswith(".media")))' "$1"
}
now() { date +%s.%N; }
rate() { python3 -c "import sys; print('%.0f' % (float(sys.argv[1]) / 1048576 / (float(sys.argv[3]) - float(sys.argv[2]))))" "$@"; }

mount_drive() {
    "$drivefs" mount "$mnt" -f --cache-dir "$1" --poll-interval 1h --log-file "$scratch/drivefs.log" &
    mount_pid=$!
    for _ in $(seq 400); do grep -qs " $mnt fuse.drivefs" /proc/mounts && return 0; sleep 0.025; done
    echo "bench: the mount did not appear:" >&2
    cat "$scratch/drivefs.log" >&2
    exit 1
}

bytes=$((seq_mib * 1024 * 1024))
echo "drivefs mount, read side (emulator capped at $((bandwidth / 1048576)) MiB/s per connection)"
big_id=$(curl -s -G -H "Authorization: Bearer $token" "${url}drive/v3/files" --data-urlencode "q=name = 'big.bin'" \
    --data-urlencode "fields=files(id)" | sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p')
t0=$(now); curl -s -H "Authorization: Bearer $token" "${url}drive/v3/files/$big_id?alt=media" -o /dev/null; t1=$(now)
single=$(rate "$bytes" "$t0" "$t1")
printf '%-58s %10s\n' "one HTTP stream (curl), ${seq_mib} MiB" "$single MB/s"

mount_drive "$scratch/cache-a"
t0=$(now); cat "$mnt/big/big.bin" >/dev/null; t1=$(now)
cold=$(rate "$bytes" "$t0" "$t1")
printf '%-58s %10s   %s\n' "drivefs: cold sequential read" "$cold MB/s" \
    "$(python3 -c "import sys; print('%.1fx one stream' % (float(sys.argv[1]) / max(1, float(sys.argv[2]))))" "$cold" "$single")"
t0=$(now); cat "$mnt/big/big.bin" >/dev/null; t1=$(now)
printf '%-58s %10s\n' "drivefs: warm sequential read (block cache)" "$(rate "$bytes" "$t0" "$t1") MB/s"
cmp -s "$mnt/big/big.bin" "$scratch/seed/big/big.bin" || { echo "bench: the file read back differs!" >&2; exit 1; }

before=$(stats | count requests)
t0=$(now); entries=$(ls -lR "$mnt/tree" | wc -l); t1=$(now)
after=$(stats | count requests)
printf '%-58s %10s   %s requests\n' "drivefs: cold ls -lR, 250 folders ($entries lines)" \
    "$(python3 -c "import sys; print('%.0f ms' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000))" "$t0" "$t1")" "$((after - before))"
t0=$(now); ls -lR "$mnt/tree" >/dev/null; t1=$(now)
printf '%-58s %10s   %s requests\n' "drivefs: warm ls -lR" \
    "$(python3 -c "import sys; print('%.0f ms' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000))" "$t0" "$t1")" "$(( $(stats | count requests) - after ))"
unmount

mount_drive "$scratch/cache-b"
media_before=$(stats | count media)
python3 - "$mnt/big/big.bin" <<'PY'
import os, random, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
rng = random.Random(42)
start = time.perf_counter()
for _ in range(1000):
    os.pread(fd, 4096, rng.randrange(0, size - 4096) & ~4095)
print("%-58s %10.0f ms" % ("drivefs: 1,000 random 4 KiB reads, cold", (time.perf_counter() - start) * 1000))
os.close(fd)
PY
media_after=$(stats | count media)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$mount_pid/status" 2>/dev/null || echo 0)
printf '%-58s %10s\n' "  downloaded for them (rclone: 2.5 GiB for a 1 GiB file)" "$(( (media_after - media_before) / 1048576 )) MiB"
printf '%-58s %10s\n' "  drivefs resident memory after them" "$((rss / 1024)) MiB"
unmount
