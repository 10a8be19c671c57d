#!/usr/bin/env python3
"""Interop test: the unmodified google-api-python-client against a Drive v3 server on loopback.

Contract: runs named steps in order against the server at --base-url, prints one line per step
("ok   <step>  <detail>"), and on the first failure prints "FAIL <step>: <why>" (with the HTTP
request and response that failed, when there was one) and exits 1. Exit 2 means the client
libraries are missing. The server must accept the well-known refresh token for any client id.

The client is pointed at the server exactly as real-clients.md says: the discovery document the
library ships, with rootUrl and mtlsRootUrl replaced, built with build_from_document, and OAuth
credentials whose token_uri is the server's /token. Nothing else about the client is changed.
"""
import argparse
import datetime
import hashlib
import io
import json
import os
import socket
import sys
import time
import traceback
import urllib.error
import urllib.request

try:
    import googleapiclient
    from googleapiclient.discovery import build_from_document
    from googleapiclient.errors import HttpError
    from googleapiclient.http import MediaIoBaseDownload, MediaIoBaseUpload
    import google.oauth2.credentials
except ImportError as error:  # The XCTest wrapper turns exit 2 into a skip only when it cannot install these.
    print(f"SKIP google-api-python-client or google-auth is not importable: {error}")
    sys.exit(2)

FOLDER = "application/vnd.google-apps.folder"
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive"


class StepFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise StepFailure(message)


def http_error_reason(error):
    """Google's `errors[0].reason` from an HttpError body, or None."""
    try:
        body = json.loads(error.content.decode("utf-8"))
        return body["error"]["errors"][0]["reason"]
    except Exception:
        return None


