"""The prose of docs/benchmarks.md's results, computed from the reports' JSON (no figure typed by hand).

    python3 bench/summary.py bench/results/DATE-lan.json bench/results/DATE-wan.json   # prints the paragraph
    python3 bench/summary.py --floor-note 5 bench/results/DATE-wan-5.json [BEFORE.json]  # one write workload vs its floor
    python3 bench/summary.py --goals REPORT.json...    # issue 15's goals, met or missed
    python3 bench/summary.py --losses REPORT.json...   # the table of where drivefs loses or stays far from the limit
    python3 bench/summary.py --docs docs/benchmarks.md # every computed part of the docs again, from the newest full runs

The harness writes the same paragraph between the `bench:summary` markers of --docs after a full run, the goals
between `bench:goals` and the table between `bench:losses`; bench/tests/test_docs_figures.py checks that
docs/benchmarks.md holds what this file computes from the newest full reports in bench/results. Reports of
the old bench (rclone 1.60's `rclone-10ms` column, `limit-*` for the reference) are read too: their tuned column is
`rclone-10ms`, and the text names the rclone of the report.
"""
import glob
import json
import os
import re
import sys

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

COLD_LISTINGS = ("1a", "1c", "1d")


def systems(workload):
    """{system: summary} of one workload, old names mapped to new ones."""
    out = {}
    for name, entry in workload["systems"].items():
        name = {"rclone-10ms": "rclone-tuned", "limit-1": "reference-1", "limit-par": "reference-par"}.get(name, name)
        if "summary" in entry:
            out[name] = entry["summary"]
    return out


def ratio_range(reports, wids, other, key="median", invert=True):
    """(min, max) over the profiles and workloads of other's figure over drivefs's (invert) or the reverse; None
    when nothing was measured."""
    values = []
    for report in reports:
        for w in report["workloads"]:
            if w["id"] not in wids:
                continue
            s = systems(w)
            if "drivefs" in s and other in s and s["drivefs"][key] and s[other][key]:
                a, b = s[other][key], s["drivefs"][key]
                values.append(a / b if invert else b / a)
    return (min(values), max(values)) if values else None


def span(r, digits=1):
    if r is None:
        return None
    lo, hi = r
    return ("%.*f" % (digits, lo)) if "%.*f" % (digits, lo) == "%.*f" % (digits, hi) else "%.*f-%.*f" % (digits, lo, digits, hi)


def find(report, wid):
    return next((w for w in report["workloads"] if w["id"] == wid), None)


def paragraph(reports):
    reports = sorted(reports, key=lambda r: r["profile"])
    rclone = reports[0]["machine"].get("rclone", "rclone")
    tuned = reports[0]["settings"].get("rclone_tuned", "")
    profiles = ", ".join("`%s` (%s run of %s)" % (r["profile"], r["size"], r["date"][:10]) for r in reports)
    parts = ["Computed by bench/summary.py from the reports of %s; rclone is %s, tuned: `%s`." % (profiles, rclone, tuned)]

    def times(wids, other, what):
        r = ratio_range(reports, wids, other)
        if r is not None:
            parts.append("%s: %s's time over drivefs's, %s over both profiles (above 1: drivefs is faster)." % (
                what, other, span(r)))
    for other in ("rclone", "rclone-tuned"):
        times(COLD_LISTINGS, other, "Cold listings (1a, 1c, 1d)")
    for other in ("rclone", "rclone-tuned"):
        times(("3b",), other, "Warm sequential reads (3b)")
    for other in ("rclone", "rclone-tuned"):
        times(("4",), other, "Random reads (4)")
    for other in ("rclone", "rclone-tuned"):
        times(("5",), other, "Small files until on Drive (5)")
    for report in reports:
        floors = [(w["id"], w["ratios"]["drivefs/floor"]) for w in report["workloads"] if "drivefs/floor" in w.get("ratios", {})]
        if floors:
            parts.append("On `%s`, drivefs's time over the write limit's floor: %s." % (
                report["profile"], ", ".join("%s %.2f" % f for f in floors)))
        a, b = find(report, "9a"), find(report, "9b")
        if a and b:
            sa, sb = systems(a), systems(b)
            if "drivefs" in sa and "drivefs" in sb and sb["drivefs"]["median"]:
                parts.append("On `%s`, drivefs's p99 while a backlog drains is %.2f times its idle p99 (9a over 9b)." % (
                    report["profile"], sa["drivefs"]["median"] / sb["drivefs"]["median"]))
        ten = find(report, "10")
        if ten:
            keeps = ["%s %s" % (name, "keeps" if s.get("keeps_id") else "loses")
                     for name, s in systems(ten).items() if s.get("keeps_id") is not None]
            if keeps:
                parts.append("On `%s`, the saved file's Drive ID (10): %s." % (report["profile"], ", ".join(keeps)))
        eleven = index_quota(report)
        if eleven:
            parts.append(eleven)
        units = []
        for w in report["workloads"]:
            s = systems(w)
            if w["id"].rstrip("abcde") in ("1", "2", "3", "4") and "drivefs" in s and "rclone-tuned" in s and s["drivefs"].get("units") is not None \
                    and s["rclone-tuned"].get("units"):
                units.append("%s %.2f" % (w["id"], s["drivefs"]["units"] / s["rclone-tuned"]["units"]))
        if units:
            parts.append("On `%s`, drivefs's quota units over tuned rclone's, read workloads: %s." % (
                report["profile"], ", ".join(units)))
    fronts = tls_fronts(reports)
    if fronts:
        parts.append(fronts)
    return " ".join(parts)


