#!/usr/bin/env bash
# Interop test: unmodified rclone (Debian) against drivefs-emulator, in a private network namespace.
#
# rclone cannot be told another API host: it always talks to https://www.googleapis.com. So this script
# re-executes itself inside new mount, network and PID namespaces, where
#   - the only interface is lo (nothing can leave: there is no route anywhere else);
#   - a hosts file bind-mounted over /etc/hosts maps www.googleapis.com, oauth2.googleapis.com and
#     accounts.google.com to 127.0.0.1 (the machine's own /etc/hosts is untouched);
#   - drivefs-emulator listens on 127.0.0.1:<free port> with --public-url https://www.googleapis.com;
#   - tls_front.py terminates TLS on 127.0.0.1:443 with a certificate for those names, signed by a CA
#     made for this run, which rclone trusts through SSL_CERT_FILE.
# When the script (PID 1 of the PID namespace) exits, the kernel kills every process it started.
#
# Usage: rclone_interop.sh --emulator PATH [--python PATH] [--workdir DIR]
# Prints one line per step ("ok   <step>"); on the first failure prints "FAIL <step>: ..." with the
# command's output and the tails of the rclone and emulator logs, and exits 1. Exit 2: a tool is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$PATH:/usr/sbin:/sbin"  # ip, and unshare on some systems, live there; a non-root PATH may lack them
emulator="" python="" workdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --emulator) emulator="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --workdir) workdir="$2"; shift 2 ;;
        *) echo "usage: $0 --emulator PATH [--python PATH] [--workdir DIR]" >&2; exit 64 ;;
    esac
done
[ -x "$emulator" ] || { echo "FAIL setup: no drivefs-emulator executable at '$emulator'"; exit 1; }
python="${python:-$(command -v python3 || true)}"
for tool in rclone unshare ip openssl mount timeout "$python"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP tool not installed: ${tool:-python3}"; exit 2; }
done

if [ "${DRIVEFS_INTEROP_NAMESPACE:-}" != 1 ]; then
    # Outside: enter the namespaces. Without root, a user namespace maps us to root inside it.
    userns=()
    [ "$(id -u)" = 0 ] || userns=(--user --map-root-user)
    workdir="${workdir:-$(mktemp -d /tmp/drivefs-rclone-interop.XXXXXX)}"
    exec unshare "${userns[@]}" --mount --net --pid --fork --kill-child --mount-proc --propagation private \
        env DRIVEFS_INTEROP_NAMESPACE=1 bash "$0" --emulator "$(realpath "$emulator")" \
        --python "$(command -v "$python")" --workdir "$workdir"
fi

# Inside the namespaces from here on.
mkdir -p "$workdir"
cd "$workdir"
for var in http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY; do unset "$var"; done
ip link set lo up

