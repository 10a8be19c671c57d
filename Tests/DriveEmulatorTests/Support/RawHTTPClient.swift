import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A response as a raw test client saw it.
struct RawHTTPResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    /// `error.errors[0].reason` of a Google error body.
    var googleReason: String? {
        ((json?["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["reason"] as? String
    }
}

enum RawHTTPError: Error, Equatable {
    case connectFailed(Int32)
    case timedOut
    /// The server closed before a whole response arrived (EOF).
    case closedEarly(received: Int)
    /// The server reset the connection (ECONNRESET).
    case reset(received: Int)
    case malformed(String)
}

/// How a connection ended, as seen by `RawHTTPConnection.waitForClose`.
enum RawCloseKind: Equatable { case eof, reset, timedOut }

/// A deliberately small HTTP/1.1 client on a raw socket, for tests that need to send exactly
/// the bytes they mean (malformed requests, pipelining, `Expect: 100-continue`) and see exactly
/// how the server answers or drops the connection. Every read has a timeout.
final class RawHTTPConnection {
    let fd: Int32
    private var buffer: [UInt8] = []
    /// Body bytes of the last response that arrived before a close or reset.
    private(set) var partialBody: [UInt8] = []

    init(port: Int, host: String = "127.0.0.1") throws {
        let v6 = host.contains(":")
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connectFailed(errno) }
        var rc: Int32
        if v6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &addr.sin6_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &addr.sin_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw RawHTTPError.connectFailed(e)
        }
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == ECONNRESET { throw RawHTTPError.reset(received: 0) }
                guard n > 0 else { throw RawHTTPError.closedEarly(received: 0) }
                offset += n
            }
        }
    }

    /// Sends a request; `body` framed by Content-Length unless the headers say otherwise.
    func sendRequest(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (n, v) in headers { text += "\(n): \(v)\r\n" }
        if let body, !headers.contains(where: { ["content-length", "transfer-encoding"].contains($0.0.lowercased()) }) {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "\r\n"
        try send(Array(text.utf8) + (body ?? []))
    }

    /// Whether the server has sent something (or closed) within `timeout`, without reading it.
    func waitReadable(timeout: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let r = poll(&p, 1, Int32(timeout * 1000))
            if r < 0 && errno == EINTR { continue }
            return r > 0
        }
    }

    /// Half-closes our sending side (the server sees end of stream).
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    private func fill(timeout: Double) throws -> Int {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, 1, Int32(timeout * 1000))
        if r == 0 { throw RawHTTPError.timedOut }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == ECONNRESET { throw RawHTTPError.reset(received: buffer.count) }
            throw RawHTTPError.malformed("recv errno \(errno)")
        }
        buffer += chunk[0..<n]
        return n
    }

    private func readLineOrHead(until marker: [UInt8], timeout: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let r = find(marker) {
                let out = Array(buffer[0..<r])
                buffer.removeFirst(r + marker.count)
                return out
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw RawHTTPError.timedOut }
            if try fill(timeout: left) == 0 { throw RawHTTPError.closedEarly(received: buffer.count) }
        }
    }

    private func find(_ marker: [UInt8]) -> Int? {
        guard buffer.count >= marker.count else { return nil }
        for i in 0...(buffer.count - marker.count) where buffer[i] == marker[0] {
            if Array(buffer[i..<(i + marker.count)]) == marker { return i }
        }
        return nil
    }

    private func readExactly(_ n: Int, timeout: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while buffer.count < n {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw RawHTTPError.timedOut }
            do {
                if try fill(timeout: left) == 0 {
                    partialBody = buffer
                    throw RawHTTPError.closedEarly(received: buffer.count)
                }
            } catch RawHTTPError.reset(let received) {
                partialBody = buffer
                throw RawHTTPError.reset(received: received)
            }
        }
        let out = Array(buffer[0..<n])
        buffer.removeFirst(n)
        return out
    }

    /// Reads one response. Interim (1xx) responses are returned as they are when
    /// `returnInterim` is set, skipped otherwise.
    func readResponse(timeout: Double = 10, forHead: Bool = false, returnInterim: Bool = false) throws -> RawHTTPResponse {
        while true {
            partialBody = []
            let head = try readLineOrHead(until: [13, 10, 13, 10], timeout: timeout)
            let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
            let statusParts = lines[0].split(separator: " ", maxSplits: 2)
            guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
                throw RawHTTPError.malformed("status line \(lines[0])")
            }
            let headers: [(name: String, value: String)] = lines.dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            var response = RawHTTPResponse(status: status, headers: headers, body: [])
            if (100..<200).contains(status) {
                if returnInterim { return response }
                continue
            }
            if forHead || status == 204 || status == 304 { return response }
            if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
                while true {
                    let sizeLine = try readLineOrHead(until: [13, 10], timeout: timeout)
                    guard let size = Int(String(decoding: sizeLine, as: UTF8.self).split(separator: ";")[0], radix: 16) else {
                        throw RawHTTPError.malformed("chunk size")
                    }
                    if size == 0 { _ = try readLineOrHead(until: [13, 10], timeout: timeout); break }
                    response.body += try readExactly(size, timeout: timeout)
                    _ = try readExactly(2, timeout: timeout)
                }
            } else if let length = response.header("Content-Length").flatMap({ Int($0) }) {
                response.body = try readExactly(length, timeout: timeout)
            } else {
                response.body = try readToEnd(timeout: timeout)
            }
            return response
        }
    }

    /// Everything until the server closes.
    func readToEnd(timeout: Double = 10) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw RawHTTPError.timedOut }
            if try fill(timeout: left) == 0 {
                defer { buffer = [] }
                return buffer
            }
        }
    }

    /// Waits for the server to close the connection, discarding what arrives.
    /// Sends `bytes` (as many as the server takes), then waits for the close. A reset that arrives
    /// while sending is reported to `send` (ECONNRESET), which consumes the socket's error so that a
    /// later read sees only EOF: both count as `.reset`.
    func sendThenWaitForClose(_ bytes: [UInt8], timeout: Double) -> RawCloseKind {
        do {
            try send(bytes)
        } catch RawHTTPError.reset {
            return .reset
        } catch {}
        return waitForClose(timeout: timeout)
    }

    func waitForClose(timeout: Double) -> RawCloseKind {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return .timedOut }
            do {
                if try fill(timeout: left) == 0 { return .eof }
                buffer = []
            } catch RawHTTPError.reset {
                return .reset
            } catch {
                return .timedOut
            }
        }
    }
}

enum RawHTTP {
    /// One request on a fresh connection.
    static func request(port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil, timeout: Double = 10) throws -> RawHTTPResponse {
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest(method, target, headers: headers + [("Connection", "close")], body: body)
        return try connection.readResponse(timeout: timeout, forHead: method == "HEAD")
    }
}
