import DriveSupport
import Foundation

/// The one gate every request of an account passes before it is sent: a rate with a burst, served
/// by priority, slowed by Google's rate-limit answers and climbing back on successes.
///
/// Accounting (GCRA, the token bucket written in times): `tat` is the theoretical arrival time of
/// the next request; a request may go at `tat - (burst - 1) · interval` (so `burst` requests may go
/// at once after an idle spell) and a grant moves `tat` to `max(tat, now) + interval`. Only grants
/// move the accounting, never the waiting, so the rate holds exactly whatever the priorities and
/// however many threads wait.
///
/// Scheduling: waiters queue by `RequestPriority`, in arrival order within one. Only the head (the
/// first of the most urgent non-empty queue) may take the next slot; a more urgent request that
/// arrives takes the head's place. Strict priority: background work waits while interactive work
/// keeps the rate busy; that is the point.
///
/// Adaptation (AIMD): `recordRateLimit` (403 rate limit, 429, any `Retry-After`) multiplies the rate
/// of every request by `decreaseFactor` (not below `minimumRate`; at most once per
/// `decreaseInterval`, since N requests refused together are one signal), empties the burst, and
/// with a `Retry-After` lets nothing go for that many seconds. `recordSuccess` adds
/// `increasePerSuccess` requests/s, up to the configured `ratePerSecond`. Each slowdown is logged
/// (warning, area "pacer"), and the full recovery once (info).
///
/// Deadlines and cancellation: a waiter whose slot would come at or after its deadline leaves at
/// once (`.pastDeadline`) without taking a slot; a cancelled one leaves with `.cancelled`.
///
/// Waiting (`Waiting`): `.sleeping` (the default) makes the head sleep on the `TimeSource` until its
/// slot (a `ManualTimeSource` then advances time, so single-threaded tests are exact) while the
/// others wait on the condition; `.ticked` makes every waiter wait on the condition until the
/// accounting allows it or `tick()` is called after a test moved its clock, so tests with concurrent
/// waiters are deterministic.
public final class Pacer: @unchecked Sendable {
    public enum Waiting: Sendable {
        case sleeping
        case ticked
    }

    /// How a wait in the pacer ended.
    public enum Admission: Sendable, Equatable {
        /// Send now; `waited`: seconds from the call to the slot granted.
        case granted(waited: Double)
        /// The slot would come at or after the request's deadline: nothing may be sent.
        case pastDeadline
        case cancelled
    }

    /// The configured rate, the ceiling that successes climb back to.
    public let ratePerSecond: Double
    public let burst: Double
    public let decreaseFactor: Double
    public let minimumRate: Double
    public let increasePerSuccess: Double
    public let decreaseInterval: Double
    public let waiting: Waiting
    private let time: any TimeSource
    /// Times below are seconds since `origin`: small numbers keep the accounting exact (epoch
    /// seconds have a resolution of about 2.4e-7 s, and `tat` is summed from many intervals).
    private let origin: Double

    /// Grants closer than this to their slot go at once: clock arithmetic on epoch seconds has a
    /// resolution of about 2.4e-7 s, and a waiter must never spin on a remainder it cannot sleep.
    private static let tolerance = 1e-6

    // Guarded by `condition` (a condition variable, not `Locked`: waiters sleep until the head
    // changes or a slot comes; hence `@unchecked Sendable`). No other lock is taken and no I/O done
    // while it is held (the log is written after unlocking).
    // INVARIANT: every ticket in `queues` belongs to a thread inside `acquire`.
    private let condition = NSCondition()
    private var rate: Double
    private var tat: Double
    private var blockedUntil: Double
    private var lastDecrease = -Double.infinity
    private var queues: [[UInt64]] = Array(repeating: [], count: RequestPriority.allCases.count)
    private var nextTicket: UInt64 = 0
    /// Bumped by every change that can move a waiter's slot (arrivals, departures, rate, blocks).
    private var generation: UInt64 = 0

    public init(ratePerSecond: Double = 10, burst: Int = 10, time: any TimeSource = SystemTimeSource(),
                decreaseFactor: Double = 0.5, minimumRate: Double = 1, increasePerSuccess: Double = 0.1,
                decreaseInterval: Double = 1, waiting: Waiting = .sleeping) {
        // Nonsense settings are clamped rather than trusted: a rate ≤ 0 would wait forever.
        let configured = ratePerSecond > 0 && ratePerSecond.isFinite ? ratePerSecond : 10
        self.ratePerSecond = configured
        self.burst = Double(max(1, burst))
        self.decreaseFactor = decreaseFactor > 0 && decreaseFactor < 1 ? decreaseFactor : 0.5
        self.minimumRate = min(configured, minimumRate > 0 && minimumRate.isFinite ? minimumRate : 1)
        self.increasePerSuccess = max(0, increasePerSuccess.isFinite ? increasePerSuccess : 0.1)
        self.decreaseInterval = max(0, decreaseInterval.isFinite ? decreaseInterval : 1)
        self.waiting = waiting
        self.time = time
        self.origin = time.now()
        self.rate = configured
        self.tat = 0
        self.blockedUntil = 0
    }

    private func now() -> Double { time.now() - origin }

    /// The rate requests are paced at now (below `ratePerSecond` after a rate-limit answer).
    public var currentRate: Double {
        condition.lock(); defer { condition.unlock() }
        return rate
    }

    /// When a `Retry-After` holds every request back, the time it ends (`TimeSource` seconds).
    public var blockedUntilTime: Double? {
        condition.lock(); defer { condition.unlock() }
        return blockedUntil > now() ? origin + blockedUntil : nil
    }

