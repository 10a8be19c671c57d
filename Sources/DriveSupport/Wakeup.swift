import Foundation

/// A sleep that another thread can end early: a cancellation (through its handler), a queue that
/// starts to drain, Drive answering again. The sleeper owns it; wakers only call `wake()`.
///
/// Contracts:
/// - A wake is kept until a sleep takes it: a `wake()` that comes between the sleeper's last look
///   at what it waits for and the start of its sleep ends that sleep at once, so no wake is lost
///   and no wait needs a timeout to notice one.
/// - `wake()` takes only this object's own lock, briefly, and calls nothing: any thread may call
///   it holding any lock (a cancellation's handler runs on the cancelling thread).
public final class Wakeup: Sendable {
    private let condition = NSCondition()
    // Changed and read with `condition` held too, so a wake cannot slip between a look and a wait.
    private let pending = Locked(false)

    public init() {}

    /// Ends the current sleep, or the next one if none is under way.
    public func wake() {
        condition.lock()
        pending.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }

    /// Takes a pending wake: true when there was one (for clocks that sleep in steps).
    public func take() -> Bool {
        pending.withLock { p in
            defer { p = false }
            return p
        }
    }

    /// Waits until `seconds` of real time passed or a wake came (taking it); true when woken.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        // At most a year at a time: a far date (or an infinite one) is not one the condition takes.
        let limit = Date(timeIntervalSinceNow: min(max(0, seconds), 365 * 86_400))
        condition.lock()
        defer { condition.unlock() }
        while !take() {
            if !condition.wait(until: limit) { return take() }
        }
        return true
    }
}

/// Callbacks to run when something happens that ends waits (Drive answering again, a drain
/// beginning). Each wait adds one for its duration and removes it after; `notify` runs every one
/// on the calling thread, with no lock held.
public final class WakeHandlers: Sendable {
    public struct Token: Sendable, Hashable {
        let id: UInt64
    }

    private let state = Locked<(next: UInt64, handlers: [UInt64: @Sendable () -> Void])>((0, [:]))

    public init() {}

    public func add(_ handler: @escaping @Sendable () -> Void) -> Token {
        state.withLock { s in
            s.next += 1
            s.handlers[s.next] = handler
            return Token(id: s.next)
        }
    }

    public func remove(_ token: Token?) {
        guard let token else { return }
        state.withLock { _ = $0.handlers.removeValue(forKey: token.id) }
    }

    public func notify() {
        let handlers = state.withLock { Array($0.handlers.values) }
        for handler in handlers { handler() }
    }
}
