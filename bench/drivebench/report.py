"""The report: a profile's runs summarized into JSON, the markdown tables (written between the `bench:PROFILE`
markers of --docs, or beside the JSON), the ratio chart (bench/chart.py, with the bench venv's matplotlib) and
the machine's description.
"""
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys

from . import quota
from .base import BENCH, REPO, log
from .data import src_file_count
from .fmt import human_bytes, human_kib, human_s
from .systems import REFERENCES, SYSTEMS, TITLES
from .systems.mount import CACHE_SIZE, DIR_CACHE, POLL_INTERVAL
from .systems.rclone import RCLONE, RCLONE_TUNED
from .workloads import index_quota
from .workloads.catalogue import NO_RATIOS, WORKLOADS, workload_names


def summarize(runs):
    walls = [r["wall"] for r in runs]
    med = statistics.median(walls)
    # the run whose wall time is the median (or the one just above) stands for the counters
    rep = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    rss = [r["rss_kib"] for r in runs if r.get("rss_kib") is not None]
    cpu = [r["cpu"] for r in runs if r.get("cpu") is not None]
    landed = [r["landed"] for r in runs if r.get("landed") is not None]
    return dict(median=med, min=min(walls), max=max(walls), runs=len(runs), requests=rep["requests"],
                total_requests=sum(rep["requests"].values()), bytes=rep["bytes"], refused=rep.get("refused", 0),
                units=rep.get("units"), writes=rep.get("writes"), writes_refused=rep.get("writes_refused"),
                quota_refused=rep.get("quota_refused"),
                rss_kib=max(rss) if rss else None, cpu=statistics.median(cpu) if cpu else None,
                mib_per_s=rep.get("mib_per_s"), landed=statistics.median(landed) if landed else None,
                p50=rep.get("p50"), by_kind=rep.get("by_kind"), queued_at_end=rep.get("queued_at_end"),
                backlog=rep.get("backlog"), keeps_id=rep.get("keeps_id"), refusals=rep.get("refusals"),
                during=rep.get("during"), index_s=rep.get("index_s"),
                settled=[r.get("settled") for r in runs] if any("settled" in r for r in runs) else None)


SHORT = {"files.list": "list", "files.get": "get", "files.get.media": "media", "changes.list": "changes",
         "changes.getStartPageToken": "startToken", "about.get": "about", "drives.list": "drives",
         "files.create": "create", "files.create.upload": "upload", "files.update": "update",
         "files.update.upload": "update-upload", "files.generateIds": "ids", "files.delete": "delete"}


def methods_text(requests):
    if not requests:
        return "0"
    parts = ["%s %d" % (SHORT.get(k, k), v) for k, v in sorted(requests.items(), key=lambda kv: -kv[1])]
    return "%d (%s)" % (sum(requests.values()), ", ".join(parts))


def lane_report(ctx):
    """What ran beside what: the background lanes, the CPU they used while the foreground's clocks ran, and how
    busy the machine was during their own runs."""
    fg, bg = [], []
    for wid, systems in ctx.results.items():
        for system, runs in systems.items():
            for r in runs:
                (bg if r.get("background") else fg).append((wid, system, r))
    if not ctx.lanes and not bg:
        return None
    beside = [(r["bg_cpu"], wid, system) for wid, system, r in fg if r.get("bg_cpu") is not None]
    worst = max(beside) if beside else None
    return dict(lanes=ctx.lanes, background_runs=sorted({"%s %s" % (system, wid) for wid, system, _ in bg}),
                foreground_wall=sum(r.get("span", r["wall"]) for _, _, r in fg),
                bg_cpu_beside_foreground=sum(x[0] for x in beside),
                bg_cpu_most_beside_one=dict(cpu=worst[0], workload=worst[1], system=worst[2]) if worst else None,
                background_wall=sum(r.get("span", r["wall"]) for _, _, r in bg),
                host_cpu_during_background=sum(r.get("host_cpu") or 0.0 for _, _, r in bg))


