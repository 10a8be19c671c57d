import DriveSupport
import Foundation

/// A token bucket shared by every request of one account: at most `burst` requests at once, then
/// `ratePerSecond` on average. Google asks shared clients to stay near 10 requests per second.
///
/// Reservations: `acquire` takes a token even when the bucket is empty (the balance goes negative)
/// and sleeps, outside the lock, until that token would have been refilled. Waiters are thus served
/// in arrival order and the rate holds exactly with any number of threads.
public final class Pacer: Sendable {
    public let ratePerSecond: Double
    public let burst: Double
    private let time: any TimeSource
    private let state: Locked<(tokens: Double, last: Double)>

    public init(ratePerSecond: Double = 10, burst: Int = 10, time: any TimeSource = SystemTimeSource()) {
        // Nonsense settings are clamped rather than trusted: a rate ≤ 0 would wait forever.
        self.ratePerSecond = ratePerSecond > 0 && ratePerSecond.isFinite ? ratePerSecond : 10
        self.burst = Double(max(1, burst))
        self.time = time
        self.state = Locked((Double(max(1, burst)), time.now()))
    }

    /// Blocks until the caller may send one request. Returns the seconds waited.
    @discardableResult
    public func acquire() -> Double {
        let wait = state.withLock { s -> Double in
            let now = time.now()
            s.tokens = min(burst, s.tokens + max(0, now - s.last) * ratePerSecond)
            s.last = now
            s.tokens -= 1
            return s.tokens >= 0 ? 0 : -s.tokens / ratePerSecond
        }
        if wait > 0 { time.sleep(wait) }
        return wait
    }
}
