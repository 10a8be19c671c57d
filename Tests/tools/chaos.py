#!/usr/bin/env python3
"""The chaos run of "Not one accepted byte lost" (docs/testing.md, "The chaos run").

Starts drivefs-emulator (fresh state directory, loopback, port 0), signs a drivefs profile in with
the emulator's well-known refresh token, mounts it (`drivefs mount -f`), and lets K worker processes
do random file operations through the mount (create, append, overwrite at random offsets, truncate,
fsync, rename within and across folders and over files, delete, editor-style saves, mkdir/rmdir, read
checks) while a fault thread follows a seeded schedule: 5xx answers all along, bursts of 403
rateLimitExceeded / 429 / 401, connections reset mid-upload and mid-download and answers lost after
Drive acted, stalls, 10-second access tokens, emulator restarts, `kill -9` of drivefs and a new mount,
Drive unreachable for a while, the cache disk full for a while (a tmpfs; root only).

Each worker owns a subtree (`wN/`), so what every file must hold is known exactly; a `shared/`
folder takes editor saves and renames from every worker, one at a time (a lock). A second mount of the
same account (its own configuration, cache and state: another machine) is up part of the time, with a
worker of its own; with it, `shared/` takes saves from both mounts, and each name may hold any version
saved, its conflicted copies too, but the last successful save must be there. The model records
what each successful close, fsync, rename, unlink, mkdir and rmdir promised; an operation that
failed (EIO, ENOSPC, ENOTCONN at a kill, ...) leaves its paths "maybe" (either state allowed) until a
later whole rewrite or removal makes them certain again. Reads of certain files are checked through
the mount as the run goes.

At the end: faults off, the emulator up, the mount made again if it was killed, `drivefs unmount`
(which returns once every upload is on Drive); then Drive is read through its REST API (every
non-trashed item with its parents, every file downloaded) and compared with the model: every promised
file present once with its bytes, nothing that was removed back, no file twice, no conflicted copy
(nobody else edits: one would be a false conflict), every promised folder once.

It prints the seed, the schedule of faults, the operations (also in WORKDIR/ops-wN.log) and the
verdict; it exits 0 on PASS, 1 on a violation (with the replay command), 2 when the run itself could
not be carried out (the emulator or the mount would not start).

Python 3 standard library only.
"""
import argparse
import atexit
import errno
import hashlib
import json
import multiprocessing
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

REFRESH_TOKEN = "drivefs-emulator-refresh-token"
ACCOUNT = "user@drivefs-emulator.test"
CONFLICT = re.compile(r" \(conflicted copy \d{4}-\d{2}-\d{2} \d{6}\)")
FOLDER_MIME = "application/vnd.google-apps.folder"
SHARED = "shared"
SHARED_NAMES = ["notes.txt", "plan.md", "data.bin", "todo"]
T0 = time.monotonic()


def say(message):
    print(f"chaos [{time.monotonic() - T0:7.1f}s] {message}", flush=True)


