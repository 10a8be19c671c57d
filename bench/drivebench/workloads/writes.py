"""Workloads 5-7: cp -r of small files, one big file, tar x of a source tree read back, each until on Drive; on a
mount system and on the reference (curl multipart uploads).
"""
import json
import os
import re
import shutil
import time

from .. import quota
from ..base import HarnessError, log, now, run
from ..drive_api import BOUNDARY, curl_transfers, FOLDER, api_child, api_delete, api_get, curl_posts, generate_ids, multipart, verify_on_drive
from ..fmt import human_bytes, units_note
from ..lanes import LANE
from ..measure import measure, wait_landed
from . import backlog, save_loop
from .writable import NOT_WRITABLE, NotWritable, probe_writable, run_tool


def read_back(top, manifest, what):
    files, _ = manifest
    for rel, data in files.items():
        with open(os.path.join(top, rel), "rb") as f:
            if f.read() != data:
                raise HarnessError("%s: %s read back differs" % (what, rel))


def run_write_workloads(ctx, emulator, system, data):
    """Workloads 5-7 on a mount system: each run on a fresh cache and mount, into a folder of its own on the
    write emulator's empty drive; the clock stops once the emulator holds every file (5, 6), or once the tree
    is read back (7, whose landing time is kept beside it)."""
    size, name = ctx.size, system.name
    runs, bound = size["write_runs"], size["land_max"]
    root = api_get(emulator, "drive/v3/files/root", dict(fields="id"))["id"]
    n5 = len(data.files[0])

    def progress(wid, i, r):
        extra = "  on Drive at %.3f s" % r["landed"] if r.get("landed") is not None else ""
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s%s%s" % (
            ctx.profile_name, wid, name, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r), extra,
            "  (%s)" % LANE.name if LANE.background else ""))

    plan = []
    for i in range(runs):
        plan += [(wid, i) for wid in ("5", "6", "7", "10") if ctx.here(wid, name)]
    for wid, i in plan:
        if ctx.out_of_time():
            ctx.note(wid, name, "skipped: out of the time budget")
            continue
        if wid == "10":
            try:
                save_loop.run_save_loop(ctx, emulator, system, i)
            except NotWritable as e:
                ctx.note("10", name, str(e))
            continue
        cache = system.fresh_cache()
        system.mount(cache, emulator)
        try:
            probe_writable(system)
            u0 = emulator.usage()
            if quota.limits_writes(ctx.profile.get("limits")):
                time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)  # every run starts with the write budget full
            if wid == "5":
                target = "w5-%s-%d" % (name, i)

                def cp_files():
                    run_tool(["cp", "-r", data.files_dir, os.path.join(system.mnt, target)], 1800)
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + n5, u0["bytes"] + n5 * 4096, bound, "%s: workload 5" % name)
                r = measure(emulator, system, cp_files, wid)
                verify_on_drive(emulator, root, target, (data.files[0], []), "%s: workload 5" % name)
            elif wid == "6":
                target = "w6-%s-%d.bin" % (name, i)

                def cp_big():
                    run_tool(["cp", data.big, os.path.join(system.mnt, target)], 1800)
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + 1, u0["bytes"] + data.big_size, bound, "%s: workload 6" % name)
                r = measure(emulator, system, cp_big, wid)
                r["mib_per_s"] = data.big_size / 1048576 / r["wall"]
                landed = api_child(emulator, root, target)
                if landed.get("md5Checksum") != data.big_md5:
                    raise HarnessError("%s: the 1 GiB file on Drive has md5 %s" % (name, landed.get("md5Checksum")))
                api_delete(emulator, landed["id"])  # 1 GiB per run is not kept
            else:
                target = "w7-%s-%d" % (name, i)
                top = os.path.join(system.mnt, target)

                def tar_then_read():
                    t0 = now()
                    os.mkdir(top)
                    run_tool(["tar", "xf", data.tar, "-C", top], 1800)
                    read_back(top, data.tree, "%s: workload 7" % name)
                    user = now() - t0
                    system.finish_writes()
                    wait_landed(emulator, u0["files"] + len(data.tree[0]), u0["bytes"] + data.tree_bytes(), bound,
                                "%s: workload 7" % name)
                    return dict(wall=user, landed=now() - t0)
                try:
                    r = measure(emulator, system, tar_then_read, wid)
                except OSError as e:
                    if e.errno in NOT_WRITABLE:
                        raise NotWritable("not writable yet (mkdir: %s)" % NOT_WRITABLE[e.errno])
                    raise
                verify_on_drive(emulator, root, target, data.tree, "%s: workload 7" % name)
            ctx.add(wid, name, r)
            progress(wid, i, r)
        except NotWritable as e:
            for w in ("5", "6", "7", "10"):
                if ctx.here(w, name):
                    ctx.note(w, name, str(e))
            log("[%s] 5-7 %-12s %s" % (ctx.profile_name, name, e))
            return
        finally:
            system.unmount()
            system.drop_cache(cache)