emulator_pid="" front_pid=""
cleanup() {
    for pid in $front_pid $emulator_pid; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $front_pid $emulator_pid; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

fail() {
    echo "FAIL $1"
    shift
    for log in "$@"; do
        [ -s "$log" ] && { echo "--- last lines of $(basename "$log")"; tail -n 60 "$log"; }
    done
    exit 1
}

# A line matching $2 in file $1 within $3 seconds; prints it.
await_line() {
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        if grep -m1 -E "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# --- a throwaway CA and a server certificate for Google's names -------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=drivefs interop test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.pem >openssl.log 2>&1 || fail "setup: openssl CA" openssl.log
openssl req -newkey rsa:2048 -nodes -subj "/CN=www.googleapis.com" -keyout server.key -out server.csr \
    >>openssl.log 2>&1 || fail "setup: openssl CSR" openssl.log
printf '%s\n' "subjectAltName=DNS:www.googleapis.com,DNS:oauth2.googleapis.com,DNS:accounts.google.com,IP:127.0.0.1" \
    "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
    -out server.pem >>openssl.log 2>&1 || fail "setup: openssl sign" openssl.log

# --- names → loopback, for this mount namespace only ---------------------------------------------------
printf '%s\n' "127.0.0.1 localhost" "::1 localhost" \
    "127.0.0.1 www.googleapis.com oauth2.googleapis.com accounts.google.com" >hosts
mount --bind "$workdir/hosts" /etc/hosts

# --- the emulator and the TLS front ------------------------------------------------------------------
# Seeded (docs/emulator-drive.md): a Google Doc whose document text is the file's content, and a name with a '/'.
mkdir -p state seed/seeded
printf 'Project plan\nsecond line\n' >seed/seeded/Plan.gdoc
printf 'q1\n' >seed/seeded/Reports%2F2026.txt
"$emulator" --host 127.0.0.1 --port 0 --public-url https://www.googleapis.com --state-dir "$workdir/state" \
    --seed "$workdir/seed" --log-level debug \
    >emulator.log 2>&1 &
emulator_pid=$!
line="$(await_line emulator.log 'listening on http://127\.0\.0\.1:[0-9]+/' 30)" \
    || fail "setup: drivefs-emulator did not print 'listening on' within 30 s" emulator.log
port="$(sed -E 's#.*listening on http://127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$line")"

"$python" "$here/tls_front.py" --listen 127.0.0.1:443 --backend "127.0.0.1:$port" \
    --cert server.pem --key server.key >front.log 2>&1 &
front_pid=$!
await_line front.log 'tls front listening' 15 >/dev/null || fail "setup: TLS front did not start" front.log
echo "ok   setup              emulator on 127.0.0.1:$port behind https://www.googleapis.com (127.0.0.1:443); logs in $workdir"

# --- rclone ----------------------------------------------------------------------------------------------
# real-clients.md: an expired token, so rclone refreshes first (it does not refresh on a 401). rclone
# rewrites this file after refreshing; every run writes a fresh one.
cat >rclone.conf <<'EOF'
[emu]
type = drive
client_id = interop-rclone.apps.googleusercontent.com
client_secret = interop-rclone-secret
scope = drive
token_url = https://oauth2.googleapis.com/token
auth_url = https://accounts.google.com/o/oauth2/auth
token = {"access_token":"x","token_type":"Bearer","refresh_token":"drivefs-emulator-refresh-token","expiry":"2000-01-01T00:00:00Z"}
EOF
export SSL_CERT_FILE="$workdir/ca.pem" SSL_CERT_DIR="$workdir/no-system-cas"
mkdir -p "$SSL_CERT_DIR"
# Strict: no retries, so any wrong answer from the emulator fails the step instead of being retried away.
rclone_flags=(--config "$workdir/rclone.conf" --retries 1 --low-level-retries 1 --contimeout 10s --timeout 60s -vv --log-file "$workdir/rclone.log"
              --drive-upload-cutoff 1M --drive-chunk-size 1M --drive-export-formats txt)

# step NAME ARGS...: runs `rclone ARGS` under a timeout, output in out/NAME (stderr in out/NAME.err);
# fails the script when rclone fails.
step() {
    local name="$1" status=0
    shift
    mkdir -p out
    echo "=== step $name: rclone $*" >>rclone.log
    timeout 90 rclone "${rclone_flags[@]}" "$@" >"out/$name" 2>"out/$name.err" || status=$?
    if [ "$status" != 0 ]; then
        fail "$name: 'rclone $*' exited $status; its output:
$(head -c 4000 "out/$name") $(head -c 4000 "out/$name.err")" rclone.log emulator.log
    fi
}
# expect NAME ACTUAL EXPECTED
expect() {
    [ "$2" = "$3" ] || fail "$1: expected
$3
--- got
$2" rclone.log emulator.log
}

# Local tree to upload: small files, an empty one, a name with spaces and quotes, a subfolder, and a file above the
# upload cutoff (resumable, 1 MiB chunks, the last one short).
mkdir -p src/sub down
printf 'hello from rclone\n' >src/small.txt
printf "quotes and spaces\n" >"src/it's a \"name\".txt"
printf 'nested\n' >src/sub/nested.txt
: >src/empty.txt
"$python" -c 'import hashlib,sys; sys.stdout.buffer.write(b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(6400)))' >src/data.bin
"$python" -c 'import hashlib,sys; sys.stdout.buffer.write(b"".join(hashlib.sha512(b"%d" % i).digest() for i in range(55000))[:3*1048576+12345])' >src/big.bin

step about about emu:
grep -q '^Used:' out/about || fail "about: no 'Used:' line in: $(cat out/about)" rclone.log
echo "ok   about              $(tr '\n' ' ' <out/about)"

step mkdir mkdir emu:interop/empty-dir
step mkdir-list lsf emu:interop
expect mkdir "$(cat out/mkdir-list)" "empty-dir/"
step mkdir-root lsf emu:
expect mkdir-root "$(sort out/mkdir-root)" "$(printf '%s\n' interop/ seeded/)"
echo "ok   mkdir"

step copy copy src emu:interop/copied
chunks="$(grep -c 'Sending chunk' rclone.log || true)"
[ "$chunks" -ge 3 ] || fail "copy: big.bin went up in $chunks resumable chunks, expected at least 3" rclone.log emulator.log
echo "ok   copy               6 files (one empty), big.bin in $chunks resumable chunks"

# Modification times survive the round trip (rclone sends 9 fractional digits; Drive keeps milliseconds, which
# is rclone's precision for Drive): a second copy finds nothing to transfer.
step copy-again copy src emu:interop/copied
sed -n '/=== step copy-again/,$p' rclone.log | grep -E 'Copied \(|Updated modification time' \
    && fail "copy-again: a second copy transferred or touched files (modification times did not survive)" rclone.log
echo "ok   copy-again         nothing to transfer"

# A stream of unknown size: rcat goes resumable with "Content-Range: bytes a-b/*" until the last chunk.
timeout 90 rclone "${rclone_flags[@]}" rcat emu:interop/rcat.bin <src/big.bin >out/rcat 2>&1 \
    || fail "rcat: rclone rcat failed: $(head -c 2000 out/rcat)" rclone.log emulator.log
[ "$(grep -c 'rcat.bin: Sending chunk' rclone.log || true)" -ge 3 ] \
    || fail "rcat: the stream did not go up as a resumable upload in chunks" rclone.log emulator.log
step rcat-md5 md5sum emu:interop/rcat.bin
expect rcat "$(cut -d' ' -f1 out/rcat-md5)" "$(md5sum <src/big.bin | cut -d' ' -f1)"
step rcat-delete deletefile emu:interop/rcat.bin
echo "ok   rcat               3 MiB of unknown size, uploaded resumable, md5 matches"

step lsf-R lsf -R emu:
expect lsf-R "$(sort out/lsf-R)" "$(printf '%s\n' interop/ interop/copied/ interop/copied/big.bin interop/copied/data.bin \
    interop/copied/empty.txt "interop/copied/it's a \"name\".txt" interop/copied/small.txt interop/copied/sub/ interop/copied/sub/nested.txt \
    interop/empty-dir/ seeded/ seeded/Plan.txt "seeded/Reports／2026.txt" | sort)"
echo "ok   lsf-R              $(wc -l <out/lsf-R) entries"

step check check src emu:interop/copied
step md5sum md5sum emu:interop/copied
expect md5sum "$(sort -k2 out/md5sum)" "$(cd src && find . -type f -printf '%P\n' | sort | while read -r f; do
    printf '%s  %s\n' "$(md5sum <"$f" | cut -d' ' -f1)" "$f"; done)"
