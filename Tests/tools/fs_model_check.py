#!/usr/bin/env python3
"""A model checker for one file on a mounted filesystem, in the spirit of xfstests' fsx.

Random pwrites, preads, ftruncates, fstat sizes, closes and reopens (some with O_TRUNC), mmap
writes and reads, copy_file_range within the file and fsyncs, each checked against an in-memory
model of the file's bytes. On the first difference it prints the seed, the step and the last
operations, and exits 1. At the end it writes the model's bytes to MODEL_OUT, for the caller to
compare with what reached the server.

usage: fs_model_check.py FILE SEED OPERATIONS MODEL_OUT [MAX_SIZE]
"""
import mmap
import os
import random
import sys
from collections import deque

path, seed, operations, model_out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
max_size = int(sys.argv[5]) if len(sys.argv) > 5 else 300_000
rng = random.Random(seed)
model = bytearray()
log = deque(maxlen=40)


def fail(step, message):
    print(f"fs_model_check: seed {seed}, step {step}: {message}", file=sys.stderr)
    print("last operations:\n" + "\n".join(log), file=sys.stderr)
    sys.exit(1)


def pattern(n):
    return rng.randbytes(n)


def set_size(size):
    if size < len(model):
        del model[size:]
    else:
        model.extend(b"\0" * (size - len(model)))


fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
for step in range(operations):
    roll = rng.randrange(100)
    try:
        if fd < 0:
            truncating = rng.randrange(10) == 0
            fd = os.open(path, os.O_RDWR | (os.O_TRUNC if truncating else 0))
            if truncating:
                del model[:]
            log.append(f"{step}: open{' O_TRUNC' if truncating else ''}")
        elif roll < 25:
            offset = rng.randrange(max_size - 1)
            data = pattern(1 + rng.randrange(min(64 << 10, max_size - offset)))
            n = os.pwrite(fd, data, offset)
            if n != len(data):
                fail(step, f"pwrite {offset}+{len(data)} wrote {n}")
            if len(model) < offset + n:
                set_size(offset + n)
            model[offset:offset + n] = data
            log.append(f"{step}: pwrite {offset}+{n}")
        elif roll < 33:
            size = rng.randrange(max_size)
            os.ftruncate(fd, size)
            set_size(size)
            log.append(f"{step}: ftruncate {size}")
        elif roll < 48:
            offset = rng.randrange(len(model) + 1000)
            length = 1 + rng.randrange(80_000)
            got = os.pread(fd, length, offset)
            want = bytes(model[offset:offset + length])
            log.append(f"{step}: pread {offset}+{length} -> {len(got)}")
            if got != want:
                diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                fail(step, f"pread {offset}+{length} gave {len(got)} bytes, the model {len(want)}; first difference at {offset + diff}")
        elif roll < 56:
            size = os.fstat(fd).st_size
            log.append(f"{step}: fstat -> {size}")
            if size != len(model):
                fail(step, f"the size is {size}, the model's {len(model)}")
        elif roll < 64 and len(model) > 0:
            # A store through a shared mapping of the file as it is now, then msync.
            offset = rng.randrange(len(model))
            length = 1 + rng.randrange(min(32 << 10, len(model) - offset))
            data = pattern(length)
            with mmap.mmap(fd, len(model)) as m:
                m[offset:offset + length] = data
                m.flush()
            model[offset:offset + length] = data
            log.append(f"{step}: mmap write {offset}+{length}")
        elif roll < 70 and len(model) > 0:
            offset = rng.randrange(len(model))
            length = 1 + rng.randrange(len(model) - offset)
            with mmap.mmap(fd, len(model), prot=mmap.PROT_READ) as m:
                got = m[offset:offset + length]
            log.append(f"{step}: mmap read {offset}+{length}")
            if got != bytes(model[offset:offset + length]):
                fail(step, f"mmap read {offset}+{length} differs from the model")
        elif roll < 76 and len(model) > 2:
            # copy_file_range within the file, ranges apart (the same file may not overlap).
            length = 1 + rng.randrange(min(32 << 10, len(model) // 2))
            src = rng.randrange(len(model) - length + 1)
            dst = rng.randrange(max_size - length)
            if abs(src - dst) < length:
                dst = src + length
            copied = os.copy_file_range(fd, fd, length, src, dst)
            piece = bytes(model[src:src + copied])
            if len(model) < dst + copied:
                set_size(dst + copied)
            model[dst:dst + copied] = piece
            log.append(f"{step}: copy_file_range {src}+{length} -> {dst} ({copied})")
        elif roll < 86:
            os.close(fd)
            fd = -1
            log.append(f"{step}: close")
        elif roll < 88:
            os.fsync(fd)
            log.append(f"{step}: fsync")
        else:
            log.append(f"{step}: (nothing)")
    except OSError as error:
        fail(step, f"the operation after the last one listed failed: {error}")

if fd >= 0:
    os.close(fd)
with open(path, "rb") as f:
    final = f.read()
if final != bytes(model):
    fail(operations, f"after the last close the file reads {len(final)} bytes unlike the model's {len(model)}")
with open(model_out, "wb") as f:
    f.write(model)
print(f"fs_model_check: seed {seed}: {operations} operations matched the model ({len(model)} bytes at the end)")