def expect_http_error(status, call, reason=None):
    """Runs call() and returns the HttpError it must raise with `status` (and `reason`, if given)."""
    try:
        result = call()
    except HttpError as error:
        check(error.resp.status == status,
              f"expected HTTP {status}, got {error.resp.status}: {error.content[:500]!r}")
        if reason is not None:
            check(http_error_reason(error) == reason,
                  f"expected reason {reason!r}, got body {error.content[:500]!r}")
        return error
    raise StepFailure(f"expected HTTP {status}, but the call succeeded with {str(result)[:300]}")


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def deterministic_bytes(seed, size):
    """Incompressible, reproducible content: a SHA-256 counter stream."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


class Interop:
    def __init__(self, args):
        self.args = args
        self.base = args.base_url.rstrip("/")
        with open(args.discovery or self.shipped_discovery_path()) as f:
            document = json.load(f)
        # real-clients.md: rootUrl and mtlsRootUrl, nothing else. Upload paths are absolute paths
        # resolved against rootUrl, so uploads reach the server too.
        document["rootUrl"] = self.base + "/"
        document["mtlsRootUrl"] = self.base + "/"
        self.document = document
        self.credentials = self.new_credentials()
        self.drive = build_from_document(document, credentials=self.credentials)
        self.state = {}

    def new_credentials(self):
        return google.oauth2.credentials.Credentials(
            token=None,
            refresh_token=self.args.refresh_token,
            token_uri=self.base + "/token",
            client_id="interop-python.apps.googleusercontent.com",
            client_secret="interop-python-secret",
            scopes=[DRIVE_SCOPE],
        )

    @staticmethod
    def shipped_discovery_path():
        return os.path.join(os.path.dirname(googleapiclient.__file__),
                            "discovery_cache", "documents", "drive.v3.json")

    # -- helpers ------------------------------------------------------------------------------

    def list_all(self, q, fields="nextPageToken, files(id, name)", page_size=100, order_by=None):
        """Every page of files.list; returns (files, page sizes)."""
        files, pages = [], []
        request = self.drive.files().list(q=q, pageSize=page_size, fields=fields, orderBy=order_by)
        while request is not None:
            response = request.execute()
            batch = response.get("files")
            check(isinstance(batch, list), f"files.list answer has no files array: {response}")
            pages.append(len(batch))
            files += batch
            check(len(pages) < 100, "files.list does not stop paging")
            request = self.drive.files().list_next(request, response)
        return files, pages

    def children_names(self, folder_id, trashed=False):
        q = f"'{folder_id}' in parents and trashed = {'true' if trashed else 'false'}"
        return sorted(f["name"] for f in self.list_all(q)[0])

    def upload(self, name, data, parent, resumable, chunksize=256 * 1024, mimetype="application/octet-stream"):
        """files.create with media; returns (file resource, number of chunk requests)."""
        media = MediaIoBaseUpload(io.BytesIO(data), mimetype=mimetype, chunksize=chunksize, resumable=resumable)
        request = self.drive.files().create(
            body={"name": name, "parents": [parent]}, media_body=media,
            fields="id, name, size, md5Checksum, parents, mimeType")
        if not resumable:
            return request.execute(), 1
        chunks, response = 0, None
        while response is None:
            status, response = request.next_chunk()
            chunks += 1
            check(chunks < 1000, "resumable upload never completes")
            if response is None:
                check(status is not None and status.resumable_progress == chunks * chunksize,
                      f"after chunk {chunks} the server acknowledged "
                      f"{status.resumable_progress if status else None} bytes, expected {chunks * chunksize}")
        return response, chunks

    def check_file(self, resource, name, data, parent):
        check(resource.get("name") == name, f"name {resource.get('name')!r} != {name!r}")
        check(resource.get("size") == str(len(data)), f"size {resource.get('size')!r} != '{len(data)}' (int64 is a JSON string)")
        check(resource.get("md5Checksum") == md5_hex(data), f"md5Checksum {resource.get('md5Checksum')} != {md5_hex(data)}")
        check(resource.get("parents") == [parent], f"parents {resource.get('parents')} != [{parent}]")

    # -- steps ----------------------------------------------------------------------------------

    def step_about(self):
        about = self.drive.about().get(fields="kind, user(displayName, emailAddress, me), storageQuota").execute()
        check(about.get("kind") == "drive#about", f"kind: {about}")
        check(about.get("user", {}).get("me") is True, f"user.me is not true: {about}")
        check("usage" in about.get("storageQuota", {}), f"storageQuota has no usage: {about}")
        check(set(about) == {"kind", "user", "storageQuota"}, f"fields mask not applied: {sorted(about)}")
        # about.get has no default field set: Google answers 400 without `fields`.
        expect_http_error(400, lambda: self.drive.about().get().execute(), "required")
        return f"user {about['user'].get('emailAddress')}, quota usage {about['storageQuota']['usage']}"

    def step_start_page_token(self):
        token = self.drive.changes().getStartPageToken().execute()
        check(isinstance(token.get("startPageToken"), str), f"getStartPageToken: {token}")
        self.state["start_token"] = token["startPageToken"]
        return f"startPageToken {token['startPageToken']}"

    def step_root(self):
        root = self.drive.files().get(fileId="root", fields="id, name, mimeType, parents").execute()
        check(root.get("mimeType") == FOLDER, f"root is not a folder: {root}")
        check(root.get("id") not in (None, "root"), f"the root alias was not resolved to an id: {root}")
        check("parents" not in root, f"My Drive has no parents: {root}")
        self.state["root"] = root["id"]
        return f"root {root['id']} {root.get('name')!r}"

    def step_create_folder(self):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
        folder = self.drive.files().create(
            body={"name": f"interop-{stamp}", "mimeType": FOLDER, "parents": [self.state["root"]]},
            fields="id, name, mimeType, parents").execute()
        check(folder.get("mimeType") == FOLDER, f"created folder: {folder}")
        check(folder.get("parents") == [self.state["root"]], f"folder parents: {folder}")
        self.state["work"] = folder["id"]
        # The default field set of a create is exactly kind, id, name, mimeType.
        second = self.drive.files().create(
            body={"name": "moved-here", "mimeType": FOLDER, "parents": [folder["id"]]}).execute()
        check(set(second) == {"kind", "id", "name", "mimeType"}, f"default fields of files.create: {second}")
        self.state["target"] = second["id"]
        check(self.children_names(folder["id"]) == ["moved-here"], "new folder not listed in its parent")
        return f"folder {folder['id']}, subfolder {second['id']}"

    def step_list_paging(self):
        count = self.args.paging_files
        folder = self.drive.files().create(
            body={"name": "paging", "mimeType": FOLDER, "parents": [self.state["work"]]}, fields="id").execute()["id"]
        self.state["paging"] = folder
        expected = [f"item-{i:04d}.txt" for i in range(count)]
        for name in expected:
            self.drive.files().create(body={"name": name, "parents": [folder], "mimeType": "text/plain"},
                                      fields="id").execute()
        q = f"'{folder}' in parents and trashed = false"
        files, pages = self.list_all(q, page_size=100, order_by="name")
        full, rest = divmod(count, 100)
        expected_pages = [100] * full + ([rest] if rest else [])
        check(pages == expected_pages, f"page sizes {pages}, expected {expected_pages}")
        names = [f["name"] for f in files]
        check(names == expected, f"names in order: first mismatch at "
              f"{next((i for i, (a, b) in enumerate(zip(names, expected)) if a != b), len(names))}")
        check(len({f["id"] for f in files}) == count, "ids repeat across pages")
        # The same listing with a `q` that contains a quote-escaped name and `or`.
        one = self.list_all(f"'{folder}' in parents and (name = 'item-0007.txt' or name = 'it\\'s absent')")[0]
        check([f["name"] for f in one] == ["item-0007.txt"], f"name query: {one}")
        return f"{count} files in pages {pages}"

    def step_long_query(self):
        """A grouped `q` whose URL passes 2,048 characters: the client sends POST +
        X-HTTP-Method-Override: GET with the parameters as a form body, for every page."""
        folder = self.state["paging"]
        fillers = [f"1interopFiller{i:04d}xxxxxxxxxxxxxxxxxxx" for i in range(49)]
        q = "(" + " or ".join(f"'{p}' in parents" for p in [folder] + fillers) + ") and trashed = false"
        request = self.drive.files().list(q=q, pageSize=100, fields="nextPageToken, files(id, name, parents)")
        check(len(request.uri) > 2048, f"the request URI is only {len(request.uri)} characters")
        files, pages = [], []
        while request is not None:
            response = request.execute()
            files += response.get("files", [])
            pages.append(len(response.get("files", [])))
            check(len(pages) < 100, "files.list does not stop paging")
            request = self.drive.files().list_next(request, response)
        expected = self.list_all(f"'{folder}' in parents and trashed = false")[0]
        check(sorted(f["id"] for f in files) == sorted(f["id"] for f in expected),
              f"{len(files)} files by the long query, {len(expected)} by the plain one")
        check(all(f.get("parents") == [folder] for f in files), "parents missing or wrong")
        # Google's limit: a chain of more than 100 parents is "The query is too complex."
        too_many = " or ".join(f"'{p}' in parents" for p in [folder] + fillers * 3)
        error = expect_http_error(400, lambda: self.drive.files().list(q=too_many, fields="files(id)").execute(), "invalid")
        check(b"The query is too complex." in error.content, f"400 body: {error.content[:300]!r}")
        return f"{len(files)} files in pages {pages} through a {len(q)}-character q"

    def step_upload_multipart(self):
        data = deterministic_bytes("multipart", 100 * 1024 + 17)
        resource, _ = self.upload("multipart.bin", data, self.state["work"], resumable=False)
        self.check_file(resource, "multipart.bin", data, self.state["work"])
        self.state["multipart"] = (resource["id"], data)
        empty, _ = self.upload("empty.txt", b"", self.state["work"], resumable=False, mimetype="text/plain")
        self.check_file(empty, "empty.txt", b"", self.state["work"])
        self.state["empty"] = empty["id"]
        return f"{resource['id']} {len(data)} bytes md5 {resource['md5Checksum']}; empty file {empty['id']}"

    def step_upload_random_threads(self):
        """As a user of the client would: 8 threads (each its own service: httplib2 is not thread-safe)
        upload random binary files of random sizes, multipart (bare-LF bodies) and resumable; every
        stored size and md5Checksum, and a download of each, must equal what was sent. Issue 7: a
        multipart media part ending in CR used to be stored one byte short (one random file in 256);
        every eighth file here ends in CR so that the case is always met."""
        import random
        import threading
        folder = self.drive.files().create(
            body={"name": "random-uploads", "mimeType": FOLDER, "parents": [self.state["work"]]}, fields="id").execute()["id"]
        per_thread, failures, done = 40, [], []
        lock = threading.Lock()

        def worker(index):
            rng = random.Random(7000 + index)
            drive = build_from_document(self.document, credentials=self.new_credentials())
            for n in range(per_thread):
                size = rng.choice([0, 1, 2, rng.randrange(64), rng.randrange(4096), rng.randrange(300 * 1024)])
                data = bytearray(rng.randbytes(size))
                if n % 8 == 7:
                    data += b"\r"
                data = bytes(data)
                resumable = size > 256 * 1024 and rng.random() < 0.5
                name = f"t{index}-{n}.bin"
                try:
                    media = MediaIoBaseUpload(io.BytesIO(data), mimetype="application/octet-stream",
                                              chunksize=256 * 1024, resumable=resumable)
                    request = drive.files().create(body={"name": name, "parents": [folder]}, media_body=media,
                                                   fields="id, size, md5Checksum")
                    if resumable:
                        response = None
                        while response is None:
                            _, response = request.next_chunk()
                    else:
                        response = request.execute()
                    stored = drive.files().get_media(fileId=response["id"]).execute()
                    problems = []
                    if response.get("size") != str(len(data)):
                        problems.append(f"size {response.get('size')} != {len(data)}")
                    if response.get("md5Checksum") != md5_hex(data):
                        problems.append(f"md5Checksum {response.get('md5Checksum')} != {md5_hex(data)}")
                    if stored != data:
                        problems.append(f"downloaded {len(stored)} bytes differ from the {len(data)} sent")
                    with lock:
                        done.append(name)
                        if problems:
                            failures.append(f"{name} ({'resumable' if resumable else 'multipart'}, "
                                            f"ends {data[-3:]!r}): " + "; ".join(problems))
                except Exception as error:  # reported, never swallowed
                    with lock:
                        failures.append(f"{name}: {error!r}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        check(not any(t.is_alive() for t in threads), "an upload thread did not finish within 240 s")
        check(not failures, f"{len(failures)} of {len(done)} uploads were not stored as sent: " + " | ".join(failures[:10]))
        self.drive.files().delete(fileId=folder).execute()  # later steps count what the work folder holds
        return f"{len(done)} random files from 8 threads stored exactly"

    def step_upload_resumable(self):
        size = 900 * 1024 + 123  # four 256 KiB chunks, the last one short
        data = deterministic_bytes("resumable", size)
        resource, chunks = self.upload("resumable.bin", data, self.state["work"], resumable=True)
        check(chunks >= 3, f"the upload took {chunks} chunk requests, expected at least 3")
        self.check_file(resource, "resumable.bin", data, self.state["work"])
        self.state["resumable"] = (resource["id"], data)
        return f"{resource['id']} {size} bytes in {chunks} chunks, md5 {resource['md5Checksum']}"

    def control(self, method, path, document=None):
        """The emulator's control API (not part of Drive): JSON in, JSON out."""
        body = json.dumps(document).encode() if document is not None else None
        request = urllib.request.Request(self.base + path, data=body, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"{}")

    def step_upload_interrupted(self):
        """A chunk cut off mid-body by a connection reset: the session survives the disconnect, and the
        client resumes (its status probe `PUT Content-Range: bytes */SIZE` → 308 with `Range`, or a resend)."""
        size, chunksize = 1024 * 1024 + 4321, 256 * 1024
        data = deterministic_bytes("interrupted", size)
        media = MediaIoBaseUpload(io.BytesIO(data), mimetype="application/octet-stream", chunksize=chunksize, resumable=True)
        request = self.drive.files().create(body={"name": "interrupted.bin", "parents": [self.state["work"]]},
                                            media_body=media, fields="id, name, size, md5Checksum, parents")
        status, response = request.next_chunk()
        check(response is None and status.resumable_progress == chunksize, f"first chunk: {status}, {response}")
        resets_before = self.control("GET", "/__emulator/stats").get("totals", {}).get("statuses", {}).get("reset", 0)
        self.control("POST", "/__emulator/faults",
                     {"faults": [{"method": "files.create.upload", "resetAfterBytes": 100000, "times": 1}]})
        errors, calls = [], 0
        while response is None:
            calls += 1
            check(calls < 50, "the interrupted upload never completes")
            try:
                status, response = request.next_chunk()
            except (OSError, ConnectionError, HttpError) as error:  # what a reset looks like to the client
                errors.append(type(error).__name__)
                check(len(errors) <= 3, f"the client cannot resume: {errors}")
        time.sleep(0.2)  # stats are counted just after each response is written
        resets = self.control("GET", "/__emulator/stats").get("totals", {}).get("statuses", {}).get("reset", 0)
        check(resets == resets_before + 1, f"the reset fault did not fire once (reset count {resets_before} → {resets})")
        self.check_file(response, "interrupted.bin", data, self.state["work"])
        check(self.drive.files().get_media(fileId=response["id"]).execute() == data, "content after a resumed upload differs")
        how = f"client saw {errors[0]}, probed and resumed" if errors else "client resent the chunk on its own"
        return f"{response['id']} {size} bytes; one chunk reset after 100000 bytes; {how}"

    def step_get(self):
        file_id, data = self.state["resumable"]
        resource = self.drive.files().get(
            fileId=file_id, fields="id, name, size, md5Checksum, sha256Checksum, parents, trashed, mimeType").execute()
        self.check_file(resource, "resumable.bin", data, self.state["work"])
        check(resource.get("trashed") is False, f"trashed: {resource}")
        check(resource.get("sha256Checksum") == hashlib.sha256(data).hexdigest(), f"sha256Checksum: {resource}")
        default = self.drive.files().get(fileId=file_id).execute()
        check(set(default) == {"kind", "id", "name", "mimeType"}, f"default fields of files.get: {default}")
        expect_http_error(404, lambda: self.drive.files().get(fileId="noSuchFileId0123456789").execute(), "notFound")
        return f"{file_id} metadata matches"

    def step_download_chunks(self):
        results = []
        for key in ("resumable", "multipart"):
            file_id, data = self.state[key]
            sink = io.BytesIO()
            downloader = MediaIoBaseDownload(sink, self.drive.files().get_media(fileId=file_id), chunksize=100 * 1024)
            done, chunks = False, 0
            while not done:
                status, done = downloader.next_chunk()
                chunks += 1
                check(chunks < 1000, "ranged download never completes")
            got = sink.getvalue()
            check(got == data, f"{key}: downloaded {len(got)} bytes (md5 {md5_hex(got)}), "
                               f"expected {len(data)} (md5 {md5_hex(data)})")
            expected_chunks = -(-len(data) // (100 * 1024))
            check(chunks == expected_chunks, f"{key}: {chunks} ranged requests, expected {expected_chunks}")
            results.append(f"{key} {len(got)} bytes in {chunks} ranges")
            whole = self.drive.files().get_media(fileId=file_id).execute()
            check(whole == data, f"{key}: whole-file alt=media returned {len(whole)} bytes")
        # An empty file: the client asks for a range and needs 416 with Content-Range: bytes */0.
        sink = io.BytesIO()
        downloader = MediaIoBaseDownload(sink, self.drive.files().get_media(fileId=self.state["empty"]), chunksize=1024)
        status, done = downloader.next_chunk()
        check(done and sink.getvalue() == b"", f"empty file download: done={done}, {len(sink.getvalue())} bytes")
        results.append("empty file")
        return ", ".join(results)

    def step_update_content(self):
        file_id, _ = self.state["multipart"]
        data = deterministic_bytes("updated", 70 * 1024)
        media = MediaIoBaseUpload(io.BytesIO(data), mimetype="application/octet-stream", resumable=False)
        resource = self.drive.files().update(fileId=file_id, media_body=media,
                                             fields="id, name, size, md5Checksum, parents").execute()
        self.check_file(resource, "multipart.bin", data, self.state["work"])
        check(self.drive.files().get_media(fileId=file_id).execute() == data, "content after update differs")
        self.state["multipart"] = (file_id, data)
        return f"{file_id} now {len(data)} bytes md5 {resource['md5Checksum']}"

    def step_revisions(self):
        """Each content change is a revision; old revisions keep their bytes (ranged downloads too)."""
        first = deterministic_bytes("revision-1", 40 * 1024)
        second = deterministic_bytes("revision-2", 12 * 1024)
        created, _ = self.upload("revisions.bin", first, self.state["work"], resumable=False)
        file_id = created["id"]
        media = MediaIoBaseUpload(io.BytesIO(second), mimetype="application/octet-stream", resumable=False)
        head = self.drive.files().update(fileId=file_id, media_body=media, fields="headRevisionId").execute()["headRevisionId"]
        listed = self.drive.revisions().list(fileId=file_id, fields="revisions(id, size, md5Checksum)").execute()["revisions"]
        check(len(listed) == 2, f"revisions: {listed}")
        check(listed[-1]["id"] == head, f"the last revision {listed[-1]['id']} is not the head {head}")
        check([r["size"] for r in listed] == [str(len(first)), str(len(second))], f"sizes: {listed}")
        check(listed[0]["md5Checksum"] == md5_hex(first), f"md5 of the first revision: {listed[0]}")
        old = self.drive.revisions().get(fileId=file_id, revisionId=listed[0]["id"]).execute()
        check(set(old) == {"kind", "id", "mimeType", "modifiedTime"}, f"default fields of revisions.get: {old}")
        sink = io.BytesIO()
        downloader = MediaIoBaseDownload(sink, self.drive.revisions().get_media(fileId=file_id, revisionId=listed[0]["id"]),
                                         chunksize=16 * 1024)
        done, chunks = False, 0
        while not done:
            _, done = downloader.next_chunk()
            chunks += 1
            check(chunks < 100, "ranged revision download never completes")
        check(sink.getvalue() == first, f"old revision: {len(sink.getvalue())} bytes, expected {len(first)}")
        check(chunks == 3, f"{chunks} ranged requests, expected 3")
        check(self.drive.files().get_media(fileId=file_id).execute() == second, "the file is not the head revision")
        expect_http_error(404, lambda: self.drive.revisions().get(fileId=file_id, revisionId="0Bnope").execute(), "notFound")
        return f"{file_id}: {len(listed)} revisions, the old one downloaded in {chunks} ranges"

    def step_rename(self):
        file_id, _ = self.state["multipart"]
        resource = self.drive.files().update(fileId=file_id, body={"name": "renamed.bin"}, fields="id, name").execute()
        check(resource.get("name") == "renamed.bin", f"update answer: {resource}")
        got = self.drive.files().get(fileId=file_id, fields="name").execute()
        check(got == {"name": "renamed.bin"}, f"files.get after rename: {got}")
        names = self.children_names(self.state["work"])
        check("renamed.bin" in names and "multipart.bin" not in names, f"listing after rename: {names}")
        return f"{file_id} renamed"

    def step_move(self):
        file_id, _ = self.state["multipart"]
        resource = self.drive.files().update(fileId=file_id, addParents=self.state["target"],
                                             removeParents=self.state["work"], fields="id, parents").execute()
        check(resource.get("parents") == [self.state["target"]], f"parents after move: {resource}")
        check("renamed.bin" not in self.children_names(self.state["work"]), "still listed in the old parent")
        check(self.children_names(self.state["target"]) == ["renamed.bin"], "not listed in the new parent")
        return f"{file_id} moved to {self.state['target']}"

    def step_trash(self):
        file_id, _ = self.state["multipart"]
        resource = self.drive.files().update(fileId=file_id, body={"trashed": True}, fields="id, trashed").execute()
        check(resource.get("trashed") is True, f"update answer: {resource}")
        check(self.children_names(self.state["target"]) == [], "trashed file still listed with trashed = false")
        check(self.children_names(self.state["target"], trashed=True) == ["renamed.bin"],
              "trashed file not listed with trashed = true")
        got = self.drive.files().get(fileId=file_id, fields="trashed, explicitlyTrashed").execute()
        check(got.get("trashed") is True, f"files.get after trash: {got}")
        return f"{file_id} trashed"

    def step_delete(self):
        file_id, _ = self.state["resumable"]
        answer = self.drive.files().delete(fileId=file_id).execute()
        check(answer in ("", b"", None, {}), f"files.delete answer: {answer!r}")
        expect_http_error(404, lambda: self.drive.files().get(fileId=file_id).execute(), "notFound")
        check("resumable.bin" not in self.children_names(self.state["work"]), "deleted file still listed")
        return f"{file_id} deleted"

    def step_copy_and_ids(self):
        generated = self.drive.files().generateIds(count=2).execute()
        ids = generated.get("ids", [])
        check(generated.get("kind") == "drive#generatedIds" and len(ids) == 2, f"generateIds: {generated}")
        data = b"created with a generated id\n"
        media = MediaIoBaseUpload(io.BytesIO(data), mimetype="text/plain", resumable=False)
        created = self.drive.files().create(body={"id": ids[0], "name": "with-id.txt", "parents": [self.state["work"]]},
                                            media_body=media, fields="id, name, size, md5Checksum, parents").execute()
        check(created.get("id") == ids[0], f"create with a generated id answered id {created.get('id')}, expected {ids[0]}")
        self.check_file(created, "with-id.txt", data, self.state["work"])
        expect_http_error(409, lambda: self.drive.files().create(
            body={"id": ids[0], "name": "again.txt", "parents": [self.state["work"]]}).execute(), "fileIdInUse")
        copy = self.drive.files().copy(fileId=ids[0], body={"name": "copy.txt", "parents": [self.state["target"]]},
                                       fields="id, name, size, md5Checksum, parents").execute()
        check(copy.get("id") not in (None, ids[0]), f"copy has the original's id: {copy}")
        self.check_file(copy, "copy.txt", data, self.state["target"])
        check(self.drive.files().get_media(fileId=copy["id"]).execute() == data, "the copy's content differs")
        # Google refuses to copy folders.
        expect_http_error(403, lambda: self.drive.files().copy(fileId=self.state["target"], body={}).execute(), "cannotCopyFile")
        return f"generated {ids}, created {ids[0]}, reuse → 409, copy {copy['id']}"

    def step_google_doc(self):
        """A Docs file imported from text: no md5 or size-bearing blob, exportLinks, export to text, 403 on alt=media."""
        text = "Project plan\nsecond line\n"
        media = MediaIoBaseUpload(io.BytesIO(text.encode()), mimetype="text/plain", resumable=False)
        doc = self.drive.files().create(
            body={"name": "Plan", "mimeType": "application/vnd.google-apps.document", "parents": [self.state["work"]]},
            media_body=media, fields="id, name, mimeType, md5Checksum, exportLinks").execute()
        check(doc.get("mimeType") == "application/vnd.google-apps.document", f"import answered {doc}")
        check("md5Checksum" not in doc, f"a Google Doc has no md5Checksum: {doc}")
        check("text/plain" in doc.get("exportLinks", {}), f"exportLinks lacks text/plain: {doc.get('exportLinks')}")
        exported = self.drive.files().export_media(fileId=doc["id"], mimeType="text/plain").execute()
        normalized = exported.decode("utf-8-sig").replace("\r\n", "\n")  # Google adds a BOM and CRLF; both allowed
        check("Project plan" in normalized and "second line" in normalized, f"export to text/plain: {exported[:200]!r}")
        expect_http_error(403, lambda: self.drive.files().get_media(fileId=doc["id"]).execute(), "fileNotDownloadable")
        return f"{doc['id']} exported {len(exported)} bytes of text"

    def step_query(self):
        paging, work = self.state["paging"], self.state["work"]
        def names(q, order_by=None):
            return [f["name"] for f in self.list_all(q, order_by=order_by)[0]]
        prefix = names(f"'{paging}' in parents and name contains 'item-000'", "name")
        check(prefix == [f"item-000{i}.txt" for i in range(10)], f"name contains (a prefix match on Drive): {prefix}")
        rest = names(f"'{paging}' in parents and not name contains 'item-00'")
        check(len(rest) == self.args.paging_files - 100, f"not name contains: {len(rest)} files")
        future = names(f"'{paging}' in parents and modifiedTime > '2100-01-01T00:00:00'")
        check(future == [], f"modifiedTime in the future matched {len(future)} files")
        past = names(f"'{paging}' in parents and modifiedTime > '2000-01-01T00:00:00Z' and createdTime < '2100-01-01T00:00:00'")
        check(len(past) == self.args.paging_files, f"date comparisons matched {len(past)} files")
        folders = names(f"'{work}' in parents and mimeType = '{FOLDER}'", "name")
        check(folders == ["moved-here", "paging"], f"folders in the work folder: {folders}")
        ordered = names(f"'{work}' in parents and trashed = false", "folder,name")
        check(ordered[:2] == ["moved-here", "paging"], f"orderBy=folder,name puts folders first: {ordered}")
        expect_http_error(400, lambda: self.drive.files().list(q="name = 'unterminated").execute(), "invalid")
        return f"contains/not/dates/mimeType/orderBy; {len(ordered)} items in the work folder"

    def step_modified_time(self):
        file_id, _ = self.state["multipart"]
        nine = "2020-01-02T03:04:05.123456789Z"
        answer = self.drive.files().update(fileId=file_id, body={"modifiedTime": nine}, fields="modifiedTime").execute()
        check(answer.get("modifiedTime") == "2020-01-02T03:04:05.123Z",
              f"modifiedTime {nine} came back as {answer.get('modifiedTime')}, expected millisecond precision")
        return f"{nine} → {answer['modifiedTime']}"

    def step_retryable_errors(self):
        """Google's retryable errors, scripted through the emulator's fault API, are recognised as such by the
        client (googleapiclient retries 429, 5xx, and 403 only for the rate-limit reasons it finds in the body)."""
        stats = lambda: self.control("GET", "/__emulator/stats").get("methods", {})
        before = {m: dict(v.get("statuses", {})) for m, v in stats().items()}
        self.control("POST", "/__emulator/faults", {"faults": [
            {"method": "files.list", "status": 403, "reason": "userRateLimitExceeded", "times": 1},
            {"method": "files.get", "status": 503, "times": 1},
        ]})
        listed = self.drive.files().list(q=f"'{self.state['target']}' in parents", fields="files(id)").execute(num_retries=2)
        check(isinstance(listed.get("files"), list), f"files.list after a 403 userRateLimitExceeded: {listed}")
        got = self.drive.files().get(fileId=self.state["target"], fields="id").execute(num_retries=2)
        check(got.get("id") == self.state["target"], f"files.get after a 503: {got}")
        time.sleep(0.2)
        after = stats()
        for method, status in (("files.list", "403"), ("files.get", "503")):
            fired = after.get(method, {}).get("statuses", {}).get(status, 0) - before.get(method, {}).get(status, 0)
            check(fired == 1, f"{method}: the {status} fault fired {fired} times, expected once")
        # Not retryable: the client must give up at once on a 403 that is not a rate limit.
        self.control("POST", "/__emulator/faults",
                     {"faults": [{"method": "files.get", "status": 403, "reason": "insufficientFilePermissions", "times": 1}]})
        expect_http_error(403, lambda: self.drive.files().get(fileId=self.state["target"]).execute(num_retries=2),
                          "insufficientFilePermissions")
        return "403 userRateLimitExceeded and 503 retried; 403 insufficientFilePermissions not"

    def step_changes(self):
        token = self.state["start_token"]
        seen, pages, new_start = {}, 0, None
        while token is not None:
            response = self.drive.changes().list(
                pageToken=token, pageSize=100,
                fields="nextPageToken, newStartPageToken, changes(fileId, removed, file(name, trashed, parents))").execute()
            pages += 1
            check(pages < 100, "changes.list does not stop paging")
            check(("nextPageToken" in response) != ("newStartPageToken" in response),
                  f"a changes page must carry exactly one of nextPageToken/newStartPageToken: {sorted(response)}")
            check(isinstance(response.get("changes"), list), f"changes array missing: {response}")
            for change in response["changes"]:
                seen[change["fileId"]] = change  # oldest first: the last entry wins
            token = response.get("nextPageToken")
            new_start = response.get("newStartPageToken", new_start)
        for key in ("work", "target"):
            check(self.state[key] in seen, f"created folder {self.state[key]} missing from the change feed")
        moved, _ = self.state["multipart"]
        check(moved in seen and seen[moved].get("file", {}).get("trashed") is True
              and seen[moved]["file"].get("name") == "renamed.bin",
              f"renamed, moved, trashed file: {seen.get(moved)}")
        deleted, _ = self.state["resumable"]
        check(deleted in seen and seen[deleted].get("removed") is True and "file" not in seen[deleted],
              f"deleted file must be a tombstone (removed, no file): {seen.get(deleted)}")
        check(len(seen) >= self.args.paging_files, f"only {len(seen)} files changed, expected at least {self.args.paging_files}")
        caught_up = self.drive.changes().list(pageToken=new_start).execute()
        check(caught_up.get("changes") == [] and "newStartPageToken" in caught_up,
              f"changes.list from newStartPageToken should be empty: {caught_up}")
        return f"{len(seen)} changed files over {pages} pages, newStartPageToken {new_start}"

    def step_empty_trash(self):
        trashed, _ = self.state["multipart"]
        answer = self.drive.files().emptyTrash().execute()
        check(answer in ("", b"", None, {}), f"files.emptyTrash answer: {answer!r}")
        expect_http_error(404, lambda: self.drive.files().get(fileId=trashed).execute(), "notFound")
        left = self.list_all("trashed = true")[0]
        check(left == [], f"still in the trash after emptyTrash: {left}")
        return f"{trashed} gone"

    def step_token_refresh(self):
        """After the access token expires, the server answers 401 and the client refreshes and succeeds.

        The client refreshes ahead of expiry (google-auth's 3m45s threshold), so to see the server's side
        of expiry, the step makes the client believe its token is good for another hour."""
        lifetime = self.args.token_lifetime
        check(lifetime is not None and lifetime <= 30, "token_refresh needs --token-lifetime (the server's, in seconds, ≤ 30)")
        self.drive.about().get(fields="user").execute()
        old = self.credentials.token
        check(old, "no access token after a call")
        self.credentials.expiry = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(hours=1)
        time.sleep(lifetime + 1.5)
        # The server's side, seen without the client library: Google's 401 for an expired token.
        request = urllib.request.Request(self.base + "/drive/v3/about?fields=user&alt=json",
                                         headers={"Authorization": f"Bearer {old}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raise StepFailure(f"expired token accepted: HTTP {response.status}")
        except urllib.error.HTTPError as error:
            body = error.read()
            check(error.code == 401, f"expired token: HTTP {error.code} {body[:300]!r}")
            check(b'"authError"' in body or b'"UNAUTHENTICATED"' in body, f"401 body is not Google's: {body[:300]!r}")
            check(error.headers.get("WWW-Authenticate", "").startswith("Bearer"),
                  f"401 without WWW-Authenticate: Bearer ...: {dict(error.headers)}")
        about = self.drive.about().get(fields="user").execute()
        check(about.get("user"), f"about after refresh: {about}")
        check(self.credentials.token != old, "the client did not get a new access token")
        return f"401 on the expired token, then refreshed ({old[:8]}… → {self.credentials.token[:8]}…)"

    def sharing(self, name, body):
        """A request to the emulator's control API (it stands for another user's actions)."""
        request = urllib.request.Request(self.base + "/__emulator/" + name, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def step_revision_keep(self):
        """keepForever by revisions.update, revisions.delete of an old one (never the head), and a restore:
        the old revision downloaded and uploaded as the new content."""
        first, second = b"first version\n", b"second version\n"
        created, _ = self.upload("kept.txt", first, self.state["work"], resumable=False)
        file_id = created["id"]
        old = self.drive.files().get(fileId=file_id, fields="headRevisionId").execute()["headRevisionId"]
        self.drive.files().update(fileId=file_id, media_body=MediaIoBaseUpload(io.BytesIO(second), "text/plain")).execute()
        kept = self.drive.revisions().update(fileId=file_id, revisionId=old, body={"keepForever": True},
                                             fields="id, keepForever").execute()
        check(kept == {"id": old, "keepForever": True}, f"revisions.update: {kept}")
        restored = self.drive.revisions().get_media(fileId=file_id, revisionId=old).execute()
        check(restored == first, f"old revision bytes: {restored!r}")
        self.drive.files().update(fileId=file_id, media_body=MediaIoBaseUpload(io.BytesIO(restored), "text/plain")).execute()
        head = self.drive.files().get(fileId=file_id, fields="headRevisionId, md5Checksum").execute()
        check(head["md5Checksum"] == md5_hex(first), f"restored content: {head}")
        expect_http_error(400, lambda: self.drive.revisions().delete(fileId=file_id, revisionId=head["headRevisionId"]).execute())
        self.drive.revisions().delete(fileId=file_id, revisionId=old).execute()
        listed = self.drive.revisions().list(fileId=file_id, fields="revisions(id, keepForever)").execute()["revisions"]
        check([r["id"] for r in listed][-1] == head["headRevisionId"] and old not in [r["id"] for r in listed],
              f"revisions after the delete: {listed}")
        return f"{file_id}: kept, restored, {len(listed)} revisions left"

    def step_shared_with_me(self):
        """Another user's folder shared as reader: listed by sharedWithMe, readable, refused with
        insufficientFilePermissions when written; unshared, it is a 404."""
        folder = self.sharing("items", {"owner": "colleague@example.com", "name": "Their folder",
                                        "mimeType": FOLDER, "role": "reader"})["id"]
        inner = self.sharing("items", {"owner": "colleague@example.com", "name": "theirs.txt", "parent": folder,
                                       "content": "read only"})["id"]
        shared, _ = self.list_all("sharedWithMe and trashed = false", fields="nextPageToken, files(id, name, ownedByMe)")
        check([f["id"] for f in shared] == [folder], f"sharedWithMe: {shared}")
        check(shared[0]["ownedByMe"] is False, f"ownedByMe: {shared}")
        children = self.children_names(folder)
        check(children == ["theirs.txt"], f"children of the shared folder: {children}")
        check(self.drive.files().get_media(fileId=inner).execute() == b"read only", "download of a shared file")
        caps = self.drive.files().get(fileId=inner, fields="capabilities(canEdit, canDownload, canTrash)").execute()["capabilities"]
        check(caps == {"canEdit": False, "canDownload": True, "canTrash": False}, f"capabilities: {caps}")
        expect_http_error(403, lambda: self.drive.files().update(fileId=inner, body={"name": "mine now"}).execute(),
                          "insufficientFilePermissions")
        expect_http_error(403, lambda: self.drive.files().create(body={"name": "x", "parents": [folder]}).execute(),
                          "insufficientFilePermissions")
        self.sharing("unshare", {"fileId": folder})
        expect_http_error(404, lambda: self.drive.files().get(fileId=inner).execute(), "notFound")
        return f"{folder}: listed, read, refused, unshared"

    def step_drive_membership(self):
        """A shared drive the user only reads: capabilities, a refused create; left: gone from drives.list."""
        drive = self.drive.drives().create(requestId=f"interop-{time.time_ns()}", body={"name": "Interop team"}).execute()["id"]
        self.sharing("membership", {"driveId": drive, "role": "reader"})
        got = self.drive.drives().get(driveId=drive, fields="capabilities(canAddChildren, canListChildren)").execute()
        check(got["capabilities"] == {"canAddChildren": False, "canListChildren": True}, f"reader's capabilities: {got}")
        expect_http_error(403, lambda: self.drive.files().create(body={"name": "x", "parents": [drive]},
                                                                 supportsAllDrives=True).execute(), "insufficientFilePermissions")
        self.sharing("membership", {"driveId": drive, "role": None})
        listed = self.drive.drives().list(fields="drives(id)").execute().get("drives", [])
        check(drive not in [d["id"] for d in listed], f"a drive the user left is listed: {listed}")
        expect_http_error(404, lambda: self.drive.drives().get(driveId=drive).execute(), "notFound")
        return f"{drive}: reader, refused, left"


STEPS = ["about", "start_page_token", "root", "create_folder", "list_paging", "long_query", "upload_multipart",
         "upload_random_threads",
         "upload_resumable", "upload_interrupted", "get", "download_chunks", "update_content", "revisions", "rename", "move", "trash",
         "delete", "copy_and_ids", "google_doc", "query", "modified_time", "retryable_errors", "changes", "empty_trash", "revision_keep",
         "shared_with_me", "drive_membership", "token_refresh"]


def describe_http_error(error):
    lines = [f"HTTP {error.resp.status} for {error.uri}"]
    lines += [f"  < {k}: {v}" for k, v in sorted(error.resp.items()) if k not in ("status",)]
    content = error.content.decode("utf-8", "replace") if isinstance(error.content, bytes) else str(error.content)
    lines.append("  body: " + content[:2000])
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:PORT of the Drive server")
    parser.add_argument("--refresh-token", default="drivefs-emulator-refresh-token")
    parser.add_argument("--discovery", help="discovery document (default: the one the library ships)")
    parser.add_argument("--steps", default=",".join(s for s in STEPS if s != "token_refresh"),
                        help=f"comma-separated, in this order: {','.join(STEPS)}")
    parser.add_argument("--paging-files", type=int, default=250)
    parser.add_argument("--token-lifetime", type=float, help="the server's access-token lifetime (token_refresh)")
    parser.add_argument("--http-debug", action="store_true", help="print every HTTP exchange (httplib2)")
    args = parser.parse_args()
    socket.setdefaulttimeout(60)  # googleapiclient's build_http takes its timeout from here
    if args.http_debug:
        import httplib2
        httplib2.debuglevel = 1
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}")
    run = Interop(args)
    for step in steps:
        started = time.monotonic()
        try:
            detail = getattr(run, f"step_{step}")()
        except StepFailure as failure:
            print(f"FAIL {step}: {failure}", flush=True)
            return 1
        except HttpError as error:
            print(f"FAIL {step}: unexpected {describe_http_error(error)}", flush=True)
            return 1
        except Exception:
            print(f"FAIL {step}: exception\n{traceback.format_exc()}", flush=True)
            return 1
        print(f"ok   {step:<18} {time.monotonic() - started:6.2f}s  {detail}", flush=True)
    print(f"PASS {len(steps)} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
