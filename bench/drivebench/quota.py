"""Drive's 2026 limits as the bench sees them: the emulator flags of each profile, the quota units and writes a run
used (from the emulator's per-user stats), and the floor the write limit sets under a write workload.

Figures from docs/emulator.md, "Drive limits": `--limits google` meters quota units per user and per project
(files.get 5, files.list 100, a download 200, a write 50, ...), admits about 3 writes a second per account after a
burst of 3, and answers 403 past either. No figure of the limits is typed here but the write rate and burst the
floor is computed from, which must match the emulator's defaults (the harness passes them explicitly).
"""

# What `--limits google` sets for writes, passed explicitly so that the floor below and the emulator agree.
WRITE_RATE = 3.0   # writes a second per account, sustained
WRITE_BURST = 3    # writes an account may send at once after being idle

# Profile -> emulator flags.
# - "google": Google's 2026 limits together.
# - "metered": the same quota units and writes counted (so that the emulator's stats have `users`, and its
#   writes), nothing limited: a per-user budget no run can reach (the largest the flag takes: 10^9 units a
#   minute), a write rate and burst no run can reach (the largest the flags take: 10^6; the emulator counts
#   writes only with a write limit on, and `--write-rate 0` turned it off, so lan's rows showed 0 writes), and
#   every other limit off (0).
EMULATOR_FLAGS = {
    "google": ["--limits", "google", "--write-rate", "%g" % WRITE_RATE, "--write-burst", str(WRITE_BURST)],
    "metered": ["--limits", "google", "--quota-user-units", str(10 ** 9), "--quota-project-units", "0",
                "--write-rate", str(10 ** 6), "--write-burst", str(10 ** 6), "--daily-upload-bytes", "0", "--max-folder-items", "0",
                "--max-shared-drive-items", "0"],
    None: [],
}


def emulator_flags(limits):
    return list(EMULATOR_FLAGS[limits])


def limits_writes(limits):
    """Whether the profile's emulator holds writes to the write limit."""
    return limits == "google"


def figures(stats):
    """The quota figures of one measurement, summed over the users of the emulator's stats (the harness's own
    checks act for the same user and run outside the measurement): units charged, writes admitted, writes
    refused by the write limit, requests refused by quota, uploads refused by the daily cap. None for each
    when the emulator does not meter (no `users`)."""
    users = stats.get("users")
    if users is None:
        return dict(units=None, writes=None, writes_refused=None, quota_refused=None, uploads_refused=None)
    total = lambda key: sum(int(u.get(key, 0)) for u in users.values())
    return dict(units=total("units"), writes=total("writes"), writes_refused=total("writesRefused"),
                quota_refused=total("quotaRefused"), uploads_refused=total("uploadsRefused"))


def floor(writes):
    """Seconds the write limit alone costs `writes` writes, for any client: the burst goes at once, the rest at
    WRITE_RATE a second."""
    return max(0, writes - WRITE_BURST) / WRITE_RATE


def min_writes(wid, size, src_files, src_folders):
    """The fewest writes any client needs for write workload wid (each file one upload, each folder one create):
    5: the folder and its files; 6: one resumable session; 7: the target folder, the tree's folders and files;
    10: one upload per save (each save's fsync asks for its content on Drive). Workload 9 does not wait for its
    backlog: no floor."""
    if wid == "5":
        return 1 + size["write_files"]
    if wid == "6":
        return 1
    if wid == "7":
        return 1 + src_folders + src_files
    if wid == "10":
        return size["saves"]
    return None