def human_s(s):
    return "%.0f ms" % (s * 1000) if s < 1 else "%.2f s" % s


def index_quota(report):
    """Workload 11's sentence for one profile (the medians of its runs), or None."""
    a, b = find(report, "11a"), find(report, "11b")
    if not a or not b:
        return None
    sa, sb = systems(a), systems(b)
    if "drivefs" not in sa or "drivefs" not in sb:
        return None
    d, u = sa["drivefs"], sb["drivefs"]
    text = ("On `%s`, under `--limits google` (11): drivefs's index was built in %s (median of %d), for %s quota units "
            "and %s refused; the user's ls of leaf folders during it: p99 %s, p50 %s, %s of them answered before the index "
            "was built" % (report["profile"], human_s(d["median"]), d["runs"], format(d.get("units") or 0, ","), d.get("refusals"),
                           human_s(u["median"]), human_s(u["p50"]) if u.get("p50") is not None else "?", u.get("during")))
    for other in ("rclone", "rclone-tuned"):
        if other in sa and other in sb:
            text += "; %s's same ls on a cold mount: done in %s, p99 %s, p50 %s, %s units, %s refused" % (
                other, human_s(sa[other]["median"]), human_s(sb[other]["median"]),
                human_s(sb[other]["p50"]) if sb[other].get("p50") is not None else "?",
                format(sa[other].get("units") or 0, ","), sa[other].get("refusals"))
    return text + "."


def tls_fronts(reports):
    """Which clients went through a TLS front, from the reports' front counters, or None (an older report)."""
    seen = {}
    for report in reports:
        for f in report.get("tls_fronts") or []:
            if f.get("measured"):
                c = seen.setdefault(f["client"], [0, 0, 0])
                c[0] += f["measured"]
                c[1] += f["connections"]
                c[2] += f["bytesFromClients"] + f["bytesToClients"]
    if not seen:
        return None
    return "Both mounts reached the emulator through a TLS front of their own (tls_front.py): %s." % "; ".join(
        "%s fronts relayed %s connections and %.1f MiB over %d measured runs" % (who, format(c[1], ","), c[2] / 1048576, c[0])
        for who, c in sorted(seen.items()))


