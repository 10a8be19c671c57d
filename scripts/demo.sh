#!/usr/bin/env bash
# make demo: start drivefs-emulator (a local Drive v3 + OAuth 2.0 server) seeded with the sample
# tree in scripts/demo-seed, print what to try, and keep it in the foreground until Ctrl-C.
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

emulator_args=(--port "$port" --state-dir "$state_dir" --log-level debug)
if [[ -d "$seed" ]]; then
    emulator_args+=(--seed "$seed")
    seed_note="seeded from scripts/demo-seed"
else
    seed_note="NOT seeded: scripts/demo-seed is missing from this checkout, so My Drive starts empty"
    echo "demo: warning: $seed is missing; starting with an empty Drive" >&2
fi

emulator_pid=""
tail_pid=""
cleanup() {
    trap - EXIT INT TERM
    if [[ -n "$tail_pid" ]]; then kill "$tail_pid" 2>/dev/null || true; fi
    if [[ -n "$emulator_pid" ]] && kill -0 "$emulator_pid" 2>/dev/null; then
        kill -TERM "$emulator_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$emulator_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$emulator_pid" 2>/dev/null || true
        wait "$emulator_pid" 2>/dev/null || true
    fi
    rm -rf "$scratch"
    echo "demo: emulator stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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

cat <<TEXT

Mounting Drive ('drivefs mount') arrives with the filesystem issue. Until then,
'$drivefs debug smoke-mount DIR -f' mounts a small fixed tree (no Drive) to check FUSE.
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
