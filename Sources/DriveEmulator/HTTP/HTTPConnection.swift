import Foundation
import DriveSupport
#if canImport(Glibc)
import Glibc
#endif

/// One client connection, served on its own thread: parse a head, hand the request to the
/// responder, write the response, repeat while keep-alive holds.
///
/// Contract: nothing a client sends ends this loop other than by an orderly 4xx (with
/// `Connection: close` when the stream can no longer be trusted) or a close; nothing traps.
final class HTTPConnection {
    private let server: HTTPServer
    private let stream: SocketStream
    private var closed = false
    /// Set when the connection closes while the client may still be sending.
    private var lingerOnClose = false

    /// Unread body bytes the server reads and throws away to keep a connection alive.
    static let maxDrainBytes: Int64 = 1 << 20

    init(fd: Int32, server: HTTPServer) {
        self.server = server
        self.stream = SocketStream(fd: fd, bufferSize: server.config.maxHeadBytes + 1024,
                                   sendTimeoutSeconds: server.config.sendTimeout)
        let rate = server.config.bandwidthBytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        if rate != nil || server.sharedBandwidth != nil {
            stream.throttle = BandwidthThrottle(bytesPerSecond: rate, shared: server.sharedBandwidth)
        }
    }

    private var idleTimeoutMs: Int32 { Self.milliseconds(server.config.idleTimeout) }
    private var readTimeoutMs: Int32 { Self.milliseconds(server.config.readTimeout) }

    private static func milliseconds(_ seconds: Double) -> Int32 {
        Int32(clamping: Int((max(0.001, min(seconds, 86_400)) * 1000).rounded()))
    }

    func run() {
        defer { finish(reset: false) }
        while !closed, !server.isStopping {
            guard serveOne() else { return }
        }
    }

    private func finish(reset: Bool) {
        guard !closed else { return }
        closed = true
        server.connectionEnded(stream.fd)
        if reset { stream.closeWithReset() } else { stream.close(lingering: lingerOnClose && !server.isStopping) }
    }

    private enum HeadOutcome {
        case head(HTTPRequestHead)
        /// The client closed or idled out between requests: close quietly.
        case quit
        case refuse(HTTPParseError)
    }

    /// Reads the next request head. Leading blank lines (a CRLF some clients send after a body)
    /// are skipped.
    private func readHead() -> HeadOutcome {
        var scanFrom = 0
        while true {
            // Skip blank lines before the request line.
            while let first = stream.buffered.first, first == 0x0D || first == 0x0A { stream.consume(1); scanFrom = 0 }
            let slice = stream.buffered
            if let end = HTTPRequestHeadParser.headEnd(in: slice, scanFrom: slice.startIndex + max(0, scanFrom - 3)) {
                guard end - slice.startIndex <= server.config.maxHeadBytes else {
                    return .refuse(HTTPParseError(status: 431, message: "Request header fields too large."))
                }
                let headBytes = slice[slice.startIndex..<end]
                stream.consume(end - slice.startIndex)
                do {
                    return .head(try HTTPRequestHeadParser.parse(headBytes))
                } catch let error as HTTPParseError {
                    return .refuse(error)
                } catch {
                    return .refuse(.bad("Malformed request."))
                }
            }
            scanFrom = slice.count
            if slice.count > server.config.maxHeadBytes {
                return .refuse(HTTPParseError(status: 431, message: "Request header fields too large."))
            }
            do {
                try stream.fill(timeoutMs: slice.isEmpty ? idleTimeoutMs : readTimeoutMs)
            } catch SocketError.timedOut where !slice.isEmpty {
                return .refuse(HTTPParseError(status: 408, message: "Timed out reading the request."))
            } catch {
                return .quit
            }
        }
    }