echo "ok   check/md5sum       md5 of every file matches"

step cat cat emu:interop/copied/small.txt
cmp -s out/cat src/small.txt || fail "cat: got '$(cat out/cat)'" rclone.log
step cat-range cat --offset 1000000 --count 100000 emu:interop/copied/big.bin
cmp -s out/cat-range <(tail -c +1000001 src/big.bin | head -c 100000) || fail "cat-range: bytes differ" rclone.log
echo "ok   cat                whole file and a 100000-byte range at offset 1000000"

step download copyto emu:interop/copied/big.bin down/big.bin
cmp -s down/big.bin src/big.bin || fail "download: big.bin differs after a round trip" rclone.log
echo "ok   download           big.bin round trip"

step moveto moveto emu:interop/copied/small.txt emu:interop/moved/renamed.txt
step moveto-new lsf emu:interop/moved
step moveto-old lsf emu:interop/copied
expect moveto "$(cat out/moveto-new)" "renamed.txt"
grep -qx 'small.txt' out/moveto-old && fail "moveto: small.txt still in the old folder" rclone.log
step moveto-cat cat emu:interop/moved/renamed.txt
cmp -s out/moveto-cat src/small.txt || fail "moveto: content differs after the move" rclone.log
echo "ok   moveto             small.txt → moved/renamed.txt"

