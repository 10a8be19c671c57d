import DriveSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The installed-app flow's redirect target: an HTTP listener on 127.0.0.1 with a port the kernel
/// picks. One-shot: the first request to the callback path `/` is answered (with the page the
/// caller chooses) and the socket is closed; stray requests (`/favicon.ico`) get a 404 meanwhile.
public final class LoopbackListener: Sendable {
    public let port: UInt16
    /// Guarded by `state`. While a thread waits in `waitForCallback`, `close()` only shuts the socket
    /// down (waking the wait) and the waiter releases the descriptor, so it is never reused under it.
    private struct SocketState {
        var fd: Int32
        var closed = false
        var waiting = false
        var released = false
        mutating func release() {
            if !released { Glibc.close(fd); released = true }
        }
    }
    private let state: Locked<SocketState>

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OAuthError.configuration("cannot open a loopback socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw OAuthError.configuration("cannot listen on 127.0.0.1: \(String(cString: strerror(e)))")
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = UInt16(bigEndian: addr.sin_port)
        state = Locked(SocketState(fd: fd))
    }

    deinit { close() }

    public var redirectURI: String { "http://127.0.0.1:\(port)/" }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Stops listening; later connections are refused.
    public func close() {
        state.withLock { s in
            guard !s.closed else { return }
            s.closed = true
            if s.waiting { shutdown(s.fd, Int32(SHUT_RDWR)) } else { s.release() }
        }
    }

    /// Waits until the callback request arrives, `deadline` (a `Date`) passes, or `close()` is called.
    /// `page` decides the answer (status, HTML) from the request's query parameters.
    /// Returns the query parameters, or nil on timeout or close.
    public func waitForCallback(until deadline: Date, page: ([String: String]) -> (Int, String)) -> [String: String]? {
        waitForCallback(until: deadline.timeIntervalSince1970, clock: SystemTimeSource(), page: page)
    }

    /// The same, with the deadline in `clock`'s seconds (checked at least every 200 ms of real time).
    public func waitForCallback(until deadline: Double, clock: any TimeSource,
                                page: ([String: String]) -> (Int, String)) -> [String: String]? {
        let claimed: Int32? = state.withLock { s in
            guard !s.closed, !s.waiting else { return nil }
            s.waiting = true
            return s.fd
        }
        guard let fd = claimed else { return nil }
        defer {
            state.withLock { s in
                s.waiting = false
                if s.closed { s.release() }
            }
        }
        while clock.now() < deadline, !isClosed {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if ready <= 0 { continue }
            let client = accept(fd, nil, nil)
            if client < 0 { continue }
            defer { Glibc.close(client) }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            guard let target = Self.readRequestTarget(client) else {
                Self.respond(client, status: 400, html: "<p>Bad request.</p>")
                continue
            }
            let pathEnd = target.firstIndex(of: "?") ?? target.endIndex
            guard target[..<pathEnd] == "/" else {
                Self.respond(client, status: 404, html: "<p>Not found.</p>")
                continue
            }
            let params = Self.queryParameters(of: String(target))
            let (status, html) = page(params)
            Self.respond(client, status: status, html: html)
            close()
            return params
        }
        return nil
    }

    /// The request-target of the request line, after reading the whole head (at most 16 KiB).
    static func readRequestTarget(_ fd: Int32) -> String? {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < 16 * 1024 {
            let n = (try? buffer.withUnsafeMutableBytes { raw in try SystemCall.retrying("recv") { recv(fd, raw.baseAddress, raw.count, 0) } }) ?? 0
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
            if data.count >= 4, data.suffix(from: max(0, data.count - n - 3)).containsCRLFCRLF { break }
        }
        let head = String(decoding: data, as: UTF8.self)
        guard let line = head.split(separator: "\r\n", maxSplits: 1).first ?? head.split(separator: "\n").first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" || parts[0] == "HEAD" else { return nil }
        return String(parts[1])
    }

    static func respond(_ fd: Int32, status: Int, html: String) {
        let reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request"
        let body = Array(html.utf8)
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.count)\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
        // A browser that went away has nothing to be told.
        try? SystemCall.sendAll(fd, Array(head.utf8) + body)
    }

    /// Query parameters of a URL or request-target, form-decoded (`+` is a space); the first of a repeated name wins.
    public static func queryParameters(of urlOrTarget: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in FormEncoding.query(of: urlOrTarget) where out[pair.name] == nil { out[pair.name] = pair.value }
        return out
    }
}

private extension ArraySlice where Element == UInt8 {
    var containsCRLFCRLF: Bool {
        let a = Array(self)
        guard a.count >= 4 else { return false }
        for i in 0...(a.count - 4) where a[i] == 13 && a[i + 1] == 10 && a[i + 2] == 13 && a[i + 3] == 10 { return true }
        return false
    }
}
