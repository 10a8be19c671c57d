"""The one Drive client of the bench, against the emulator's plain HTTP address. Two transports share its pager:
urllib for the harness's own requests (the checks of what landed on Drive, ID generation; not measured as any
system's work), and curl for the reference's requests, which are measured (reference-1 and reference-par are
curl straight at the emulator: listings, whole and ranged downloads, multipart uploads).
"""
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import urllib.parse
import urllib.request

from .base import HarnessError, run


FIELDS = "nextPageToken,files(id,name,mimeType,parents,size,modifiedTime)"
FOLDER = "application/vnd.google-apps.folder"
BOUNDARY = "drivefs-bench-boundary"


def pages(get_page, q, fields, most):
    """Every item of files.list for q, page after page: get_page(params) answers one page (either transport);
    more than `most` pages is a harness failure."""
    out, token = [], None
    for _ in range(most):
        params = dict(q=q, fields=fields, pageSize="1000")
        if token:
            params["pageToken"] = token
        page = get_page(params)
        out += page.get("files", [])
        token = page.get("nextPageToken")
        if not token:
            return out
    raise HarnessError("listing did not end")


# The harness's own requests (urllib): what landed on Drive, IDs for the reference's uploads.

def api_get(emulator, path, params=None):
    url = emulator.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + emulator.token})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def api_delete(emulator, fid):
    req = urllib.request.Request("%sdrive/v3/files/%s" % (emulator.url, fid), method="DELETE",
                                 headers={"Authorization": "Bearer " + emulator.token})
    urllib.request.urlopen(req, timeout=60).read()


def api_list(emulator, q, fields="nextPageToken,files(id,name,mimeType,size,md5Checksum)"):
    return pages(lambda params: api_get(emulator, "drive/v3/files", params), q, fields, 1000)


def api_child(emulator, parent, name):
    found = api_list(emulator, "name = '%s' and '%s' in parents and trashed = false" % (name, parent))
    if len(found) != 1:
        raise HarnessError("%d items named %s on Drive, expected 1" % (len(found), name))
    return found[0]


def verify_on_drive(emulator, parent, name, manifest, what):
    """The folder `name` under `parent` on Drive holds exactly the manifest's files (by md5) and folders."""
    files, folders = manifest
    top = api_child(emulator, parent, name)
    seen, queue = {}, [(top["id"], "")]
    seen_folders = []
    while queue:
        fid, rel = queue.pop()
        for item in api_list(emulator, "'%s' in parents and trashed = false" % fid):
            path = os.path.join(rel, item["name"]) if rel else item["name"]
            if item["mimeType"] == FOLDER:
                seen_folders.append(path)
                queue.append((item["id"], path))
            else:
                seen[path] = item.get("md5Checksum")
    want = {p: hashlib.md5(b).hexdigest() for p, b in files.items()}
    if seen != want or sorted(seen_folders) != sorted(folders):
        missing = sorted(set(want) - set(seen))[:3]
        wrong = sorted(p for p in want if p in seen and seen[p] != want[p])[:3]
        raise HarnessError("%s: Drive holds %d files and %d folders (expected %d and %d); missing %s, wrong %s" % (
            what, len(seen), len(seen_folders), len(want), len(folders), missing, wrong))


def generate_ids(emulator, count):
    ids = []
    while len(ids) < count:
        ids += api_get(emulator, "drive/v3/files/generateIds", dict(count=str(min(1000, count - len(ids))), space="drive"))["ids"]
    return ids


# The reference's requests (curl), the work its runs measure.

