"""Figures as the progress lines and the tables print them: bytes, KiB, seconds, a run's quota units."""


def units_note(r):
    """The quota part of a progress line: units, and what the limits refused."""
    if r.get("units") is None:
        return ""
    text = "  %s units" % format(r["units"], ",")
    for key, what in (("writes_refused", "writes refused"), ("quota_refused", "refused by quota")):
        if r.get(key):
            text += ", %d %s" % (r[key], what)
    return text


def human_bytes(n):
    if n is None:
        return "—"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def human_kib(k):
    return "—" if k is None else "%.0f MiB" % (k / 1024)


def human_s(s):
    if s is None:
        return "—"
    if s < 1:
        return "%.0f ms" % (s * 1000)
    return "%.2f s" % s if s < 100 else "%.0f s" % s
