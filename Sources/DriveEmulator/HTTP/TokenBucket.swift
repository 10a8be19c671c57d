import Foundation

/// A token bucket in exact integer arithmetic, over time the caller passes in (nanoseconds of any
/// monotonic clock), so that shaping is tested with an injected clock and never with wall-clock timings.
///
/// Credit is kept in nanoseconds of budget: an item that costs `c` ns (a byte at `r` bytes/s costs
/// 1e9/r ns, a request at `r` requests/s the same) takes `c` from the credit. Credit grows by one
/// nanosecond per nanosecond elapsed, up to `capacity` (the burst, in ns of budget). Integers make
/// the arithmetic exact: a given sequence of (time, cost) always gives the same answers.
///
/// Two ways to take:
/// - `reserve` always takes and may leave the credit negative (a debt); it answers how long the
///   taker must wait before its cost is paid. This paces a stream: move bytes, reserve, sleep.
/// - `tryTake` takes only when the credit covers the cost; it answers whether it did. This refuses
///   requests past a budget.
///
/// INVARIANT: `credit <= capacity`; `updated` never moves backwards (an earlier `now` is taken as `updated`).
struct TokenBucket: Sendable, Equatable {
    let capacity: Int64
    private(set) var credit: Int64
    private(set) var updated: Int64

    /// A full bucket at `now`.
    init(capacity: Int64, now: Int64) {
        self.capacity = max(0, capacity)
        credit = self.capacity
        updated = now
    }

    /// Adds the credit earned since the last update.
    mutating func refill(now: Int64) {
        guard now > updated else { return }
        let elapsed = now - updated
        credit = elapsed >= capacity - credit ? capacity : credit + elapsed
        updated = now
    }

    /// Takes `cost` unconditionally; answers the nanoseconds to wait until the credit is back to zero
    /// (0 when it never went below).
    mutating func reserve(_ cost: Int64, now: Int64) -> Int64 {
        refill(now: now)
        credit -= max(0, cost)
        return credit < 0 ? -credit : 0
    }

    /// Takes `cost` when the credit covers it.
    mutating func tryTake(_ cost: Int64, now: Int64) -> Bool {
        refill(now: now)
        guard credit >= cost else { return false }
        credit -= cost
        return true
    }

    /// The cost in nanoseconds of `units` at `perSecond` units a second, rounded up (so that pacing
    /// never runs faster than the rate).
    static func cost(_ units: Int, perSecond: Int) -> Int64 {
        let rate = Int64(max(1, perSecond))
        let n = Int64(max(0, units))
        // n ≤ 2^31 and 1e9 < 2^30: no overflow.
        return (n * 1_000_000_000 + rate - 1) / rate
    }

    /// The cost in nanoseconds of one unit at `perSecond` (a fractional rate such as 0.5 is fine).
    static func cost(perSecond: Double) -> Int64 {
        Int64((1e9 / max(perSecond, 1e-6)).rounded())
    }
}
