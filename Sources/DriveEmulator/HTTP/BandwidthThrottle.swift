import DriveSupport
import Foundation

/// The bandwidth every connection shares (`--total-bandwidth`): one token bucket over the bytes of
/// all connections, both directions, as one link to the outside would be. Thread-safe.
///
/// Fairness: each connection moves at most `chunkSize` bytes, reserves them here, and sleeps until
/// its reservation is paid, so reservations interleave in arrival order; N busy connections each get
/// about 1/N of the rate. A reservation made while others are in debt waits behind them, so the
/// debt never exceeds N chunks: bytes moved in any window of time T are at most
/// `rate·T + burst + N·chunkSize` (`BandwidthShapingPropertyTests` checks this bound).
final class SharedBandwidth: Sendable {
    let bytesPerSecond: Int
    private let bucket: Locked<TokenBucket>

    init(bytesPerSecond: Int, now: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        bucket = Locked(TokenBucket(capacity: BandwidthThrottle.burstNanos, now: now))
    }

    /// Accounts for `bytes` moved at `now`; the nanoseconds the mover must wait.
    func reserve(_ bytes: Int, now: Int64) -> Int64 {
        let cost = TokenBucket.cost(bytes, perSecond: bytesPerSecond)
        return bucket.withLock { $0.reserve(cost, now: now) }
    }
}

/// Paces the bytes of one connection (both directions share the budget, as one slow link would):
/// its own rate (`--bandwidth`) and, when set, the rate all connections share (`--total-bandwidth`).
/// After moving bytes the connection waits until both budgets have paid for them. Not thread-safe:
/// a connection has one thread.
///
/// A budget banks at most 1/20 s of its rate while idle (`burstNanos`), so a pause does not let the next
/// transfer run ahead of the rate for long.
final class BandwidthThrottle {
    let bytesPerSecond: Int?
    let shared: SharedBandwidth?
    private var own: TokenBucket?
    private let clock: () -> Int64
    private let sleep: (Int64) -> Void

    /// `clock`: monotonic nanoseconds; `sleep`: waits that many nanoseconds. Tests inject both.
    init(bytesPerSecond: Int?, shared: SharedBandwidth?, clock: @escaping () -> Int64 = BandwidthThrottle.monotonicNanos,
         sleep: @escaping (Int64) -> Void = { Thread.sleep(forTimeInterval: Double($0) / 1e9) }) {
        self.bytesPerSecond = bytesPerSecond.map { max(1, $0) }
        self.shared = shared
        self.clock = clock
        self.sleep = sleep
        if let rate = self.bytesPerSecond { own = TokenBucket(capacity: Self.burstNanos, now: clock()) }
    }

    static func monotonicNanos() -> Int64 { Int64(clamping: DispatchTime.now().uptimeNanoseconds) }

    /// What a budget banks while idle: 1/20 s of its rate (credit is counted in nanoseconds of budget).
    static let burstNanos: Int64 = 50_000_000

    /// The slowest rate that applies to this connection.
    var effectiveRate: Int {
        min(bytesPerSecond ?? Int.max, shared?.bytesPerSecond ?? Int.max)
    }

    /// The largest piece to move at once, so that pacing stays smooth and fair (about 1/20 s of the
    /// slowest budget, between 512 bytes and 64 KiB).
    var chunkSize: Int { max(512, min(64 * 1024, effectiveRate / 20)) }

    /// Accounts for `n` bytes moved at `now` in both budgets; the nanoseconds to wait before moving more.
    func delay(after n: Int, now: Int64) -> Int64 {
        var wait: Int64 = 0
        if let rate = bytesPerSecond, own != nil {
            wait = own!.reserve(TokenBucket.cost(n, perSecond: rate), now: now)
        }
        if let shared { wait = max(wait, shared.reserve(n, now: now)) }
        return wait
    }

    /// Accounts for `n` bytes moved and sleeps until the budgets allow them.
    func pace(_ n: Int) {
        let wait = delay(after: n, now: clock())
        if wait > 0 { sleep(wait) }
    }
}