def write_floors(ctx):
    """Per write workload: the fewest writes any client needs and the seconds the write limit alone costs them
    (quota.floor: writes minus the burst, over the rate)."""
    size = ctx.size
    files = src_file_count(size)
    top, sub, _ = size["src_tree"]
    folders = 1 + top + top * sub  # src, its pA, their mB
    out = {}
    for wid in ("5", "6", "7", "10"):
        writes = quota.min_writes(wid, size, files, folders)
        out[wid] = dict(writes=writes, seconds=quota.floor(writes))
    return out


def build_report(ctx, machine, rclone_status):
    names = workload_names(ctx.size)
    out = dict(profile=ctx.profile_name, shaping=ctx.profile, size=ctx.args.size,
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               machine=machine, rclone=rclone_status,
               settings=dict(cache_size=CACHE_SIZE, poll_interval=POLL_INTERVAL, dir_cache=DIR_CACHE,
                             rclone_flags="--vfs-cache-mode full --vfs-write-back 1s --vfs-cache-max-size %s "
                                          "--poll-interval %s --dir-cache-time %s" % (CACHE_SIZE, POLL_INTERVAL, DIR_CACHE),
                             rclone_tuned=" ".join(RCLONE_TUNED), limits=ctx.profile.get("limits"),
                             emulator_limits=" ".join(quota.emulator_flags(ctx.profile.get("limits"))),
                             drivefs_flags="--cache-size %s --poll-interval %s --dir-cache-ttl %s" % (CACHE_SIZE, POLL_INTERVAL, DIR_CACHE)),
               failures=ctx.failures, workloads=[], lanes=lane_report(ctx), tls_fronts=ctx.fronts)
    floors = write_floors(ctx) if quota.limits_writes(ctx.profile.get("limits")) else {}
    for wid, _ in WORKLOADS:
        entry = dict(id=wid, name=names[wid], systems={}, ratios={})
        if wid in floors:
            entry["floor"] = floors[wid]
        for system in SYSTEMS:
            runs = ctx.results.get(wid, {}).get(system)
            note = ctx.notes.get(wid, {}).get(system)
            if system.startswith("rclone") and rclone_status != "ok" and not runs:
                note = note or "rclone: " + rclone_status
            entry["systems"][system] = dict(summary=summarize(runs), runs=runs, note=note) if runs else dict(note=note or "—")
        d = entry["systems"]["drivefs"].get("summary")
        if d and wid not in NO_RATIOS:
            for other in ("rclone", "rclone-tuned"):
                o = entry["systems"][other].get("summary")
                if o and o["median"] > 0:
                    entry["ratios"]["drivefs/" + other] = d["median"] / o["median"]
            lims = [entry["systems"][s]["summary"]["median"] for s in REFERENCES if entry["systems"][s].get("summary")]
            if lims and min(lims) > 0:
                entry["ratios"]["drivefs/reference"] = d["median"] / min(lims)
            if entry.get("floor") and entry["floor"]["seconds"] > 0:
                entry["ratios"]["drivefs/floor"] = (d["landed"] if d.get("landed") is not None else d["median"]) / entry["floor"]["seconds"]
        out["workloads"].append(entry)
    return out


