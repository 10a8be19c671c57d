"""The drivefs-emulator under the bench: started on 127.0.0.1 with a profile's shaping, its control endpoints
(stats, reset, usage), the TLS front a filesystem under test reaches it through, the run's certificates, and
copies of its state for a lane's own emulator.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

from . import quota
from .base import HarnessError, REPO, log, run, tail
from .fmt import human_bytes


TLS_FRONT = os.path.join(REPO, "Tests", "interop", "tls_front.py")


class TlsFront:
    """Tests/interop/tls_front.py: TLS on `listen` with tls/server.pem, relayed to an emulator's plain port; what
    it relayed (connections, bytes each way) in its counters file, which shows that a client went through it."""

    def __init__(self, tls, listen, backend_port, logfile):
        self.logfile, self.counters_path = logfile, logfile + ".counters.json"
        self.out = open(logfile, "w")
        self.proc = subprocess.Popen([sys.executable, TLS_FRONT, "--listen", listen, "--backend", "127.0.0.1:%d" % backend_port,
                                      "--cert", tls + "/server.pem", "--key", tls + "/server.key",
                                      "--counters", self.counters_path], stdout=self.out, stderr=subprocess.STDOUT)
        for _ in range(150):
            if "tls front listening" in open(logfile).read():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise HarnessError("the TLS front did not start: " + tail(logfile))

    def counters(self):
        """What the front has relayed (connections, handshakeFailures, bytesFromClients, bytesToClients) as of the
        last connection opened or ended: whole once the clients' connections are closed (a daemon's, when it exits)."""
        try:
            with open(self.counters_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return dict(connections=0, handshakeFailures=0, bytesFromClients=0, bytesToClients=0)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.close()


def free_port():
    """A port on 127.0.0.1 that nothing listens on now (the emulator must know its front's URL before the
    front starts: a port taken meanwhile fails the front's start, and the caller tries again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def emulator_behind_front(binary, state_dir, logfile, profile, tls, attempts=3):
    """An emulator with a TLS front of its own on the host's loopback (drivefs's side): the emulator hands out
    absolute URLs (a resumable upload's Location) as the front's, https://127.0.0.1:PORT."""
    for attempt in range(attempts):
        port = free_port()
        emulator = Emulator(binary, state_dir, logfile, profile=profile, public_url="https://127.0.0.1:%d" % port)
        try:
            emulator.put_front(TlsFront(tls, "127.0.0.1:%d" % port, emulator.port, logfile + ".front"),
                               "https://127.0.0.1:%d/" % port, tls + "/ca.pem")
            return emulator
        except HarnessError:
            emulator.stop()
            if attempt == attempts - 1:
                raise


class Emulator:
    """A drivefs-emulator on 127.0.0.1. `url` is its plain HTTP address, which the harness's own requests and
    the reference's curl use; `client_url` is what a filesystem under test is pointed at: the TLS front's
    (with `ca`, the CA to trust) when it has one (put_front), else `url`."""

    def __init__(self, binary, state_dir, logfile, seed=None, profile=None, public_url=None):
        self.front, self.ca, self.public_url, self.front_base = None, None, public_url, None
        cmd = [binary, "--host", "127.0.0.1", "--port", "0", "--state-dir", state_dir]
        if seed:
            cmd += ["--seed", seed]
        if profile and profile["latency_ms"]:
            cmd += ["--latency", str(profile["latency_ms"])]
        if profile and profile["bandwidth"]:
            cmd += ["--bandwidth", str(profile["bandwidth"])]
        if profile and profile.get("total_bandwidth"):
            cmd += ["--total-bandwidth", str(profile["total_bandwidth"])]
        # What this emulator limits ("google", or "metered": counted, nothing refused); a mount under test
        # is told so (systems/drivefs.py).
        self.limits = profile.get("limits") if profile else None
        if profile:
            cmd += quota.emulator_flags(profile.get("limits"))
        if public_url:
            cmd += ["--public-url", public_url]
        self.logfile = logfile
        self.out = open(logfile, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = None
        deadline = time.time() + 600  # seeding 200,000 files on a busy machine
        while time.time() < deadline:
            with open(logfile) as f:
                m = re.search(r"listening on (http://127\.0\.0\.1:(\d+)/)", f.read())
            if m:
                self.url, self.port = m.group(1), int(m.group(2))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.url:
            self.stop()
            raise HarnessError("the emulator did not start: " + tail(logfile))
        self.client_url = self.url
        self.token = self.fetch_token()

    def put_front(self, front, client_url, ca):
        self.front, self.client_url, self.ca = front, client_url, ca

    def plain(self, url):
        """An absolute URL the emulator handed out (its public URL's) as its plain address, for the reference."""
        if self.public_url and url.startswith(self.public_url.rstrip("/") + "/"):
            return self.url + url[len(self.public_url.rstrip("/")) + 1:]
        return url

    def fetch_token(self):
        body = urllib.parse.urlencode(dict(grant_type="refresh_token", refresh_token="drivefs-emulator-refresh-token",
                                           client_id="bench", client_secret="bench")).encode()
        with urllib.request.urlopen(self.url + "token", data=body, timeout=30) as r:
            return json.load(r)["access_token"]

    def stats(self):
        with urllib.request.urlopen(self.url + "__emulator/stats", timeout=30) as r:
            return json.load(r)

    def reset(self):
        req = urllib.request.Request(self.url + "__emulator/reset-stats", data=b"", method="POST")
        urllib.request.urlopen(req, timeout=30).read()

    def usage(self):
        """What the drive holds (files, folders, bytes outside the trash); not a counted request."""
        with urllib.request.urlopen(self.url + "__emulator/usage", timeout=30) as r:
            return json.load(r)

    def stop(self):
        if self.front:
            self.front.stop()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.close()


def front_report(ctx, emulator, who, part, measured):
    """Keeps (ctx.fronts) and logs what an emulator's TLS front relayed while `who` (drivefs's or rclone's side)
    used it for `part`, after the login (emulator.front_base, drivefs's: `drivefs auth login` goes through the
    front too): that the filesystems went through TLS. `measured` runs with a front that relayed nothing is a
    harness failure: the mounts went around it."""
    c, base = emulator.front.counters(), emulator.front_base or {}
    c = {k: v - base.get(k, 0) for k, v in c.items()}
    ctx.fronts.append(dict(client=who, part=part, measured=measured, **c))
    if measured:
        log("[%s] TLS front of %s %s emulator: %d connections, %s from the clients, %s to them%s" % (
            ctx.profile_name, who, part, c["connections"], human_bytes(c["bytesFromClients"]), human_bytes(c["bytesToClients"]),
            "; %d handshakes failed" % c["handshakeFailures"] if c["handshakeFailures"] else ""))
    if measured and not c["connections"]:
        raise HarnessError("%s %s: %d runs measured, but the TLS front relayed no connection" % (who, part, measured))


def copy_state(src, dst):
    """A copy of an emulator state directory for a lane's own emulator: the metadata and OAuth files copied,
    the content files (never changed once written) hard-linked."""
    os.makedirs(dst)
    for entry in os.listdir(src):
        if entry == "drive":
            os.makedirs(os.path.join(dst, "drive"))
            for sub in os.listdir(os.path.join(src, "drive")):
                flag = "-al" if sub == "content" else "-a"
                run(["cp", flag, os.path.join(src, "drive", sub), os.path.join(dst, "drive", sub)], 300)
        else:
            run(["cp", "-a", os.path.join(src, entry), os.path.join(dst, entry)], 300)


def make_certificates(tls):
    """A CA made for the run (tls/ca.pem) and a server certificate it signs (tls/server.pem, server.key) for
    Google's names and 127.0.0.1: rclone's front (Google's names, in its namespace) and drivefs's (127.0.0.1,
    on the host) present the same kind of certificate."""
    os.makedirs(os.path.join(tls, "none"), exist_ok=True)
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=drivefs bench CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-keyout", tls + "/ca.key", "-out", tls + "/ca.pem"], 60, **q)
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=www.googleapis.com",
         "-keyout", tls + "/server.key", "-out", tls + "/server.csr"], 60, **q)
    with open(tls + "/server.ext", "w") as f:
        f.write("subjectAltName=DNS:www.googleapis.com,DNS:oauth2.googleapis.com,DNS:accounts.google.com,IP:127.0.0.1\n"
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", tls + "/server.csr", "-CA", tls + "/ca.pem", "-CAkey", tls + "/ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", tls + "/server.ext", "-out", tls + "/server.pem"], 60, **q)
