import Foundation

/// Where time comes from. Token expiry, cache TTLs, backoff and pacing take one of these,
/// so tests drive time with `ManualTimeSource` instead of sleeping.
public protocol TimeSource: Sendable {
    /// Seconds since the Unix epoch.
    func now() -> Double
    /// Waits `seconds` (a manual source advances its time instead).
    func sleep(_ seconds: Double)
    /// Waits `seconds`, or less when `wakeup` is woken (taking the wake); true when woken. The
    /// system clock waits on `wakeup` itself, so a wake ends the sleep at once, with no polling;
    /// the default, for clocks that do not really wait (a manual one), sleeps in steps of 50 ms
    /// of the clock's time and looks for a wake between them.
    @discardableResult
    func sleep(_ seconds: Double, until wakeup: Wakeup) -> Bool
}

extension TimeSource {
    @discardableResult
    public func sleep(_ seconds: Double, until wakeup: Wakeup) -> Bool {
        var left = seconds
        while left > 0 {
            if wakeup.take() { return true }
            let step = min(left, 0.05)
            sleep(step)
            left -= step
        }
        return wakeup.take()
    }

    /// Waits `seconds` unless `cancellation` is cancelled before or meanwhile, which ends the
    /// wait at once (its handler wakes it); true when cancelled. Without a flag, a plain sleep.
    public func sleep(_ seconds: Double, unless cancellation: CancellationFlag?) -> Bool {
        guard let cancellation else {
            sleep(seconds)
            return false
        }
        let wakeup = Wakeup()
        // Added before the look below: a cancel from here on wakes the sleep; one before, too.
        let registration = cancellation.onCancel { wakeup.wake() }
        defer { cancellation.remove(registration) }
        if cancellation.isCancelled { return true }
        sleep(seconds, until: wakeup)
        return cancellation.isCancelled
    }
}

public struct SystemTimeSource: TimeSource {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
    public func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        Thread.sleep(forTimeInterval: seconds)
    }
    @discardableResult
    public func sleep(_ seconds: Double, until wakeup: Wakeup) -> Bool { wakeup.wait(seconds: seconds) }
}

/// A clock that moves only when told to; `sleep` advances it and records the request.
public final class ManualTimeSource: TimeSource, Sendable {
    private let state: Locked<(now: Double, sleeps: [Double])>

    public init(now: Double = 1_700_000_000) { state = Locked((now, [])) }

    public func now() -> Double { state.withLock { $0.now } }
    public func sleep(_ seconds: Double) {
        state.withLock { $0.sleeps.append(seconds); $0.now += max(0, seconds) }
    }
    public func advance(_ seconds: Double) { state.withLock { $0.now += seconds } }
    /// Every sleep requested so far, in order.
    public var sleeps: [Double] { state.withLock { $0.sleeps } }
}
