import Foundation

/// Where time comes from. Token expiry, cache TTLs, backoff and pacing take one of these,
/// so tests drive time with `ManualTimeSource` instead of sleeping.
public protocol TimeSource: Sendable {
    /// Seconds since the Unix epoch.
    func now() -> Double
    /// Waits `seconds` (a manual source advances its time instead).
    func sleep(_ seconds: Double)
}

public struct SystemTimeSource: TimeSource {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
    public func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        Thread.sleep(forTimeInterval: seconds)
    }
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
