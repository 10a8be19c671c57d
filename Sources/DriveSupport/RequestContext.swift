import Foundation

/// How urgent a Drive request is. The pacer serves waiting requests in this order, in every lane:
/// what a user is waiting on first, then read-ahead, then background fills (prefetching listings,
/// uploads nobody waits for), then the crawl of the whole drive (the index).
public enum RequestPriority: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case interactive = 0
    case readAhead = 1
    case background = 2
    case crawl = 3

    public static func < (a: RequestPriority, b: RequestPriority) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .interactive: return "interactive"
        case .readAhead: return "read-ahead"
        case .background: return "background"
        case .crawl: return "crawl"
        }
    }
}

/// What the filesystem tells the Drive client about the calls made on one thread: their priority,
/// a deadline, and a cancellation flag. Set with `scope { }`; read by the executor for every request
/// sent inside it, so `DriveBackend`'s methods need no extra parameters.
///
/// Contracts:
/// - `deadline` is absolute, in the executor's `TimeSource` seconds. Past it no new attempt starts
///   and no backoff continues: the call fails with the last error (or `DriveError.cancelled` if none
///   came yet), so a user's read fails in tens of seconds, not after minutes of retries.
/// - `cancellation`, when set, is also what `CancellationFlag.current` answers inside the scope.
/// - Scopes nest; the innermost wins. Outside every scope, requests are `.interactive` without a
///   deadline.
public struct RequestContext: Sendable {
    public var priority: RequestPriority
    public var deadline: Double?
    public var cancellation: CancellationFlag?

    public init(priority: RequestPriority = .interactive, deadline: Double? = nil, cancellation: CancellationFlag? = nil) {
        self.priority = priority
        self.deadline = deadline
        self.cancellation = cancellation
    }

    private static let key = "drivefs.request-context"

    /// Runs `body` with this context as the calling thread's current one.
    public func scope<T>(_ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[Self.key]
        dictionary[Self.key] = Box(self)
        defer { dictionary[Self.key] = previous }
        if let cancellation { return try cancellation.scope(body) }
        return try body()
    }

    /// The innermost context set on this thread, if any.
    public static var current: RequestContext? {
        (Thread.current.threadDictionary[key] as? Box)?.value
    }

    private final class Box: Sendable {
        let value: RequestContext
        init(_ value: RequestContext) { self.value = value }
    }
}
