import DriveSupport
import Foundation

/// A way to abandon Drive requests from another thread (a FUSE interrupt, unmount).
///
/// The filesystem wraps a call: `flag.scope { try api.downloadData(...) }`. Every request the
/// executor sends on that thread inside the scope carries the flag; after `cancel()` the transfer in
/// flight is aborted within about a second (libcurl's progress callback), no new attempt starts and
/// no backoff continues, and the call throws `DriveError.cancelled`.
public final class CancellationFlag: Sendable {
    private let state = Locked(false)

    public init() {}

    public func cancel() { state.withLock { $0 = true } }

    public var isCancelled: Bool { state.withLock { $0 } }

    private static let key = "drivefs.cancellation"

    /// Runs `body` with this flag as the calling thread's current cancellation (scopes nest; the
    /// innermost wins).
    public func scope<T>(_ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[Self.key]
        dictionary[Self.key] = self
        defer { dictionary[Self.key] = previous }
        return try body()
    }

    /// The flag of the innermost `scope` on this thread, if any.
    public static var current: CancellationFlag? {
        Thread.current.threadDictionary[key] as? CancellationFlag
    }
}