    /// Serves one request; false when the connection must close.
    private func serveOne() -> Bool {
        let started = DispatchTime.now().uptimeNanoseconds
        let head: HTTPRequestHead
        switch readHead() {
        case .quit: return false
        case .refuse(let error):
            refuse(error, method: "-", path: "-", started: started)
            return false
        case .head(let h): head = h
        }
        let path = HTTPRequest(method: head.method, target: head.target).path
        let framing: HTTPRequestHead.BodyFraming
        do {
            framing = try HTTPRequestHeadParser.bodyFraming(head)
        } catch let error as HTTPParseError {
            refuse(error, method: head.method, path: path, started: started)
            return false
        } catch {
            return false
        }
        let expectsContinue = head.minorVersion >= 1
            && (head.headers["Expect"]?.lowercased() == "100-continue") && framing != .none
        let body = RequestBodyReader(stream: stream, framing: framing, expectsContinue: expectsContinue,
                                     readTimeoutMs: readTimeoutMs)
        let request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, body: body,
                                  baseURL: baseURL(for: head))
        let answer = server.responder.answer(request)
        var response = answer.response

        func exchange(_ outcome: HTTPExchange.Outcome, bytesOut: Int64) -> HTTPExchange {
            let seconds = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
            return HTTPExchange(httpMethod: head.method, path: path, statsKey: answer.statsKey, outcome: outcome,
                                bytesIn: body.bytesConsumed, bytesOut: bytesOut, seconds: seconds)
        }
        /// Faults that answer nothing: counted once, before the client sees the connection end.
        func record(_ outcome: HTTPExchange.Outcome, bytesOut: Int64) {
            let final = exchange(outcome, bytesOut: bytesOut)
            server.responder.record(final)
            server.responder.recordCompletion(final, recorded: final)
        }

        switch response.fault {
        case .stall(let seconds)?:
            stall(seconds)
            record(.stalled, bytesOut: 0)
            finish(reset: false)
            return false
        case .resetAfterRequestBodyBytes(let limit)?:
            discardBody(body, upTo: Int64(max(0, limit)))
            record(.reset, bytesOut: 0)
            finish(reset: true)
            return false
        default:
            break
        }

        var keepAlive = wantsKeepAlive(head) && !server.isStopping && body.failure == nil
        if keepAlive && !body.isComplete && !canDrain(body, framing: framing) { keepAlive = false }
        let isHead = head.method == "HEAD"
        if case .stream = response.body, head.minorVersion == 0 { keepAlive = false }
        var resetBudget: Int64?
        if case .resetAfterBodyBytes(let n)? = response.fault { resetBudget = Int64(max(0, n)) }

        // Counted before the first byte goes out (see HTTPResponder); completed below.
        let recorded = exchange(resetBudget != nil ? .reset : .status(response.status), bytesOut: 0)
        server.responder.record(recorded)
        func complete(_ outcome: HTTPExchange.Outcome, bytesOut: Int64) {
            server.responder.recordCompletion(exchange(outcome, bytesOut: bytesOut), recorded: recorded)
        }

