"""MountSystem: a FUSE mount under test, mounted on a fresh cache for a run and unmounted after; the settings both
mounts are given explicitly.
"""
import os
import shutil
import subprocess
import time

from ..base import HarnessError, tail


# What drivefs uses by default, given to both mounts explicitly.
CACHE_SIZE = "10G"
POLL_INTERVAL = "30s"
DIR_CACHE = "5m"


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f if len(line.split()) > 1)


def unmount(path, proc, timeout=20):
    """fusermount -u, then -uz; then waits for the daemon, which is killed if it lingers."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"
    if mounted(path):
        if subprocess.run([tool, "-u", path], timeout=15, capture_output=True).returncode != 0:
            subprocess.run([tool, "-uz", path], timeout=15, capture_output=True)
    if proc is not None and proc.poll() is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


class MountSystem:
    kind = "mount"

    def __init__(self, name, work):
        self.name = name
        self.work = work
        self.mnt = os.path.join(work, "mnt-" + name)
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = None
        self.n = 0

    def fresh_cache(self):
        self.n += 1
        path = os.path.join(self.work, "cache-%s-%d" % (self.name, self.n))
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def drop_cache(self, path):
        shutil.rmtree(path, ignore_errors=True)

    def mount(self, cache, emulator, timeout=120):
        self.logfile = os.path.join(self.work, "%s-%d.log" % (self.name, self.n))
        self.out = open(self.logfile, "a")
        self.proc = subprocess.Popen(self.command(cache, emulator), stdout=self.out, stderr=subprocess.STDOUT,
                                     env=self.env(), start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if mounted(self.mnt):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.unmount()
        raise HarnessError("%s did not mount: %s" % (self.name, tail(self.logfile)))

    def unmount(self):
        unmount(self.mnt, self.proc)
        self.proc = None
        if getattr(self, "out", None):
            self.out.close()
            self.out = None

    def pid(self):
        return self.proc.pid if self.proc else None

    def env(self):
        return os.environ.copy()

    def finish_writes(self):
        """What the system is told once the writes are done, so that they reach Drive (rclone: nothing, its
        write-back runs on its own; the harness then watches the emulator)."""
