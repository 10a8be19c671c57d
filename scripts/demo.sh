#!/usr/bin/env bash
# make demo: start drivefs-emulator (a local Drive v3 + OAuth 2.0 server) seeded with the sample
# tree in scripts/demo-seed, sign drivefs in to it, mount it with `drivefs mount`, show `ls -l` of
# the mount, print what to try, and keep it all running until Ctrl-C (which unmounts and stops).
#
# Usage: scripts/demo.sh BIN_DIR   (the directory holding drivefs and drivefs-emulator)
# Environment:
#   DRIVEFS_DEMO_PORT       port to listen on (default 0: any free port)
#   DRIVEFS_DEMO_STATE_DIR  keep the emulator's state there across runs (default: a temporary
#                           directory, removed when the demo stops)
set -euo pipefail

bin_dir=${1:?usage: scripts/demo.sh BIN_DIR (the directory holding drivefs-emulator)}
bin_dir=$(cd "$bin_dir" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
emulator="$bin_dir/drivefs-emulator"
drivefs="$bin_dir/drivefs"
seed="$root/scripts/demo-seed"
port=${DRIVEFS_DEMO_PORT:-0}

if [[ ! -x "$emulator" ]]; then
    echo "demo: $emulator is not built; run 'make build' (or 'make demo', which builds first)" >&2
    exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/drivefs-demo.XXXXXX")
log="$scratch/emulator.log"
if [[ -n "${DRIVEFS_DEMO_STATE_DIR:-}" ]]; then
    state_dir=$DRIVEFS_DEMO_STATE_DIR
    mkdir -p "$state_dir"
    state_note="$state_dir (kept: DRIVEFS_DEMO_STATE_DIR)"
else
    state_dir="$scratch/state"
    mkdir -p "$state_dir"
    state_note="$state_dir (removed when the demo stops; set DRIVEFS_DEMO_STATE_DIR to keep it)"
fi

# --limits google: Google's 2026 limits (quota units, ~3 writes/s, ...), so that what a new user sees
# is what Google would do (docs/emulator.md#drive-limits---limits).
emulator_args=(--port "$port" --state-dir "$state_dir" --log-level debug --limits google)
if [[ -d "$seed" ]]; then
    emulator_args+=(--seed "$seed")
    seed_note="seeded from scripts/demo-seed"
else
    seed_note="NOT seeded: scripts/demo-seed is missing from this checkout, so My Drive starts empty"
    echo "demo: warning: $seed is missing; starting with an empty Drive" >&2
fi

emulator_pid=""
tail_pid=""
mountpoint="$scratch/mnt"
mounted=""
cleanup() {
    trap - EXIT INT TERM
    if [[ -n "$tail_pid" ]]; then kill "$tail_pid" 2>/dev/null || true; fi
    if [[ -n "$mounted" ]] && grep -qs " $mountpoint fuse" /proc/mounts; then
        "$drivefs" unmount "$mountpoint" --timeout 10 >/dev/null 2>&1 || fusermount -uz "$mountpoint" 2>/dev/null || true
        echo "demo: unmounted $mountpoint"
    fi
    if [[ -n "$emulator_pid" ]] && kill -0 "$emulator_pid" 2>/dev/null; then
        kill -TERM "$emulator_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$emulator_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$emulator_pid" 2>/dev/null || true
        wait "$emulator_pid" 2>/dev/null || true
    fi
    if ! grep -qs " $mountpoint " /proc/mounts; then rm -rf "$scratch"; fi
    echo "demo: emulator stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The log exists before the emulator starts: the background child opens it only once it runs, and
# a read of it before then fails (with set -e and pipefail, that ended the demo: DemoScriptTests).
: >"$log"
"$emulator" "${emulator_args[@]}" >"$log" 2>&1 &
emulator_pid=$!

# The emulator prints "listening on http://HOST:PORT/" once it serves.
url=""
for _ in $(seq 300); do
    url=$(sed -n 's#^listening on \(http://[^ ]*/\)$#\1#p' "$log" | head -n 1)
    [[ -n "$url" ]] && break
    if ! kill -0 "$emulator_pid" 2>/dev/null; then
        echo "demo: drivefs-emulator exited before it was ready:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "demo: drivefs-emulator did not say 'listening on' within 30 s; its output:" >&2
    cat "$log" >&2
    exit 1
fi

cat <<TEXT

drivefs demo: the Drive v3 + OAuth 2.0 emulator is listening on $url (pid $emulator_pid)
  $seed_note
  state: $state_note

Try it from another terminal:

  # An access token from the emulator's well-known refresh token (any client ID and secret work):
  TOKEN=\$(curl -s ${url}token -d grant_type=refresh_token \\
      -d refresh_token=drivefs-emulator-refresh-token -d client_id=demo -d client_secret=demo \\
      | sed -n 's/.*"access_token" *: *"\\([^"]*\\)".*/\\1/p')

  # Who you are, and the files at the top of My Drive:
  curl -s -H "Authorization: Bearer \$TOKEN" -G ${url}drive/v3/about --data-urlencode 'fields=user,storageQuota'
  curl -s -H "Authorization: Bearer \$TOKEN" -G ${url}drive/v3/files \\
      --data-urlencode "q='root' in parents and trashed = false" \\
      --data-urlencode 'fields=files(id,name,mimeType,size,md5Checksum),nextPageToken'

  # A file's bytes (ID from the listing above), and what the emulator has counted so far:
  curl -s -H "Authorization: Bearer \$TOKEN" "${url}drive/v3/files/ID?alt=media"
  curl -s ${url}__emulator/stats

  # drivefs's view of these endpoints:
  $drivefs debug endpoints --api-url=$url --token-url=${url}token --auth-url=${url}o/oauth2/v2/auth
TEXT

if [[ -x "$drivefs" ]] && "$drivefs" auth login --help >/dev/null 2>&1; then
    cat <<TEXT

  # Sign drivefs in to the emulator (any client ID works). It prints a consent URL: the emulator
  # consents at once, so open it in a browser here, or from a third terminal:  curl -sL -o /dev/null 'URL'
  $drivefs auth login --profile demo --client-id demo --client-secret demo --no-browser \\
      --api-url=$url --token-url=${url}token --auth-url=${url}o/oauth2/v2/auth
  $drivefs auth status --profile demo
  $drivefs auth logout --profile demo     # forgets the demo profile's tokens again
TEXT
fi

venv_python="$root/.build/interop-venv/bin/python"
interop_script="$root/Tests/interop/python_client_interop.py"
if [[ -x "$venv_python" && -f "$interop_script" ]]; then
    cat <<TEXT

  # google-api-python-client (unmodified, from the venv 'make deps' made) reading it:
  $venv_python $interop_script --base-url ${url%/} --steps about,start_page_token,root
TEXT
fi

# Sign a demo profile in (the emulator consents at once when its consent URL is fetched) and mount.
demo_env=(env XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state")
mount_note=""
if [[ -x "$drivefs" ]] && "$drivefs" mount --help >/dev/null 2>&1; then
    mkdir -p "$mountpoint"
    "${demo_env[@]}" "$drivefs" auth login --no-browser --client-id demo --client-secret demo --timeout 30 \
        --api-url="$url" --token-url="${url}token" --auth-url="${url}o/oauth2/v2/auth" \
        >"$scratch/login.out" 2>"$scratch/login.err" </dev/null &
    login_pid=$!
    consent=""
    for _ in $(seq 100); do
        consent=$(grep -o "${url}o/oauth2/v2/auth?[^ ]*" "$scratch/login.err" | head -n 1 || true)
        [[ -n "$consent" ]] && break
        sleep 0.1
    done
    [[ -n "$consent" ]] && curl -s -L -o /dev/null "$consent" || true
    if wait "$login_pid" && "${demo_env[@]}" "$drivefs" mount "$mountpoint" --poll-interval 5s 2>"$scratch/mount.err"; then
        mounted=yes
        echo
        echo "drivefs demo: My Drive of the emulator is mounted at $mountpoint (writable: what you write goes up to the emulator):"
        echo
        echo "\$ ls -l $mountpoint"
        ls -l "$mountpoint"
        mount_note="Unmount with '$drivefs unmount $mountpoint' (or 'fusermount -u $mountpoint'); Ctrl-C here does it too."
    else
        echo "demo: warning: could not mount the emulator's Drive (FUSE missing? not root?):" >&2
        cat "$scratch/login.err" "$scratch/mount.err" 2>/dev/null | tail -n 5 >&2
        mount_note="The mount failed (see above); 'make test' explains what mount tests need."
    fi
fi

if [[ -n "$mounted" ]]; then
    cat <<TEXT

Try the mount from another terminal (its files are the emulator's Drive):

  ls -lR $mountpoint
  cat "$mountpoint/About this demo.txt"
  cp "$mountpoint/Documents/Meeting notes.docx" /tmp/   # a Google Doc, exported
  df -h $mountpoint

  $mount_note
TEXT
fi

cat <<TEXT

Other clients: docs/testing.md shows google-api-python-client and rclone (in a private
network namespace behind TLS) against the emulator; docs/emulator.md lists its flags and faults.

Request log follows. Press Ctrl-C to stop the emulator.

TEXT

tail -n +2 -f "$log" &
tail_pid=$!
# `wait` returns as soon as a trapped signal arrives, so Ctrl-C (and SIGTERM) stop the demo at once.
wait "$emulator_pid" || status=$?
emulator_pid=""
echo "demo: drivefs-emulator exited (status ${status:-0})" >&2
exit "${status:-0}"
