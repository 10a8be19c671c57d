import DriveSupport
import Foundation

/// What one Drive method (e.g. `files.list`, `files.get.media`, `files.create.upload`) has cost.
public struct RequestCounters: Sendable, Equatable {
    /// HTTP requests sent (each retry and each 401 replay is one more).
    public var requests: Int64 = 0
    /// Retries after a transient failure (backoff waits).
    public var retries: Int64 = 0
    /// Calls that ended in an error for the caller.
    public var failures: Int64 = 0
    /// Request body bytes sent.
    public var bytesOut: Int64 = 0
    /// Response body bytes received.
    public var bytesIn: Int64 = 0

    public init() {}
}

/// Per-method counters, shared by all threads; read as a snapshot.
public final class RequestStats: Sendable {
    private let counters = Locked<[String: RequestCounters]>([:])

    public init() {}

    public func snapshot() -> [String: RequestCounters] { counters.withLock { $0 } }

    public func counters(for method: String) -> RequestCounters { counters.withLock { $0[method] ?? RequestCounters() } }

    /// Sums over all methods.
    public func total() -> RequestCounters {
        counters.withLock { all in
            all.values.reduce(into: RequestCounters()) { sum, c in
                sum.requests += c.requests; sum.retries += c.retries; sum.failures += c.failures
                sum.bytesOut += c.bytesOut; sum.bytesIn += c.bytesIn
            }
        }
    }

    func update(_ method: String, _ change: (inout RequestCounters) -> Void) {
        counters.withLock { change(&$0[method, default: RequestCounters()]) }
    }
}