    /// Requests waiting in the pacer now.
    public var queued: Int {
        condition.lock(); defer { condition.unlock() }
        return queues.reduce(0) { $0 + $1.count }
    }

    /// Blocks until the caller may send one request (interactive, no deadline). Returns the seconds waited.
    @discardableResult
    public func acquire() -> Double {
        if case .granted(let waited) = acquire(priority: .interactive, deadline: nil, cancellation: nil) { return waited }
        return 0
    }

    /// Waits for a slot, behind every waiting request of a more urgent priority and every earlier
    /// one of the same priority.
    public func acquire(priority: RequestPriority, deadline: Double? = nil, cancellation: CancellationFlag? = nil) -> Admission {
        condition.lock()
        defer { condition.unlock() }
        let started = now()
        let deadline = deadline.map { $0 - origin }
        let ticket = nextTicket
        nextTicket &+= 1
        queues[priority.rawValue].append(ticket)
        changed()
        func leave(_ admission: Admission) -> Admission {
            queues[priority.rawValue].removeAll { $0 == ticket }
            changed()
            return admission
        }
        // The slot the head slept to, while nothing changed since: then it is taken at that time,
        // whatever the clock's rounding or oversleeping did (exact pacing with a manual clock).
        var sleptTo: (slot: Double, generation: UInt64)?
        while true {
            if cancellation?.isCancelled == true { return leave(.cancelled) }
            var now = now()
            if let sleptTo, sleptTo.generation == generation { now = sleptTo.slot }
            sleptTo = nil
            let ahead = waitersAhead(of: ticket, priority: priority)
            let slot = slotTime(after: ahead)
            if let deadline, max(slot, now) >= deadline { return leave(.pastDeadline) }
            if ahead == 0 && slot <= now + Self.tolerance {
                tat = max(tat, now) + 1 / rate
                return leave(.granted(waited: max(0, now - started)))
            }
            switch waiting {
            case .ticked:
                condition.wait()
            case .sleeping where ahead == 0:
                // The head sleeps on the time source (outside the lock); with a cancellation flag in
                // short steps so that a cancel is seen within 50 ms.
                let step = cancellation == nil ? slot - now : min(slot - now, 0.05)
                let before = generation
                condition.unlock()
                time.sleep(step)
                condition.lock()
                sleptTo = (now + step, before)
            case .sleeping:
                // Woken by every grant and departure; with a deadline or a flag, also every 50 ms
                // of real time to look again.
                if deadline != nil || cancellation != nil {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
                } else {
                    condition.wait()
                }
            }
        }
    }

    /// Re-evaluates every waiter (`.ticked` mode: after a test moved its clock).
    public func tick() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits (real time, at most `timeout` seconds) until `count` requests are queued; for tests
    /// that must know their threads are waiting before they move the clock.
    @discardableResult
    public func waitUntilQueued(_ count: Int, timeout: Double) -> Bool {
        let limit = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while queues.reduce(0, { $0 + $1.count }) != count {
            if !condition.wait(until: limit) { return queues.reduce(0, { $0 + $1.count }) == count }
        }
        return true
    }

    /// A successful answer: the rate climbs back by `increasePerSuccess`, up to the configured rate.
    public func recordSuccess() {
        condition.lock()
        guard rate < ratePerSecond else { return condition.unlock() }
        setRate(min(ratePerSecond, rate + increasePerSuccess), now: now())
        let recovered = rate >= ratePerSecond
        changed()
        condition.unlock()
        if recovered { Log.shared.info("pacer", "recovered: back at \(Self.format(ratePerSecond)) requests/s") }
    }

    /// A rate-limit answer (`what` says which, for the log): slows every request of the account.
    public func recordRateLimit(retryAfter: Double?, what: String) {
        condition.lock()
        let now = now()
        var slowed = false
        if now - lastDecrease >= decreaseInterval {
            lastDecrease = now
            setRate(max(minimumRate, rate * decreaseFactor), now: now)
            // No burst right after a refusal: the next request waits a whole (new) interval.
            tat = max(tat, now + burst / rate)
            slowed = true
        }
        var blocked = false
        if let retryAfter, retryAfter > 0, now + retryAfter > blockedUntil {
            blockedUntil = now + retryAfter
            // The block's end sends one request, then the rate: no burst saved up while blocked.
            tat = max(tat, blockedUntil + (burst - 1) / rate)
            blocked = true
        }
        let newRate = rate
        changed()
        condition.unlock()
        // Logged outside the lock: no I/O while waiters are held.
        if slowed || blocked {
            let hold = blocked ? "; nothing is sent for \(Self.format(retryAfter ?? 0)) s (Retry-After)" : ""
            Log.shared.warning("pacer", "\(what): slowing every request to \(Self.format(newRate)) requests/s\(hold)")
        }
    }

    // MARK: - Accounting (condition held)

    private func changed() {
        generation &+= 1
        condition.broadcast()
    }

    /// The earliest time the request with `ahead` waiters before it may go, if nothing changes.
    private func slotTime(after ahead: Int) -> Double {
        let interval = 1 / rate
        let own = tat - (burst - 1) * interval + Double(ahead) * interval
        return max(own, blockedUntil + Double(ahead) * interval)
    }

    /// Changes the rate, keeping the backlog (in requests) that `tat` holds ahead of now.
    private func setRate(_ newRate: Double, now: Double) {
        if tat > now { tat = now + (tat - now) * rate / newRate }
        rate = newRate
    }

    private func waitersAhead(of ticket: UInt64, priority: RequestPriority) -> Int {
        var count = 0
        for p in 0..<priority.rawValue { count += queues[p].count }
        return count + (queues[priority.rawValue].firstIndex(of: ticket) ?? 0)
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }
}