def floor_note(report, wid, before=None):
    """drivefs's figures of write workload wid under the write limit in one report (a run of that workload alone):
    the time until on Drive over the write limit's floor, and the writes refused; with `before` (a report of the
    same run on an earlier build), its figures beside them. For the dated notes of docs/benchmarks.md."""
    def figures(r):
        w = find(r, wid)
        d = systems(w)["drivefs"]
        runs = w["systems"]["drivefs"]["runs"]
        sent = sum(x["writes"] + x["writes_refused"] for x in runs)
        refused = sum(x["writes_refused"] for x in runs)
        ratios = [(x.get("landed") if x.get("landed") is not None else x["wall"]) / w["floor"]["seconds"] for x in runs]
        return w, d, sent, refused, ratios
    w, d, sent, refused, ratios = figures(report)
    text = ("%s (median of %d, %s-%s), %.2f times the write limit's floor (%s for %s writes; the runs %.2f-%.2f), "
            "%s of the %s writes its runs sent refused (%.1f%%)" % (
                human_s(d["median"]), d["runs"], human_s(d["min"]), human_s(d["max"]), w["ratios"]["drivefs/floor"],
                human_s(w["floor"]["seconds"]), format(w["floor"]["writes"], ","), min(ratios), max(ratios),
                format(refused, ","), format(sent, ","), 100.0 * refused / max(1, sent)))
    runs = w["systems"]["drivefs"]["runs"]
    if any(x.get("keeps_id") is not None for x in runs):
        text += "; the Drive ID kept in %d of %d runs, with %s on Drive at the end" % (
            sum(1 for x in runs if x.get("keeps_id")), len(runs),
            " / ".join(sorted({"%d item%s" % (x.get("drive_items", 0), "" if x.get("drive_items") == 1 else "s") for x in runs})))
    if before is not None:
        bw, bd, bsent, brefused, _ = figures(before)
        text += "; the build before: %s, %.2f times the floor, %s of %s writes refused" % (
            human_s(bd["median"]), bw["ratios"]["drivefs/floor"], format(brefused, ","), format(bsent, ","))
    return text


GOAL_FLOOR = 1.1        # issue 15: workload 5 on Drive within 1.1 times the write limit's floor (wan)
GOAL_REFUSED = 0.02     # refused writes under 2% of the writes sent
GOAL_BACKLOG_P99 = 2.0  # workload 9's p99 under twice the idle figure
READ_WORKLOADS = ("1a", "1b", "1c", "1d", "1e", "2", "3a", "3b", "4")
# Workloads where drivefs does more than the others by design: a slower figure there is not a loss.
NOT_LOSSES = {
    "8b": "not a loss: drivefs lists and keeps the whole drive (rclone lists nothing it is not asked for)",
    "11a": "not a loss: drivefs builds the whole drive's index, rclone's figure is one `ls` (11b compares the user's wait)",
}
# Why drivefs loses a workload and what would fix it: prose kept by hand (no figure in it), keyed by workload.
CAUSES = {
    "2": ("the stat's folders wait behind the crawl's groups of listings already in flight",
          "a folder the crawl has only queued is listed for the user alone, at once: landed after this run (issue 16; "
          "measured alone since, above)"),
    "3a": ("on 2 shared cores the reader, the FUSE daemon and the emulator share the CPU (128 KiB FUSE reads, the "
           "emulator hashing what it stores); ranges still grow from 4 MiB on a cold read",
           "splice the cache file into the reply; larger FUSE requests"),
    "4": ("each read the background fill of a file read at random has not reached waits for a ranged request of its "
          "own; rclone reads ahead with several streams from the first miss",
          "a random reader's misses fetch their neighbourhood in one request and the reader is answered as soon as its "
          "blocks are in: landed after this run (issue 16; measured alone since, above)"),
    "5": ("each close is made durable before it returns (the copy, its folder and the journal record), one file after "
          "the other as `cp` writes; under the write limit, the write lane's pace",
          "group commit and the write lane probing up to Google's limit landed after this run (issue 16); not yet "
          "measured by a full run"),
    "7": ("the closes' flushes, as in 5; under the write limit, a chmod and a utime sent for each folder after its "
          "create (more writes than the floor counts)",
          "folder metadata folded into the folder's create (issue 16)"),
    "9b": ("an idle mount's first uncached reads and listings pay their round trips; nothing is prefetched for them",
           "—"),
    "10": ("each save's fsync waited until the temporary file was on Drive, and the rename over the file was then a "
           "rename and a trash",
           "fixed after this run: an fsynced save renamed over a file before its create went up is that file's "
           "content (issue 16; measured alone since, above)"),
    "11b": ("a user's folder waits for the crawl's listing calls in flight and their quota share",
            "the user's folders listed alone and at once, ahead of the crawl's queue: landed after this run (issue 16; "
            "measured alone since, above); the crawl's share of the minute while a user is active was already capped"),
}
OTHERS = (("rclone", "rclone"), ("rclone-tuned", "tuned rclone"), ("reference-1", "reference (one stream)"),
          ("reference-par", "reference (parallel)"))


