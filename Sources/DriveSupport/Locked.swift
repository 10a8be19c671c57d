import Foundation

/// State guarded by a lock, reachable only inside `withLock { }`.
///
/// The closure must not block on I/O or call back into code that takes another `Locked` in an order
/// that the owning type's lock-order comment does not allow.
public final class Locked<State> {
    private let lock = NSLock()
    private var state: State

    public init(_ state: State) { self.state = state }

    @discardableResult
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// Sendable when what it guards is: every access to `state` holds `lock`.
extension Locked: @unchecked Sendable where State: Sendable {}
