"""The seeded data: the trees the workloads read and write, made once per shape under --data (with the emulator
state that serves them), and WriteData, the write workloads' inputs read into memory once.
"""
import hashlib
import json
import os
import random
import shutil

from .base import log, now, run
from .emulator import Emulator
from .measure import read_all


DATA_VERSION = "1"  # bump when the seeded trees change shape


def tree_paths(size):
    """Relative paths of the ls -lR tree's files (under tree/): 250 folders, 5,000 entries in full."""
    out = []
    for a in range(size["tree_top"]):
        for c in range(size["tree_files"]):
            out.append("tree/dir%02d/file%02d.txt" % (a, c))
        for b in range(size["tree_sub"]):
            for c in range(size["tree_files"]):
                out.append("tree/dir%02d/sub%02d/file%02d.txt" % (a, b, c))
    return out


def tree_entries(size):
    folders = size["tree_top"] * (1 + size["tree_sub"])
    return folders + len(tree_paths(size))


def stat_paths(size):
    """200 files 5 folders deep (stat/aI/bJ/cK/dL/fM.txt) in full."""
    na, nb, nc, nd = size["stat_fanout"]
    return ["stat/a%d/b%d/c%d/d%d/f%d.txt" % (a, b, c, d, f)
            for a in range(na) for b in range(nb) for c in range(nc) for d in range(nd)
            for f in range(size["stat_files"])]


def write_main_seed(root, size):
    for rel in tree_paths(size) + stat_paths(size):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(rel + "\n")
    os.makedirs(os.path.join(root, "big"), exist_ok=True)
    rng = random.Random(8)
    with open(os.path.join(root, "big", "big.bin"), "wb") as f:
        for _ in range(size["big_mib"]):
            f.write(rng.randbytes(1 << 20))


def write_scale_seed(root, size):
    top, sub, files = size["scale"]
    for a in range(top):
        for b in range(sub):
            d = os.path.join(root, "t%03d" % a, "s%02d" % b)
            os.makedirs(d)
            for c in range(files):
                with open(os.path.join(d, "f%03d" % c), "w") as f:
                    f.write("x")


def scale_count(size):
    top, sub, files = size["scale"]
    return top * sub * files


def write_small_files(root, folder, pattern, count, seed):
    """`count` files of 4 KiB of random bytes (random.Random(seed)), named pattern % i, in root/folder."""
    d = os.path.join(root, folder)
    os.makedirs(d)
    rng = random.Random(seed)
    for i in range(count):
        with open(os.path.join(d, pattern % i), "wb") as f:
            f.write(rng.randbytes(4096))


def write_files_seed(root, size):
    """Workload 5's source: write_files files of 4 KiB of random bytes, in files/."""
    write_small_files(root, "files", "f%04d.bin", size["write_files"], 5)


def src_file_count(size):
    top, sub, files = size["src_tree"]
    return top * sub * files + top


def write_src_seed(root, size):
    """Workload 7's source, shaped like a source tree: src/pA/README and src/pA/mB/cC.txt, sizes from 64 B
    to 64 KiB (log-normal, median about 3 KiB), packed as src.tar."""
    top, sub, files = size["src_tree"]
    rng = random.Random(7)

    def put(path):
        with open(path, "wb") as f:
            f.write(rng.randbytes(int(min(65536, max(64, rng.lognormvariate(8, 1.2))))))
    for a in range(top):
        pa = os.path.join(root, "src", "p%02d" % a)
        os.makedirs(pa)
        put(os.path.join(pa, "README"))
        for b in range(sub):
            pb = os.path.join(pa, "m%02d" % b)
            os.makedirs(pb)
            for c in range(files):
                put(os.path.join(pb, "c%03d.txt" % c))
    run(["tar", "cf", os.path.join(root, "src.tar"), "-C", root, "src"], 300)


def write_backlog_seed(root, size):
    """Workload 9's backlog: backlog_files files of 4 KiB of random bytes, in backlog/."""
    write_small_files(root, "backlog", "b%04d.bin", size["backlog_files"], 9)


def write_write_seed(root, size):
    write_files_seed(root, size)
    write_src_seed(root, size)
    write_backlog_seed(root, size)


def tree_manifest(top):
    """{relative path: bytes} of every file under top, and the folders' relative paths."""
    files, folders = {}, []
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        if rel != ".":
            folders.append(rel)
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                files[os.path.normpath(os.path.join(rel, name))] = f.read()
    return files, sorted(folders, key=lambda p: (p.count(os.sep), p))


class WriteData:
    """The write workloads' inputs, read once: workload 5's files, the big file, the source tree and its tar."""

    def __init__(self, write_seed, big, big_md5=None):
        self.files_dir = os.path.join(write_seed, "files")
        self.files = tree_manifest(self.files_dir)
        self.tar = os.path.join(write_seed, "src.tar")
        self.tree = tree_manifest(write_seed + "/src")
        self.tree = ({os.path.join("src", p): b for p, b in self.tree[0].items()},
                     ["src"] + [os.path.join("src", p) for p in self.tree[1]])
        self.big = big
        self.big_size = os.path.getsize(big)
        self.backlog_dir = os.path.join(write_seed, "backlog")
        self.backlog_count = len(os.listdir(self.backlog_dir))
        if big_md5 is None:
            h = hashlib.md5()
            read_all(big, h)
            big_md5 = h.hexdigest()
        self.big_md5 = big_md5

    def tree_bytes(self):
        return sum(len(b) for b in self.tree[0].values())


WRITE_SHAPE = ("write_files", "src_tree", "backlog_files")


def prepare_data(args, size, data_root, emulator_bin, write_sizes=()):
    """Seed trees and emulator state dirs, made once and kept under data_root (reused while DATA_VERSION
    and the size match: the runs only read). The write sources, one per shape among write_sizes (a profile
    may size its writes to the write limit), are made["write", shape key]."""
    made = {}
    read_shape = ("tree_top", "tree_sub", "tree_files", "stat_fanout", "stat_files", "big_mib", "scale")
    # The write sources have no emulator state: writes go to an empty drive of their own, made per run.
    kinds = [("main", write_main_seed, read_shape, True, size, "main"), ("scale", write_scale_seed, read_shape, True, size, "scale")]
    for wsize in write_sizes:
        key = write_key(wsize)
        if all(k[5] != key for k in kinds):
            kinds.append(("write", write_write_seed, WRITE_SHAPE, False, wsize, key))
    for kind, writer, keys, with_state, size, key in kinds:
        base = os.path.join(data_root, "%s-%s" % (args.size, key))
        marker = os.path.join(base, "ready")
        seed, state = os.path.join(base, "seed"), os.path.join(base, "state")
        shape = {k: size[k] for k in keys}
        want = "%s %s" % (DATA_VERSION, json.dumps(shape, sort_keys=True))
        if not (os.path.exists(marker) and open(marker).read() == want):
            shutil.rmtree(base, ignore_errors=True)
            os.makedirs(seed)
            t0 = now()
            log("seeding %s data (%s) ..." % (kind, args.size))
            writer(seed, size)
            if with_state:
                emu = Emulator(emulator_bin, state, os.path.join(base, "seed.log"), seed=seed)
                emu.stop()
            with open(marker, "w") as f:
                f.write(want)
            log("seeded %s data in %.1f s" % (kind, now() - t0))
        made[key] = (seed, state)
    return made


def write_key(size):
    """The name of a write source's shape: write-FILES-TOPxSUBxFILES-BACKLOG."""
    return "write-%d-%s-%d" % (size["write_files"], "x".join(map(str, size["src_tree"])), size["backlog_files"])
