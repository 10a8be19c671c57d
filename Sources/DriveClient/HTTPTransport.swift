import DriveSupport
import Foundation

/// One HTTP exchange, as the Drive client sees it. The libcurl transport implements it;
/// tests may script it. A transport does no retries and knows nothing of Drive or OAuth:
/// the request wrapper above it does.
public struct TransportRequest: Sendable {
    public enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// Streamed from disk; never loaded whole.
        case file(path: String, offset: Int64, length: Int64)
        /// Pieces sent one after another: a multipart upload's framing from memory around its
        /// content streamed from the file (no copy of the file in memory).
        case parts([BodyPart])
    }

    public enum BodyPart: Sendable {
        case bytes([UInt8])
        case file(path: String, offset: Int64, length: Int64)
    }

    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Body
    /// Where a successful (2xx) response body goes; error bodies are always collected in memory.
    public var sink: ResponseSink
    /// When set and cancelled, the transport abandons the exchange (`TransportError.aborted`).
    public var cancellation: CancellationFlag? = nil
    /// Called once with the status and headers (names lowercased) of a 2xx response, before its
    /// first body byte reaches `sink`, so that a sink can check what it is about to receive (e.g.
    /// that a ranged download got the range it asked for).
    public var onResponseHead: (@Sendable (_ status: Int, _ headers: [String: String]) -> Void)? = nil
    /// Whether the transport may negotiate a compressed answer (`Accept-Encoding`: gzip and what
    /// else libcurl decodes) and hand over the decoded bytes. On by default (JSON answers shrink
    /// several times); off for media, whose byte ranges must be exact. Never used on a request that
    /// carries a `Range` header, whatever this says.
    public var acceptsCompressedResponse: Bool = true
    /// Sees every byte of the body's file pieces as the transport reads them to send them, once
    /// per attempt (`begin` first), e.g. to hash an upload while it is sent instead of in a pass of
    /// its own. A transport that does not read the body (a scripted one) never calls it.
    public var bodyObserver: (any RequestBodyObserver)? = nil

    public init(method: String, url: String, headers: [(String, String)] = [], body: Body = .none, sink: ResponseSink = .memory) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.sink = sink
    }
}

/// See `TransportRequest.bodyObserver`. Called on the transferring thread.
public protocol RequestBodyObserver: AnyObject, Sendable {
    /// A new attempt starts reading the body from its first byte.
    func begin()
    /// The next bytes read from a file piece of the body.
    func read(_ bytes: UnsafeRawBufferPointer)
}

/// Where response bytes are written.
public enum ResponseSink: Sendable {
    case memory
    /// Appended to an open file descriptor, starting at the given offset (pwrite).
    case fileDescriptor(Int32, offset: Int64)
    /// Handed to a closure chunk by chunk (e.g. a caller's buffer); returning false aborts the transfer.
    case callback(@Sendable (UnsafeRawBufferPointer) -> Bool)
}

public struct TransportResponse: Sendable {
    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    /// The body when the sink was `.memory`, or when the status was not 2xx.
    public var body: [UInt8]
    /// Bytes delivered to the sink.
    public var bodyBytes: Int64

    public init(status: Int, headers: [String: String], body: [UInt8], bodyBytes: Int64) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyBytes = bodyBytes
    }
}

/// Failures below HTTP: no status line came back in full.
public enum TransportError: Error, Sendable, Equatable {
    case couldNotConnect(String)
    case timedOut(String)
    /// The connection broke mid-exchange (reset, truncated body).
    case connectionLost(String)
    case tls(String)
    case invalidURL(String)
    case aborted
    case other(code: Int, message: String)
}

extension TransportError: CustomStringConvertible {
    /// What went wrong, in words.
    public var summary: String {
        switch self {
        case .couldNotConnect(let d): return "could not connect: \(d)"
        case .timedOut(let d): return "the connection timed out: \(d)"
        case .connectionLost(let d): return "the connection broke: \(d)"
        case .tls(let d): return "TLS failure: \(d)"
        case .invalidURL(let d): return "invalid URL: \(d)"
        case .aborted: return "the transfer was aborted"
        case .other(let code, let message): return code > 0 ? "network failure (libcurl error \(code)): \(message)" : "network failure: \(message)"
        }
    }

    /// What the user can do about it (names the command-line options), or nil.
    public var hint: String? {
        switch self {
        case .couldNotConnect, .timedOut, .connectionLost:
            return "Check the network connection, and the endpoints if you set them (--api-url, --token-url)."
        case .tls:
            return "If the server's certificate comes from a private CA, pass that CA with --ca-file FILE (PEM)."
        case .invalidURL:
            return "Check the endpoint URLs (--api-url, --token-url, --auth-url, or DRIVEFS_API_URL and friends)."
        case .aborted, .other:
            return nil
        }
    }

    public var description: String { hint.map { "\(summary). \($0)" } ?? summary }
}

public protocol HTTPTransport: Sendable {
    func perform(_ request: TransportRequest) throws -> TransportResponse
}