        let written: Int64
        do {
            if keepAlive && head.minorVersion == 0 { response.headers.set("Connection", "keep-alive") }
            written = try write(&response, isHead: isHead, keepAlive: keepAlive, chunkedAllowed: head.minorVersion >= 1,
                                resetBudget: resetBudget)
        } catch ResponseWriteStop.resetNow(let sent) {
            complete(.reset, bytesOut: sent)
            finish(reset: true)
            return false
        } catch ResponseWriteStop.closeDelimited(let sent) {
            complete(.status(response.status), bytesOut: sent)
            return false
        } catch ResponseWriteStop.aborted(let sent) {
            complete(.aborted(status: response.status), bytesOut: sent)
            return false
        } catch {
            complete(.aborted(status: response.status), bytesOut: 0)
            return false
        }
        if keepAlive && !body.isComplete {
            discardBody(body, upTo: Self.maxDrainBytes)
            if !body.isComplete { keepAlive = false }
        }
        if !body.isComplete { lingerOnClose = true }
        complete(.status(response.status), bytesOut: written)
        return keepAlive
    }

    private func wantsKeepAlive(_ head: HTTPRequestHead) -> Bool {
        let tokens = head.headers.values("Connection").flatMap { $0.lowercased().split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("close") { return false }
        return head.minorVersion >= 1 || tokens.contains("keep-alive")
    }

    /// Whether an unread body may be read and discarded after the response instead of closing.
    private func canDrain(_ body: RequestBodyReader, framing: HTTPRequestHead.BodyFraming) -> Bool {
        guard !body.clientIsWaitingForContinue, case .length(let total) = framing else { return false }
        return total - body.bytesConsumed <= Self.maxDrainBytes
    }

    private func discardBody(_ body: RequestBodyReader, upTo limit: Int64) {
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        var remaining = limit
        while remaining > 0 {
            let want = Int(min(Int64(scratch.count), remaining))
            let n = (try? scratch.withUnsafeMutableBytes {
                try body.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]))
            }) ?? 0
            if n == 0 { return }
            remaining -= Int64(n)
        }
    }

    /// Waits `seconds` without answering; ends early when the server stops.
    private func stall(_ seconds: Double) {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, min(seconds, 86_400)) * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline && !server.isStopping {
            usleep(20_000)
        }
    }

    private func baseURL(for head: HTTPRequestHead) -> String {
        if let publicURL = server.config.publicURL, !publicURL.isEmpty {
            return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
        }
        if let host = head.headers["Host"], !host.isEmpty,
           host.utf8.allSatisfy({ b in
               (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                   || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: ":")
                   || b == UInt8(ascii: "[") || b == UInt8(ascii: "]") || b == UInt8(ascii: "_")
           }) {
            return "http://\(host)"
        }
        return server.listenURL
    }

    /// Answers a request the server could not parse, then the connection closes.
    private func refuse(_ error: HTTPParseError, method: String, path: String, started: UInt64) {
        let reason: String
        switch error.status {
        case 408: reason = "requestTimeout"
        case 431: reason = "requestHeaderFieldsTooLarge"
        case 501: reason = "notImplemented"
        case 505: reason = "httpVersionNotSupported"
        default: reason = "badRequest"
        }
        let response = GoogleError(error.status, reason: reason, message: error.message).response
        let bytes = HTTPResponseWriter.serialize(response, closing: true)
        lingerOnClose = true
        let seconds = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
        let exchange = HTTPExchange(httpMethod: method, path: path, statsKey: nil, outcome: .status(error.status),
                                    bytesIn: 0, bytesOut: 0, seconds: seconds)
        server.responder.record(exchange)
        try? stream.write(bytes)
        server.responder.recordCompletion(exchange, recorded: exchange)
    }

    // MARK: - Writing responses

    private enum ResponseWriteStop: Error {
        /// A reset fault's byte budget was used: reset now.
        case resetNow(sent: Int64)
        /// The client went away, or a body source failed after the head was sent.
        case aborted(sent: Int64)
        /// A close-delimited body (HTTP/1.0 stream) is complete: closing ends it.
        case closeDelimited(sent: Int64)
    }

    /// Writes the head and body; returns the body bytes written.
    private func write(_ response: inout HTTPResponse, isHead: Bool, keepAlive: Bool, chunkedAllowed: Bool,
                       resetBudget: Int64?) throws -> Int64 {
        var headers = response.headers
        headers.remove("Transfer-Encoding")
        let http10KeepAlive = headers["Connection"] == "keep-alive"
        headers.remove("Connection")
        if http10KeepAlive && keepAlive { headers.set("Connection", "keep-alive") }
        if headers["Date"] == nil { headers.set("Date", HTTPResponseWriter.httpDate()) }
        if !keepAlive { headers.set("Connection", "close") }

        enum Source {
            case none
            case bytes([UInt8])
            case file(fd: Int32, offset: Int64, length: Int64)
            case stream(() throws -> [UInt8]?, chunked: Bool)
            case sizedStream(() throws -> [UInt8]?, length: Int64)
        }
        var source = Source.none
        if HTTPResponseWriter.forbidsBody(response.status) {
            headers.remove("Content-Length")
        } else {
            switch response.body {
            case .empty:
                // A HEAD answer may state the length of the body it leaves out.
                if !(isHead && headers["Content-Length"] != nil) { headers.set("Content-Length", "0") }
            case .bytes(let b):
                headers.set("Content-Length", String(b.count))
                source = .bytes(b)
            case .file(let path, let offset, let length):
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0, offset >= 0, length >= 0 else {
                    if fd >= 0 { _ = Glibc.close(fd) }
                    response = GoogleError(500, reason: "backendError", message: "Backend Error").response
                    return try write(&response, isHead: isHead, keepAlive: keepAlive, chunkedAllowed: chunkedAllowed,
                                     resetBudget: resetBudget)
                }
                headers.set("Content-Length", String(length))
                source = .file(fd: fd, offset: offset, length: length)
            case .stream(let producer):
                // A stream whose handler states its length is sent with that length, not chunked.
                if let stated = headers["Content-Length"].flatMap(HTTPRequestHeadParser.parseDecimal) {
                    source = .sizedStream(producer, length: stated)
                } else {
                    headers.remove("Content-Length")
                    if chunkedAllowed { headers.set("Transfer-Encoding", "chunked") }
                    source = .stream(producer, chunked: chunkedAllowed)
                }
            }
        }
        if case .file(let fd, _, _) = source, isHead { _ = Glibc.close(fd); source = .none }
        if isHead { source = .none }

        var sent: Int64 = 0
        var budget = resetBudget
        func emit(_ bytes: UnsafeRawBufferPointer, framing: Bool = false) throws {
            if framing {
                do { try stream.write(bytes) } catch { throw ResponseWriteStop.aborted(sent: sent) }
                return
            }
            var piece = bytes
            if let b = budget, Int64(piece.count) >= b {
                piece = UnsafeRawBufferPointer(rebasing: bytes[0..<Int(b)])
            }
            do { try stream.write(piece) } catch { throw ResponseWriteStop.aborted(sent: sent + Int64(piece.count)) }
            sent += Int64(piece.count)
            if let b = budget {
                budget = b - Int64(piece.count)
                if budget == 0 { throw ResponseWriteStop.resetNow(sent: sent) }
            }
        }

        do {
            try HTTPResponseWriter.head(status: response.status, headers: headers).withUnsafeBytes { try emit($0, framing: true) }
        }
        if budget == 0 { throw ResponseWriteStop.resetNow(sent: 0) }
        switch source {
        case .none:
            break
        case .bytes(let b):
            try b.withUnsafeBytes { try emit($0) }
        case .file(let fd, let offset, let length):
            defer { _ = Glibc.close(fd) }
            var chunk = [UInt8](repeating: 0, count: 256 * 1024)
            var position = offset
            var remaining = length
            while remaining > 0 {
                let want = Int(min(Int64(chunk.count), remaining))
                let n = (try? chunk.withUnsafeMutableBytes {
                    try SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: position)
                }) ?? 0
                // A read error, or the file shrank under us: the promised length cannot be kept, so cut the connection.
                guard n > 0 else { throw ResponseWriteStop.aborted(sent: sent) }
                try chunk.withUnsafeBytes { try emit(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                position += Int64(n)
                remaining -= Int64(n)
            }
        case .stream(let producer, let chunked):
            while true {
                let next: [UInt8]?
                do { next = try producer() } catch { throw ResponseWriteStop.aborted(sent: sent) }
                guard let bytes = next else { break }
                if bytes.isEmpty { continue }
                if chunked {
                    try Array((String(bytes.count, radix: 16) + "\r\n").utf8).withUnsafeBytes { try emit($0, framing: true) }
                }
                try bytes.withUnsafeBytes { try emit($0) }
                if chunked { try [UInt8]([0x0D, 0x0A]).withUnsafeBytes { try emit($0, framing: true) } }
            }
            if chunked { try Array("0\r\n\r\n".utf8).withUnsafeBytes { try emit($0, framing: true) } }
            else { throw ResponseWriteStop.closeDelimited(sent: sent) }
        case .sizedStream(let producer, let length):
            var remaining = length
            while remaining > 0 {
                let next: [UInt8]?
                do { next = try producer() } catch { throw ResponseWriteStop.aborted(sent: sent) }
                // A producer that ends short of its stated length leaves the client waiting: cut it off.
                guard let bytes = next else { throw ResponseWriteStop.aborted(sent: sent) }
                let take = Int(min(Int64(bytes.count), remaining))
                try bytes.withUnsafeBytes { try emit(UnsafeRawBufferPointer(rebasing: $0[0..<take])) }
                remaining -= Int64(take)
            }
        }
        return sent
    }
}