def curl_transfers(emulator, transfers, timeout=1800, parallel=None, rate=None, name="curl"):
    """One curl process making each transfer, (url, its other config lines), with the emulator's token and the
    answer to /dev/null: one after the other on a kept-alive connection, `parallel` at once, or (rate) one
    after the other, started at most `rate` a minute (curl applies --rate to serial transfers only)."""
    lines = []
    for url, extra in transfers:
        lines += ['url = "%s"' % url, 'header = "Authorization: Bearer %s"' % emulator.token] + extra
        lines += ['output = "/dev/null"', "next"]
    config = os.path.join(tempfile.gettempdir(), "drivefs-bench-%s-%d.conf" % (name, os.getpid()))
    with open(config, "w") as f:
        f.write("\n".join(lines[:-1]) + "\n")
    cmd = ["curl", "-s", "-f", "-K", config]
    if parallel:
        cmd[1:1] = ["--parallel", "--parallel-max", str(parallel)]
    if rate:
        cmd = ["curl", "-s", "-f", "--rate", "%d/m" % rate, "-K", config]
    try:
        run(cmd, timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.unlink(config)


def multipart(meta, content):
    return (b"--" + BOUNDARY.encode() + b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
            json.dumps(meta).encode() + b"\r\n--" + BOUNDARY.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n" +
            content + b"\r\n--" + BOUNDARY.encode() + b"--\r\n")


def curl_posts(emulator, posts, parallel, streams, timeout=1800, rate=None):
    """POSTs each (url path, content type, body file) in one curl process: one after the other on a kept-alive
    connection, or `streams` at once; under the write limit started at most `rate` a minute (curl --rate), so
    that the reference is what a client that keeps to the limit can do."""
    if not posts:
        return
    curl_transfers(emulator, [(emulator.url + path, ['header = "Content-Type: %s"' % ctype, 'data-binary = "@%s"' % body])
                              for path, ctype, body in posts],
                   timeout, parallel=streams if parallel else None, rate=rate, name="posts")


def curl_json(emulator, params):
    cmd = ["curl", "-s", "-f", "-G", "-H", "Authorization: Bearer " + emulator.token, emulator.url + "drive/v3/files"]
    for k, v in params.items():
        cmd += ["--data-urlencode", "%s=%s" % (k, v)]
    return json.loads(run(cmd, 120, stdout=subprocess.PIPE).stdout)


def list_query(emulator, q):
    return pages(lambda params: curl_json(emulator, params), q, FIELDS, 10000)


def walk(emulator, top_name, parallel):
    """Every entry under the root's folder top_name, level by level, 100 parents per query (Google's
    budget), one curl at a time or all of a level's queries at once."""
    top = list_query(emulator, "name = '%s' and 'root' in parents and trashed = false" % top_name)
    level, seen = [f["id"] for f in top], 0
    for _ in range(100):
        if not level:
            return seen
        chunks = [level[i:i + 100] for i in range(0, len(level), 100)]
        queries = ["(%s) and trashed = false" % " or ".join("'%s' in parents" % p for p in c) for c in chunks]
        results = [None] * len(queries)
        if parallel:
            def one(i):
                results[i] = list_query(emulator, queries[i])
            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(queries))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(600)
            if any(r is None for r in results):
                raise HarnessError("a parallel listing failed")
        else:
            results = [list_query(emulator, q) for q in queries]
        entries = [f for r in results for f in r]
        seen += len(entries)
        level = [f["id"] for f in entries if f["mimeType"] == FOLDER]
    raise HarnessError("walk too deep")


def file_id(emulator, folder, name):
    parent = list_query(emulator, "name = '%s' and 'root' in parents" % folder)[0]["id"]
    return list_query(emulator, "name = '%s' and '%s' in parents" % (name, parent))[0]["id"]


def curl_ranges(emulator, fid, ranges, parallel, timeout=1800):
    """One curl process fetching the byte ranges of fid: one after the other on a kept-alive connection,
    or all at once (--parallel)."""
    url = "%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)
    curl_transfers(emulator, [(url, ['range = "%d-%d"' % (a, b)]) for a, b in ranges], timeout,
                   parallel=len(ranges) if parallel else None)


def curl_whole(emulator, fid, timeout=1800):
    run(["curl", "-s", "-f", "-o", "/dev/null", "-H", "Authorization: Bearer " + emulator.token,
         "%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)], timeout)
