"""A mount that refuses writes (drivefs's read-only release did): reported as the system's note, not as a
harness failure.
"""
import errno
import os
import subprocess

from ..base import HarnessError


# What a mount that takes no writes answers: drivefs's read-only release said EROFS.
NOT_WRITABLE = {errno.EROFS: "EROFS", errno.ENOSYS: "ENOSYS", errno.EPERM: "EPERM", errno.EACCES: "EACCES",
                errno.EOPNOTSUPP: "EOPNOTSUPP"}
NOT_WRITABLE_TEXT = ("Read-only file system", "Function not implemented", "Operation not permitted",
                     "Permission denied", "Operation not supported")


class NotWritable(Exception):
    """The mount refuses writes: reported as the system's note, not as a harness failure."""


def probe_writable(system):
    """Raises NotWritable when a folder cannot be made in the mount (then removed again)."""
    probe = os.path.join(system.mnt, ".bench-write-probe")
    try:
        os.mkdir(probe)
    except OSError as e:
        if e.errno in NOT_WRITABLE:
            raise NotWritable("not writable yet (mkdir: %s)" % NOT_WRITABLE[e.errno])
        raise HarnessError("%s: mkdir in the mount: %s" % (system.name, e))
    try:
        os.rmdir(probe)
    except OSError as e:
        raise HarnessError("%s: rmdir in the mount: %s" % (system.name, e))


def run_tool(cmd, timeout):
    """A write tool (cp, tar, mkdir) run into the mount; a refusal to write is NotWritable."""
    r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    if r.returncode != 0:
        if any(t in r.stderr for t in NOT_WRITABLE_TEXT):
            raise NotWritable("not writable yet (%s: %s)" % (cmd[0], r.stderr.strip().splitlines()[0]))
        raise HarnessError("%s failed: %s" % (" ".join(cmd[:2]), r.stderr.strip()[-300:]))