step deletefile deletefile emu:interop/moved/renamed.txt
step deletefile-list lsf emu:interop/moved
expect deletefile "$(cat out/deletefile-list)" ""
step deletefile-trash lsf --drive-trashed-only emu:interop/moved
expect deletefile-trash "$(cat out/deletefile-trash)" "renamed.txt"
echo "ok   deletefile         renamed.txt is in the trash"

# A Google Doc comes down through its exportLinks URL, as text with --drive-export-formats txt; a Drive name
# containing '/' shows as '／' (rclone's encoding).
step doc-cat cat emu:seeded/Plan.txt
"$python" -c 'import sys; t=open(sys.argv[1],"rb").read().decode("utf-8-sig").replace("\r\n","\n"); sys.exit(0 if t.startswith("Project plan\nsecond line") else 1)' out/doc-cat \
    || fail "doc-cat: the exported Doc reads '$(head -c 300 out/doc-cat)'" rclone.log emulator.log
grep -q '/export?' rclone.log || grep -q 'exportFormat\|/export' emulator.log \
    || fail "doc-cat: the Doc was not fetched through an export URL" rclone.log emulator.log
step slash-cat cat "emu:seeded/Reports／2026.txt"
expect slash-cat "$(cat out/slash-cat)" "q1"
echo "ok   google-doc         Plan.txt exported through exportLinks; 'Reports/2026.txt' read as Reports／2026.txt"

step server-copy copyto emu:interop/copied/data.bin emu:interop/server-copy.bin
step server-copy-md5 md5sum emu:interop/server-copy.bin
expect server-copy "$(cut -d' ' -f1 out/server-copy-md5)" "$(md5sum <src/data.bin | cut -d' ' -f1)"
grep -q 'files/[^ ]*/copy\|files.copy' emulator.log || fail "server-copy: no files.copy request reached the emulator" emulator.log
echo "ok   server-copy        data.bin copied with files.copy"

step touch touch --timestamp 2020-01-02T03:04:05 emu:interop/copied/sub/nested.txt
step touch-list lsf --format tp emu:interop/copied/sub
expect touch "$(cat out/touch-list)" "2020-01-02 03:04:05;nested.txt"
echo "ok   touch              modifiedTime set and read back"

printf 'changed locally\n' >src/sub/nested.txt
step sync sync src emu:interop/copied
step sync-check check src emu:interop/copied
step sync-list lsf -R emu:interop/copied
expect sync "$(sort out/sync-list)" "$(cd src && find . -mindepth 1 \( -type d -printf '%P/\n' -o -type f -printf '%P\n' \) | sort)"
echo "ok   sync               changed file updated, moved file re-uploaded, check passes"

# rclone mount (read-only): files.root and changes.getStartPageToken at start, listings, 128 MiB ranged reads
# clamped at the end of small files, and the change feed polled every second, which must make a file created
# through the API appear even though listings are cached for an hour. Needs a usable /dev/fuse (root).
fusermount_tool="$(command -v fusermount3 || command -v fusermount || true)"
if [ -r /dev/fuse ] && [ -w /dev/fuse ] && [ -n "$fusermount_tool" ]; then
    mkdir -p mnt
    timeout 120 rclone "${rclone_flags[@]}" --log-file "$workdir/mount.log" mount emu: mnt --read-only \
        --dir-cache-time 1h --poll-interval 1s --vfs-cache-mode off >out/mount 2>&1 &
    mount_pid=$!
    for _ in $(seq 100); do grep -q " $workdir/mnt " /proc/mounts && break; sleep 0.2; done
    grep -q " $workdir/mnt " /proc/mounts || fail "mount: rclone mount did not mount within 20 s" mount.log emulator.log
    expect mount-ls "$(ls mnt/interop/copied | sort)" "$(ls src | sort)"
    cmp -s mnt/interop/copied/big.bin src/big.bin || fail "mount: big.bin read through the mount differs" mount.log emulator.log
    cmp -s "mnt/interop/copied/it's a \"name\".txt" "src/it's a \"name\".txt" || fail "mount: small file differs" mount.log emulator.log
    step mount-create copyto src/data.bin emu:interop/copied/appeared.bin
    for _ in $(seq 100); do [ -e mnt/interop/copied/appeared.bin ] && break; sleep 0.2; done
    [ -e mnt/interop/copied/appeared.bin ] \
        || fail "mount: a file created through the API did not appear within 20 s (changes polling)" mount.log emulator.log
    cmp -s mnt/interop/copied/appeared.bin src/data.bin || fail "mount: appeared.bin differs" mount.log emulator.log
    grep -q 'changes.getStartPageToken' emulator.log || fail "mount: no changes.getStartPageToken request" emulator.log
    grep -q 'changes.list' emulator.log || fail "mount: the change feed was never polled" emulator.log
    "$fusermount_tool" -u mnt || fail "mount: fusermount -u failed" mount.log
    wait "$mount_pid" || fail "mount: rclone mount exited $? after the unmount" mount.log
    step mount-cleanup deletefile emu:interop/copied/appeared.bin
    echo "ok   mount              read-only rclone mount: listing, reads, a new file seen through changes polling"
