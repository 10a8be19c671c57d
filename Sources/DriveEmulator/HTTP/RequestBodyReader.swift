import Foundation

/// The body of one request, read from the connection as the handler asks for it (never
/// buffered whole). Sends `100 Continue` on the first read when the client expects it.
///
/// Contract: after `HTTPBodyError` is thrown once, every later read throws it again and the
/// connection must close (`failure` is set); `isComplete` says the body was read to its end,
/// so the next request on the connection can be parsed.
final class RequestBodyReader: HTTPRequestBody {
    private let stream: SocketStream
    private let framing: HTTPRequestHead.BodyFraming
    private let readTimeoutMs: Int32
    private var expectsContinue: Bool
    private(set) var continueSent = false
    private(set) var bytesConsumed: Int64 = 0
    private(set) var failure: HTTPBodyError?

    private enum ChunkState {
        case sizeLine
        case data(remaining: Int64)
        case dataEnd
        case trailers
        case done
    }
    private var lengthRemaining: Int64 = 0
    private var chunkState: ChunkState = .sizeLine

    static let maxChunkLineLength = 4096
    static let maxTrailerBytes = 16 * 1024

    init(stream: SocketStream, framing: HTTPRequestHead.BodyFraming, expectsContinue: Bool, readTimeoutMs: Int32) {
        self.stream = stream
        self.framing = framing
        self.readTimeoutMs = readTimeoutMs
        self.expectsContinue = expectsContinue
        if case .length(let n) = framing { lengthRemaining = n }
        if case .none = framing { chunkState = .done }
    }

    var declaredLength: Int64? {
        switch framing {
        case .none: return 0
        case .length(let n): return n
        case .chunked: return nil
        }
    }

    var isComplete: Bool {
        guard failure == nil else { return false }
        switch framing {
        case .none: return true
        case .length: return lengthRemaining == 0
        case .chunked: if case .done = chunkState { return true } else { return false }
        }
    }

    /// True when the client is still waiting for `100 Continue` and has sent no body bytes.
    var clientIsWaitingForContinue: Bool { expectsContinue && !continueSent }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if let failure { throw failure }
        guard buffer.count > 0, !isComplete else { return 0 }
        do {
            try sendContinueIfExpected()
            let n: Int
            switch framing {
            case .none: n = 0
            case .length: n = try readLengthDelimited(into: buffer)
            case .chunked: n = try readChunked(into: buffer)
            }
            bytesConsumed += Int64(n)
            return n
        } catch let error as HTTPBodyError {
            failure = error
            throw error
        } catch {
            failure = .truncated
            throw HTTPBodyError.truncated
        }
    }

    private func sendContinueIfExpected() throws {
        guard expectsContinue, !continueSent else { return }
        continueSent = true
        try stream.write("HTTP/1.1 100 Continue\r\n\r\n")
    }

    private func readLengthDelimited(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let want = Int(min(Int64(buffer.count), lengthRemaining))
        let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), timeoutMs: readTimeoutMs)
        lengthRemaining -= Int64(n)
        return n
    }

    private func readChunked(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            switch chunkState {
            case .done:
                return 0
            case .sizeLine:
                let line = try readLine(limit: Self.maxChunkLineLength)
                guard let size = Self.parseChunkSize(line) else { throw HTTPBodyError.malformedChunk }
                chunkState = size == 0 ? .trailers : .data(remaining: size)
            case .data(let remaining):
                let want = Int(min(Int64(buffer.count), remaining))
                let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), timeoutMs: readTimeoutMs)
                chunkState = remaining - Int64(n) == 0 ? .dataEnd : .data(remaining: remaining - Int64(n))
                return n
            case .dataEnd:
                let line = try readLine(limit: 2)
                guard line.isEmpty else { throw HTTPBodyError.malformedChunk }
                chunkState = .sizeLine
            case .trailers:
                var total = 0
                while true {
                    let line = try readLine(limit: Self.maxTrailerBytes)
                    total += line.count + 2
                    guard total <= Self.maxTrailerBytes else { throw HTTPBodyError.malformedChunk }
                    if line.isEmpty { break }
                }
                chunkState = .done
                return 0
            }
        }
    }

    /// One line without its CRLF (or bare LF); longer than `limit` is a malformed chunk.
    private func readLine(limit: Int) throws -> [UInt8] {
        var scanned = 0
        while true {
            let slice = stream.buffered
            if let lf = slice[(slice.startIndex + scanned)...].firstIndex(of: 0x0A) {
                var line = Array(slice[slice.startIndex..<lf])
                if line.last == 0x0D { line.removeLast() }
                stream.consume(lf - slice.startIndex + 1)
                guard line.count <= limit else { throw HTTPBodyError.malformedChunk }
                return line
            }
            scanned = slice.count
            guard slice.count <= limit + 1 else { throw HTTPBodyError.malformedChunk }
            if try stream.fill(timeoutMs: readTimeoutMs) == 0 { throw HTTPBodyError.malformedChunk }
        }
    }

    /// `1a2b;ext=1` → 0x1a2b. Nil for empty, non-hex or values past Int64 (at most 15 digits).
    static func parseChunkSize(_ line: [UInt8]) -> Int64? {
        var digits = line.prefix { $0 != UInt8(ascii: ";") }[...]
        while let l = digits.last, l == 0x20 || l == 0x09 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        var value: Int64 = 0
        for b in digits {
            let d: Int64
            switch b {
            case 0x30...0x39: d = Int64(b - 0x30)
            case 0x41...0x46: d = Int64(b - 0x41 + 10)
            case 0x61...0x66: d = Int64(b - 0x61 + 10)
            default: return nil
            }
            value = value * 16 + d
        }
        return value
    }
}