def media_requests(summary):
    return sum(n for name, n in (summary.get("requests") or {}).items() if name.endswith(".media"))


def drivefs_figure(workload):
    """drivefs's median with what the workload counts beside it (downloads for reads, writes for writes)."""
    d = systems(workload)["drivefs"]
    text = human_s(d["median"])
    floor = workload.get("floor") or {}
    if floor.get("seconds"):
        text += ", %s writes (the floor counts %s)" % (format(d.get("writes") or 0, ","), format(floor["writes"], ","))
    elif workload["id"] in ("3a", "4") and media_requests(d):
        text += ", %s media requests" % format(media_requests(d), ",")
    return text


def losses(reports):
    """The markdown table of the workloads where drivefs is slower than rclone as installed or tuned, or (under the
    write limit) more than GOAL_FLOOR times the floor: one row a workload, the profiles where it happens, every figure
    the median of the run's tries."""
    reports = sorted(reports, key=lambda r: r["profile"])
    rows = {}
    for report in reports:
        for w in report["workloads"]:
            s = systems(w)
            if "drivefs" not in s or s["drivefs"].get("median") is None:
                continue
            d = s["drivefs"]["median"]
            beaten = [label for name, label in OTHERS[:2] if name in s and s[name].get("median") is not None and s[name]["median"] < d]
            floor = (w.get("floor") or {}).get("seconds")
            far = bool(floor) and d / floor > GOAL_FLOOR
            if not beaten and not far:
                continue
            why = []
            if beaten:
                why.append("slower than " + " and ".join(beaten))
            if far:
                why.append("%.2f times the write limit's floor" % (d / floor))
            others = ", ".join("%s %s" % (label, human_s(s[name]["median"])) for name, label in OTHERS
                               if name in s and s[name].get("median") is not None)
            rows.setdefault(w["id"], []).append((report["profile"], w["name"], drivefs_figure(w), others, "; ".join(why)))
    order = sorted(rows, key=lambda wid: (int(wid.rstrip("abcde")), wid))
    lines = ["| workload | drivefs | others | how | cause | what would fix it |", "|---|---|---|---|---|---|"]
    for wid in order:
        cells = rows[wid]
        name = cells[0][1]
        where = lambda i: "<br>".join("%s: %s" % (c[0], c[i]) for c in cells)
        if wid in NOT_LOSSES:
            cause, fix = NOT_LOSSES[wid], "—"
        else:
            cause, fix = CAUSES.get(wid, ("not analysed yet", "—"))
        lines.append("| %s %s | %s | %s | %s | %s | %s |" % (wid, name.replace("|", "/"), where(2), where(3), where(4), cause, fix))
    return "\n".join(lines)


