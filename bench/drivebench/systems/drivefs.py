"""drivefs (`drivefs mount`), logged in against the emulator's TLS front with `drivefs auth login`."""
import os
import re
import shutil
import subprocess
import time

from ..base import HarnessError, tail
from ..systems.mount import CACHE_SIZE, DIR_CACHE, MountSystem, POLL_INTERVAL


class Drivefs(MountSystem):
    def __init__(self, work, binary):
        super().__init__("drivefs", work)
        self.binary = binary
        self.home = os.path.join(work, "drivefs-home")

    def login(self, emulator):
        """drivefs auth login --no-browser, the consent URL fetched with curl (as scripts/bench-mount.sh), against
        the emulator's TLS front (client_url, trusting its CA with --ca-file) when it has one."""
        shutil.rmtree(self.home, ignore_errors=True)
        os.makedirs(self.home)
        url = emulator.client_url
        err_path = os.path.join(self.work, "login.err")
        with open(err_path, "w") as err:
            login = subprocess.Popen([self.binary, "auth", "login", "--no-browser", "--client-id", "bench",
                                      "--client-secret", "bench", "--timeout", "60", "--auth-url=%so/oauth2/v2/auth" % url]
                                     + self.endpoints(emulator),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=self.env())
        consent = None
        for _ in range(300):
            with open(err_path) as f:
                m = re.search(re.escape(url) + r"o/oauth2/v2/auth\?\S*", f.read())
            if m:
                consent = m.group(0)
                break
            if login.poll() is not None:
                break
            time.sleep(0.1)
        if consent:
            subprocess.run(["curl", "-s", "-L", "-o", "/dev/null"] + (["--cacert", emulator.ca] if emulator.ca else [])
                           + [consent], timeout=30)
        try:
            status = login.wait(60)
        except subprocess.TimeoutExpired:
            login.kill()
            status = -1
        if not consent or status != 0:
            raise HarnessError("drivefs auth login failed: " + tail(err_path))
        if emulator.front:
            emulator.front_base = emulator.front.counters()  # the login's connections have ended with it

    def env(self):
        env = os.environ.copy()
        env.update(XDG_CONFIG_HOME=os.path.join(self.home, "config"), XDG_CACHE_HOME=os.path.join(self.home, "cache"),
                   XDG_STATE_HOME=os.path.join(self.home, "state"))
        return env

    @staticmethod
    def endpoints(emulator):
        """--api-url, --token-url and (behind a TLS front) --ca-file: the login remembers them in the profile;
        the mount is given them too, so that its command line says where it goes."""
        url = emulator.client_url
        return ["--api-url=" + url, "--token-url=%stoken" % url] + (["--ca-file=" + emulator.ca] if emulator.ca else [])

    # An emulator that refuses no writes (`lan`'s "metered"): drivefs is told so, as a user of such a server
    # would, instead of keeping Google's write limit (its default, 2.5 a second): `lan` measures CPU and FUSE,
    # not the pacer. rclone's default pacer does not limit writes that way either.
    UNLIMITED_WRITES = ["--write-rate", "100", "--write-burst", "200"]

    def command(self, cache, emulator):
        writes = self.UNLIMITED_WRITES if getattr(emulator, "limits", None) == "metered" else []
        return [self.binary, "mount", self.mnt, "-f", "--cache-dir", cache, "--cache-size", CACHE_SIZE,
                "--poll-interval", POLL_INTERVAL, "--dir-cache-ttl", DIR_CACHE, "--log-file", self.logfile] \
            + writes + self.endpoints(emulator)

    def finish_writes(self):
        """`drivefs unmount` returns once every upload is on Drive (drivefs's write contract); the daemon
        then exits. The harness still checks the emulator before it stops the clock."""
        r = subprocess.run([self.binary, "unmount", "--timeout", "900", self.mnt], env=self.env(), timeout=960,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise HarnessError("drivefs unmount failed: %s" % (r.stderr.strip() or r.stdout.strip()))
        if self.proc is not None:
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                raise HarnessError("drivefs did not exit after its unmount")
