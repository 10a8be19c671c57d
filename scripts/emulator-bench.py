#!/usr/bin/env python3
"""Measures drivefs-emulator the way the drivefs / rclone benchmarks load it.

Starts the emulator binary on a free port with a fresh state directory, then measures:
seeding (metadata creates/s, 8 connections), files.list of big folders (rclone's query and
fields mask, pageSize=1000), name lookups within a folder, files.get by id, changes.list after
10k changes, resumable upload (8 MiB chunks) and alt=media download throughput, small GETs/s
over 8 keep-alive connections (one process each), and the emulator's RSS. Prints a table.

Usage: emulator-bench.py EMULATOR_BINARY [--folders 20000,100000] [--big-mib 1024] [--seconds 3]
Only the standard library (http.client keep-alive connections); loopback only.
"""
import argparse, http.client, json, multiprocessing, os, random, re, shutil, subprocess, sys, tempfile, threading, time
from urllib.parse import quote

RCLONE_FIELDS = ("files(id,name,size,md5Checksum,sha1Checksum,sha256Checksum,trashed,explicitlyTrashed,modifiedTime,"
                 "createdTime,mimeType,parents,webViewLink,shortcutDetails,exportLinks,resourceKey),nextPageToken,incompleteSearch")


class Client:
    """One keep-alive connection with a bearer token."""

    def __init__(self, port, token=None):
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method, path, body=None, headers=None):
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The server closes keep-alive connections idle for 60 s: reconnect once.
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
        data = r.read()
        return r.status, r.headers, data

    def json(self, method, path, body=None, headers=None, expect=(200,)):
        status, _, data = self.request(method, path, body, headers)
        if status not in expect:
            raise RuntimeError(f"{method} {path[:120]} -> {status}: {data[:300]!r}")
        return json.loads(data) if data else {}


def get_token(port):
    c = Client(port)
    body = b"grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=bench&client_secret=bench"
    s, _, d = c.request("POST", "/token", body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert s == 200, d
    return json.loads(d)["access_token"]


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def parallel(n_threads, items, work):
    """Runs work(client, item) over items on n_threads keep-alive connections."""
    chunks = [items[i::n_threads] for i in range(n_threads)]
    errors = []

    def run(chunk):
        try:
            c = Client(PORT, TOKEN)
            for it in chunk:
                work(c, it)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(ch,)) for ch in chunks]
    [t.start() for t in threads]
    [t.join() for t in threads]
    if errors:
        raise errors[0]


def seed_folder(root, count, name):
    c = Client(PORT, TOKEN)
    folder = c.json("POST", "/drive/v3/files?fields=id",
                    {"name": name, "mimeType": "application/vnd.google-apps.folder", "parents": [root]})["id"]
    names = [f"file-{i:06d}.txt" for i in range(count)]
    parallel(8, names, lambda c, n: c.json("POST", "/drive/v3/files?fields=id", {"name": n, "parents": [folder]}))
    return folder, names


def list_all(c, folder, fields=RCLONE_FIELDS):
    q = quote(f"trashed=false and ('{folder}' in parents)")
    token, total, pages = None, 0, 0
    while True:
        path = (f"/drive/v3/files?alt=json&prettyPrint=false&q={q}&pageSize=1000&supportsAllDrives=true&includeItemsFromAllDrives=true"
                f"&fields={quote(fields)}")
        if token:
            path += "&pageToken=" + quote(token)
        page = c.json("GET", path)
        total += len(page["files"])
        pages += 1
        token = page.get("nextPageToken")
        if not token:
            return total, pages


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


ROWS = []


def row(what, value):
    ROWS.append((what, value))
    print(f"{what:<62} {value:>16}", flush=True)


def small_get_worker(args):
    port, token, file_ids, seconds, q = args
    c = Client(port, token)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fid = file_ids[n % len(file_ids)]
        s, _, _ = c.request("GET", f"/drive/v3/files/{fid}?fields=id,name,size,modifiedTime")
        assert s == 200
        n += 1
    q.put((n, time.perf_counter() - start))