def sha(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# The model of one path. States are plain dicts (they go to JSON at the end):
#   {"k": "known", "sha": H, "size": N}   present with exactly these bytes (promised)
#   {"k": "absent"}                        not there (promised)
#   {"k": "maybe", "absent_ok": B, "cands": [H...], "any": B, "dup_ok": B}
# A worker also keeps the bytes of its known files in memory, beside the state.
# ---------------------------------------------------------------------------------------------

def known(data):
    return {"k": "known", "sha": sha(data), "size": len(data)}


ABSENT = {"k": "absent"}
ANY = {"k": "maybe", "absent_ok": False, "cands": [], "any": True, "dup_ok": False}


def merge(*states, dup_ok=False):
    absent_ok, cands, anything, dup = False, set(), False, dup_ok
    for s in states:
        if s["k"] == "known":
            cands.add(s["sha"])
        elif s["k"] == "absent":
            absent_ok = True
        else:
            absent_ok |= s["absent_ok"]
            cands |= set(s["cands"])
            anything |= s["any"]
            dup |= s["dup_ok"]
    return {"k": "maybe", "absent_ok": absent_ok, "cands": sorted(cands), "any": anything, "dup_ok": dup}


def may_exist(state):
    return state["k"] == "known" or (state["k"] == "maybe" and (state["any"] or bool(state["cands"])))


# ---------------------------------------------------------------------------------------------
# Workers
# ---------------------------------------------------------------------------------------------

class Worker:
    def __init__(self, idx, seed, mnt, workdir, deadline, lock, big_files, gate=None, two_mounts=False):
        self.idx, self.mnt, self.workdir, self.deadline, self.lock = idx, mnt, workdir, deadline, lock
        # gate: (lock, event) of the second mount, for its worker: an operation runs only while the
        # mount is up (the event), and holds the lock so that the mount is not taken down under it.
        self.gate = gate
        # Two mounts edit shared/: what each name may hold is every version saved (see shared_op).
        self.two_mounts = two_mounts
        self.rng = random.Random(f"{seed}/worker/{idx}")
        self.root = f"w{idx}"
        self.files = {}      # rel path -> state
        self.data = {}       # rel path -> bytes, for known files
        self.dirs = {self.root: "present"}
        self.counter = 0
        self.ops = 0
        self.failed = {}     # errno name -> count
        self.mismatches = []
        self.big_files = big_files
        self.log = open(os.path.join(workdir, f"ops-w{idx}.log"), "w", buffering=1)

    def p(self, rel):
        return os.path.join(self.mnt, rel)

    def note(self, text):
        self.log.write(f"{time.monotonic() - T0:8.2f} w{self.idx} #{self.ops} {text}\n")

    def failure(self, what, error):
        name = errno.errorcode.get(error.errno, str(error.errno)) if isinstance(error, OSError) else type(error).__name__
        self.failed[name] = self.failed.get(name, 0) + 1
        self.note(f"{what} -> FAILED {name}")
        if isinstance(error, OSError) and error.errno in (errno.ENOTCONN, errno.ENOENT, errno.ECONNABORTED):
            time.sleep(0.3)   # the mount is being made again: do not spin

    # --- state helpers -----------------------------------------------------------------------
    def set_known(self, rel, data, table=None, store=None):
        (self.files if table is None else table)[rel] = known(data)
        (self.data if store is None else store)[rel] = bytes(data)

    def set_state(self, rel, state, table=None, store=None):
        (self.files if table is None else table)[rel] = state
        (self.data if store is None else store).pop(rel, None)

    def content(self, small=False):
        r = self.rng.random()
        if r < 0.08:
            n = 0
        elif r < 0.70:
            n = self.rng.randrange(1, 64 << 10)
        elif r < 0.97 or not self.big_files or small:
            n = self.rng.randrange(64 << 10, 700 << 10)
        else:
            n = self.rng.randrange(2 << 20, 9 << 20)   # resumable, in chunks
        return self.rng.randbytes(n)

    def new_name(self):
        self.counter += 1
        ext = self.rng.choice([".txt", ".bin", ".md", "", ".tar.gz"])
        stem = self.rng.choice(["f", "file ", "report-", "ünïcode "])
        return f"{stem}{self.idx}-{self.counter}{ext}"

    def present_dirs(self):
        return sorted(d for d, s in self.dirs.items() if s == "present")

    def existing(self, certain=True):
        return sorted(p for p, s in self.files.items() if (s["k"] == "known" if certain else (s["k"] == "maybe" and may_exist(s))))

    # --- writing -----------------------------------------------------------------------------
    @staticmethod
    def write_all(fd, data, offset=None):
        view, pos = memoryview(data), 0
        while pos < len(view):
            piece = view[pos:pos + (1 << 20)]
            n = os.pwrite(fd, piece, offset + pos) if offset is not None else os.write(fd, piece)
            if n <= 0:
                raise OSError(errno.EIO, "short write")
            pos += n

    def whole_write(self, rel, data, fsync, excl=False):
        """open O_CREAT|O_TRUNC (or O_EXCL), write, maybe fsync, close. Raises on failure."""
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else os.O_TRUNC)
        fd = os.open(self.p(rel), flags, 0o644)
        try:
            self.write_all(fd, data)
            if fsync:
                os.fsync(fd)
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            raise
        os.close(fd)

    # --- operations --------------------------------------------------------------------------
    def op_create(self):
        folder = self.rng.choice(self.present_dirs())
        rel = f"{folder}/{self.new_name()}"
        data, fsync = self.content(), self.rng.random() < 0.1
        what = f"create {rel!r} {len(data)} B{' fsync' if fsync else ''}"
        before = self.files.get(rel, ABSENT)
        try:
            self.whole_write(rel, data, fsync, excl=True)
        except OSError as e:
            self.set_state(rel, merge(before, ANY))
            return self.failure(what, e)
        self.set_known(rel, data)
        self.note(what + " -> ok")

    def op_rewrite(self, rel):
        """A whole rewrite (O_TRUNC): makes a 'maybe' file certain again."""
        data, fsync = self.content(), self.rng.random() < 0.1
        what = f"rewrite {rel!r} {len(data)} B{' fsync' if fsync else ''}"
        before = self.files.get(rel, ABSENT)
        try:
            self.whole_write(rel, data, fsync)
        except OSError as e:
            self.set_state(rel, merge(before, ANY))
            return self.failure(what, e)
        self.set_known(rel, data)
        self.note(what + " -> ok")

    def op_edit(self, rel):
        """open, 1-4 of: pwrite at a random offset (holes too), append, ftruncate; maybe fsync; close."""
        model = bytearray(self.data[rel])
        before = self.files[rel]
        mode = self.rng.choice(["rdwr", "rdwr", "append", "trunc"])
        steps = []
        try:
            flags = {"rdwr": os.O_RDWR, "append": os.O_WRONLY | os.O_APPEND, "trunc": os.O_WRONLY | os.O_TRUNC}[mode]
            fd = os.open(self.p(rel), flags)
            if mode == "trunc":
                model.clear()
            try:
                for _ in range(self.rng.randrange(1, 5)):
                    r = self.rng.random()
                    if mode == "append" or r < 0.3:
                        piece = self.rng.randbytes(self.rng.randrange(1, 40 << 10))
                        if mode == "append":
                            self.write_all(fd, piece)
                        else:
                            self.write_all(fd, piece, len(model))
                        model.extend(piece)
                        steps.append(f"append {len(piece)}")
                    elif r < 0.75:
                        offset = self.rng.randrange(len(model) + (16 << 10))
                        piece = self.rng.randbytes(self.rng.randrange(1, 64 << 10))
                        self.write_all(fd, piece, offset)
                        if len(model) < offset:
                            model.extend(b"\0" * (offset - len(model)))
                        model[offset:offset + len(piece)] = piece
                        steps.append(f"pwrite {offset}+{len(piece)}")
                    else:
                        size = self.rng.randrange(len(model) + (64 << 10))
                        os.ftruncate(fd, size)
                        if size < len(model):
                            del model[size:]
                        else:
                            model.extend(b"\0" * (size - len(model)))
                        steps.append(f"ftruncate {size}")
                if self.rng.random() < 0.1:
                    os.fsync(fd)
                    steps.append("fsync")
            except BaseException:
                try:
                    os.close(fd)
                except OSError:
                    pass
                raise
            os.close(fd)
        except OSError as e:
            self.set_state(rel, merge(before, ANY))
            return self.failure(f"edit {rel!r} ({mode}: {', '.join(steps)})", e)
        self.set_known(rel, model)
        self.note(f"edit {rel!r} ({mode}: {', '.join(steps)}) -> ok, {len(model)} B")

    def op_rename(self, src, dst, table=None, store=None):
        table = self.files if table is None else table
        store = self.data if store is None else store
        s_src, s_dst = table.get(src, ABSENT), table.get(dst, ABSENT)
        what = f"rename {src!r} -> {dst!r}{' (over a file)' if may_exist(s_dst) else ''}"
        try:
            os.rename(self.p(src), self.p(dst))
        except OSError as e:
            # Not done or done; never both under the name (a rename over a file killed between its
            # two Drive steps is finished by the next start).
            self.set_state(dst, merge(s_dst, s_src), table, store)
            self.set_state(src, merge(s_src, ABSENT), table, store)
            return self.failure(what, e)
        if src in store and s_src["k"] == "known":
            self.set_known(dst, store[src], table, store)
        else:
            self.set_state(dst, s_src, table, store)
        self.set_state(src, ABSENT, table, store)
        self.note(what + " -> ok")

    def op_unlink(self, rel):
        before = self.files[rel]
        try:
            os.unlink(self.p(rel))
        except OSError as e:
            self.set_state(rel, merge(before, ABSENT))
            return self.failure(f"unlink {rel!r}", e)
        self.set_state(rel, ABSENT)
        self.note(f"unlink {rel!r} -> ok")

    def op_editor_save(self, rel, table=None, store=None):
        """An editor's save: write .NAME.swp in the same folder, fsync it half the time (vim and gedit
        do, rsync and sed -i do not: unsent, the rename makes it new content for NAME), close, rename
        it over NAME."""
        table = self.files if table is None else table
        store = self.data if store is None else store
        folder, name = rel.rsplit("/", 1)
        tmp = f"{folder}/.{name}.w{self.idx}.swp"
        old = store.get(rel)
        if old is not None and self.rng.random() < 0.7:
            data = bytearray(old)
            offset = self.rng.randrange(len(data) + 1)
            data[offset:offset + self.rng.randrange(0, 4096)] = self.rng.randbytes(self.rng.randrange(0, 4096))
            data = bytes(data)
        else:
            data = self.content(small=table is not self.files)
        fsync = self.rng.random() < 0.5
        what = f"editor save {rel!r} via {tmp!r} {len(data)} B{'' if fsync else ' (no fsync)'}"
        s_tmp = table.get(tmp, ABSENT)
        self.failed_save = None
        try:
            self.whole_write(tmp, data, fsync=fsync)
        except OSError as e:
            self.set_state(tmp, merge(s_tmp, ANY, ABSENT), table, store)
            self.failed_save = data
            return self.failure(what + " (writing the temporary file)", e)
        self.set_known(tmp, data, table, store)
        self.op_rename(tmp, rel, table, store)
        return data

    def op_mkdir(self):
        parent = self.rng.choice([d for d in self.present_dirs() if d.count("/") < 3])
        self.counter += 1
        rel = f"{parent}/d{self.idx}-{self.counter}"
        try:
            os.mkdir(self.p(rel))
        except OSError as e:
            self.dirs[rel] = "maybe"
            return self.failure(f"mkdir {rel!r}", e)
        self.dirs[rel] = "present"
        self.note(f"mkdir {rel!r} -> ok")

    def empty_dirs(self):
        out = []
        for d in self.present_dirs():
            if d == self.root:
                continue
            inside = [p for p, s in self.files.items() if p.startswith(d + "/") and s["k"] != "absent"]
            subdirs = [x for x, s in self.dirs.items() if x.startswith(d + "/") and s != "absent"]
            if not inside and not subdirs:
                out.append(d)
        return out

    def op_rmdir(self, rel):
        try:
            os.rmdir(self.p(rel))
        except OSError as e:
            self.dirs[rel] = "maybe"
            return self.failure(f"rmdir {rel!r}", e)
        self.dirs[rel] = "absent"
        self.note(f"rmdir {rel!r} -> ok")

    def op_read_check(self, rel, store=None):
        store = self.data if store is None else store
        want = store[rel]
        try:
            with open(self.p(rel), "rb") as f:
                got = f.read()
        except OSError as e:
            return self.failure(f"read {rel!r}", e)
        if got != want:
            diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            message = f"read {rel!r}: {len(got)} B through the mount, the model has {len(want)} B; first difference at {diff}"
            self.mismatches.append(message)
            self.note(message + " -> MISMATCH")
        else:
            self.note(f"read {rel!r} {len(got)} B -> ok")

    # --- the shared folder: one worker at a time, its model in a file --------------------------
    def shared_op(self):
        if not self.lock.acquire(timeout=5):
            return self.note("shared: lock busy, skipped")
        try:
            path = os.path.join(self.workdir, "model-shared.json")
            with open(path) as f:
                saved = json.load(f)
            table = saved["files"]
            store = {k: bytes.fromhex(v) for k, v in saved["data"].items()}
            r = self.rng.random()
            names = [f"{SHARED}/{n}" for n in SHARED_NAMES]
            if self.two_mounts:
                self.shared_op_two_mounts(saved, table, store, names, r)
            elif r < 0.55:
                self.op_editor_save(self.rng.choice(names), table, store)
            elif r < 0.75:
                present = [n for n in names if table.get(n, ABSENT)["k"] == "known"]
                if present:
                    src = self.rng.choice(present)
                    self.op_rename(src, self.rng.choice([n for n in names if n != src]), table, store)
            else:
                present = [n for n in names if n in store]
                if present:
                    self.op_read_check(self.rng.choice(present), store)
            saved.update(files=table, data={k: v.hex() for k, v in store.items()})
            with open(path + ".tmp", "w") as f:
                json.dump(saved, f)
            os.replace(path + ".tmp", path)
        finally:
            self.lock.release()

    def shared_op_two_mounts(self, saved, table, store, names, r):
        """shared/ edited through two mounts (one at a time, but each mount sees the other's saves
        only once they landed and its change feed showed them): editor saves and reads, no renames.
        A save made on a version the other mount has replaced meanwhile is a true conflict, so the
        model keeps, per name, every version saved ("history"): the name and its conflicted copies
        may hold any of them, and the last save, when it succeeded, must be on Drive under the name
        or as a conflicted copy of it ("last"; checked in the verdict)."""
        history, last = saved.setdefault("history", {}), saved.setdefault("last", {})
        rel = self.rng.choice(names)
        # Versions a read may show besides the saved ones, never what Drive may hold at the end: the
        # whole content of a save whose temporary file's write failed (a kill cut it; it was kept
        # all the same). The next save writes that temporary file again and renames it over the
        # name; the rename may reach Drive before the new content does, so the other mount may read
        # the earlier content under the name until the new content lands (chaos finding 23).
        maybe = saved.setdefault("maybe", {})
        if r < 0.75:
            data = self.op_editor_save(rel, table, store)   # None: the temporary file was not written
            if data is not None:   # renamed, or a rename that failed (it may have landed)
                history.setdefault(rel, []).append(sha(data))
                last[rel] = sha(data) if table.get(rel, ABSENT)["k"] == "known" else None
            elif self.failed_save is not None:
                maybe.setdefault(rel, []).append(sha(self.failed_save))
            return
        try:
            with open(self.p(rel), "rb") as f:
                got = f.read()
        except FileNotFoundError:
            return self.note(f"read {rel!r} -> ENOENT (not saved yet, or not seen here yet)")
        except OSError as e:
            return self.failure(f"read {rel!r}", e)
        if sha(got) in history.get(rel, []):
            self.note(f"read {rel!r} {len(got)} B -> ok (a version saved)")
        elif sha(got) in maybe.get(rel, []):
            self.note(f"read {rel!r} {len(got)} B -> ok (the content of a save whose write failed, renamed over it since)")
        else:
            message = f"read {rel!r}: {len(got)} B through mount w{self.idx}, none of the {len(history.get(rel, []))} versions saved"
            self.mismatches.append(message)
            self.note(message + " -> MISMATCH")

    # --- the loop ----------------------------------------------------------------------------
    def gated_step(self):
        """The second mount's worker: a step only while its mount is up (and it stays up meanwhile)."""
        lock, up = self.gate
        if not lock.acquire(timeout=5):
            return
        try:
            if up.is_set():
                return self.step()
        finally:
            lock.release()
        up.wait(0.5)

    def step(self):
        self.ops += 1
        rng = self.rng
        uncertain = self.existing(certain=False)
        certain = self.existing()
        if uncertain and rng.random() < 0.5:
            rel = rng.choice(uncertain)
            return self.op_rewrite(rel) if rng.random() < 0.7 else self.op_unlink(rel)
        maybe_dirs = [d for d, s in self.dirs.items() if s == "maybe"]
        if maybe_dirs and rng.random() < 0.5:
            rel = rng.choice(sorted(maybe_dirs))
            try:
                os.mkdir(self.p(rel))
                self.dirs[rel] = "present"
                return self.note(f"mkdir {rel!r} (was maybe) -> ok")
            except FileExistsError:
                self.dirs[rel] = "present"
                return self.note(f"mkdir {rel!r} (was maybe) -> EEXIST: present")
            except OSError as e:
                return self.failure(f"mkdir {rel!r} (was maybe)", e)
        r = rng.randrange(100)
        if r < 16 or not certain:
            if len(certain) > 30 and r < 16:
                return self.op_unlink(rng.choice(certain))
            return self.op_create()
        if r < 44:
            return self.op_edit(rng.choice(certain))
        if r < 50:     # rename within its folder
            src = rng.choice(certain)
            return self.op_rename(src, f"{src.rsplit('/', 1)[0]}/{self.new_name()}")
        if r < 56:     # rename into another folder
            src = rng.choice(certain)
            dst = (f"{rng.choice(self.present_dirs())}/{src.rsplit('/', 1)[1]}" if rng.random() < 0.5
                   else f"{rng.choice(self.present_dirs())}/{self.new_name()}")
            return self.op_rename(src, dst) if dst != src else self.op_read_check(src)
        if r < 60 and len(certain) > 1:   # rename over another file
            src, dst = rng.sample(certain, 2)
            return self.op_rename(src, dst)
        if r < 66:
            return self.op_unlink(rng.choice(certain))
        if r < 72:
            return self.op_editor_save(rng.choice(certain))
        if r < 80:
            return self.shared_op()
        if r < 84:
            return self.op_mkdir()
        if r < 87:
            empty = self.empty_dirs()
            return self.op_rmdir(rng.choice(empty)) if empty else self.op_mkdir()
        if r < 98:
            return self.op_read_check(rng.choice(certain))
        time.sleep(rng.random() * 0.5)
        self.note("pause")

    def run(self):
        while time.time() < self.deadline:
            try:
                self.gated_step() if self.gate else self.step()
            except OSError as e:    # an unexpected call outside the handled ones
                self.failure("step", e)
        self.log.close()
        model = {"files": self.files, "dirs": self.dirs, "ops": self.ops, "failed": self.failed,
                 "mismatches": self.mismatches}
        with open(os.path.join(self.workdir, f"model-w{self.idx}.json"), "w") as f:
            json.dump(model, f)


