"""The workloads' ids and names, in the tables' order, with the figures of the run's size."""
from ..data import scale_count, src_file_count, stat_paths, tree_entries
from . import index_quota


WORKLOADS = [
    ("1a", "cold ls -lR, 5,000 entries in 250 folders"),
    ("1b", "warm ls -lR"),
    ("1c", "ls -lR after a remount"),
    ("1d", "cold find -ls"),
    ("1e", "warm find -ls"),
    ("2", "cold stat of 200 files 5 folders deep"),
    ("3a", "sequential read of the big file, cold"),
    ("3b", "sequential read of the big file, warm"),
    ("4", "1,000 random 4 KiB reads in the big file, cold"),
    ("5", "cp -r of 1,000 files of 4 KiB into the mount"),
    ("6", "writing one 1 GiB file"),
    ("7", "tar x of ~2,000 files, then reading it back"),
    ("8a", "scale: until ls of the root answers"),
    ("8b", "scale: until the mount is idle (index built)"),
    ("8c", "scale: mounted again on the same cache, until ls of the root answers"),
    ("9a", "probes while a backlog of uploads drains"),
    ("9b", "the same probes on an idle mount"),
    ("10", "an editor's save loop"),
    ("11a", "scale under Google's limits: until the index is built"),
    ("11b", "scale under Google's limits: the user's ls during the build"),
]
# Rows whose drivefs/other ratio would compare different work: 11a is drivefs's whole index against rclone's 20 ls.
NO_RATIOS = {"11a"}


def workload_names(size):
    """The names, with this size's figures."""
    n_tree, n_stat = tree_entries(size), len(stat_paths(size))
    folders = size["tree_top"] * (1 + size["tree_sub"])
    names = dict(WORKLOADS)
    names["1a"] = "cold ls -lR, %s entries in %d folders" % (format(n_tree, ","), folders)
    names["2"] = "cold stat of %d files 5 folders deep" % n_stat
    names["3a"] = "sequential read of %d MiB, cold" % size["big_mib"]
    names["3b"] = "sequential read of %d MiB, warm" % size["big_mib"]
    names["4"] = "%s random 4 KiB reads in %d MiB, cold" % (format(size["random_reads"], ","), size["big_mib"])
    names["5"] = "cp -r of %s files of 4 KiB into the mount, until on Drive" % format(size["write_files"], ",")
    names["6"] = "writing one %d MiB file, until on Drive" % size["big_mib"]
    names["7"] = "tar x of %s files, then reading them back" % format(src_file_count(size), ",")
    names["8a"] = "scale (%s files): until ls of the root answers" % format(scale_count(size), ",")
    names["8b"] = "scale (%s files): until the mount is idle" % format(scale_count(size), ",")
    names["8c"] = "scale (%s files): remounted on the same cache, until ls of the root answers" % format(scale_count(size), ",")
    probes = "%d stats, %d ls, %d reads of 1 MiB" % tuple(size["backlog_probes"])
    names["9a"] = "p99 of %s, uncached, while %s files of 4 KiB copied in drain" % (probes, format(size["backlog_files"], ","))
    names["9b"] = "p99 of the same probes on an idle mount"
    names["10"] = "%d saves of a 10 KiB file (temporary file, fsync, rename over), until on Drive" % size["saves"]
    names["11a"] = ("scale (%s files) under `--limits google`: until the index is built (rclone, which builds none: "
                    "until its %d ls answered)" % (format(scale_count(size), ","), index_quota.LISTINGS))
    names["11b"] = "p99 of %d ls of leaf folders, run while the index of 11a is built" % index_quota.LISTINGS
    return names
