#!/usr/bin/env bash
# The daemon's memory across a walk of a large drive (issue 20), against drivefs-emulator:
#
#   a drive of BENCH_MEMORY_SHAPE (default 100,20,100: 100 folders x 20 subfolders x 100 one-byte
#   files, 202,101 items with the root), mounted on a fresh cache directory with the defaults
#   (--release-idle-after 10s) and --poll-interval 5s; the daemon's VmRSS and VmHWM
#   (/proc/PID/status) and `drivefs status --json`'s index read at each step:
#     1. the index built (every item in `drivefs status`) and 5 s idle;
#     2. `find MOUNT | wc -l` (timed), a process sitting in one of the mount's folders all along;
#     3. 30 s idle (the idle folders shed, the kernel's forgets pack them);
#     4. a second `find` (timed: the folders materialized again from the packed index), then 30 s idle.
#
# Usage: scripts/bench-memory.sh BIN_DIR (release binaries; scripts/bench.sh runs it). Needs root (or
# FUSE access), curl and python3. Prints one line a figure (the layout of scripts/bench.sh's other
# figures); docs/benchmarks.md's table is made from that output by bench/memory_table.py.
set -euo pipefail

bin_dir=$(cd "${1:?usage: scripts/bench-memory.sh BIN_DIR}" && pwd)
drivefs="$bin_dir/drivefs"
emulator="$bin_dir/drivefs-emulator"
IFS=, read -r top sub files <<<"${BENCH_MEMORY_SHAPE:-100,20,100}"
if [[ ! -e /dev/fuse ]] || ! command -v fusermount >/dev/null; then
    echo "memory: skipped (/dev/fuse or fusermount missing)"
    exit 0
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/drivefs-bench-memory.XXXXXX")
mnt="$scratch/mnt"
mkdir -p "$mnt" "$scratch/seed"
emulator_pid=""
mount_pid=""
resident_pid=""
cleanup() {
    if [[ -n "$resident_pid" ]]; then kill "$resident_pid" 2>/dev/null || true; wait "$resident_pid" 2>/dev/null || true; fi
    if grep -qs " $mnt fuse" /proc/mounts; then
        timeout 30 fusermount -u "$mnt" 2>/dev/null || timeout 10 fusermount -uz "$mnt" 2>/dev/null || true
    fi
    if [[ -n "$mount_pid" ]]; then wait "$mount_pid" 2>/dev/null || true; fi
    if [[ -n "$emulator_pid" ]]; then kill -TERM "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
    grep -qs " $mnt fuse" /proc/mounts || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

python3 - "$scratch/seed" "$top" "$sub" "$files" <<'PY'
import os, sys
root, top, sub, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for a in range(top):
    for b in range(sub):
        d = os.path.join(root, "d%03d" % a, "s%02d" % b)
        os.makedirs(d)
        for c in range(files):
            with open(os.path.join(d, "f%03d.txt" % c), "w") as f:
                f.write("x")
PY
items=$((top + top * sub + top * sub * files))

: >"$scratch/emulator.log"
"$emulator" --port 0 --state-dir "$scratch/state" --seed "$scratch/seed" >"$scratch/emulator.log" 2>&1 &
emulator_pid=$!
url=""
for _ in $(seq 6000); do
    url=$(sed -n 's#^listening on \(http://[^ ]*/\)$#\1#p' "$scratch/emulator.log" | head -n 1)
    [[ -n "$url" ]] && break
    sleep 0.1
done
[[ -n "$url" ]] || { echo "memory: the emulator did not start:" >&2; cat "$scratch/emulator.log" >&2; exit 1; }

export XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state-home"
"$drivefs" auth login --no-browser --client-id bench --client-secret bench --timeout 30 \
    --api-url="$url" --token-url="${url}token" --auth-url="${url}o/oauth2/v2/auth" \
    >"$scratch/login.out" 2>"$scratch/login.err" </dev/null &
login_pid=$!
for _ in $(seq 100); do grep -q "o/oauth2/v2/auth?" "$scratch/login.err" && break; sleep 0.1; done
curl -s -L -o /dev/null "$(grep -o "${url}o/oauth2/v2/auth?[^ ]*" "$scratch/login.err" | head -n 1)"
wait "$login_pid" || { echo "memory: login failed:" >&2; cat "$scratch/login.err" >&2; exit 1; }

now() { date +%s.%N; }
line() { printf '%-58s %14s\n' "$1" "$2"; }
kib() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$mount_pid/status"; }
mib() { python3 -c "import sys; print('%.0f MiB' % (int(sys.argv[1]) / 1024))" "$1"; }
# The index part of `drivefs status --json`: items, folders materialized, nodes.
index() {
    "$drivefs" status --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]
i = s.get("index") or {}
print(s.get("items", 0), i.get("materializedFolders", -1), i.get("nodes", -1))' 2>/dev/null || echo "0 -1 -1"
}
step() {  # step LABEL: the daemon's RSS, peak and index now
    read -r known materialized nodes <<<"$(index)"
    line "$1: RSS (VmRSS)" "$(mib "$(kib VmRSS)")"
    line "$1: peak RSS (VmHWM)" "$(mib "$(kib VmHWM)")"
    line "$1: folders materialized / nodes" "$materialized / $nodes"
}
timed_find() {  # timed_find LABEL
    local t0 t1 n
    t0=$(now); n=$(find "$mnt" | wc -l); t1=$(now)
    [[ "$n" -eq $((items + 1)) ]] || { echo "memory: find listed $n paths, expected $((items + 1))" >&2; exit 1; }
    line "$1 ($n paths)" "$(python3 -c "import sys; print('%.2f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1")"
}

echo "drivefs mount, memory across a walk: $top x $sub x $files files ($items items with the folders, the root besides)"
"$drivefs" mount "$mnt" -f --cache-dir "$scratch/mount-cache" --poll-interval 5s --log-file "$scratch/drivefs.log" \
    >"$scratch/mount.out" 2>&1 &
mount_pid=$!
for _ in $(seq 400); do grep -qs " $mnt fuse.drivefs" /proc/mounts && break; sleep 0.025; done
grep -qs " $mnt fuse.drivefs" /proc/mounts || { echo "memory: the mount did not appear:" >&2; cat "$scratch/drivefs.log" >&2; exit 1; }
t0=$(now)
built=""
for _ in $(seq 1200); do
    read -r known _ _ <<<"$(index)"
    if [[ "$known" -ge $((items + 1)) ]]; then built=1; break; fi
    sleep 0.5
done
[[ -n "$built" ]] || { echo "memory: the index was not built in 600 s ($known items)" >&2; exit 1; }
line "index built (every item known)" "$(python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(now)")"
sleep 5
step "1. index built, 5 s idle"

# A process sits in one of the mount's folders all along (a shell's working directory).
(cd "$mnt/d000/s00" && exec sleep 3600) &
resident_pid=$!
timed_find "2. find of the whole mount"
step "2. after find"
sleep 30
step "3. after 30 s idle"
cwd=$(readlink "/proc/$resident_pid/cwd" || true)
line "3. the resident process's working directory" "$([[ "$cwd" == "$mnt/d000/s00" ]] && echo reachable || echo "lost ($cwd)")"
timed_find "4. a second find"
step "4. after the second find"
sleep 30
step "4. after 30 s idle again"
