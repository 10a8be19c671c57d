"""The run sizes (`--size`): how big each workload's data is and how many runs each gets."""


# Sizes. "full" is the issue's; "smoke" runs every workload once at a tiny size in a minute or two (it only
# proves that every step still works: its figures are not comparisons).
# Writes (5-7): write_files files of 4 KiB (5), the big file (6), a source tree of src_tree = (top folders,
# subfolders each, files each) packed as a tar (7); write_runs runs each (full: 1, for the 30 minutes: rclone's
# default pacer alone needs minutes for 2,000 files); land_max bounds the wait until everything is on Drive.
# Workload 9: backlog_files files of 4 KiB copied in, then backlog_probes = (stats, folder listings, 1 MiB reads)
# while they drain, and the same on an idle mount. Workload 10: `saves` saves of a 10 KiB file. Workload 11: the
# scale drive under --limits google; index_max bounds the wait for drivefs's index.
SIZES = {
    "full": dict(tree_top=10, tree_sub=24, tree_files=19, stat_fanout=(2, 2, 2, 5), stat_files=5,
                 big_mib=1024, random_reads=1000, scale=(100, 20, 100), runs=3, par_streams=8,
                 scale_settle_max=90.0, deadline=3300.0,
                 write_files=1000, src_tree=(10, 10, 20), write_runs=3, land_max=900.0,
                 backlog_files=2000, backlog_probes=(50, 10, 10), saves=100, index_max=180.0),
    "smoke": dict(tree_top=3, tree_sub=3, tree_files=4, stat_fanout=(2, 1, 1, 2), stat_files=2,
                  big_mib=8, random_reads=40, scale=(4, 5, 20), runs=1, par_streams=4,
                  scale_settle_max=8.0, deadline=300.0,
                  write_files=6, src_tree=(1, 2, 3), write_runs=1, land_max=60.0,
                  backlog_files=12, backlog_probes=(6, 3, 3), saves=3, index_max=15.0),
}
