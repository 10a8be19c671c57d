"""The prose of docs/benchmarks.md's results, computed from the reports' JSON (no figure typed by hand).

    python3 bench/summary.py bench/results/DATE-lan.json bench/results/DATE-wan.json   # prints the paragraph
    python3 bench/summary.py --floor-note 5 bench/results/DATE-wan-5.json [BEFORE.json]  # one write workload vs its floor

The harness writes the same paragraph between the `bench:summary` markers of --docs after a full run. Reports of
the old bench (rclone 1.60's `rclone-10ms` column, `limit-*` for the reference) are read too: their tuned column is
`rclone-10ms`, and the text names the rclone of the report.
"""
import json
import sys

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
    if before is not None:
        bw, bd, bsent, brefused, _ = figures(before)
        text += "; the build before: %s, %.2f times the floor, %s of %s writes refused" % (
            human_s(bd["median"]), bw["ratios"]["drivefs/floor"], format(brefused, ","), format(bsent, ","))
    return text


def main():
    args = sys.argv[1:]
    if args[:1] == ["--floor-note"] and len(args) in (3, 4):
        # bench/summary.py --floor-note WID REPORT.json [BEFORE.json]
        print(floor_note(json.load(open(args[2])), args[1], json.load(open(args[3])) if len(args) == 4 else None))
        return
    reports = [json.load(open(path)) for path in args]
    if not reports:
        sys.stderr.write("usage: bench/summary.py REPORT.json...\n       bench/summary.py --floor-note WID REPORT.json [BEFORE.json]\n")
        sys.exit(2)
    print(paragraph(reports))


if __name__ == "__main__":
    main()