def run_reference_writes(ctx, emulator, data, work):
    size = ctx.size
    runs, streams = size["write_runs"], size["par_streams"]
    # Under the write limit the reference keeps under it: a little below the rate (a write refused would fail it).
    rate = int(quota.WRITE_RATE * 60 * 0.97) if quota.limits_writes(ctx.profile.get("limits")) else None
    root = api_get(emulator, "drive/v3/files/root", dict(fields="id"))["id"]
    bodies = os.path.join(work, "reference-bodies")
    upload = "upload/drive/v3/files?uploadType=multipart&fields=id"
    mp = "multipart/related; boundary=" + BOUNDARY

    def progress(wid, system, i, r):
        log("[%s] %-3s %-12s run %d/%d: %8.3f s  %5d requests  %s" % (
            ctx.profile_name, wid, system, i + 1, runs, r["wall"], sum(r["requests"].values()), human_bytes(r["bytes"]) + units_note(r)))

    def write_body(name, content):
        path = os.path.join(bodies, name)
        with open(path, "wb") as f:
            f.write(content)
        return path

    for i in range(runs):
        # 5: a folder, then every file into it.
        for system, parallel in (("reference-1", False), ("reference-par", True)):
            if not ctx.here("5", system):
                continue
            if ctx.out_of_time():
                ctx.note("5", system, "skipped: out of the time budget")
                continue
            shutil.rmtree(bodies, ignore_errors=True)
            os.makedirs(bodies)
            folder = generate_ids(emulator, 1)[0]
            target = "w5-%s-%d" % (system, i)
            head = [("drive/v3/files?fields=id", "application/json",
                     write_body("folder.json", json.dumps(dict(id=folder, name=target, mimeType=FOLDER, parents=[root])).encode()))]
            posts = [(upload, mp, write_body("f%d" % k, multipart(dict(name=rel, parents=[folder]), content)))
                     for k, (rel, content) in enumerate(sorted(data.files[0].items()))]

            def upload_files():
                if rate:  # one paced stream for every write
                    curl_posts(emulator, head + posts, False, 1, rate=rate)
                    return
                curl_posts(emulator, head, False, 1)
                curl_posts(emulator, posts, parallel, streams)
            if rate:
                time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)  # the write budget full again, as for every client
            r = measure(emulator, None, upload_files, "5")
            verify_on_drive(emulator, root, target, (data.files[0], []), "%s: workload 5" % system)
            ctx.add("5", system, r)
            progress("5", system, i, r)
        # 6: a resumable session, then the whole file in one PUT (one file: one stream).
        if not ctx.here("6", "reference-1"):
            pass
        elif ctx.out_of_time():
            ctx.note("6", "reference-1", "skipped: out of the time budget")
        else:
            target = "w6-reference-%d.bin" % i

            def upload_big():
                head = os.path.join(work, "reference-session.head")
                run(["curl", "-s", "-f", "-D", head, "-o", "/dev/null", "-H", "Authorization: Bearer " + emulator.token,
                     "-H", "Content-Type: application/json", "-H", "X-Upload-Content-Length: %d" % data.big_size,
                     "--data-binary", json.dumps(dict(name=target, parents=[root])),
                     emulator.url + "upload/drive/v3/files?uploadType=resumable"], 120)
                location = emulator.plain(re.search(r"(?im)^location:\s*(\S+)", open(head).read()).group(1))
                run(["curl", "-s", "-f", "-o", "/dev/null", "-T", data.big, location], 1800)
            r = measure(emulator, None, upload_big, "6")
            r["mib_per_s"] = data.big_size / 1048576 / r["wall"]
            landed = api_child(emulator, root, target)
            if landed.get("md5Checksum") != data.big_md5:
                raise HarnessError("reference: the big file on Drive has md5 %s" % landed.get("md5Checksum"))
            api_delete(emulator, landed["id"])
            ctx.add("6", "reference-1", r)
            progress("6", "reference-1", i, r)
        # 7: the folders level by level, every file, then every file read back; all at once within a step.
        if not ctx.here("7", "reference-par"):
            continue
        if ctx.out_of_time():
            ctx.note("7", "reference-par", "skipped: out of the time budget")
            continue
        shutil.rmtree(bodies, ignore_errors=True)
        os.makedirs(bodies)
        files, folders = data.tree
        target = "w7-reference-%d" % i
        ids = generate_ids(emulator, 1 + len(folders) + len(files))
        folder_ids = {"": ids[0]}
        levels = [[("drive/v3/files?fields=id", "application/json",
                    write_body("top.json", json.dumps(dict(id=ids[0], name=target, mimeType=FOLDER, parents=[root])).encode()))]]
        for k, rel in enumerate(folders):
            folder_ids[rel] = ids[1 + k]
            depth = rel.count(os.sep) + 1
            while len(levels) <= depth:
                levels.append([])
            meta = dict(id=ids[1 + k], name=os.path.basename(rel), mimeType=FOLDER, parents=[folder_ids[os.path.dirname(rel)]])
            levels[depth].append(("drive/v3/files?fields=id", "application/json", write_body("d%d.json" % k, json.dumps(meta).encode())))
        file_ids = ids[1 + len(folders):]
        posts = [(upload, mp, write_body("f%d" % k, multipart(dict(id=file_ids[k], name=os.path.basename(rel),
                                                                  parents=[folder_ids[os.path.dirname(rel)]]), content)))
                 for k, (rel, content) in enumerate(sorted(files.items()))]
        ranges = [("%sdrive/v3/files/%s?alt=media" % (emulator.url, fid)) for fid in file_ids]

        def upload_then_read():
            t0 = now()
            if rate:  # one paced stream for every write, the levels in order
                curl_posts(emulator, [p for level in levels for p in level] + posts, False, 1, rate=rate)
            else:
                for level in levels:
                    curl_posts(emulator, level, True, streams)
                curl_posts(emulator, posts, True, streams)
            landed = now() - t0
            curl_transfers(emulator, [(url, []) for url in ranges], parallel=streams, name="reads")
            return dict(landed=landed)
        if rate:
            time.sleep(quota.WRITE_BURST / quota.WRITE_RATE)
        r = measure(emulator, None, upload_then_read, "7")
        verify_on_drive(emulator, root, target, data.tree, "reference-par: workload 7")
        ctx.add("7", "reference-par", r)
        progress("7", "reference-par", i, r)
    shutil.rmtree(bodies, ignore_errors=True)
    ctx.note("6", "reference-par", "n/a (one file: one stream)")
    ctx.note("7", "reference-1", "n/a (parallel only: one stream is one round trip per file and folder)")
    save_loop.note_reference(ctx)
    backlog.note_reference(ctx)
