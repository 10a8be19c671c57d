"""A lane as a process: the `inner` subcommand of bench/harness.py (inner_main: rclone's side in a private mount +
network + PID namespace, or a lane of the reference's on the host), and the parent's side (start_lane,
wait_lanes_ready, finish_lane, which merges a lane's results into its Context).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from .base import HARNESS, HarnessError, T0, log, now, run
from .context import Context, runs_of
from .data import WriteData, write_key
from .emulator import Emulator, TlsFront, copy_state, front_report, make_certificates
from .lanes import LANE, LaneBooks, measurement_token
from .profiles import PROFILES
from .sizes import SIZES
from .systems import REFERENCES
from .systems import rclone
from .workloads import backlog, index_quota
from .workloads.reads import run_mount_workloads, run_reference_workloads
from .workloads.scale import run_scale
from .workloads.writes import run_reference_writes, run_write_workloads


def inner_main(config_path):
    """PID 1 of a private mount + network + PID namespace: lo up, Google's names on loopback, a CA of
    our own, the emulator on 127.0.0.1, TLS on 127.0.0.1:443; rclone's workloads (cfg["parts"]: write 5-7,
    main 1-4, scale 8, in that order), those of them the lane keeps (cfg["only"] or all but cfg["skip"]).
    A background lane's emulator serves a copy of the state (the foreground's may serve the original at the
    same time) and the lane keeps its books (LaneBooks)."""
    with open(config_path) as f:
        cfg = json.load(f)
    lane_t0 = time.time()
    LANE.name, LANE.background, LANE.token_path = cfg["lane"], cfg["background"], cfg["token"]
    LANE.books = [] if cfg["background"] else cfg["books"]
    books = LaneBooks(cfg["books_path"]) if cfg["background"] else None
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        os.environ.pop(var, None)
    work = cfg["work"]
    tls = os.path.join(work, "tls")
    # A background lane's set-up (keys, the state copy, the write data, its first emulator) holds the measurement
    # token, and the foreground waits for its `ready` file before it measures anything.
    with measurement_token(cfg["background"]):
        if cfg["namespace"]:
            namespace_setup(work, tls)
    return lane_measure(cfg, work, lane_t0, books)


def namespace_setup(work, tls):
    """lo up, a CA of our own and a certificate for Google's names, which a hosts file bind-mounted over
    /etc/hosts puts on loopback."""
    run(["ip", "link", "set", "lo", "up"], 30)
    make_certificates(tls)
    with open(work + "/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 www.googleapis.com oauth2.googleapis.com accounts.google.com\n")
    run(["mount", "--bind", work + "/hosts", "/etc/hosts"], 30)


def lane_measure(cfg, work, lane_t0, books):
    """A lane's workloads on its own emulator: rclone's behind the TLS front (in the namespace), or the reference's
    (curl) on the host's loopback."""
    tls = os.path.join(work, "tls")
    args = argparse.Namespace(**cfg["args"])
    ctx = Context(args, SIZES[args.size], cfg["profile"], work)
    ctx.deadline = cfg["deadline"]
    ctx.only = None if cfg["only"] is None else {tuple(p) for p in cfg["only"]}
    ctx.skip = {tuple(p) for p in cfg["skip"]}
    systems = rclone.variants(work, cfg["systems"])
    refs = [s for s in REFERENCES if s in cfg["systems"]]
    main_state = cfg["main_state"]
    data = None
    with measurement_token(cfg["background"]):
        if cfg["background"] and "main" in cfg["parts"]:
            main_state = os.path.join(work, "main-state")
            shutil.rmtree(main_state, ignore_errors=True)
            copy_state(cfg["main_state"], main_state)
        if "write" in cfg["parts"] or "backlog" in cfg["parts"]:
            data = WriteData(cfg["write_seed"], os.path.join(cfg["main_seed"], "big", "big.bin"), cfg.get("big_md5"))
    with open(cfg["ready"], "w") as f:
        f.write("ready\n")
    emulator = None
    names = [x.name for x in systems]  # the runs of these on an emulator say whether its front must have relayed some

    def start(state, part, limits=None):
        with measurement_token(cfg["background"]):  # the emulator loads its state: CPU the foreground must not share
            start_emulator(state, part, limits)

    def start_emulator(state, part, limits=None):
        nonlocal emulator
        profile = dict(PROFILES[cfg["profile"]], **({"limits": limits} if limits else {}))
        emulator = Emulator(cfg["emulator"], state, os.path.join(work, "emulator.log"), profile=profile,
                            public_url="https://www.googleapis.com" if cfg["namespace"] else None)
        if not cfg["namespace"]:
            return
        try:
            emulator.put_front(TlsFront(tls, "127.0.0.1:443", emulator.port, os.path.join(work, "front.log")),
                               "https://www.googleapis.com/", tls + "/ca.pem")
        except HarnessError:
            stop()
            raise
        emulator.part, emulator.runs_before = part, runs_of(ctx, names)

    def stop():
        nonlocal emulator
        if emulator:
            try:
                for system in systems:
                    system.unmount()  # the front's counters are whole once the daemons' connections are closed
                if emulator.front:
                    front_report(ctx, emulator, "rclone's", emulator.part, runs_of(ctx, names) - emulator.runs_before)
            finally:
                emulator.stop()
                emulator = None

    status = 0
    try:
        if "write" in cfg["parts"]:
            write_state = os.path.join(work, "write-state")
            shutil.rmtree(write_state, ignore_errors=True)
            os.makedirs(write_state)
            start(write_state, "write")
            try:
                for system in systems:
                    run_write_workloads(ctx, emulator, system, data)
                if refs:
                    run_reference_writes(ctx, emulator, data, work)
            finally:
                stop()
                shutil.rmtree(write_state, ignore_errors=True)
        if "backlog" in cfg["parts"]:
            backlog_state = os.path.join(work, "backlog-state")
            shutil.rmtree(backlog_state, ignore_errors=True)
            with measurement_token(cfg["background"]):
                copy_state(cfg["main_state"], backlog_state)
            start(backlog_state, "backlog")
            try:
                for system in systems:
                    backlog.run_backlog(ctx, emulator, system, data, cfg["main_seed"])
            finally:
                stop()
                shutil.rmtree(backlog_state, ignore_errors=True)
        if "main" in cfg["parts"]:
            start(main_state, "main")
            try:
                for system in systems:
                    run_mount_workloads(ctx, emulator, system, cfg["main_seed"])
                if refs:
                    run_reference_workloads(ctx, emulator, cfg["main_seed"])
            finally:
                stop()
        if "scale" in cfg["parts"]:
            start(cfg["scale_state"], "scale")
            try:
                for system in systems:
                    run_scale(ctx, emulator, system)
            finally:
                stop()
        if "quota" in cfg["parts"]:
            start(cfg["scale_state"], "quota", limits="google")
            try:
                for system in systems:
                    index_quota.run_index_quota(ctx, emulator, system)
            finally:
                stop()
    except HarnessError as e:
        ctx.failures.append("lane %s: %s" % (cfg["lane"], e))
        log("FAIL " + str(e))
        status = 1
    finally:
        for system in systems:
            system.unmount()
        stop()
        if main_state != cfg["main_state"]:
            shutil.rmtree(main_state, ignore_errors=True)
        lane = dict(name=cfg["lane"], background=cfg["background"], wall=time.time() - lane_t0,
                    cpu=books.stop() if books else None)
        with open(cfg["result"], "w") as f:
            json.dump(dict(results=ctx.results, notes=ctx.notes, failures=ctx.failures, lane=lane, fronts=ctx.fronts), f)
    return status