def markdown(report, png_name):
    p = report["profile"]
    lines = ["### Profile `%s` (%s), %s run of %s" % (p, report["shaping"]["note"], report["size"], report["date"]), ""]
    m = report["machine"]
    lines.append("Machine: %s; %s cores, %s memory, Linux %s; %s; %s; %s." % (
        m["cpu"], m["nproc"], m["memory"], m["kernel"], m["drivefs"], m["rclone"], m["curl"]))
    lines.append("")
    lines.append("Wall time, median of the runs (min–max). Ratios: drivefs's median over the other's; below 1, drivefs is faster. "
                 "`reference` is the better of curl with one stream and curl with several.")
    lines.append("")
    head = (["#", "workload"] + [TITLES[s] for s in SYSTEMS]
            + ["drivefs/rclone", "drivefs/rclone tuned", "drivefs/reference"])
    floors = any(w.get("floor") for w in report["workloads"])
    if floors:
        head.append("drivefs/floor")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for w in report["workloads"]:
        name = w["name"]
        if w.get("floor"):
            name += " (floor %s: %s writes)" % (human_s(w["floor"]["seconds"]), format(w["floor"]["writes"], ","))
        cells = [w["id"], name]
        for s in SYSTEMS:
            e = w["systems"][s]
            if "summary" in e:
                x = e["summary"]
                cell = "%s (%s–%s)" % (human_s(x["median"]), human_s(x["min"]), human_s(x["max"]))
                if x.get("mib_per_s"):
                    cell += ", %.0f MiB/s" % x["mib_per_s"]
                if x.get("landed") is not None:
                    cell += "; on Drive at %s" % human_s(x["landed"])
                if x.get("p50") is not None:
                    cell += "; p50 %s" % human_s(x["p50"])
                if x.get("queued_at_end") is not None:
                    cell += "; %s of %s still to upload after the last probe" % (
                        format(x["queued_at_end"], ","), format(x["backlog"], ","))
                if x.get("keeps_id") is not None:
                    cell += "; %s writes, %s its Drive ID" % (x.get("writes") if x.get("writes") is not None else "?",
                                                             "keeps" if x["keeps_id"] else "loses")
                if x.get("during") is not None:
                    cell += "; %d of %d during the build" % (x["during"], index_quota.LISTINGS)
                if x.get("index_s") is not None:
                    cell += "; drivefs's log: %s" % human_s(x["index_s"])
                if w["id"] == "11a" and x.get("settled") and False in x["settled"]:
                    cell += "; %d of %d runs still building at the bound" % (x["settled"].count(False), len(x["settled"]))
                if x.get("units") is not None:
                    cell += "; %s units" % format(x["units"], ",")
                if x.get("refusals") is not None:
                    cell += ", %d refused" % x["refusals"]
                if any(r.get("background") for r in e["runs"]):
                    cell += " †"
            else:
                cell = e["note"]
            cells.append(cell)
        for key in ("drivefs/rclone", "drivefs/rclone-tuned", "drivefs/reference") + (("drivefs/floor",) if floors else ()):
            v = w["ratios"].get(key)
            cells.append("—" if v is None else ("**%.2f**" % v if v > 1.0 else "%.2f" % v))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lanes = report.get("lanes")
    if lanes:
        lines.append(lanes_text(lanes, m["nproc"]))
        lines.append("")
    lines.append("API requests by method (the median run), bytes moved, quota units and writes (the emulator's per-user "
                 "stats; refusals when there were some), peak RSS and CPU seconds of the filesystem process:")
    lines.append("")
    head = ["#"] + [TITLES[s] for s in SYSTEMS]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for w in report["workloads"]:
        cells = [w["id"]]
        for s in SYSTEMS:
            e = w["systems"][s]
            if "summary" not in e:
                cells.append("—")
                continue
            x = e["summary"]
            cell = "%s; %s" % (methods_text(x["requests"]), human_bytes(x["bytes"]))
            if x.get("refused"):
                cell += "; %d refused (403 userRateLimitExceeded)" % x["refused"]
            if x.get("writes") is not None:
                cell += "; %s units, %d writes" % (format(x["units"], ","), x["writes"])
                if x.get("writes_refused"):
                    cell += ", %d writes refused" % x["writes_refused"]
                if x.get("quota_refused"):
                    cell += ", %d refused by quota" % x["quota_refused"]
            if x["rss_kib"] is not None:
                cell += "; RSS %s, CPU %.2f s" % (human_kib(x["rss_kib"]), x["cpu"] or 0.0)
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if png_name:
        lines.append("![drivefs/rclone and drivefs/reference ratios, profile %s](%s)" % (p, png_name))
        lines.append("")
    if report["failures"]:
        lines.append("Harness failures in this run: " + "; ".join(report["failures"]))
        lines.append("")
    return "\n".join(lines)