def goals(reports):
    """Issue 15's goals, each met or missed in these reports, as a markdown list (figures from the JSON)."""
    reports = {r["profile"]: r for r in reports}
    out = []
    wan = reports.get("wan")
    if wan:
        five = find(wan, "5")
        if five and "drivefs" in systems(five) and (five.get("floor") or {}).get("seconds"):
            ratio = systems(five)["drivefs"]["median"] / five["floor"]["seconds"]
            out.append("- `wan` 5 on Drive within %.1f times the write limit's floor: %s (%.2f times)." % (
                GOAL_FLOOR, "met" if ratio <= GOAL_FLOOR else "missed", ratio))
        sent = refused = 0
        for w in wan["workloads"]:
            for run in w["systems"].get("drivefs", {}).get("runs") or []:
                sent += (run.get("writes") or 0) + (run.get("writes_refused") or 0)
                refused += run.get("writes_refused") or 0
        if sent:
            out.append("- Refused writes under %d%% of the writes sent (every `wan` run of drivefs): %s (%s of %s, %.1f%%)." % (
                round(GOAL_REFUSED * 100), "met" if refused < GOAL_REFUSED * sent else "missed", format(refused, ","),
                format(sent, ","), 100.0 * refused / sent))
        a, b = find(wan, "9a"), find(wan, "9b")
        if a and b and "drivefs" in systems(a) and "drivefs" in systems(b):
            ratio = systems(a)["drivefs"]["median"] / systems(b)["drivefs"]["median"]
            out.append("- `wan` 9's p99 while a backlog drains under %g times the idle p99: %s (%.2f times)." % (
                GOAL_BACKLOG_P99, "met" if ratio < GOAL_BACKLOG_P99 else "missed", ratio))
    for profile, report in sorted(reports.items()):
        slower, costlier, compared = [], [], 0
        for w in report["workloads"]:
            s = systems(w)
            if w["id"] not in READ_WORKLOADS or "drivefs" not in s or "rclone-tuned" not in s:
                continue
            compared += 1
            d, t = s["drivefs"], s["rclone-tuned"]
            if d["median"] > t["median"]:
                slower.append("%s (%s against %s)" % (w["id"], human_s(d["median"]), human_s(t["median"])))
            if d.get("units") is not None and t.get("units") is not None and d["units"] > t["units"]:
                costlier.append("%s (%s units against %s)" % (w["id"], format(d["units"], ","), format(t["units"], ",")))
        if compared:
            out.append("- `%s`, every read workload at least as fast as tuned rclone and at most its quota units (%d "
                       "compared): %s." % (profile, compared, "met" if not slower and not costlier else "missed: " + "; ".join(
                           (["slower in " + ", ".join(slower)] if slower else []) + (["more units in " + ", ".join(costlier)] if costlier else []))))
    return "\n".join(out)


def load(path):
    with open(path) as f:
        return json.load(f)


def newest_full_reports(results=RESULTS):
    """The newest full run's report of each profile: bench/results/DATE-PROFILE.json (a dated note's reports, such as
    DATE-wan-5.json, are not full runs)."""
    newest = {}
    for path in glob.glob(os.path.join(results, "*.json")):
        m = re.fullmatch(r"(\d{4}-\d\d-\d\d)-([a-z]+)\.json", os.path.basename(path))
        if m and (m.group(2) not in newest or newest[m.group(2)][0] < m.group(1)):
            newest[m.group(2)] = (m.group(1), path)
    return [load(path) for _, path in sorted(newest.values(), key=lambda x: x[1])]


NOTE = re.compile(r"<!-- note:(\S+) ([^>]*?) -->(.*?)<!-- /note -->", re.S)


def docs_with_figures(text, reports, results=RESULTS):
    """text (docs/benchmarks.md) with every computed part as this file computes it now: the `bench:summary`,
    `bench:goals` and `bench:losses` blocks from reports, and each dated note `<!-- note:WID A.json [B.json] -->...`
    from `--floor-note WID` of those reports (`note:reads AFTER.json... vs BEFORE.json...`: `reads_note`)."""
    for name, block in (("summary", paragraph(reports)), ("goals", goals(reports)), ("losses", losses(reports))):
        begin, end = "<!-- bench:%s:begin -->" % name, "<!-- bench:%s:end -->" % name
        if begin in text and end in text:
            text = text[:text.index(begin)] + begin + "\n" + block + "\n" + text[text.index(end):]

    def note(m):
        names = m.group(2).split()
        if m.group(1) == "reads":
            # note:reads AFTER.json... vs BEFORE.json...
            cut = names.index("vs")
            text = reads_note([load(os.path.join(results, f)) for f in names[:cut]],
                              [load(os.path.join(results, f)) for f in names[cut + 1:]])
        else:
            files = [load(os.path.join(results, f)) for f in names]
            text = floor_note(files[0], m.group(1), *files[1:2])
        return "<!-- note:%s %s -->%s<!-- /note -->" % (m.group(1), m.group(2), text)
    return NOTE.sub(note, text)


