#!/usr/bin/env python3
"""A TLS terminator for the interop tests: accepts TLS on --listen and relays bytes to a plain
TCP --backend, one pair of threads per connection. Standard library only.

Contract: prints "tls front listening on HOST:PORT" once it accepts connections (the port bound, also
for --listen HOST:0); stops on SIGTERM. With --counters FILE it keeps in FILE, as JSON, what it has
relayed: connections accepted, handshakes failed, bytes from the clients and to them (rewritten as each
connection opens and ends, and at SIGTERM; the bench reads it to show which client went through TLS).
It does not parse HTTP: the backend sees exactly what the client sent (Host header included), so a
server behind it must build absolute URLs from its --public-url. ALPN offers only http/1.1, which
keeps Go clients (rclone) on HTTP/1.1.
"""
import argparse
import json
import os
import signal
import socket
import ssl
import sys
import threading


LINGER_SECONDS = 2.0


class Counters:
    """What the front relayed. Each relay thread adds only to its own cell (a one-item list), so the bytes need
    no lock; the lock guards the cells' registry and the file."""

    def __init__(self, path):
        self.path, self.lock = path, threading.Lock()
        self.connections = self.failed = 0
        self.cells = {"in": [], "out": []}

    def cell(self, direction):
        c = [0]
        with self.lock:
            self.cells[direction].append(c)
        return c

    def opened(self):
        with self.lock:
            self.connections += 1
        self.write()

    def handshake_failed(self):
        with self.lock:
            self.failed += 1
        self.write()

    def write(self):
        if not self.path:
            return
        with self.lock:
            text = json.dumps(dict(connections=self.connections, handshakeFailures=self.failed,
                                   bytesFromClients=sum(c[0] for c in self.cells["in"]),
                                   bytesToClients=sum(c[0] for c in self.cells["out"])))
            with open(self.path + ".tmp", "w") as f:
                f.write(text + "\n")
            os.replace(self.path + ".tmp", self.path)


def relay(source, destination, at_end, count):
    """Copies until EOF or an error on either side, then calls at_end() once; count[0] is the bytes copied."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            destination.sendall(data)
            count[0] += len(data)
    except OSError:
        pass
    finally:
        at_end()


def serve_connection(raw, context, backend, timeout, counters):
    raw.settimeout(timeout)
    try:
        client = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError) as error:
        print(f"tls front: handshake failed: {error}", file=sys.stderr, flush=True)
        raw.close()
        counters.handshake_failed()
        return
    counters.opened()
    try:
        upstream = socket.create_connection(backend, timeout=timeout)
    except OSError as error:
        print(f"tls front: backend {backend} unreachable: {error}", file=sys.stderr, flush=True)
        client.close()
        return
    client.settimeout(None)
    upstream.settimeout(None)
    # A relay forwards each piece as it comes: Nagle would hold a piece back until the previous one is
    # acknowledged, which costs a delayed-ACK period (~40 ms) per request.
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def client_done():
        # The client finished sending: let the backend see EOF, keep relaying its answer.
        try:
            upstream.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    to_backend = threading.Thread(target=relay, args=(client, upstream, client_done, counters.cell("in")), daemon=True)
    to_backend.start()
    relay(upstream, client, lambda: None, counters.cell("out"))
    # The backend closed. It may have answered before reading the whole request (an error while a chunked
    # upload is still coming). Closing the client's socket now, with request bytes unread, would send a TCP
    # reset that destroys the answer the client has not read yet; so linger as a server does: keep reading
    # (and relaying) the client's bytes until it closes, for a bounded time.
    to_backend.join(LINGER_SECONDS)
    for s in (client, upstream):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    to_backend.join(timeout)
    client.close()
    upstream.close()
    counters.write()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:443")
    parser.add_argument("--backend", required=True, help="HOST:PORT of the plain-HTTP server")
    parser.add_argument("--cert", required=True, help="PEM certificate chain for the served names")
    parser.add_argument("--key", required=True, help="PEM private key")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--counters", default=None, help="JSON file of what was relayed (see above)")
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    backend_host, backend_port = args.backend.rsplit(":", 1)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])

    counters = Counters(args.counters)

    def stop(*_):
        counters.write()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    listener = socket.create_server((host, int(port)), reuse_port=False, backlog=128)
    counters.write()
    print(f"tls front listening on {host}:{listener.getsockname()[1]}", flush=True)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve_connection, daemon=True,
                         args=(raw, context, (backend_host, int(backend_port)), args.timeout, counters)).start()


if __name__ == "__main__":
    main()
