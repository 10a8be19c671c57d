import Foundation

/// A way to abandon Drive requests from another thread (a FUSE interrupt, unmount).
///
/// The filesystem wraps a call: `flag.scope { try api.downloadData(...) }`. Every request the
/// executor sends on that thread inside the scope carries the flag; after `cancel()` the transfer in
/// flight is aborted within about a second (libcurl's progress callback), no new attempt starts and
/// no backoff continues, and the call throws `DriveError.cancelled`.
public final class CancellationFlag: Sendable {
    /// A handler added with `onCancel`, to remove it once its wait is over.
    public struct Registration: Sendable, Hashable {
        let id: UInt64
    }

    private let state = Locked<(cancelled: Bool, next: UInt64, handlers: [UInt64: @Sendable () -> Void])>((false, 0, [:]))

    public init() {}

    public func cancel() {
        let handlers = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.cancelled else { return [] }
            s.cancelled = true
            defer { s.handlers = [:] }
            return s.handlers.sorted { $0.key < $1.key }.map(\.value)
        }
        for handler in handlers { handler() }
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Calls `handler` once when the flag is cancelled: on the thread that cancels it (after the
    /// flag is set, no lock of the flag held), or at once on this thread when it is cancelled
    /// already (then the answer is nil: nothing to remove). A wait removes its handler when it
    /// ends (`remove`), so a flag that lives long (a transfer thread's) does not collect them.
    /// The handler must return quickly and take no lock that its cancelling thread may hold (the
    /// cancelling thread may be libfuse's interrupt handler, or the upload queue under its lock):
    /// `Wakeup.wake` is the model.
    @discardableResult
    public func onCancel(_ handler: @escaping @Sendable () -> Void) -> Registration? {
        let id = state.withLock { s -> UInt64? in
            if s.cancelled { return nil }
            s.next += 1
            s.handlers[s.next] = handler
            return s.next
        }
        guard let id else {
            handler()
            return nil
        }
        return Registration(id: id)
    }

    /// Removes a handler `onCancel` added (nothing when it ran already, or `registration` is nil).
    public func remove(_ registration: Registration?) {
        guard let registration else { return }
        state.withLock { _ = $0.handlers.removeValue(forKey: registration.id) }
    }

    /// `onCancel` for work that waits on no thread (an fsync answered from the upload queue): the
    /// handler answers it, and stays until the flag is cancelled or dropped.
    public func whenCancelled(_ handler: @escaping @Sendable () -> Void) {
        onCancel(handler)
    }

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

/// A condition variable a cancellation can wake: its lock, and a broadcast to its waiters.
public protocol WakeableCondition: NSLocking, Sendable {
    func broadcast()
}

extension NSCondition: WakeableCondition {}

extension CancellationFlag {
    /// Wakes `condition`'s waiters once the flag is cancelled, so a wait that a cancel must end
    /// needs no timeout: the waiter checks `isCancelled` with the condition's lock held before
    /// each wait, and the wake takes that lock, so it cannot come between the check and the wait.
    /// The wake runs on a thread of its own, which takes only that lock: the cancelling thread may
    /// hold any lock (the upload queue cancels its jobs under its own; an early upload under its
    /// condition). Call it once per wait, not per wake-up (each call adds a handler to the flag).
    public func wakes(_ condition: some WakeableCondition) {
        whenCancelled {
            let thread = Thread {
                condition.lock()
                condition.broadcast()
                condition.unlock()
            }
            thread.name = "drivefs-cancel"
            thread.start()
        }
    }
}