def start_lane(ctx, args, work, data, parts, lane, background, systems, only=None, skip=(), deadline=None,
               token=None, books=(), namespace=True, big_md5=None):
    """Starts inner_main as a process of its own: under unshare for rclone's side, else on the host (a lane
    of the reference's); finish_lane collects it."""
    inner_work = os.path.join(work, "lane-" + lane)
    os.makedirs(inner_work, exist_ok=True)
    result = os.path.join(inner_work, "result.json")
    for old in (result, os.path.join(inner_work, "ready")):
        if os.path.exists(old):
            os.unlink(old)
    (main_seed, main_state), (_, scale_state), (write_seed, _) = data["main"], data["scale"], data[write_key(ctx.size)]
    deadline = deadline or ctx.deadline
    cfg = dict(work=inner_work, emulator=os.path.join(args.bin, "drivefs-emulator"), profile=ctx.profile_name,
               main_state=main_state, main_seed=main_seed, scale_state=scale_state, write_seed=write_seed, parts=parts,
               result=result, deadline=deadline, lane=lane, background=background, systems=systems,
               only=None if only is None else sorted(only), skip=sorted(skip), token=token, books=list(books),
               books_path=os.path.join(inner_work, "books"), namespace=namespace, big_md5=big_md5,
               ready=os.path.join(inner_work, "ready"),
               args=dict(size=args.size, bin=args.bin, budget=args.budget, workloads=args.workloads, systems=args.systems))
    cfg_path = os.path.join(inner_work, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    cmd = ["unshare"] + userns + ["--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc",
                                  "--propagation", "private", sys.executable, HARNESS, "inner", cfg_path]
    if not namespace:
        cmd = [sys.executable, HARNESS, "inner", cfg_path]
    env = dict(os.environ, DRIVEFS_BENCH_T0=repr(T0))
    proc = subprocess.Popen(cmd, start_new_session=True, env=env)
    return dict(proc=proc, result=result, lane=lane, deadline=deadline, books=cfg["books_path"], ctx=ctx,
                only=cfg["only"], ready=cfg["ready"])


def wait_lanes_ready(handles, bound=900.0):
    """The foreground waits until every lane has set itself up (its `ready` file) or has ended, bounded."""
    limit = now() + bound
    for handle in handles:
        while not os.path.exists(handle["ready"]) and handle["proc"].poll() is None:
            if now() > limit:
                raise HarnessError("lane %s: not set up within %.0f s" % (handle["lane"], bound))
            time.sleep(0.1)


def stop_lane(handle):
    """Kills a lane that is still running (its namespace goes with its first process)."""
    proc = handle["proc"]
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def finish_lane(handle, grace=240):
    """Waits for the lane (until its deadline plus grace, then kills it); merges its results into its ctx.
    Returns (status string, the lane's summary or None)."""
    ctx, proc = handle["ctx"], handle["proc"]
    try:
        proc.wait(max(60, handle["deadline"] - time.time() + grace))
    except subprocess.TimeoutExpired:
        stop_lane(handle)
        ctx.failures.append("lane %s: timed out" % handle["lane"])
    if not os.path.exists(handle["result"]):
        ctx.failures.append("lane %s: no result (exit %s)" % (handle["lane"], proc.returncode))
        return "failed to run (see the log above)", None
    with open(handle["result"]) as f:
        inner = json.load(f)
    for wid, systems in inner["results"].items():
        for system, runs in systems.items():
            ctx.results.setdefault(wid, {}).setdefault(system, []).extend(runs)
    for wid, systems in inner["notes"].items():
        for system, note in systems.items():
            ctx.note(wid, system, note)
    ctx.failures += inner["failures"]
    ctx.fronts += inner.get("fronts", [])
    return ("ok" if not inner["failures"] else "partly failed"), inner.get("lane")