def lanes_text(lanes, nproc):
    """The paragraph under a table that says what ran beside what (docs/benchmarks.md, "Lanes")."""
    parts = []
    for lane in lanes["lanes"]:
        parts.append("lane `%s`: %.0f s, CPU %.1f s (%.0f%% of one core)" % (
            lane["name"], lane["wall"], lane["cpu"] or 0.0, 100.0 * (lane["cpu"] or 0.0) / max(lane["wall"], 1e-9)))
    text = "† Ran in a background lane, beside the foreground's measurements: %s (%s)." % (
        ", ".join(lanes["background_runs"]) or "nothing", "; ".join(parts) or "no lane summary")
    fg = lanes["foreground_wall"]
    if fg:
        text += (" While the foreground's runs were measured (%.0f s in all, a write until on Drive) the background "
                 "lanes used %.1f s of CPU (%.1f%% of "
                 "one core)" % (fg, lanes["bg_cpu_beside_foreground"], 100.0 * lanes["bg_cpu_beside_foreground"] / fg))
        worst = lanes["bg_cpu_most_beside_one"]
        if worst:
            text += ", at most %.2f s beside one run (%s %s)" % (worst["cpu"], worst["workload"], worst["system"])
        text += "."
    if lanes["background_wall"]:
        text += " During the background runs the whole machine was %.0f%% busy (of %s cores; all processes)." % (
            100.0 * lanes["host_cpu_during_background"] / lanes["background_wall"] / max(int(nproc or 1), 1), nproc)
    return text


def write_docs(docs, profile, block):
    begin, end = "<!-- bench:%s:begin -->" % profile, "<!-- bench:%s:end -->" % profile
    text = open(docs).read() if os.path.exists(docs) else "# Benchmarks\n"
    new = begin + "\n" + block + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + new + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    with open(docs, "w") as f:
        f.write(text)


def machine_description(args):
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "%s: not available" % cmd[0]
    cpu = "unknown CPU"
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1).strip()
    except (OSError, AttributeError):
        pass
    mem = int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    return dict(cpu=cpu, nproc=os.cpu_count(), memory="%.1f GiB" % (mem / 1048576), kernel=platform.release(),
                drivefs=first_line([os.path.join(args.bin, "drivefs"), "--version"]),
                rclone=first_line([RCLONE, "version"]) if os.access(RCLONE, os.X_OK) else "rclone: not installed",
                curl=first_line(["curl", "--version"]).split(" (")[0],
                swift=first_line(["swift", "--version"]))


def render_png(report, path):
    """The ratio chart, with the matplotlib of .build/bench-venv (or the system's); False when missing."""
    candidates = [os.path.join(REPO, ".build", "bench-venv", "bin", "python"), sys.executable]
    for python in candidates:
        if not os.path.exists(python):
            continue
        if subprocess.run([python, "-c", "import matplotlib"], capture_output=True, timeout=60).returncode == 0:
            src = path + ".json"
            with open(src, "w") as f:
                json.dump(report, f)
            try:
                r = subprocess.run([python, os.path.join(BENCH, "chart.py"), src, path], capture_output=True, text=True, timeout=120)
            finally:
                os.unlink(src)
            if r.returncode != 0:
                log("chart: failed: " + r.stderr[-500:])
                return False
            return True
    return False


def write_outputs(ctx, args, machine, rclone_status, out_dir):
    """A profile's JSON, its chart and its markdown table (into --docs, or beside the JSON)."""
    profile = ctx.profile_name
    report = build_report(ctx, machine, rclone_status)
    stamp = datetime.date.today().isoformat()
    base = os.path.join(out_dir, "%s-%s" % (stamp, profile))
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=1)
    png = None
    png_path = base + ".png"
    if not any(w["ratios"] for w in report["workloads"]):
        log("chart: no ratio in this run (a development run of one system): no PNG")
    elif render_png(report, png_path):
        png = png_path
        if args.docs:
            docs_png = os.path.join(os.path.dirname(os.path.abspath(args.docs)), "benchmarks-%s.png" % profile)
            shutil.copyfile(png_path, docs_png)
            png = docs_png
    else:
        log("chart: matplotlib is not available (make bench-venv installs it): no PNG")
    block = markdown(report, os.path.basename(png) if png else None)
    if args.docs:
        write_docs(args.docs, profile, block)
    else:
        with open(base + ".md", "w") as f:
            f.write(block + "\n")
    log("[%s] results: %s.json%s" % (profile, base, " (table in %s)" % args.docs if args.docs else ", %s.md" % base))
    return report