def reads_note(after, before):
    """drivefs's figures of the read workloads 4, 11 and 2 in `after` (reports of a run of those workloads alone, one a
    profile) beside the same in `before` (reports of the build before; a workload is taken from the first report of its
    profile that has it): downloads for 4, the user's latency and the index's time and units for 11, requests for 2.
    For the dated notes of docs/benchmarks.md."""
    def workload(reports, profile, wid):
        for r in reports:
            w = find(r, wid) if r["profile"] == profile else None
            if w and "drivefs" in systems(w):
                return w
        return None

    def downloads(w):
        counts = [sum(n for name, n in x["requests"].items() if name.endswith(".media")) for x in w["systems"]["drivefs"]["runs"]]
        return sorted(counts)[len(counts) // 2], min(counts), max(counts)
    parts = []
    for report in sorted(after, key=lambda r: r["profile"]):
        p = report["profile"]
        a, b = workload(after, p, "4"), workload(before, p, "4")
        if a and b:
            (n, lo, hi), (bn, blo, bhi) = downloads(a), downloads(b)
            d, bd = systems(a)["drivefs"], systems(b)["drivefs"]
            parts.append("`%s` 4: %s (median of %d) and %s downloads (the runs' median; runs %d-%d), before %s and %s (runs %d-%d)" % (
                p, human_s(d["median"]), d["runs"], n, lo, hi, human_s(bd["median"]), bn, blo, bhi))
        a11, b11 = workload(after, p, "11b"), workload(before, p, "11b")
        i11, j11 = workload(after, p, "11a"), workload(before, p, "11a")
        if a11 and b11 and i11 and j11:
            u, bu = systems(a11)["drivefs"], systems(b11)["drivefs"]
            i, j = systems(i11)["drivefs"], systems(j11)["drivefs"]
            parts.append("`%s` 11b: the user's `ls` p99 %s, p50 %s, before p99 %s, p50 %s; index built in %.1f s, before "
                         "%.1f s; %s units, before %s" % (
                             p, human_s(u["median"]), human_s(u["p50"]), human_s(bu["median"]), human_s(bu["p50"]),
                             i.get("index_s") or i["median"], j.get("index_s") or j["median"], format(i.get("units") or 0, ","),
                             format(j.get("units") or 0, ",")))
        a2, b2 = workload(after, p, "2"), workload(before, p, "2")
        if a2 and b2:
            d, bd = systems(a2)["drivefs"], systems(b2)["drivefs"]
            parts.append("`%s` 2: %s, %s requests, before %s, %s" % (
                p, human_s(d["median"]), d["total_requests"], human_s(bd["median"]), bd["total_requests"]))
    return "; ".join(parts)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--docs"] and len(args) == 2:
        # bench/summary.py --docs docs/benchmarks.md: every computed part again, from the newest full reports
        with open(args[1]) as f:
            text = f.read()
        with open(args[1], "w") as f:
            f.write(docs_with_figures(text, newest_full_reports()))
        return
    if args[:1] == ["--floor-note"] and len(args) in (3, 4):
        # bench/summary.py --floor-note WID REPORT.json [BEFORE.json]
        print(floor_note(json.load(open(args[2])), args[1], json.load(open(args[3])) if len(args) == 4 else None))
        return
    what = paragraph
    if args[:1] in (["--goals"], ["--losses"]):
        what = goals if args[0] == "--goals" else losses
        args = args[1:]
    reports = [json.load(open(path)) for path in args]
    if not reports:
        sys.stderr.write("usage: bench/summary.py [--goals|--losses] REPORT.json...\n"
                         "       bench/summary.py --floor-note WID REPORT.json [BEFORE.json]\n")
        sys.exit(2)
    print(what(reports))


if __name__ == "__main__":
    main()