def worker_main(idx, seed, mnt, workdir, deadline, lock, big_files, gate=None, two_mounts=False):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    Worker(idx, seed, mnt, workdir, deadline, lock, big_files, gate, two_mounts).run()


# ---------------------------------------------------------------------------------------------
# The emulator, the mount, the REST client
# ---------------------------------------------------------------------------------------------

class Emulator:
    def __init__(self, binary, workdir, token_lifetime):
        self.binary, self.workdir = binary, workdir
        self.state = os.path.join(workdir, "emulator-state")
        os.makedirs(self.state, exist_ok=True)
        self.port = 0
        self.proc = None
        self.token_lifetime = token_lifetime
        self.restarts = 0
        self.answers = {}        # status -> count, over every incarnation
        self.log = open(os.path.join(workdir, "emulator.log"), "ab")

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            self.proc = subprocess.Popen([self.binary, "--host", "127.0.0.1", "--port", str(self.port), "--state-dir", self.state,
                                          "--token-lifetime", str(self.token_lifetime)],
                                         stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
            lines = queue.Queue()
            threading.Thread(target=lambda out=self.proc.stdout: lines.put(out.readline()), daemon=True).start()
            try:
                line = lines.get(timeout=max(1, deadline - time.monotonic())).decode()
            except queue.Empty:
                line = ""
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
                return
            self.proc.kill()
            self.proc.wait(10)
            if time.monotonic() > deadline:
                raise RuntimeError(f"drivefs-emulator did not start (said {line!r}); see {self.workdir}/emulator.log")
            time.sleep(1)    # the port may still be held for a moment after a restart

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def collect_stats(self):
        try:
            stats = self.control("GET", "/__emulator/stats")
        except Exception:
            return
        for status, n in stats.get("totals", {}).get("statuses", {}).items():
            self.answers[status] = self.answers.get(status, 0) + n

    def stop(self, sig=signal.SIGTERM):
        if not self.alive():
            return
        self.collect_stats()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self, sig=signal.SIGTERM, down=0.0, stop_event=None):
        self.stop(sig)
        self.restarts += 1
        end = time.monotonic() + down
        while time.monotonic() < end and not (stop_event and stop_event.is_set()):
            time.sleep(0.2)
        self.start()

    def control(self, method, path, body=None, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read()
        return json.loads(text) if text else {}


class Drive:
    """Drive through its REST API, with the emulator's well-known refresh token."""

    def __init__(self, emulator):
        self.emulator, self.token, self.token_at = emulator, None, 0

    def access_token(self):
        if self.token is None or time.monotonic() - self.token_at > 4:
            form = urllib.parse.urlencode({"grant_type": "refresh_token", "refresh_token": REFRESH_TOKEN,
                                           "client_id": "chaos", "client_secret": "chaos"}).encode()
            with urllib.request.urlopen(self.emulator.base + "/token", data=form, timeout=20) as r:
                self.token = json.loads(r.read())["access_token"]
            self.token_at = time.monotonic()
        return self.token

    def get(self, path, params):
        url = f"{self.emulator.base}/drive/v3/{path}?{urllib.parse.urlencode(params)}"
        for attempt in range(5):
            req = urllib.request.Request(url, headers={"Authorization": "Bearer " + self.access_token()})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return r.read()
            except (urllib.error.URLError, ConnectionError):
                if attempt == 4:
                    raise
                self.token = None
                time.sleep(1)

    def everything(self):
        root = json.loads(self.get("files/root", {"fields": "id"}))["id"]
        items, token = [], None
        while True:
            params = {"q": "trashed = false", "pageSize": 1000,
                      "fields": "nextPageToken,files(id,name,mimeType,parents,size,md5Checksum)"}
            if token:
                params["pageToken"] = token
            page = json.loads(self.get("files", params))
            items += page.get("files", [])
            token = page.get("nextPageToken")
            if not token:
                return root, items


class Mount:
    def __init__(self, binary, mnt, cache, env, workdir, fusermount, log="drivefs.log"):
        self.binary, self.mnt, self.cache, self.env, self.fusermount = binary, mnt, cache, env, fusermount
        self.logpath = os.path.join(workdir, log)
        self.proc = None
        self.mounts = 0

    def mounted(self):
        with open("/proc/mounts") as f:
            return any(line.split(" ")[1] == self.mnt for line in f if len(line.split(" ")) > 2)

    def start(self, timeout=90):
        for attempt in range(3):
            with open(self.logpath, "ab") as log:
                log.write(f"\n==== chaos: drivefs mount (mount {self.mounts + 1}) ====\n".encode())
                offset = log.tell()
                self.proc = subprocess.Popen([self.binary, "mount", self.mnt, "-f", "--poll-interval", "2s", "--cache-dir", self.cache,
                                              "--cache-size", "64M", "--write-rate", "100", "--write-burst", "200"]
                                             + (["--log-level", os.environ["DRIVEFS_CHAOS_LOG_LEVEL"]]
                                                if os.environ.get("DRIVEFS_CHAOS_LOG_LEVEL") else []),
                                             stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=self.env)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                with open(self.logpath, "rb") as log:
                    log.seek(offset)
                    if b" mounted at " in log.read() and self.mounted():
                        self.mounts += 1
                        return
                time.sleep(0.1)
            say(f"drivefs mount attempt {attempt + 1} did not come up (exit {self.proc.poll()}); tail of its log:\n"
                + self.tail(1500))
            self.kill()
            self.lazy_unmount()
            time.sleep(2)
        raise RuntimeError("drivefs mount did not come up three times; see drivefs.log")

    def tail(self, n=3000):
        try:
            with open(self.logpath, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL; True when the daemon was gone within 30 s on its own (False: it had to have its
        mount detached first, as a user would with fusermount -uz; docs/chaos-findings.md 9)."""
        if not self.alive():
            return True
        self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(30)
            return True
        except subprocess.TimeoutExpired:
            pass
        say("drivefs got SIGKILL but has not exited after 30 s: detaching its mount (fusermount -uz)")
        self.lazy_unmount()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            say("drivefs has still not exited")
        return False

    def lazy_unmount(self):
        for flags in (["-u"], ["-uz"]):
            if self.mounted():
                subprocess.run([self.fusermount] + flags + [self.mnt], timeout=20, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def drivefs_unmount(self, timeout):
        """`drivefs unmount`: returns once every upload is on Drive. (status, output, daemon exit)"""
        r = subprocess.run([self.binary, "unmount", self.mnt, "--timeout", str(timeout)], env=self.env, timeout=timeout + 60,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            code = self.proc.wait(90)
        except subprocess.TimeoutExpired:
            code = None
        return r.returncode, r.stdout.decode(errors="replace"), code

    def teardown(self):
        try:
            self.lazy_unmount()
        except Exception:
            pass
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def write_profile(config_home, base):
    """What `drivefs auth login --api-url … --token-url …` would leave behind (as the mount tests do)."""
    conf = os.path.join(config_home, "drivefs")
    os.makedirs(os.path.join(conf, "tokens"), mode=0o700, exist_ok=True)
    os.chmod(conf, 0o700)
    profile = {"profiles": {"default": {"client_id": "drivefs-chaos", "client_secret": "not-secret",
                                        "api_url": base + "/", "token_url": base + "/token"}}}
    credential = {"kind": "oauth", "refresh_token": REFRESH_TOKEN, "client_id": "drivefs-chaos", "client_secret": "not-secret",
                  "scopes": ["https://www.googleapis.com/auth/drive"], "account": ACCOUNT, "token_url": base + "/token"}
    for path, value in ((os.path.join(conf, "config.json"), profile), (os.path.join(conf, "tokens", "default.json"), credential)):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)


# ---------------------------------------------------------------------------------------------
# The fault schedule
# ---------------------------------------------------------------------------------------------

def make_schedule(rng, duration, cache_full_possible):
    """[(start second, kind, params)], seeded: the same seed and duration give the same schedule.

    Every kind of fault comes at least once (kill -9, emulator restart, Drive unreachable, resets,
    403 and 429 bursts, a stall, 401s, and the cache disk full when possible), in a seeded order;
    longer runs add more, drawn at random, about every 20 s."""
    long_run = duration >= 600
    kinds = ["kill9", "restart", "outage", "resets", "burst403", "burst429", "stall", "token401"]
    if cache_full_possible:
        kinds.append("diskfull")
    rng.shuffle(kinds)
    extra = ["burst403", "burst429", "resets", "resets", "stall", "token401", "kill9", "restart"]
    # Long runs: Drive unreachable (30-60 s) and the disk full (20-40 s) once more every 10 minutes.
    kinds += ["outage"] * int(duration // 600) + (["diskfull"] * int(duration // 600) if cache_full_possible else [])
    # Long runs: a kill -9 about every 85 s (21 in the 30-minute run: issue 17 asks for at least 20)
    # and an emulator restart about every 5 minutes.
    if long_run:
        kinds += ["kill9"] * max(0, int(duration // 85) - kinds.count("kill9"))
        kinds += ["restart"] * max(0, int(duration // 300) - kinds.count("restart"))
    while len(kinds) < duration / 20:
        kinds.append(rng.choice(extra))

    def params_for(kind):
        params = {}
        if kind == "outage":
            params["seconds"] = round(rng.uniform(30, 60) if long_run else rng.uniform(5, 8), 1)
        elif kind == "diskfull":
            params["seconds"] = round(rng.uniform(20, 40) if long_run else rng.uniform(4, 6), 1)
        elif kind == "restart":
            params["signal"] = rng.choice(["TERM", "KILL"])
        elif kind == "stall":
            params["method"] = rng.choice(["files.create.upload", "files.update.upload", "files.get.media", "changes.list", "token", "*"])
            params["seconds"] = rng.randrange(5, 25)
            params["times"] = rng.randrange(1, 4)
        elif kind in ("burst403", "burst429", "token401"):
            params["method"] = rng.choice(["*", "*", "files.create.upload", "files.update.upload", "files.update", "files.get.media",
                                           "changes.list", "files.list"])
            params["times"] = rng.randrange(3, 30 if long_run else 12)
        elif kind == "resets":
            params["times"] = rng.randrange(1, 5)
            params["which"] = sorted(rng.sample(["upload-request", "upload-response", "update-response", "media"], rng.randrange(1, 4)))
        params["seed"] = rng.randrange(1 << 30)
        return params

    planned = [(kind, params_for(kind)) for kind in kinds]
    busy = sum(p["seconds"] for k, p in planned if k in ("outage", "diskfull")) + 3 * sum(k in ("kill9", "restart") for k, _ in planned)
    start, last = min(4.0, duration / 10), duration - min(8.0, duration / 6)
    slot = max(1.0, (last - start - busy) / max(1, len(planned)))
    events, t = [], start
    for kind, params in planned:
        events.append((round(t + rng.uniform(0, slot * 0.5), 1), kind, params))
        t += slot + (params["seconds"] if kind in ("outage", "diskfull") else 3 if kind in ("kill9", "restart") else 0)
    return events


# Drive's methods: what "*" means for the 403/429/401 bursts. The token endpoint is left out: Google's
# OAuth server answers in its own format (`{"error": ...}`), never with a Drive API rate-limit body.
DRIVE_METHODS = ["files.list", "files.get", "files.get.media", "files.create", "files.update", "files.delete",
                 "files.create.upload", "files.update.upload", "files.generateIds", "changes.list", "revisions.get.media"]


def rules_for(kind, params):
    times = params.get("times", 1)
    methods = [params.get("method")]
    if methods == ["*"]:
        methods, times = DRIVE_METHODS, max(1, times // 3)
    if kind == "burst403":
        return [{"method": m, "status": 403, "reason": "rateLimitExceeded", "times": times} for m in methods]
    if kind == "burst429":
        return [{"method": m, "status": 429, "times": times, "retryAfter": 1} for m in methods]
    if kind == "token401":
        return [{"method": m, "status": 401, "times": times} for m in methods]
    if kind == "stall":
        return [{"method": params["method"], "stallSeconds": params["seconds"], "times": times}]
    if kind == "resets":
        out = []
        for which in params["which"]:
            if which == "upload-request":
                out += [{"method": m, "resetAfterBytes": 32768, "phase": "request", "times": times}
                        for m in ("files.create.upload", "files.update.upload")]
            elif which == "upload-response":
                out += [{"method": m, "resetAfterBytes": 0, "phase": "response", "times": times}
                        for m in ("files.create.upload", "files.update.upload")]
            elif which == "update-response":
                out.append({"method": "files.update", "resetAfterBytes": 0, "phase": "response", "times": times})
            else:
                out.append({"method": "files.get.media", "resetAfterBytes": 16384, "phase": "response", "times": times})
        return out
    return []


BASELINE = [{"method": "*", "status": 503, "fraction": 0.05}, {"method": "*", "status": 500, "fraction": 0.05}]


class Chaos:
    def __init__(self, args):
        self.args = args
        self.stop = threading.Event()
        self.events_done = []
        self.kills = 0
        self.slow_kills = 0
        self.outage_seconds = 0.0
        self.diskfull = 0
        self.fault_errors = []
        self.tmpfs = None

    def install_baseline(self, seed):
        self.emulator.control("POST", "/__emulator/faults?replace=true", {"seed": seed, "faults": BASELINE})

    def fill_disk(self, seconds):
        filler = os.path.join(self.tmpfs, "filler")
        try:
            with open(filler, "wb") as f:
                block = b"\0" * (1 << 20)
                for _ in range(4096):
                    f.write(block)
                    f.flush()
        except OSError:
            pass
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stop.is_set():
            time.sleep(0.2)
        try:
            os.unlink(filler)
        except OSError:
            pass

    def fault_thread(self, schedule):
        start = time.monotonic()
        for at, kind, params in schedule:
            while time.monotonic() - start < at:
                if self.stop.wait(0.2):
                    return
            say(f"fault: {kind} {json.dumps(params, sort_keys=True)}")
            try:
                if kind == "kill9":
                    if not self.mount.kill():
                        self.slow_kills += 1
                    self.kills += 1
                    time.sleep(1)
                    self.mount.start()
                elif kind == "restart":
                    self.emulator.restart(signal.SIGKILL if params["signal"] == "KILL" else signal.SIGTERM)
                    self.install_baseline(params["seed"])
                elif kind == "outage":
                    t0 = time.monotonic()
                    self.emulator.restart(signal.SIGTERM, down=params["seconds"], stop_event=self.stop)
                    self.outage_seconds += time.monotonic() - t0
                    self.install_baseline(params["seed"])
                elif kind == "diskfull":
                    self.diskfull += 1
                    self.fill_disk(params["seconds"])
                else:
                    self.emulator.control("POST", "/__emulator/faults", {"seed": params["seed"], "faults": rules_for(kind, params)})
                self.events_done.append((round(time.monotonic() - start, 1), kind))
            except Exception as e:   # noqa: BLE001 -- a step of the schedule that failed is reported, not fatal
                self.fault_errors.append(f"{kind} at {at}s: {e}")
                say(f"fault: {kind} failed: {e}")
                if not self.emulator.alive():
                    try:
                        self.emulator.start()
                    except Exception as e2:   # noqa: BLE001
                        self.fault_errors.append(f"emulator start: {e2}")

    def second_thread(self, r, duration):
        """The second mount's life: up from a tenth to a fifth of the run in, down (`drivefs unmount`,
        which drains its uploads) for a while in the middle, up again until the end."""
        lock, up = self.gate
        root = os.path.join(self.second.mnt, f"w{self.args.processes}")
        plan = [(duration * (0.1 + 0.1 * r), "up"), (duration * (0.45 + 0.1 * r), "down"), (duration * (0.6 + 0.1 * r), "up")]
        start = time.monotonic()
        for at, what in plan:
            while time.monotonic() - start < at:
                if self.stop.wait(0.2):
                    return
            try:
                if what == "up":
                    self.second.start()
                    # Its worker's folder, made by the first mount before any fault, shows in its listing.
                    seen = time.monotonic() + 60
                    while not os.path.isdir(root) and time.monotonic() < seen:
                        time.sleep(0.2)
                    up.set()
                    say(f"second mount up at {self.second.mnt}" + ("" if os.path.isdir(root) else f" ({root} not seen yet)"))
                else:
                    with lock:
                        up.clear()
                        t0 = time.monotonic()
                        status, output, daemon = self.second.drivefs_unmount(timeout=300)
                    say(f"second mount down: drivefs unmount status {status}, daemon exit {daemon}, "
                        f"{time.monotonic() - t0:.1f} s {output.strip()}")
                    if status != 0 or daemon != 0:
                        self.fault_errors.append(f"the second mount's unmount at {at:.0f}s: status {status}, exit {daemon}")
                        self.second.teardown()
            except Exception as e:   # noqa: BLE001 -- reported with the faults, not fatal
                self.fault_errors.append(f"second mount {what} at {at:.0f}s: {e}")
                say(f"second mount {what} failed: {e}")

    # -----------------------------------------------------------------------------------------
    def run(self):
        a = self.args
        binary = os.path.join(a.bin, "drivefs")
        for b in (binary, os.path.join(a.bin, "drivefs-emulator")):
            if not os.access(b, os.X_OK):
                print(f"chaos: {b} is not built (swift build)", file=sys.stderr)
                return 2
        fusermount = shutil.which("fusermount3") or shutil.which("fusermount")
        if not fusermount or not os.path.exists("/dev/fuse"):
            print("chaos: FUSE is missing (/dev/fuse, fusermount3)", file=sys.stderr)
            return 2
        work = a.workdir
        os.makedirs(work, exist_ok=True)
        # drivefs's crash guard frees the mount of a daemon killed with -9 by writing fusectl's
        # abort (docs/chaos-findings.md, 9): a desktop system mounts fusectl at boot, a container
        # often does not. As root, the run mounts it when it is missing (and leaves it mounted).
        connections = "/sys/fs/fuse/connections"
        if os.geteuid() == 0 and os.path.isdir(connections) and not os.path.ismount(connections):
            r = subprocess.run(["mount", "-t", "fusectl", "fusectl", connections], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=20)
            say("mounted fusectl at " + connections if r.returncode == 0
                else f"fusectl not mounted ({r.stdout.decode().strip()}): a daemon killed with -9 may hold its mount")
        rng = random.Random(f"{a.seed}/schedule")
        cache_full_possible = os.geteuid() == 0 and not a.no_disk_full and shutil.which("mount") is not None
        if cache_full_possible:
            self.tmpfs = os.path.join(work, "cachefs")
            os.makedirs(self.tmpfs, exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=192m,mode=0700", "tmpfs", self.tmpfs],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
            if r.returncode != 0:
                say(f"no tmpfs for the cache ({r.stdout.decode().strip()}): no disk-full phase")
                self.tmpfs, cache_full_possible = None, False
        schedule = make_schedule(rng, a.duration, cache_full_possible)
        replay = (f"python3 {os.path.relpath(__file__)} --bin {a.bin} --seed {a.seed} --duration {a.duration} "
                  f"--processes {a.processes}" + (" --no-disk-full" if a.no_disk_full else "")
                  + ("" if a.second_mount else " --no-second-mount"))
        say(f"seed {a.seed}, {a.duration} s, {a.processes} processes, workdir {work}")
        say(f"replay: {replay}")
        say("schedule: " + "; ".join(f"{t}s {k}" + (f" {p['seconds']:.0f}s" if "seconds" in p and k in ('outage', 'diskfull') else "")
                                      for t, k, p in schedule))
        if not cache_full_possible:
            say("no cache-disk-full phase (needs root for a tmpfs)")

        self.emulator = Emulator(os.path.join(a.bin, "drivefs-emulator"), work, token_lifetime=10)
        self.emulator.start()
        say(f"emulator on {self.emulator.base} (10-second access tokens)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRIVEFS_")}
        for name in ("config", "cache", "state", "runtime"):
            os.makedirs(os.path.join(work, name), exist_ok=True)
        env.update(XDG_CONFIG_HOME=os.path.join(work, "config"), XDG_CACHE_HOME=os.path.join(work, "cache"),
                   XDG_STATE_HOME=os.path.join(work, "state"), DRIVEFS_RUNTIME_DIR=os.path.join(work, "runtime"))
        write_profile(env["XDG_CONFIG_HOME"], self.emulator.base)
        mnt = os.path.join(work, "mnt")
        os.makedirs(mnt, exist_ok=True)
        cache = os.path.join(self.tmpfs or work, "drivefs-cache")
        os.makedirs(cache, exist_ok=True)
        self.mount = Mount(binary, mnt, cache, env, work, fusermount)
        self.mount.start()
        say(f"mounted at {mnt}")

        # The second mount: the same account from another machine (its own configuration, token,
        # cache and state), up part of the time, with a worker of its own (the last index).
        self.second = None
        workers = a.processes
        if a.second_mount:
            env2 = dict(env)
            for name in ("config", "cache", "state", "runtime"):
                os.makedirs(os.path.join(work, "second", name), exist_ok=True)
            env2.update(XDG_CONFIG_HOME=os.path.join(work, "second", "config"), XDG_CACHE_HOME=os.path.join(work, "second", "cache"),
                        XDG_STATE_HOME=os.path.join(work, "second", "state"),
                        DRIVEFS_RUNTIME_DIR=os.path.join(work, "second", "runtime"))
            write_profile(env2["XDG_CONFIG_HOME"], self.emulator.base)
            mnt2 = os.path.join(work, "mnt2")
            os.makedirs(mnt2, exist_ok=True)
            cache2 = os.path.join(work, "second", "drivefs-cache")
            os.makedirs(cache2, exist_ok=True)
            self.second = Mount(binary, mnt2, cache2, env2, work, fusermount, log="drivefs-2.log")
            workers += 1

        # The workers' roots and the shared folder exist before any fault.
        for i in range(workers):
            os.mkdir(os.path.join(mnt, f"w{i}"))
        os.mkdir(os.path.join(mnt, SHARED))
        with open(os.path.join(work, "model-shared.json"), "w") as f:
            json.dump({"files": {}, "data": {}}, f)
        self.install_baseline(rng.randrange(1 << 30))

        ctx = multiprocessing.get_context("spawn")
        lock = ctx.Lock()
        deadline = time.time() + a.duration
        two = self.second is not None
        self.workers = [ctx.Process(target=worker_main, args=(i, a.seed, mnt, work, deadline, lock, not a.no_big_files, None, two),
                                    daemon=True)
                        for i in range(a.processes)]
        if two:
            self.gate = (ctx.Lock(), ctx.Event())
            self.workers.append(ctx.Process(target=worker_main, args=(a.processes, a.seed, self.second.mnt, work, deadline, lock,
                                                                      not a.no_big_files, self.gate, True), daemon=True))
        for w in self.workers:
            w.start()
        faults = threading.Thread(target=self.fault_thread, args=(schedule,), daemon=True)
        faults.start()
        second = None
        if two:
            second = threading.Thread(target=self.second_thread, args=(rng.random(), a.duration), daemon=True)
            second.start()

        # At the deadline: no new faults, the armed ones cleared (what is in flight finishes without them).
        while time.time() < deadline and any(w.is_alive() for w in self.workers):
            time.sleep(0.5)
        self.stop.set()
        faults.join(120)
        if second:
            second.join(400)
        try:
            self.emulator.control("DELETE", "/__emulator/faults")
        except Exception as e:   # noqa: BLE001 -- the emulator is started again below
            say(f"clearing the faults: {e}")
        say("deadline: faults off, waiting for the workers' last operations")
        # A call may retry for up to 5 minutes (docs/errors.md) and an operation makes several: generous.
        hung, end = [], deadline + 600
        for w in self.workers:
            w.join(max(1, end - time.time()))
            if w.is_alive():
                hung.append(w.name)
        say(f"workers done ({len(hung)} hung)")
        if hung:
            say(f"hung workers: {hung}; the mount's log tail:\n{self.mount.tail()}")
            for w in self.workers:
                if w.is_alive():
                    w.kill()
            # A worker stuck in a FUSE call: end the mount so that it returns, then mount again.
            self.mount.kill()

        # Faults off, Drive up, the mount up, then drivefs unmount: every upload lands.
        if not self.emulator.alive():
            self.emulator.start()
        self.emulator.control("DELETE", "/__emulator/faults")
        if not self.mount.alive():
            time.sleep(1)
            self.mount.start()
        t0 = time.monotonic()
        status, output, daemon = self.mount.drivefs_unmount(timeout=600)
        say(f"drivefs unmount: status {status}, daemon exit {daemon}, {time.monotonic() - t0:.1f} s {output.strip()}")
        unmount_ok = status == 0 and daemon == 0
        if not unmount_ok:
            say("tail of the mount's log:\n" + self.mount.tail())
            self.mount.teardown()
        if self.second:
            # Up again if it was down (what its journal holds goes up), then unmounted the same way.
            if not self.second.alive():
                self.second.start()
            t0 = time.monotonic()
            status, output, daemon = self.second.drivefs_unmount(timeout=600)
            say(f"drivefs unmount (second mount): status {status}, daemon exit {daemon}, {time.monotonic() - t0:.1f} s {output.strip()}")
            if status != 0 or daemon != 0:
                unmount_ok = False
                say("tail of the second mount's log:\n" + self.second.tail())
                self.second.teardown()
        self.emulator.collect_stats()
        return self.verdict(schedule, hung, unmount_ok, replay)

    # -----------------------------------------------------------------------------------------
    def verdict(self, schedule, hung, unmount_ok, replay):
        a, work = self.args, self.args.workdir
        files, dirs = {}, {}
        ops, failed, mismatches, crashed = 0, {}, [], []
        workers = a.processes + (1 if self.second else 0)
        for i in range(workers):
            path = os.path.join(work, f"model-w{i}.json")
            if not os.path.exists(path):
                crashed.append(f"w{i}")
                continue
            with open(path) as f:
                m = json.load(f)
            files.update(m["files"])
            dirs.update(m["dirs"])
            ops += m["ops"]
            mismatches += m["mismatches"]
            for k, v in m["failed"].items():
                failed[k] = failed.get(k, 0) + v
        with open(os.path.join(work, "model-shared.json")) as f:
            shared = json.load(f)
        files.update(shared["files"])
        history, last = shared.get("history", {}), shared.get("last", {})
        lax = {f"{SHARED}/{n}" for n in SHARED_NAMES} if self.second else set()
        for name in lax:
            files.pop(name, None)   # checked below against every version saved
        for i in range(workers):
            dirs.setdefault(f"w{i}", "present")
        dirs[SHARED] = "present"

        drive = Drive(self.emulator)
        root, items = drive.everything()
        by_id = {it["id"]: it for it in items}

        def full_path(it, depth=0):
            parents = it.get("parents") or []
            if not parents or depth > 20:
                return None
            if parents[0] == root:
                return it["name"]
            parent = by_id.get(parents[0])
            up = full_path(parent, depth + 1) if parent else None
            return None if up is None else f"{up}/{it['name']}"

        on_drive = {}      # path -> [(item, sha)]
        folders = {}       # path -> count
        orphans = []
        for it in items:
            p = full_path(it)
            if p is None:
                orphans.append(it["name"])
                continue
            if it["mimeType"] == FOLDER_MIME:
                folders[p] = folders.get(p, 0) + 1
            else:
                on_drive.setdefault(p, []).append(it)
        for p, its in on_drive.items():
            for it in its:
                it["sha"] = sha(drive.get(f"files/{it['id']}", {"alt": "media"}))

        problems = {"lost": [], "wrong": [], "duplicate": [], "unexpected": [], "conflicted copy": [], "folder": []}
        promised = maybe = 0
        for p, s in sorted(files.items()):
            there = on_drive.get(p, [])
            if s["k"] == "known":
                promised += 1
                if not there:
                    problems["lost"].append(f"{p} ({s['size']} B promised)")
                elif len(there) > 1:
                    problems["duplicate"].append(f"{p}: {len(there)} files")
                elif there[0]["sha"] != s["sha"]:
                    problems["wrong"].append(f"{p}: {there[0].get('size')} B on Drive, {s['size']} B promised")
            elif s["k"] == "absent":
                if there:
                    problems["unexpected"].append(f"{p}: removed or renamed away, but {len(there)} on Drive")
            else:
                maybe += 1
                if not there and not s["absent_ok"]:
                    problems["lost"].append(f"{p} (maybe-state, but absence not allowed)")
                if len(there) > 1 and not s["dup_ok"]:
                    problems["duplicate"].append(f"{p}: {len(there)} files")
                for it in there:
                    if not s["any"] and it["sha"] not in s["cands"]:
                        problems["wrong"].append(f"{p}: {it.get('size')} B on Drive, none of the {len(s['cands'])} allowed contents")
        # shared/ under two mounts: each name, and each conflicted copy of it, holds a version saved;
        # the last save, when it succeeded, is there; two files under a name only from two saves.
        allowed_copies = allowed_dups = 0
        for name in sorted(lax):
            saved = set(history.get(name, []))
            there = on_drive.get(name, [])
            copies = [(p, it) for p, its in on_drive.items() if CONFLICT.search(p) and CONFLICT.sub("", p) == name for it in its]
            for p, it in [(name, it) for it in there] + copies:
                if it["sha"] not in saved:
                    problems["wrong"].append(f"{p}: {it.get('size')} B on Drive, none of the {len(saved)} versions saved")
            if last.get(name) and last[name] not in {it["sha"] for it in there} | {it["sha"] for _, it in copies}:
                problems["lost"].append(f"{name}: its last save is neither under the name nor a conflicted copy of it")
            if len(there) > 1:
                allowed_dups += len(there) - 1
                if len(there) > len(history.get(name, [])):
                    problems["duplicate"].append(f"{name}: {len(there)} files, {len(history.get(name, []))} saves")
            allowed_copies += len(copies)
            for p, _ in copies:
                files[p] = {"k": "maybe", "absent_ok": True, "cands": [], "any": True, "dup_ok": True}
        if lax:
            say(f"shared/ through two mounts: {sum(len(history.get(n, [])) for n in lax)} saves, {allowed_copies} conflicted copies, "
                f"{allowed_dups} names held twice (two saves replacing one file at once)")
        for p, its in sorted(on_drive.items()):
            if p not in files and p not in lax:
                kind = "conflicted copy" if CONFLICT.search(p) else "unexpected"
                problems[kind].append(f"{p}: {len(its)} on Drive, not in the model")
        for d, s in sorted(dirs.items()):
            n = folders.get(d, 0)
            if s == "present" and n != 1:
                problems["folder"].append(f"{d}/: {n} folders on Drive, 1 promised")
            elif s == "absent" and n:
                problems["folder"].append(f"{d}/: removed, but {n} on Drive")
            elif s == "maybe" and n > 1:
                problems["folder"].append(f"{d}/: {n} folders on Drive")
        for d, n in sorted(folders.items()):
            if d not in dirs:
                problems["folder"].append(f"{d}/: {n} on Drive, not in the model")
        if orphans:
            problems["unexpected"] += [f"{n}: not reachable from My Drive" for n in orphans]

        injected = {k: v for k, v in self.emulator.answers.items() if k in ("500", "503", "401", "403", "429", "reset", "stall")}
        say(f"operations: {ops} ({sum(failed.values())} failed: {', '.join(f'{k} {v}' for k, v in sorted(failed.items())) or 'none'})")
        say(f"faults: {len(self.events_done)} of {len(schedule)} scheduled events done; kills {self.kills} ({self.slow_kills} exited only once the mount was detached), emulator restarts "
            f"{self.emulator.restarts} (an outage of {self.outage_seconds:.0f} s among them), cache disk full {self.diskfull}x; "
            f"fault answers injected {sum(injected.values())} ({', '.join(f'{k} {v}' for k, v in sorted(injected.items()))})")
        if self.fault_errors:
            say("fault steps that failed: " + "; ".join(self.fault_errors))
        say(f"checked {len(files)} files ({promised} promised, {maybe} maybe, {len(files) - promised - maybe} removed), "
            f"{len(dirs)} folders; Drive holds {sum(len(v) for v in on_drive.values())} files, {sum(folders.values())} folders")
        counts = {k: len(v) for k, v in problems.items()}
        say("lost {lost}, wrong {wrong}, duplicates {duplicate}, unexpected {unexpected}, conflicted copies {conflicted copy}, "
            "folders {folder}, ".format(**counts) + f"read mismatches {len(mismatches)}, hung workers {len(hung)}, crashed workers {len(crashed)}, "
            f"drivefs unmount {'ok' if unmount_ok else 'FAILED'}")
        for kind, lines in problems.items():
            for line in lines[:30]:
                say(f"  {kind}: {line}")
        for line in mismatches[:30]:
            say(f"  read mismatch: {line}")
        bad = sum(counts.values()) + len(mismatches) + len(hung) + len(crashed) + (0 if unmount_ok else 1)
        if bad:
            say(f"VERDICT: FAIL (seed {a.seed}); operations in {work}/ops-w*.log, the daemon's log in {work}/drivefs.log")
            say(f"replay: {replay}")
            return 1
        say(f"VERDICT: PASS (seed {a.seed})")
        return 0

    def cleanup(self):
        self.stop.set()
        for w in getattr(self, "workers", []):
            if w.is_alive():
                w.kill()
        if hasattr(self, "mount"):
            self.mount.teardown()
        if getattr(self, "second", None):
            self.second.teardown()
        if hasattr(self, "emulator"):
            self.emulator.stop()
        if self.tmpfs:
            for flags in ([], ["-l"]):
                with open("/proc/mounts") as f:
                    if not any(line.split(" ")[1] == self.tmpfs for line in f):
                        break
                subprocess.run(["umount"] + flags + [self.tmpfs], timeout=20, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.tmpfs = None


def main():
    parser = argparse.ArgumentParser(description="drivefs chaos run (docs/testing.md)")
    parser.add_argument("--bin", required=True, help="directory holding drivefs and drivefs-emulator")
    parser.add_argument("--seed", type=int, default=None, help="random when absent; always printed")
    parser.add_argument("--duration", type=float, default=120, help="seconds of random operations (default 120)")
    parser.add_argument("--workdir", default=None, help="kept after the run (default: a temporary directory, removed on PASS)")
    parser.add_argument("--processes", type=int, default=3, help="worker processes (default 3)")
    parser.add_argument("--no-disk-full", action="store_true", help="no cache-disk-full phase even as root")
    parser.add_argument("--no-big-files", action="store_true", help="no 2-9 MiB files")
    parser.add_argument("--no-second-mount", dest="second_mount", action="store_false",
                        help="no second mount of the account (by default one is up part of the time, with a worker of its own)")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 40)
    args.bin = os.path.abspath(args.bin)
    temporary = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="drivefs-chaos-"))
    chaos = Chaos(args)
    atexit.register(chaos.cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    code = 2
    try:
        code = chaos.run()
    except Exception as e:   # noqa: BLE001 -- the run could not be carried out: say so, clean up
        say(f"the run itself failed: {type(e).__name__}: {e}")
        if hasattr(chaos, "mount"):
            say("tail of the mount's log:\n" + chaos.mount.tail())
        say(f"VERDICT: ERROR (seed {args.seed}); workdir {args.workdir}")
        code = 2
    finally:
        chaos.cleanup()
    if code == 0 and temporary:
        shutil.rmtree(args.workdir, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
