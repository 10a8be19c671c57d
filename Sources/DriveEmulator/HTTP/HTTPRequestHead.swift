import Foundation

/// A request line and header block, parsed and validated; the body is not part of it.
struct HTTPRequestHead {
    var method: String
    /// The request-target in origin form (`/path?query`), or `*`.
    var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    var minorVersion: Int
    var headers: HTTPHeaders

    /// What the body framing headers say.
    enum BodyFraming: Equatable {
        case none
        case length(Int64)
        case chunked
    }
}

/// Why a request head was refused; each maps to a status and a Google error.
struct HTTPParseError: Error, Equatable {
    var status: Int
    var message: String
    static func bad(_ message: String) -> HTTPParseError { HTTPParseError(status: 400, message: message) }
}

/// Parses request heads. Input is untrusted: every length and number is checked, nothing traps.
enum HTTPRequestHeadParser {
    static let maxHeaderFields = 256
    static let maxMethodLength = 32

    /// Finds the end of the head in `bytes`: the index just past the blank line, or nil when
    /// the head is not complete yet. Lines may end in CRLF or a bare LF.
    static func headEnd(in bytes: ArraySlice<UInt8>, scanFrom: Int) -> Int? {
        var i = max(bytes.startIndex, scanFrom)
        while i < bytes.endIndex {
            if bytes[i] == 0x0A {
                let next = i + 1
                if next < bytes.endIndex && bytes[next] == 0x0A { return next + 1 }
                if next + 1 < bytes.endIndex && bytes[next] == 0x0D && bytes[next + 1] == 0x0A { return next + 2 }
            }
            i += 1
        }
        return nil
    }

    /// Parses a complete head (request line, header lines, the blank line).
    static func parse(_ bytes: ArraySlice<UInt8>) throws -> HTTPRequestHead {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == 0x0A {
                var lineEnd = i
                if lineEnd > lineStart && bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                lines.append(bytes[lineStart..<lineEnd])
                lineStart = i + 1
            }
            i += 1
        }
        // Drop the blank terminator line(s).
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let requestLine = lines.first else { throw HTTPParseError.bad("Empty request.") }
        let (method, target, minor) = try parseRequestLine(requestLine)
        guard lines.count - 1 <= maxHeaderFields else {
            throw HTTPParseError(status: 431, message: "Too many header fields.")
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let first = line.first else { continue }
            if first == 0x20 || first == 0x09 { throw HTTPParseError.bad("Obsolete header line folding is not allowed.") }
            guard let colon = line.firstIndex(of: 0x3A) else { throw HTTPParseError.bad("Malformed header line.") }
            let nameBytes = line[line.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(isTokenByte) else {
                throw HTTPParseError.bad("Malformed header field name.")
            }
            var valueBytes = line[(colon + 1)...]
            while let f = valueBytes.first, f == 0x20 || f == 0x09 { valueBytes = valueBytes.dropFirst() }
            while let l = valueBytes.last, l == 0x20 || l == 0x09 { valueBytes = valueBytes.dropLast() }
            guard valueBytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else {
                throw HTTPParseError.bad("Control character in header field value.")
            }
            guard let value = String(validating: valueBytes, as: UTF8.self) else {
                throw HTTPParseError.bad("Header field value is not valid UTF-8.")
            }
            headers.add(String(decoding: nameBytes, as: UTF8.self), value)
        }
        return HTTPRequestHead(method: method, target: target, minorVersion: minor, headers: headers)
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) throws -> (String, String, Int) {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw HTTPParseError.bad("Malformed request line.") }
        let methodBytes = parts[0], targetBytes = parts[1], versionBytes = parts[2]
        guard !methodBytes.isEmpty, methodBytes.count <= maxMethodLength, methodBytes.allSatisfy(isTokenByte) else {
            throw HTTPParseError.bad("Malformed request method.")
        }
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPParseError.bad("Malformed request target.")
        }
        let version = String(decoding: versionBytes, as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            if version.hasPrefix("HTTP/"), version.count == 8 {
                throw HTTPParseError(status: 505, message: "HTTP version not supported.")
            }
            throw HTTPParseError.bad("Malformed HTTP version.")
        }
        let method = String(decoding: methodBytes, as: UTF8.self)
        var target = String(decoding: targetBytes, as: UTF8.self)
        if target.hasPrefix("/") {
            // origin form
        } else if target == "*" {
            guard method == "OPTIONS" else { throw HTTPParseError.bad("Malformed request target.") }
        } else if let schemeEnd = target.range(of: "://"),
                  ["http", "https"].contains(target[..<schemeEnd.lowerBound].lowercased()) {
            // absolute form: keep the path and query
            let rest = target[schemeEnd.upperBound...]
            if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                target = rest[slash] == "/" ? String(rest[slash...]) : "/" + rest[slash...]
            } else {
                target = "/"
            }
        } else {
            throw HTTPParseError.bad("Malformed request target.")
        }
        return (method, target, minor)
    }

    /// How the body is framed, per RFC 9112 §6: chunked wins only alone; conflicting or malformed
    /// lengths are refused rather than guessed.
    static func bodyFraming(_ head: HTTPRequestHead) throws -> HTTPRequestHead.BodyFraming {
        let encodings = head.headers.values("Transfer-Encoding")
        let lengths = head.headers.values("Content-Length")
        if !encodings.isEmpty {
            guard lengths.isEmpty else { throw HTTPParseError.bad("Both Content-Length and Transfer-Encoding were sent.") }
            let codings = encodings.flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
            guard codings == ["chunked"] else {
                throw HTTPParseError(status: 501, message: "Transfer-Encoding \(codings.joined(separator: ", ")) is not supported.")
            }
            return .chunked
        }
        guard !lengths.isEmpty else { return .none }
        var value: Int64?
        for field in lengths {
            for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                let text = item.trimmingCharacters(in: .whitespaces)
                guard let parsed = parseDecimal(text) else { throw HTTPParseError.bad("Malformed Content-Length.") }
                if let v = value, v != parsed { throw HTTPParseError.bad("Conflicting Content-Length values.") }
                value = parsed
            }
        }
        guard let length = value else { throw HTTPParseError.bad("Malformed Content-Length.") }
        return length == 0 ? .none : .length(length)
    }

    /// A non-negative decimal that fits in Int64; nil for anything else (signs, spaces, overflow).
    static func parseDecimal(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }
}
