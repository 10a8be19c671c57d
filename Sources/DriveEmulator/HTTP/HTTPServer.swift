import Foundation
import DriveSupport
#if canImport(Glibc)
import Glibc
#endif

/// Limits and addresses of an `HTTPServer`.
public struct HTTPServerConfig: Sendable {
    /// An IPv4 or IPv6 literal (`127.0.0.1`, `::1`, `[::1]`) or a host name resolved at start.
    public var host: String = "127.0.0.1"
    /// 0 picks a free port.
    public var port: Int = 0
    /// When set (`https://www.googleapis.com`), every request's `baseURL`; otherwise `http://` + `Host`.
    public var publicURL: String?
    /// Connections served at once; the next ones get 503 and are closed.
    public var maxConnections: Int = 256
    /// Request line plus headers; more gets 431.
    public var maxHeadBytes: Int = 64 * 1024
    /// How long a kept-alive connection may sit idle between requests.
    public var idleTimeout: Double = 60
    /// How long a read inside a request (head or body) may wait for bytes.
    public var readTimeout: Double = 30
    /// How long a write may wait for a client that does not read.
    public var sendTimeout: Int = 60
    /// Per-connection pacing of request and response bytes; nil for unlimited.
    public var bandwidthBytesPerSecond: Int?
    /// Pacing of the bytes of all connections together (one budget they share); nil for unlimited.
    public var totalBandwidthBytesPerSecond: Int?

    public init(host: String = "127.0.0.1", port: Int = 0) {
        self.host = host
        self.port = port
    }
}

/// What a responder hands back for one request: the response, and the name stats are kept
/// under (a route's method name) or nil for requests that are not counted.
public struct HTTPAnswer {
    public var response: HTTPResponse
    public var statsKey: String?
    public init(response: HTTPResponse, statsKey: String?) {
        self.response = response
        self.statsKey = statsKey
    }
}

/// One finished exchange, for stats and the request log.
public struct HTTPExchange: Sendable {
    public enum Outcome: Sendable, Equatable {
        case status(Int)
        /// The connection was reset on purpose (a fault) after this many response body bytes.
        case reset
        /// A stall fault: nothing was answered.
        case stalled
        /// The client went away or the write failed before the response was complete.
        case aborted(status: Int)
    }
    public var httpMethod: String
    /// The decoded path, without the query (never log the query: it may carry tokens).
    public var path: String
    public var statsKey: String?
    public var outcome: Outcome
    /// Request body bytes read.
    public var bytesIn: Int64
    /// Response body bytes written.
    public var bytesOut: Int64
    public var seconds: Double
}

/// The code behind the server: answers requests and hears about exchanges.
/// Called on connection threads, concurrently.
///
/// Contract: `record` is called once per request, after its response is decided and BEFORE any of
/// its bytes are sent (outcome as planned, `bytesOut` 0, `bytesIn` as read so far), so a client that
/// has read its answer always finds the request counted. `recordCompletion` follows once the
/// exchange is over, with the final outcome and byte counts, and the exchange `record` was given.
public protocol HTTPResponder: AnyObject, Sendable {
    func answer(_ request: HTTPRequest) -> HTTPAnswer
    func record(_ exchange: HTTPExchange)
    func recordCompletion(_ exchange: HTTPExchange, recorded: HTTPExchange)
}

public enum HTTPServerError: Error, CustomStringConvertible {
    case cannotResolve(host: String, message: String)
    case cannotListen(host: String, port: Int, errno: Int32)
    case alreadyStarted

    public var description: String {
        switch self {
        case .cannotResolve(let host, let message): return "cannot resolve \(host): \(message)"
        case .cannotListen(let host, let port, let e): return "cannot listen on \(host):\(port): \(String(cString: strerror(e)))"
        case .alreadyStarted: return "the server was already started"
        }
    }
}

/// An HTTP/1.1 server on BSD sockets: one accept thread and one thread per connection.
///
/// Lock order: `state` is a leaf lock; nothing is called while holding it except `shutdown(2)`.
/// INVARIANT: a descriptor is in `state.connections` only while its connection thread has not
/// closed it, so `stop()` never shuts down a reused descriptor number.
public final class HTTPServer: Sendable {
    public let config: HTTPServerConfig
    let responder: any HTTPResponder

    private struct State {
        var listenFD: Int32 = -1
        var wakePipe: (Int32, Int32) = (-1, -1)
        var port = 0
        var started = false
        var stopping = false
        var connections = Set<Int32>()
        var acceptThreadDone = false
    }
    private let state = Locked(State())
    private let threads = DispatchGroup()
    /// The budget every connection's throttle shares (`totalBandwidthBytesPerSecond`).
    let sharedBandwidth: SharedBandwidth?

    public init(config: HTTPServerConfig, responder: any HTTPResponder) {
        self.config = config
        self.responder = responder
        sharedBandwidth = config.totalBandwidthBytesPerSecond.flatMap { rate in
            rate > 0 ? SharedBandwidth(bytesPerSecond: rate, now: BandwidthThrottle.monotonicNanos()) : nil
        }
    }