else
    echo "skip mount              no usable /dev/fuse or fusermount here (needs root)"
fi

# Google's retryable errors, scripted through the emulator's control API (plain HTTP on the emulator's own port):
# rclone must recognise a 403 userRateLimitExceeded and a 500 from their bodies and retry (pacer, then the
# whole transfer for a multipart upload), so these two steps allow retries.
post_faults() {
    "$python" -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST",
                       headers={"Content-Type": "application/json"}), timeout=10).read()' \
        "http://127.0.0.1:$port/__emulator/faults" "$1" || fail "faults: POST /__emulator/faults failed" emulator.log
}
# fault_count METHOD STATUS: how many answers with STATUS the emulator has counted for METHOD.
fault_count() {
    "$python" -c 'import json, sys, urllib.request
stats = json.load(urllib.request.urlopen(sys.argv[1], timeout=10))
print(stats.get("methods", {}).get(sys.argv[2], {}).get("statuses", {}).get(sys.argv[3], 0))' \
        "http://127.0.0.1:$port/__emulator/stats" "$1" "$2"
}
list403="$(fault_count files.list 403)" upload500="$(fault_count files.create.upload 500)"
post_faults '{"faults": [{"method": "files.list", "status": 403, "reason": "userRateLimitExceeded", "times": 2},
                         {"method": "files.create.upload", "status": 500, "times": 1}]}'
step faults-list lsf --low-level-retries 5 emu:interop/copied
expect faults-list "$(sort out/faults-list)" "$(ls -p src | sort)"
step faults-upload copyto --retries 3 --low-level-retries 5 src/data.bin emu:interop/moved/faulted.bin
step faults-md5 md5sum emu:interop/moved/faulted.bin
expect faults-upload "$(cut -d' ' -f1 out/faults-md5)" "$(md5sum <src/data.bin | cut -d' ' -f1)"
sleep 0.2  # the emulator counts an exchange just after writing its response
expect faults-fired "$(fault_count files.list 403) $(fault_count files.create.upload 500)" "$((list403 + 2)) $((upload500 + 1))"
# The 500 is answered before the chunked upload body is read: its Google error body must still reach rclone.
grep -q 'Error 500: .*backendError' rclone.log || fail "faults: rclone did not receive the 500's error body" rclone.log emulator.log
grep -q 'Error 403: .*userRateLimitExceeded' rclone.log || fail "faults: rclone did not see userRateLimitExceeded" rclone.log
echo "ok   faults             2 × 403 userRateLimitExceeded on files.list and a 500 on an upload, retried by rclone"

step rmdir rmdir emu:interop/empty-dir
step purge purge emu:interop/moved
step rmdir-list lsf emu:interop
expect rmdir "$(sort out/rmdir-list)" "$(printf '%s\n' copied/ server-copy.bin)"
step cleanup cleanup emu:
step cleanup-list lsf -R --drive-trashed-only emu:
# --drive-trashed-only still lists every folder (rclone's query is "mimeType = folder or trashed=true"): no files.
expect cleanup "$(grep -v '/$' out/cleanup-list || true)" ""
echo "ok   rmdir/purge/cleanup  folders removed, trash emptied"

step about-after about --json emu:
"$python" -c 'import json,sys; u=json.load(open(sys.argv[1])).get("used", 0); sys.exit(0 if u >= 3*1048576 else 1)' out/about-after \
    || fail "about: usage does not count the uploaded bytes: $(cat out/about-after)" rclone.log
echo "ok   about-after        $(tr -d '\n\t ' <out/about-after)"

echo "PASS rclone interop"
