#!/usr/bin/env python3
"""A TLS terminator for the interop tests: accepts TLS on --listen and relays bytes to a plain
TCP --backend, one pair of threads per connection. Standard library only.

Contract: prints "tls front listening on HOST:PORT" once it accepts connections; stops on SIGTERM.
It does not parse HTTP: the backend sees exactly what the client sent (Host header included), so a
server behind it must build absolute URLs from its --public-url. ALPN offers only http/1.1, which
keeps Go clients (rclone) on HTTP/1.1.
"""
import argparse
import signal
import socket
import ssl
import sys
import threading


LINGER_SECONDS = 2.0


def relay(source, destination, at_end):
    """Copies until EOF or an error on either side, then calls at_end() once."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            destination.sendall(data)
    except OSError:
        pass
    finally:
        at_end()


def serve_connection(raw, context, backend, timeout):
    raw.settimeout(timeout)
    try:
        client = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError) as error:
        print(f"tls front: handshake failed: {error}", file=sys.stderr, flush=True)
        raw.close()
        return
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

    to_backend = threading.Thread(target=relay, args=(client, upstream, client_done), daemon=True)
    to_backend.start()
    relay(upstream, client, lambda: None)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:443")
    parser.add_argument("--backend", required=True, help="HOST:PORT of the plain-HTTP server")
    parser.add_argument("--cert", required=True, help="PEM certificate chain for the served names")
    parser.add_argument("--key", required=True, help="PEM private key")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    backend_host, backend_port = args.backend.rsplit(":", 1)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.create_server((host, int(port)), reuse_port=False, backlog=128)
    print(f"tls front listening on {host}:{port}", flush=True)
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve_connection, daemon=True,
                         args=(raw, context, (backend_host, int(backend_port)), args.timeout)).start()


if __name__ == "__main__":
    main()