    /// The bound port (valid after `start`).
    public var port: Int { state.withLock { $0.port } }

    /// `http://host:port` as bound (IPv6 in brackets).
    public var listenURL: String {
        let host = config.host.hasPrefix("[") ? config.host
            : (config.host.contains(":") ? "[\(config.host)]" : config.host)
        return "http://\(host):\(port)"
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Binds, listens and starts the accept thread; returns once connections are accepted.
    public func start() throws {
        _ = signal(SIGPIPE, SIG_IGN)
        try state.withLock { s in
            if s.started { throw HTTPServerError.alreadyStarted }
            s.started = true
        }
        let (fd, port) = try Self.makeListener(host: config.host, port: config.port)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            _ = Glibc.close(fd)
            throw HTTPServerError.cannotListen(host: config.host, port: config.port, errno: errno)
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        let wakeRead = fds[0]
        state.withLock { s in
            s.listenFD = fd
            s.port = port
            s.wakePipe = (fds[0], fds[1])
        }
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop(listenFD: fd, wakeFD: wakeRead)
            threads.leave()
        }
        thread.name = "http-accept"
        thread.start()
    }

    /// Stops accepting, ends every connection (in-flight handlers finish; their writes fail)
    /// and waits up to `timeout` seconds for all threads. Idempotent.
    public func stop(timeout: Double = 10) {
        let wake: Int32? = state.withLock { s in
            guard s.started, !s.stopping else { return nil }
            s.stopping = true
            for fd in s.connections { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            return s.wakePipe.1
        }
        guard let wake else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(wake, &byte, 1)
        _ = threads.wait(timeout: .now() + timeout)
        state.withLock { s in
            // Connections accepted while stopping were added after the shutdown sweep.
            for fd in s.connections { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
        _ = threads.wait(timeout: .now() + 1)
        state.withLock { s in
            if s.listenFD >= 0 { _ = Glibc.close(s.listenFD); s.listenFD = -1 }
            if s.wakePipe.0 >= 0 { _ = Glibc.close(s.wakePipe.0); _ = Glibc.close(s.wakePipe.1); s.wakePipe = (-1, -1) }
        }
    }

    // MARK: - Accepting

    private func acceptLoop(listenFD: Int32, wakeFD: Int32) {
        var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        while !isStopping {
            guard (try? SystemCall.retrying("poll") { poll(&fds, 2, -1) }) != nil else { break }
            if fds[1].revents != 0 { break }
            guard fds[0].revents != 0 else { continue }
            let client = accept(listenFD, nil, nil)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            if client < 0 {
                // EMFILE and friends: back off a little instead of spinning.
                if errno != EINTR && errno != EAGAIN && errno != ECONNABORTED { usleep(10_000) }
                continue
            }
            let admitted = state.withLock { s -> Bool in
                guard !s.stopping, s.connections.count < config.maxConnections else { return false }
                s.connections.insert(client)
                return true
            }
            guard admitted else {
                refuseBusy(client)
                continue
            }
            threads.enter()
            let thread = Thread { [self] in
                let connection = HTTPConnection(fd: client, server: self)
                connection.run()
                threads.leave()
            }
            thread.name = "http-connection"
            thread.stackSize = 8 << 20  // handlers (the q parser) may recurse; virtual memory only
            thread.start()
        }
    }

    /// Answers 503 on a connection over the limit, from the accept thread (a small write into an
    /// empty socket buffer does not block).
    private func refuseBusy(_ fd: Int32) {
        var tv = timeval(tv_sec: 1, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let error = GoogleError(503, reason: "backendError", message: "Too many connections; try again later.")
        let bytes = HTTPResponseWriter.serialize(error.response, closing: true)
        try? SystemCall.sendAll(fd, bytes)
        _ = shutdown(fd, Int32(SHUT_WR))
        _ = Glibc.close(fd)
    }

    /// Called by a connection just before it closes its descriptor.
    func connectionEnded(_ fd: Int32) {
        state.withLock { _ = $0.connections.remove(fd) }
    }

    // MARK: - Listening socket

    static func makeListener(host: String, port: Int) throws -> (Int32, Int) {
        guard (0...65535).contains(port) else { throw HTTPServerError.cannotListen(host: host, port: port, errno: EINVAL) }
        var name = host
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(name.isEmpty ? nil : name, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw HTTPServerError.cannotResolve(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = EADDRNOTAVAIL
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let ai = candidate {
            candidate = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastErrno = errno; continue }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0, listen(fd, 512) == 0 {
                return (fd, boundPort(fd) ?? port)
            }
            lastErrno = errno
            _ = Glibc.close(fd)
        }
        throw HTTPServerError.cannotListen(host: host, port: port, errno: lastErrno)
    }

    private static func boundPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default: return nil
        }
    }
}
