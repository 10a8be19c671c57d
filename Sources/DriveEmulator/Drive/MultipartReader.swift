import Foundation

/// Streams a `multipart/related` (or `multipart/form-data`) body part by part, never holding more
/// than one read buffer plus a delimiter. Accepts a preamble before the first boundary.
///
/// Delimiters (RFC 2046 §5.1.1): a part ends at a line break followed by `--boundary`, and that line
/// break belongs to the delimiter, not to the part. RFC 2046 says CRLF; google-api-python-client
/// sends bare LF everywhere (rclone and Go's mime/multipart send CRLF). Which one a body uses is
/// read from the line that ends its first boundary (`--boundary` CRLF or LF):
/// - CRLF body: a part ends before `\r\n--boundary` (and, leniently, before a bare `\n--boundary`).
/// - LF body: a part ends before `\n--boundary`; a `\r` in front of that is content (the part's
///   last byte), never part of the delimiter.
/// Only the delimiter's own line break is removed, never a byte of content: a media part ending in
/// `\r` from an LF client was once stored one byte short.
final class MultipartReader {
    private let body: HTTPRequestBody
    /// `\n--boundary`.
    private let delimiter: [UInt8]
    /// Whether a `\r` right before `delimiter` belongs to it: true once the first boundary line
    /// ended in CRLF. Until then (the preamble, which is discarded) it does not matter.
    private var crlfDelimiters = false
    /// A virtual newline first, so a body that starts with `--boundary` matches the delimiter.
    private var buffer: [UInt8] = [0x0A]
    private var atEOF = false
    private var sawFirstBoundary = false
    private var finished = false

    enum Failure: Error { case malformed(String) }

    init(body: HTTPRequestBody, boundary: String) {
        self.body = body
        delimiter = Array("\n--\(boundary)".utf8)
    }

    /// The boundary parameter of a multipart Content-Type (quoted or bare), or nil.
    static func boundary(contentType: String?) -> String? {
        guard let ct = contentType else { return nil }
        let lower = ct.lowercased()
        guard lower.hasPrefix("multipart/") else { return nil }
        for param in ct.split(separator: ";").dropFirst() {
            let kv = param.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var v = kv[1].trimmingCharacters(in: .whitespaces)
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v.isEmpty ? nil : v
        }
        return nil
    }

    private func fill() throws -> Bool {
        guard !atEOF else { return false }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let n = try chunk.withUnsafeMutableBytes { try body.read(into: $0) }
        if n == 0 { atEOF = true; return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        return buffer.withUnsafeBytes { hay in
            needle.withUnsafeBytes { n in
                let base = hay.baseAddress!
                let first = Int32(needle[0])
                var from = 0
                while from + needle.count <= hay.count {
                    guard let hit = memchr(base + from, first, hay.count - from - needle.count + 1) else { return nil }
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, n.baseAddress!, needle.count) == 0 { return at }
                    from = at + 1
                }
                return nil
            }
        }
    }

    /// Streams bytes up to the next delimiter into `sink` (nil: discard), then consumes the delimiter
    /// line. Returns false when that delimiter was the closing one (`--boundary--`).
    private func readUntilDelimiter(_ sink: ((UnsafeRawBufferPointer) throws -> Void)?) throws -> Bool {
        while true {
            if let k = find(delimiter) {
                var end = k
                if crlfDelimiters, end > 0, buffer[end - 1] == 0x0D { end -= 1 }
                if let sink, end > 0 { try buffer.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[0..<end])) } }
                buffer.removeFirst(k + delimiter.count)
                while buffer.count < 2, try fill() {}
                if buffer.count >= 2, buffer[0] == 0x2D, buffer[1] == 0x2D { finished = true; return false }
                // Transport padding up to the end of the delimiter line; the first such line says
                // which line break this body's delimiters carry.
                while true {
                    if let nl = buffer.firstIndex(of: 0x0A) {
                        if !sawFirstBoundary {
                            sawFirstBoundary = true
                            crlfDelimiters = nl > 0 && buffer[nl - 1] == 0x0D
                        }
                        buffer.removeFirst(nl + 1)
                        return true
                    }
                    guard buffer.count < 1024, try fill() else { throw Failure.malformed("bad delimiter line") }
                }
            }
            // A delimiter (and the `\r` before it) may start in what is kept.
            let keep = delimiter.count + 1
            if buffer.count > keep {
                let emit = buffer.count - keep
                if let sink { try buffer.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[0..<emit])) } }
                buffer.removeFirst(emit)
            }
            guard try fill() else { throw Failure.malformed("missing closing boundary") }
        }
    }

    /// Skips the preamble; false when the body has no parts.
    func start() throws -> Bool { try readUntilDelimiter(nil) }

    /// The headers of the next part (after `start()` or a previous part's body).
    func readHeaders() throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        var total = 0
        while true {
            var line: [UInt8]
            while true {
                if let nl = buffer.firstIndex(of: 0x0A) {
                    line = Array(buffer[0..<nl])
                    buffer.removeFirst(nl + 1)
                    break
                }
                guard buffer.count < 64 * 1024, try fill() else { throw Failure.malformed("part headers") }
            }
            if line.last == 0x0D { line.removeLast() }
            if line.isEmpty { return headers }
            total += line.count
            guard total < 64 * 1024 else { throw Failure.malformed("part headers too large") }
            let text = String(decoding: line, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { throw Failure.malformed("part header line") }
            headers.add(String(text[..<colon]).trimmingCharacters(in: .whitespaces),
                        String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
    }

    /// Streams the current part's body into `sink`; returns false when it was the last part.
    func readBody(_ sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        try withoutActuallyEscaping(sink) { try readUntilDelimiter($0) }
    }

    /// Reads the current part's body into memory, refusing more than `limit` bytes.
    func readBody(limit: Int) throws -> (bytes: [UInt8], more: Bool) {
        var out: [UInt8] = []
        let more = try readUntilDelimiter { chunk in
            guard out.count + chunk.count <= limit else { throw HTTPBodyError.tooLarge(limit: limit) }
            out.append(contentsOf: chunk)
        }
        return (out, more)
    }
}
