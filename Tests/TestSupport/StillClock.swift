import DriveSupport
import Foundation

/// A clock that stands still: its time never moves, and its sleeps really wait, so only a wake
/// (`Wakeup`, which a cancel rings) can end one. A wait that polls (sleeps in short steps and looks
/// at a flag between them) hangs on it for good; a wait that a cancel wakes returns. `release()`
/// ends every sleep, now and later, so no thread of a failed test stays blocked.
public final class StillClock: TimeSource, Sendable {
    private let condition = NSCondition()
    private let state = Locked<(released: Bool, begun: Int, asleep: [ObjectIdentifier: Wakeup])>((false, 0, [:]))
    private let start: Double

    public init(now: Double = 1_700_000_000) { start = now }

    public func now() -> Double { start }

    /// Sleeps begun so far (of both kinds): a test knows its thread is waiting once this moved.
    public var sleepsBegun: Int { state.withLock { $0.begun } }

    public func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        condition.lock()
        defer { condition.unlock() }
        state.withLock { $0.begun += 1 }
        while !state.withLock({ $0.released }) { condition.wait() }
    }

    @discardableResult
    public func sleep(_ seconds: Double, until wakeup: Wakeup) -> Bool {
        guard seconds > 0 else { return wakeup.take() }
        let id = ObjectIdentifier(wakeup)
        let released = state.withLock { s -> Bool in
            s.begun += 1
            if !s.released { s.asleep[id] = wakeup }
            return s.released
        }
        if released { return wakeup.take() }
        defer { state.withLock { _ = $0.asleep.removeValue(forKey: id) } }
        return wakeup.wait(seconds: 10_000_000)
    }

    /// Ends every sleep under way and every later one at once.
    public func release() {
        let asleep = state.withLock { s -> [Wakeup] in
            s.released = true
            return Array(s.asleep.values)
        }
        condition.lock()
        condition.broadcast()
        condition.unlock()
        for wakeup in asleep { wakeup.wake() }
    }
}
