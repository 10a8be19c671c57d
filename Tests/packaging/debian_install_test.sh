#!/usr/bin/env bash
# Package test: installs drivefs_VERSION_ARCH.deb into a clean Debian root with apt (which must pull
# fuse3, libfuse3-3, libcurl4, libssl3... from Debian's mirror) and runs the installed binaries
# there: drivefs --version, then a demo mount of the installed drivefs-emulator's Drive with the
# installed drivefs (auth login, mount, ls and cat, drivefs status, unmount; and the same Drive
# through mount(8) and /sbin/mount.fuse.drivefs).
#
# The clean root is a debootstrap --variant=minbase of this machine's Debian release, made once
# and kept in CACHE_DIR (with apt's lists and downloaded packages, so that a rerun downloads
# nothing new); each run works on an overlay of it, so the cached root stays clean.
#
# The script re-executes itself inside new mount and PID namespaces: every mount it makes (the
# overlay, /dev, /proc, the FUSE mounts) is private to it, and when it exits (or its caller kills
# unshare) the kernel ends every process it started and drops every mount.
#
# Usage: debian_install_test.sh --deb FILE --seed DIR --cache DIR --workdir DIR --version VERSION
# Prints one line per step ("ok   <step>"); on the first failure "FAIL <step>: ..." with the logs'
# tails, and exits 1. Exit 2: this machine cannot run it (not root, a tool missing).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

deb="" seed="" cache="" workdir="" version=""
while [ $# -gt 0 ]; do
    case "$1" in
        --deb) deb="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --cache) cache="$2"; shift 2 ;;
        --workdir) workdir="$2"; shift 2 ;;
        --version) version="$2"; shift 2 ;;
        *) echo "usage: $0 --deb FILE --seed DIR --cache DIR --workdir DIR --version VERSION" >&2; exit 64 ;;
    esac
