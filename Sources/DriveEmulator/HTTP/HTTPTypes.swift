import DriveSupport
import Foundation

/// Header fields in arrival order; names compare case-insensitively.
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public subscript(_ name: String) -> String? {
        let lower = name.lowercased()
        return fields.first { $0.name.lowercased() == lower }?.value
    }

    public func values(_ name: String) -> [String] {
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    /// Replaces every field of that name.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    public mutating func remove(_ name: String) {
        let lower = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lower }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

/// A request body read as a stream: handlers never get the whole body in memory unless they ask
/// for it with a limit. Reading past the end returns 0. A body that ends early (the client went
/// away) throws `HTTPBodyError.truncated`.
public protocol HTTPRequestBody: AnyObject {
    /// Fills up to `buffer.count` bytes; returns 0 at the end of the body.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The declared length when known (`Content-Length`), nil for chunked bodies.
    var declaredLength: Int64? { get }
}

public enum HTTPBodyError: Error, Equatable {
    case truncated
    case tooLarge(limit: Int)
    case malformedChunk
}

extension HTTPRequestBody {
    /// Reads the whole body, refusing more than `limit` bytes.
    public func readAll(limit: Int) throws -> [UInt8] {
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try read(into: $0) }
            if n == 0 { return out }
            if out.count + n > limit { throw HTTPBodyError.tooLarge(limit: limit) }
            out.append(contentsOf: chunk[0..<n])
        }
    }

    /// Reads and throws away the rest of the body.
    public func drain() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while try chunk.withUnsafeMutableBytes({ try read(into: $0) }) > 0 {}
    }
}

/// A body that is already in memory (tests, and requests the server buffered).
public final class BufferedRequestBody: HTTPRequestBody {
    private let bytes: [UInt8]
    private var offset = 0
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var declaredLength: Int64? { Int64(bytes.count) }
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = min(buffer.count, bytes.count - offset)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + offset, byteCount: n)
        }
        offset += n
        return n
    }
}

public struct HTTPRequest {
    public var method: String
    /// The raw request-target, as sent (`/drive/v3/files?q=...`).
    public var target: String
    /// The percent-decoded path, without the query.
    public var path: String
    /// Query parameters, percent-decoded (`+` is a space), in order; a name may repeat.
    public var query: [(name: String, value: String)]
    public var headers: HTTPHeaders
    public var body: HTTPRequestBody
    /// `scheme://host[:port]` the client used to reach us, from `Host` (or the configured public URL).
    public var baseURL: String

    public init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: HTTPRequestBody = BufferedRequestBody([]),
                baseURL: String = "http://127.0.0.1") {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.baseURL = baseURL
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = parts.first.map(String.init) ?? "/"
        self.path = rawPath.removingPercentEncoding ?? rawPath
        self.query = parts.count > 1 ? HTTPRequest.parseQuery(String(parts[1])) : []
    }

    /// The first value of a query parameter.
    public func param(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Parses `application/x-www-form-urlencoded` text (query strings and form bodies).
    public static func parseQuery(_ text: String) -> [(name: String, value: String)] { FormEncoding.decode(text) }
}

/// What the connection does instead of (or while) answering normally: the fault kinds that
/// need the socket rather than a status code.
public enum ConnectionFault: Sendable, Equatable {
    /// Send the status line, headers and this many body bytes, then reset the connection.
    case resetAfterBodyBytes(Int)
    /// Accept the request and send nothing for this many seconds, then close.
    case stall(seconds: Double)
    /// Read this many bytes of the request body (fewer if it is shorter), then reset the
    /// connection without answering: an upload cut off mid-body.
    case resetAfterRequestBodyBytes(Int)
}

public enum HTTPResponseBody {
    case empty
    case bytes([UInt8])
    /// A byte range of a file on disk, streamed.
    case file(path: String, offset: Int64, length: Int64)
    /// A producer the server calls until it returns nil; for bodies of unknown length (chunked).
    case stream(() throws -> [UInt8]?)
}

public struct HTTPResponse {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: HTTPResponseBody
    public var fault: ConnectionFault?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: HTTPResponseBody = .empty, fault: ConnectionFault? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.fault = fault
    }

    public static func json(_ status: Int, _ object: Any, extraHeaders: [(String, String)] = []) -> HTTPResponse {
        let data = JSONText.encode(object)
        var headers = HTTPHeaders([("Content-Type", "application/json; charset=UTF-8")] + extraHeaders)
        headers.set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
        return HTTPResponse(status: status, headers: headers, body: .bytes(data))
    }
}

/// A matched request: the method name that stats and faults are keyed on (`files.list`,
/// `files.get.media`, `files.create.upload`, `token`, ...) and the code that answers it.
public struct Route {
    public let method: String
    public let handle: (HTTPRequest) throws -> HTTPResponse
    /// Who the request is charged to under the per-user rate limit (asked only when one is
    /// configured, before `handle`); nil, or a nil answer: nobody, the request is never refused for it.
    public let quotaIdentity: (() -> QuotaIdentity?)?
    /// The bytes an upload or copy brings, for the daily upload cap (asked only when one is
    /// configured, before `handle`): the declared length of an upload (`X-Upload-Content-Length`
    /// for a resumable session, else `Content-Length`), a copy's source size; nil or 0: unknown.
    public let uploadBytes: (() -> Int64?)?
    public init(method: String, quotaIdentity: (() -> QuotaIdentity?)? = nil, uploadBytes: (() -> Int64?)? = nil,
                handle: @escaping (HTTPRequest) throws -> HTTPResponse) {
        self.method = method
        self.quotaIdentity = quotaIdentity
        self.uploadBytes = uploadBytes
        self.handle = handle
    }
}

/// A part of the emulator that answers some paths (Drive, OAuth, the control API).
public protocol RouteProvider: AnyObject, Sendable {
    /// The route for this request, or nil when the path is not this provider's.
    func route(for request: HTTPRequest) -> Route?
}
