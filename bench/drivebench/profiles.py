"""The network profiles (`--profiles`): the emulator's shaping and Drive's limits for each, and its share of
the time budget. A new profile is an entry here (and its background lanes in lanes.BACKGROUND).
"""

# Drive's limits (docs/emulator.md, "Drive limits"): wan runs the emulator with `--limits google` (quota units per
# user and project, about 3 writes a second per account, the daily upload cap); lan meters the same quota units
# without limiting anything (quota.METERED_ONLY), so that every run on both profiles reports the units it cost.
# wan's write workloads are sized to fit under the write limit (a few hundred files; quota.floor prints what the
# limit alone costs any client), and wan's random reads are the full 1,000 (issue 15).
PROFILES = {
    "lan": dict(latency_ms=0, bandwidth=None, total_bandwidth=None, limits="metered", weight=0.35, overrides={},
                note="no shaping; quota units counted, nothing limited"),
    "wan": dict(latency_ms=50, bandwidth=40 * 1024 * 1024, total_bandwidth=120 * 1024 * 1024, limits="google",
                weight=0.65, overrides=dict(full=dict(write_files=200, src_tree=(2, 5, 20), backlog_files=2000)),
                note="50 ms per request, 40 MiB/s per connection, 120 MiB/s in all, Google's 2026 limits "
                     "(`--limits google`)"),
}