done
[ -f "$deb" ] && [ -d "$seed" ] && [ -n "$cache" ] && [ -n "$workdir" ] && [ -n "$version" ] \
    || { echo "FAIL setup: --deb, --seed, --cache, --workdir and --version are all needed"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP not root: debootstrap, chroot and mounts need root"; exit 2; }
for tool in debootstrap unshare chroot mount curl timeout fusermount3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP tool not installed: $tool"; exit 2; }
done
[ -e /dev/fuse ] || { echo "SKIP /dev/fuse is missing"; exit 2; }

if [ "${DRIVEFS_PACKAGE_NAMESPACE:-}" != 1 ]; then
    mkdir -p "$cache" "$workdir"
    exec unshare --mount --pid --fork --kill-child --mount-proc --propagation private \
        env DRIVEFS_PACKAGE_NAMESPACE=1 bash "$0" --deb "$(realpath "$deb")" --seed "$(realpath "$seed")" \
        --cache "$(realpath "$cache")" --workdir "$(realpath "$workdir")" --version "$version"
fi

# Inside the namespaces from here on.
cd "$workdir"
root="$workdir/root"
started=$SECONDS

fail() {
    echo "FAIL $1"
    shift
    for log in "$@"; do
        [ -s "$log" ] && { echo "--- last lines of $(basename "$log")"; tail -n 40 "$log"; }
    done
    exit 1
}
ok() { echo "ok   $1 ($((SECONDS - started)) s)"; }

# A command inside the clean root, with a clean environment (nothing of this machine's leaks in),
# bounded: a hung mount fails its step instead of waiting for the caller's timeout.
inroot() {
    timeout -k 5 300 chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# A line matching $2 in file $1 within $3 seconds; prints it.
await_line() {
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        if grep -m1 -oE "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# --- the clean root, made once ---------------------------------------------------------------------
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || fail "setup: /etc/os-release names no release"
# This machine's own Debian mirror (deb822 sources, then the one-line form), else Debian's.
mirror=$(awk -v suite="$suite" '
    /^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite && uri != "") { print uri; exit } }
    /^$/ { uri = "" }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
base="$cache/$suite-minbase"
if [ ! -f "$base/.complete" ]; then
    rm -rf "$base" "$base.tmp"
    debootstrap --variant=minbase "$suite" "$base.tmp" "$mirror" >"$workdir/debootstrap.log" 2>&1 \
        || fail "debootstrap --variant=minbase $suite from $mirror" "$workdir/debootstrap.log"
    rm -rf "$base.tmp/var/cache/apt/archives/"*.deb
    touch "$base.tmp/.complete"
    mv "$base.tmp" "$base"
    ok "debootstrap --variant=minbase $suite from $mirror (cached in $base)"
else
    ok "clean $suite root from the cache ($base)"
fi
[ ! -e "$base/usr/bin/drivefs" ] || fail "the cached root is not clean: it has drivefs (remove $base)"

# --- an overlay of it, with the devices, proc, DNS and apt's caches --------------------------------
mkdir -p "$workdir/upper" "$workdir/overlay-work" "$root" "$cache/apt-lists" "$cache/apt-archives/partial"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$workdir/upper,workdir=$workdir/overlay-work" "$root" \
    || fail "mount an overlay of the clean root"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --bind "$cache/apt-lists" "$root/var/lib/apt/lists"
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No daemon may start in the root while packages are installed.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"

emulator_pid=""
cleanup() {
    for dir in "$root/mnt/gdrive" "$root/mnt/fstab"; do
        if grep -qs " $dir " /proc/mounts; then fusermount3 -u "$dir" 2>/dev/null || fusermount3 -uz "$dir" 2>/dev/null || true; fi
    done
    [ -z "$emulator_pid" ] || kill -TERM "$emulator_pid" 2>/dev/null || true
}
trap cleanup EXIT

# --- apt-get install ./drivefs.deb -----------------------------------------------------------------
name=$(basename "$deb")
cp "$deb" "$root/tmp/$name"
inroot apt-get update -q >"$workdir/apt-update.log" 2>&1 || fail "apt-get update in the clean root" "$workdir/apt-update.log"
ok "apt-get update ($mirror $suite)"
for package in fuse3 libfuse3-3 libcurl4 libssl3; do
    ! inroot dpkg -s "$package" >/dev/null 2>&1 || fail "the clean root already has $package: it would not show that apt pulls it"
done
inroot apt-get install -y --no-install-recommends "/tmp/$name" >"$workdir/apt-install.log" 2>&1 \
    || fail "apt-get install ./$name" "$workdir/apt-install.log"
pulled=$(sed -n 's/^Setting up \([^: ]*\).*/\1/p' "$workdir/apt-install.log" | sort | tr '\n' ' ')
for package in drivefs fuse3 libfuse3-3 libcurl4 libssl3; do
    inroot dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed' \
        || fail "apt-get install ./$name left $package uninstalled" "$workdir/apt-install.log"
done
ok "apt-get install ./$name set up: $pulled"
[ ! -e "$root/opt/swift" ] && ! ls "$root"/usr/lib/swift* >/dev/null 2>&1 || fail "the clean root has a Swift toolchain"

# --- the installed paths ---------------------------------------------------------------------------
shown=$(inroot drivefs --version 2>&1) || fail "drivefs --version: $shown"
[ "$shown" = "drivefs $version" ] || fail "drivefs --version printed '$shown', not 'drivefs $version'"
ok "/usr/bin/drivefs --version: $shown"
shown=$(inroot drivefs-emulator --version 2>&1) || fail "drivefs-emulator --version: $shown"
ok "/usr/bin/drivefs-emulator --version: $shown"
missing=$(inroot ldd /usr/bin/drivefs /usr/bin/drivefs-emulator | grep -E 'not found|libswift|libFoundation' || true)
[ -z "$missing" ] || fail "the binaries need libraries the root lacks: $missing"
ok "ldd: every library the binaries need is in the root"
for path in /sbin/mount.fuse.drivefs /sbin/mount.drivefs; do
    [ "$(readlink "$root$path")" = /usr/bin/drivefs ] || fail "$path is not a link to /usr/bin/drivefs: $(ls -l "$root$path" 2>&1)"
done
for path in /usr/lib/systemd/user/drivefs@.service /usr/share/man/man1/drivefs.1.gz /usr/share/man/man1/drivefs-emulator.1.gz \
    /usr/share/bash-completion/completions/drivefs /usr/share/zsh/vendor-completions/_drivefs /usr/share/doc/drivefs/copyright; do
    [ -s "$root$path" ] || fail "$path is not installed"
done
grep -q '^ExecStart=/usr/bin/drivefs mount ' "$root/usr/lib/systemd/user/drivefs@.service" || fail "the unit does not run /usr/bin/drivefs"
ok "mount helpers, the systemd user unit, man pages, completion and copyright in place"

# --- a demo mount from the installed paths ---------------------------------------------------------
cp -r "$seed" "$root/tmp/seed"
inroot drivefs-emulator --port 0 --seed /tmp/seed --state-dir /tmp/emulator-state \
    >"$workdir/emulator.out" 2>"$workdir/emulator.log" &
emulator_pid=$!
url=$(await_line "$workdir/emulator.out" 'http://127\.0\.0\.1:[0-9]+/' 30) || fail "drivefs-emulator did not listen" "$workdir/emulator.log"
ok "drivefs-emulator listening on $url"

# Sign in as a user would (the emulator consents as soon as its consent URL is fetched).
inroot drivefs auth login --no-browser --client-id demo --client-secret demo --timeout 30 \
    --api-url="$url" --token-url="${url}token" --auth-url="${url}o/oauth2/v2/auth" \
    >"$workdir/login.out" 2>"$workdir/login.err" </dev/null &
login_pid=$!
consent=$(await_line "$workdir/login.err" "${url}o/oauth2/v2/auth\\?[^ ]+" 30) || fail "drivefs auth login printed no consent URL" "$workdir/login.err"
curl -fsSL -o /dev/null --max-time 20 "$consent" || fail "fetching the consent URL"
wait "$login_pid" || fail "drivefs auth login" "$workdir/login.out" "$workdir/login.err"
ok "drivefs auth login against the emulator"

mkdir -p "$root/mnt/gdrive" "$root/mnt/fstab"
expected=$(cat "$seed/About this demo.txt")
inroot drivefs mount /mnt/gdrive --poll-interval 2s >"$workdir/mount.log" 2>&1 || fail "drivefs mount /mnt/gdrive" "$workdir/mount.log"
grep -qs " $root/mnt/gdrive fuse.drivefs " /proc/mounts || fail "/mnt/gdrive is not in /proc/mounts after drivefs mount returned"
listing=$(inroot ls /mnt/gdrive) || fail "ls /mnt/gdrive"
[ "$(inroot cat "/mnt/gdrive/About this demo.txt")" = "$expected" ] || fail "cat of the mount differs from the seed"
ok "drivefs mount /mnt/gdrive (daemon): ls shows $(echo "$listing" | wc -l) entries, cat matches the seed"
status=$(inroot drivefs status --json /mnt/gdrive 2>&1) || fail "drivefs status --json: $status"
echo "$status" | grep -q '"mountpoint" : "/mnt/gdrive"' || fail "drivefs status --json does not show /mnt/gdrive: $status"
echo "$status" | grep -q '"account" : "[^"]*@' || fail "drivefs status --json shows no account: $status"
ok "drivefs status --json shows the mount and its account"
inroot drivefs unmount /mnt/gdrive >"$workdir/unmount.log" 2>&1 || fail "drivefs unmount /mnt/gdrive" "$workdir/unmount.log"
! grep -qs " $root/mnt/gdrive " /proc/mounts || fail "/mnt/gdrive still mounted after drivefs unmount"
ok "drivefs unmount /mnt/gdrive"

# mount(8) of the root runs /sbin/mount.fuse.drivefs, as for an /etc/fstab line.
inroot mount -t fuse.drivefs 'drivefs#default' /mnt/fstab -o poll_interval=2s,umask=022 >"$workdir/mount8.log" 2>&1 \
    || fail "mount -t fuse.drivefs drivefs#default /mnt/fstab" "$workdir/mount8.log"
[ "$(inroot cat "/mnt/fstab/About this demo.txt")" = "$expected" ] || fail "cat through the mount(8) mount differs from the seed"
inroot umount /mnt/fstab || fail "umount /mnt/fstab"
! grep -qs " $root/mnt/fstab " /proc/mounts || fail "/mnt/fstab still mounted after umount"
ok "mount -t fuse.drivefs (through /sbin/mount.fuse.drivefs) and umount"
echo "package test passed in $((SECONDS - started)) s"