def main():
    global PORT, TOKEN
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--folders", default="20000,100000")
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--changes", type=int, default=10000)
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="emu-bench-")
    proc = subprocess.Popen([args.binary, "--port", "0", "--state-dir", state], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r":(\d+)/", line)
        if not m:
            sys.exit(f"emulator did not start: {line!r}")
        PORT = int(m.group(1))
        TOKEN = get_token(PORT)
        c = Client(PORT, TOKEN)
        root = c.json("GET", "/drive/v3/files/root?fields=id")["id"]
        row("emulator RSS at start (MiB)", f"{rss_kib(proc.pid)['VmRSS'] / 1024:.0f}")

        all_ids = []
        for count in [int(x) for x in args.folders.split(",") if x]:
            (folder, names), t = timed(lambda: seed_folder(root, count, f"big-{count}"))
            row(f"seed {count} metadata creates, 8 conns (creates/s)", f"{count / t:.0f}")
            (n, pages), t = timed(lambda: list_all(c, folder))
            assert n == count, (n, count)
            row(f"files.list {count} children, rclone mask, {pages} pages (s)", f"{t:.2f}")
            row(f"  per page of 1000 (ms)", f"{t / pages * 1000:.1f}")
            sample = random.Random(1).sample(names, 200)
            q_of = lambda nm: quote(f"name='{nm}' and '{folder}' in parents and trashed=false")
            found = []

            def lookups():
                for nm in sample:
                    r = c.json("GET", f"/drive/v3/files?alt=json&prettyPrint=false&q={q_of(nm)}&fields=files(id,name)")
                    assert len(r["files"]) == 1
                    found.append(r["files"][0]["id"])
            _, t = timed(lookups)
            row(f"name lookup in the {count}-child folder (ms/request)", f"{t / len(sample) * 1000:.2f}")

            def gets():
                for fid in found:
                    c.json("GET", f"/drive/v3/files/{fid}?fields=id,name,size,parents,modifiedTime,md5Checksum")
            _, t = timed(gets)
            row(f"files.get by id, {count}-child folder present (ms/request)", f"{t / len(found) * 1000:.2f}")
            all_ids.extend(found)
            row(f"emulator RSS after {count} (MiB)", f"{rss_kib(proc.pid)['VmRSS'] / 1024:.0f}")

        # changes.list after N changes (renames of files made for it).
        start_token = c.json("GET", "/drive/v3/changes/startPageToken")["startPageToken"]
        folder, names = seed_folder(root, args.changes, "changes")
        (count, pages), t = timed(lambda: page_changes(c, start_token))
        row(f"changes.list of {args.changes} changes, pageSize=1000 (s)", f"{t:.2f}")

        # Small GETs over 8 keep-alive connections, one process each (no GIL in the way).
        q = multiprocessing.Queue()
        ids = all_ids or [root]
        procs = [multiprocessing.Process(target=small_get_worker, args=((PORT, TOKEN, ids, args.seconds, q),)) for _ in range(8)]
        [p.start() for p in procs]
        results = [q.get() for _ in procs]
        [p.join() for p in procs]
        row("files.get small GETs, 8 keep-alive conns (requests/s)", f"{sum(n / t for n, t in results):.0f}")

        # Big upload (resumable, 8 MiB chunks) and download.
        if args.big_mib > 0:
            size = args.big_mib << 20
            chunk = 8 << 20
            block = os.urandom(chunk)
            status, headers, data = c.request(
                "POST", "/upload/drive/v3/files?uploadType=resumable",
                json.dumps({"name": "big.bin", "parents": [root]}).encode(),
                {"Content-Type": "application/json; charset=UTF-8", "X-Upload-Content-Length": str(size)})
            assert status == 200, data
            location = headers["Location"]
            path = location[location.index("/", 8):]
            peak = 0

            def upload():
                nonlocal peak
                sent, result = 0, None
                while sent < size:
                    n = min(chunk, size - sent)
                    s, _, d = c.request("PUT", path, block[:n], {"Content-Range": f"bytes {sent}-{sent + n - 1}/{size}"})
                    assert s in (200, 201, 308), (s, d)
                    sent += n
                    peak = max(peak, rss_kib(proc.pid)["VmRSS"])
                    if s in (200, 201):
                        result = json.loads(d)
                return result
            meta, t = timed(upload)
            row(f"upload {args.big_mib} MiB resumable, 8 MiB chunks (MiB/s)", f"{args.big_mib / t:.0f}")
            row("  emulator peak RSS during upload (MiB)", f"{peak / 1024:.0f}")
            fid = meta["id"]

            def download():
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
                conn.request("GET", f"/drive/v3/files/{fid}?alt=media", headers={"Authorization": "Bearer " + TOKEN})
                r = conn.getresponse()
                got = 0
                buf = bytearray(1 << 20)
                mv = memoryview(buf)
                while True:
                    n = r.readinto(mv)
                    if not n:
                        break
                    got += n
                assert got == size, got
            _, t = timed(download)
            row(f"download {args.big_mib} MiB alt=media (MiB/s)", f"{args.big_mib / t:.0f}")
        r = rss_kib(proc.pid)
        row("emulator RSS at end / peak (MiB)", f"{r['VmRSS'] / 1024:.0f} / {r['VmHWM'] / 1024:.0f}")
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(state, ignore_errors=True)


def page_changes(c, token):
    count, pages = 0, 0
    while True:
        page = c.json("GET", f"/drive/v3/changes?pageToken={token}&pageSize=1000"
                             "&fields=nextPageToken,newStartPageToken,changes(fileId,removed,file(name,parents))")
        count += len(page["changes"])
        pages += 1
        if "newStartPageToken" in page:
            return count, pages
        token = page["nextPageToken"]


if __name__ == "__main__":
    main()
