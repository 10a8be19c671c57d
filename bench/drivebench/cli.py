"""The command line of bench/harness.py and the run: the data seeded, each profile's background lanes started,
drivefs and the reference measured on the host, rclone's side in its namespaces, then the reports.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import summary  # bench/summary.py: the results' prose, from the JSON

from .base import HarnessError, REPO, log
from .context import Context, exit_status, runs_of
from .data import WriteData, prepare_data, write_key
from .emulator import copy_state, emulator_behind_front, front_report, make_certificates
from .lane_process import finish_lane, inner_main, start_lane, stop_lane, wait_lanes_ready
from .lanes import BACKGROUND, LANE, workload_part
from .profiles import PROFILES
from .report import machine_description, write_docs, write_outputs
from .sizes import SIZES
from .systems import REFERENCES, SYSTEMS
from .systems.drivefs import Drivefs
from .systems.rclone import rclone_missing
from .workloads import backlog, index_quota
from .workloads.reads import run_mount_workloads, run_reference_workloads
from .workloads.scale import run_reference_scale, run_scale
from .workloads.writes import run_reference_writes, run_write_workloads


def conclude(args, contexts, reports):
    """The end of a run, once every profile's report is written: the summary, the goals and the losses table into --docs
    when it names a file, then the exit status (exit_status: 1 when a step of any profile recorded a failure, --docs or not)."""
    if args.docs and reports:
        write_docs(args.docs, "summary", summary.paragraph(reports))
        write_docs(args.docs, "goals", summary.goals(reports))
        write_docs(args.docs, "losses", summary.losses(reports))
    return exit_status(contexts)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "inner":
        sys.exit(inner_main(sys.argv[2]))
    ap = argparse.ArgumentParser(description="drivefs vs rclone mount vs the reference")
    ap.add_argument("--bin", required=True, help="directory of the drivefs and drivefs-emulator release binaries")
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--profiles", default="lan,wan")
    ap.add_argument("--out", default=None, help="results directory (default bench/results; smoke: .build/bench-smoke)")
    ap.add_argument("--docs", default=None, help="markdown file to write the tables into (default: none, OUT/*.md)")
    ap.add_argument("--data", default=os.path.join(REPO, ".build", "bench-data"), help="where seeded data is kept")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run (full: 1500, smoke: 300)")
    ap.add_argument("--no-rclone", action="store_true")
    ap.add_argument("--no-tuned", action="store_true", help="leave out rclone with --drive-pacer-min-sleep 10ms")
    ap.add_argument("--workloads", default=None, help="development: only these workloads (1,5,7 or 1a,3b)")
    ap.add_argument("--systems", default=None, help="development: only these systems (" + ",".join(SYSTEMS) + ")")
    args = ap.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w] if args.workloads else None
    args.systems = [x for x in args.systems.split(",") if x] if args.systems else None
    for x in args.systems or []:
        if x not in SYSTEMS:
            ap.error("unknown system %s" % x)
    args.bin = os.path.abspath(args.bin)
    size = SIZES[args.size]
    if args.budget is None:
        args.budget = size["deadline"]
    profiles = [p for p in args.profiles.split(",") if p]
    for p in profiles:
        if p not in PROFILES:
            ap.error("unknown profile %s" % p)
    out_dir = os.path.abspath(args.out or (os.path.join(REPO, "bench", "results") if args.size == "full"
                                           else os.path.join(REPO, ".build", "bench-smoke")))
    if args.workloads or args.systems:
        out_dir = os.path.abspath(args.out or os.path.join(REPO, ".build", "bench-dev"))
    if args.size == "smoke" or args.workloads or args.systems:
        # Smoke figures are not comparisons (CI runs it), nor are a development run's partial tables: never
        # into the published results, tables or charts.
        published = [os.path.join(REPO, "bench", "results"), os.path.join(REPO, "docs")]
        for path in [out_dir] + ([os.path.abspath(args.docs)] if args.docs else []):
            if any(path == p or path.startswith(p + os.sep) for p in published):
                ap.error("--size smoke, --workloads and --systems never write into %s (bench/results and docs/ are for full runs)" % path)
    os.makedirs(out_dir, exist_ok=True)
    for tool in ("drivefs", "drivefs-emulator"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            log("bench: %s is not built in %s" % (tool, args.bin))
            sys.exit(1)
    for tool in ("curl", "fusermount", "openssl"):
        if not shutil.which(tool) and not shutil.which(tool + "3"):
            log("bench: %s is needed" % tool)
            sys.exit(1)
    if not os.path.exists("/dev/fuse"):
        log("bench: /dev/fuse is missing: no mount can be measured")
        sys.exit(1)
    emulator_bin = os.path.join(args.bin, "drivefs-emulator")
    machine = machine_description(args)
    start_all = time.time()
    weights = [PROFILES[p]["weight"] for p in profiles]
    status = 0
    work_root = tempfile.mkdtemp(prefix="drivefs-bench-")
    cleanups = []

    def on_signal(signum, _frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    lanes = []  # background lanes: (profile, handle)
    try:
        psizes = {p: dict(size, **PROFILES[p]["overrides"].get(args.size, {})) for p in profiles}
        data = prepare_data(args, size, args.data, emulator_bin, write_sizes=[psizes[p] for p in profiles])
        (main_seed, main_state), (_, scale_state) = data["main"], data["scale"]
        # read (and the big file hashed) once, before any lane starts
        write_datas = {}
        for p in profiles:
            key = write_key(psizes[p])
            if key not in write_datas:
                big_md5 = next(iter(write_datas.values())).big_md5 if write_datas else None
                write_datas[key] = WriteData(data[key][0], os.path.join(main_seed, "big", "big.bin"), big_md5)
        # the profiles share what seeding left of the budget
        args.budget -= time.time() - start_all
        start_all = time.time()
        run_end = start_all + args.budget
        ctxs = {}
        for index, profile in enumerate(profiles):
            work = os.path.join(work_root, profile)
            os.makedirs(work)
            ctxs[profile] = ctx = Context(args, size, profile, work)
            # each profile may use its share of the budget, plus what the profiles before it left over
            ctx.deadline = start_all + args.budget * sum(weights[:index + 1]) / sum(weights)
            ctx.lanes = []
        missing = rclone_missing()
        rclone_systems = ["rclone"] + ([] if args.no_tuned else ["rclone-tuned"])
        # Each profile's background lanes start when that profile does, beside its foreground (see "Lanes"):
        # the lan profile's CPU-bound figures then share the machine with its own pacer-bound lane only.
        LANE.token_path = os.path.join(work_root, "token")
        drivefs_tls = os.path.join(work_root, "tls")  # drivefs's fronts: a CA of the run's, as rclone's namespaces make
        make_certificates(drivefs_tls)

        big_md5 = next(iter(write_datas.values())).big_md5

        def start_lanes(profile):
            ctx, started = ctxs[profile], []
            for lane in BACKGROUND.get(profile, []):
                namespace = lane.get("namespace", True)
                if namespace and (args.no_rclone or missing):
                    continue
                usable = rclone_systems if namespace else list(REFERENCES)
                pairs = {(w, sys_name) for sys_name in lane["systems"] if sys_name in usable
                         for w in lane["workloads"] if ctx.here(w, sys_name)}
                if not pairs:
                    continue
                ctx.skip |= pairs
                parts = [part for part in ("write", "main") if any(workload_part(w) == part for w, _ in pairs)]
                log("[%s] background lane %s: %s%s" % (profile, lane["name"], ", ".join(
                    "%s %s" % (sn, w) for w, sn in sorted(pairs)), ", private namespace" if namespace else ""))
                handle = start_lane(ctx, args, ctx.work, data, parts, lane["name"], True,
                                    sorted({sn for _, sn in pairs}), only=pairs, deadline=run_end, namespace=namespace,
                                    token=LANE.token_path, big_md5=big_md5)
                lanes.append((profile, handle))
                started.append(handle)
                LANE.books = LANE.books + [handle["books"]]
                cleanups.append(lambda h=handle: stop_lane(h))
            wait_lanes_ready(started)
        statuses = {}
        for index, profile in enumerate(profiles):
            ctx, work = ctxs[profile], ctxs[profile].work
            start_lanes(profile)
            log("== profile %s (%s); %s size; budget %.0f s" % (profile, PROFILES[profile]["note"], args.size,
                                                                ctx.deadline - time.time()))
            drivefs = Drivefs(work, os.path.join(args.bin, "drivefs"))
            cleanups.append(drivefs.unmount)

            def drivefs_emulator(state, part, limits=None):
                """drivefs's emulator for a part, behind its own TLS front (as rclone's is behind one)."""
                shaping = dict(PROFILES[profile], **({"limits": limits} if limits else {}))
                emulator = emulator_behind_front(emulator_bin, state, os.path.join(work, "emulator-%s.log" % part),
                                                 shaping, drivefs_tls)
                cleanups.append(emulator.stop)
                emulator.part, emulator.runs_before = part, runs_of(ctx, ["drivefs"])
                return emulator

            def drivefs_done(emulator):
                """After drivefs's last unmount on an emulator: what its front relayed, then the emulator stopped."""
                try:
                    drivefs.unmount()
                    front_report(ctx, emulator, "drivefs's", emulator.part, runs_of(ctx, ["drivefs"]) - emulator.runs_before)
                except HarnessError as e:
                    ctx.failures.append("drivefs side (%s): %s" % (emulator.part, e))
                    log("FAIL %s" % e)
                finally:
                    emulator.stop()
            # drivefs and the reference, on the host's loopback; workload 11 on the scale drive under Google's limits.
            for part, state, limits in (("main", main_state, None), ("scale", scale_state, None),
                                        ("quota", scale_state, "google")):
                emulator = drivefs_emulator(state, part, limits)
                try:
                    drivefs.login(emulator)
                    if part == "main":
                        run_mount_workloads(ctx, emulator, drivefs, main_seed)
                        run_reference_workloads(ctx, emulator, main_seed)
                    elif part == "scale":
                        run_scale(ctx, emulator, drivefs)
                        run_reference_scale(ctx, emulator)
                    else:
                        index_quota.run_index_quota(ctx, emulator, drivefs)
                        index_quota.note_reference(ctx)
                except HarnessError as e:
                    ctx.failures.append("drivefs side (%s): %s" % (part, e))
                    log("FAIL %s" % e)
                finally:
                    drivefs_done(emulator)
            # rclone's foreground, in its namespaces: the reads, then (below) the writes.
            fg = dict(token=LANE.token_path, books=LANE.books, skip=ctx.skip, big_md5=big_md5)
            if args.no_rclone:
                statuses[profile] = ["left out (--no-rclone)"]
            elif missing:
                statuses[profile] = [missing]
            else:
                log("[%s] rclone side: private namespace, TLS front on 127.0.0.1:443" % profile)
                handle = start_lane(ctx, args, work, data, ["main", "scale", "quota"], "reads", False, rclone_systems, **fg)
                statuses[profile] = [finish_lane(handle)[0]]
            # The writes last (what the budget cuts first), on an empty drive of their own: drivefs and the
            # reference, then rclone.
            write_state = os.path.join(work, "write-state")
            os.makedirs(write_state)
            emulator = drivefs_emulator(write_state, "write")
            try:
                drivefs.login(emulator)
                write_data = write_datas[write_key(ctx.size)]
                run_write_workloads(ctx, emulator, drivefs, write_data)
                run_reference_writes(ctx, emulator, write_data, work)
            except HarnessError as e:
                ctx.failures.append("drivefs side (writes): %s" % e)
                log("FAIL %s" % e)
            finally:
                drivefs_done(emulator)
                shutil.rmtree(write_state, ignore_errors=True)
            # Workload 9 on a copy of the seeded drive (thrown away after: its backlog is not waited for).
            backlog_state = os.path.join(work, "backlog-state")
            copy_state(main_state, backlog_state)
            emulator = drivefs_emulator(backlog_state, "backlog")
            try:
                drivefs.login(emulator)
                backlog.run_backlog(ctx, emulator, drivefs, write_datas[write_key(ctx.size)], main_seed)
            except HarnessError as e:
                ctx.failures.append("drivefs side (backlog): %s" % e)
                log("FAIL %s" % e)
            finally:
                drivefs_done(emulator)
                shutil.rmtree(backlog_state, ignore_errors=True)
            if not args.no_rclone and not missing:
                log("[%s] rclone side, writes: private namespace, TLS front on 127.0.0.1:443" % profile)
                handle = start_lane(ctx, args, work, data, ["write", "backlog"], "writes", False, rclone_systems, **fg)
                statuses[profile].append(finish_lane(handle)[0])
        # The background lanes, once the foreground is done; then every profile's report.
        for profile, handle in lanes:
            lane_status, lane_summary = finish_lane(handle)
            statuses[profile].append(lane_status)
            if lane_summary:
                lane_summary["measured"] = handle["only"]
                ctxs[profile].lanes.append(lane_summary)
                log("[%s] background lane %s: %s, %.0f s, CPU %.1f s" % (
                    profile, lane_summary["name"], lane_status, lane_summary["wall"], lane_summary["cpu"] or 0.0))
        reports = []
        for profile in profiles:
            ctx = ctxs[profile]
            got = statuses.get(profile) or ["ok"]
            rclone_status = got[0] if len(set(got)) == 1 else "partly failed"
            if rclone_status not in ("ok", "left out (--no-rclone)"):
                log("[%s] rclone: %s" % (profile, rclone_status))
            reports.append(write_outputs(ctx, args, machine, rclone_status, out_dir))
        status = conclude(args, [ctxs[profile] for profile in profiles], reports)
    except KeyboardInterrupt:
        log("bench: interrupted")
        status = 130
    except HarnessError as e:
        log("FAIL " + str(e))
        status = 1
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception as e:  # cleanup must go on
                log("cleanup: %s" % e)
        leftover = [line.split()[1] for line in open("/proc/self/mounts") if work_root in line]
        for path in leftover:
            subprocess.run(["fusermount", "-uz", path], timeout=15, capture_output=True)
        shutil.rmtree(work_root, ignore_errors=True)
    log("bench: done in %.0f s%s" % (time.time() - start_all, "" if status == 0 else " (exit %d)" % status))
    sys.exit(status)
