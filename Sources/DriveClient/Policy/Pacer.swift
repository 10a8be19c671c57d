import DriveSupport
import Foundation

/// The one gate every request of an account passes before it is sent. It keeps to the budgets
/// Google meters, each a lane, and serves waiters by priority in every lane.
///
/// Lanes (docs/client.md, "Pacing"):
/// - **quota**: what spends Google's quota (every request but a resumable upload's chunks). A
///   request rate with a burst (`ratePerSecond`, `burst`; GCRA, below) and, when `quota` is set, a
///   sliding minute of quota units (`QuotaBudget`: units per method, or requests for the legacy
///   quota): a request goes only when the units charged in the minute ending now plus its cost stay
///   within the budget (the emulator's and Google's check), so no minute ever holds more.
/// - **writes** (when `writes` is set): creates, updates, deletes, upload initiations, from
///   `WriteBudget.perSecond` up to `WriteBudget.ceiling` after a small burst (GCRA). A write needs
///   both lanes.
///
/// Accounting (GCRA, the token bucket written in times), per rate lane: `tat` is the theoretical
/// arrival time of the next request; a request may go at `tat - (burst - 1) · interval` and a grant
/// moves `tat` to `max(tat, now) + interval`. Only grants move the accounting, never the waiting,
/// so the rates hold exactly whatever the priorities and however many threads wait.
///
/// Scheduling: waiters are ordered by `RequestPriority`, then arrival. A waiter goes when every lane
/// it needs is open to it and no waiter ahead of it *claims* one of those lanes; a waiter claims a
/// lane when it needs it and every other lane it needs is open (so it would take that lane's next
/// slot). Hence a write held by the write lane does not hold a read behind it (it claims no quota
/// while its write lane is closed), while a user's download that waits for room in the minute does
/// hold back a background listing that would fit. Strict priority within a lane.
///
/// While a user is active (an interactive request went in the last `activeSpell` seconds), the
/// lower priorities may fill the minute only to their share of the budget (`quotaShares`): the rest
/// is kept for what the user waits on. Idle, every priority may spend it all.
///
/// Adaptation (AIMD, per lane): `recordRefusal(lane, …)` multiplies that lane's rate by its
/// decrease factor (`decreaseFactor` for the quota lane, `WriteBudget.decreaseFactor` for writes;
/// not below its floor; at most once per `decreaseInterval`, since N requests refused together are
/// one signal), empties its burst, and with a `Retry-After` holds that lane for so many seconds.
/// `recordSuccess(charge)` climbs each lane the request used by its increase, up to its ceiling:
/// the quota lane back to `ratePerSecond`; the write lane probes from where it starts up to
/// `WriteBudget.ceiling` (by `WriteBudget.probeIncrease` a write until its first refusal, then by
/// `WriteBudget.increase`: the numbers and their arithmetic are at `WriteBudget`). A refusal of one
/// lane never slows the other. Each slowdown is logged (warning, area "pacer"), and each lane's
/// full recovery after one once (info).
///
/// Deadlines and cancellation: a waiter whose estimated slot (its own, plus one interval per waiter
/// ahead of it in each rate lane it needs) comes at or after its deadline leaves at once
/// (`.pastDeadline`) without taking anything; a cancelled one leaves with `.cancelled`.
///
/// Waiting (`Waiting`): `.sleeping` (the default): one waiter at a time sleeps on the `TimeSource`
/// to the earliest time any waiter could go, then wakes the others (a `ManualTimeSource` then
/// advances exactly from event to event); `.ticked` makes every waiter wait on the condition until
/// `tick()` is called after a test moved its clock, so tests with concurrent waiters are exact.
/// @unchecked Sendable: its state is touched only with `condition` held (see below)
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

    /// The budgets a request can wait on (and that a refusal slows).
    public enum Lane: String, Sendable, CaseIterable, CustomStringConvertible {
        case quota
        case writes
        public var description: String { rawValue }
    }

    /// What the pacer holds and has seen, for `drivefs status` and tests.
    public struct Status: Sendable, Equatable {
        /// The quota lane's request rate now, and as configured.
        public var requestRate: Double
        public var configuredRequestRate: Double
        public var quota: QuotaBudget?
        /// Units (or requests, legacy) charged in the minute ending now.
        public var quotaUsedLastMinute: Int
        public var writeRate: Double?
        public var writes: WriteBudget?
        /// Requests waiting now, and the writes among them.
        public var queued: Int
        public var writesQueued: Int
        /// Refusals recorded since the start, per lane.
        public var quotaRefusals: Int
        public var writeRefusals: Int
        /// When a `Retry-After` holds a lane, the time it ends (`TimeSource` seconds).
        public var quotaBlockedUntil: Double?
        public var writesBlockedUntil: Double?

        /// Seconds for the queued writes to go at the write lane's rate now (nil without a write lane).
        public var writeDrainSeconds: Double? { writeRate.map { Double(writesQueued) / $0 } }
    }

    /// The quota lane's configured request rate, the ceiling that successes climb back to.
    public let ratePerSecond: Double
    public let burst: Double
    public let decreaseFactor: Double
    public let minimumRate: Double
    public let increasePerSuccess: Double
    public let decreaseInterval: Double
    public let waiting: Waiting
    /// The sliding minute's budget (nil: only the request rate paces what spends quota).
    public let quota: QuotaBudget?
    /// The write lane (nil: writes are paced like any request).
    public let writes: WriteBudget?
    /// By `RequestPriority.rawValue`: the share of `quota` each priority may fill the minute to while
    /// a user is active.
    public let quotaShares: [Double]
    /// How long after an interactive request the user counts as active.
    public let activeSpell: Double

    /// The default shares: read-ahead 90%, background fills 75%, the crawl 50% of the minute.
    public static let defaultQuotaShares: [Double] = [1, 0.9, 0.75, 0.5]

    private let time: any TimeSource
    /// Times below are seconds since `origin`: small numbers keep the accounting exact (epoch
    /// seconds have a resolution of about 2.4e-7 s, and `tat` is summed from many intervals).
    private let origin: Double

    /// Grants closer than this to their slot go at once: clock arithmetic on epoch seconds has a
    /// resolution of about 2.4e-7 s, and a waiter must never spin on a remainder it cannot sleep.
    private static let tolerance = 1e-6
    static let minute = 60.0

    // Guarded by `condition` (a condition variable, not `Locked`: waiters sleep until the state
    // changes or a slot comes; hence `@unchecked Sendable`). No other lock is taken and no I/O done
    // while it is held (the log is written after unlocking).
    // INVARIANT: every waiter in `waiters` belongs to a thread inside `acquire`; `waiters` is sorted
    // by (priority, ticket).
    private let condition = NSCondition()
    private var requests: RateLane
    private var writeLane: RateLane?
    private var window = QuotaWindow()
    private var waiters: [Waiter] = []
    private var nextTicket: UInt64 = 0
    private var lastInteractive = -Double.infinity
    /// A thread sleeps on the time source for every waiter, until this time.
    private var sleepingUntil: Double?
    /// The time the last sleep ended at (a floor of `now()`), so a manual clock gives exact schedules.
    private var wokeAt: Double?
    private var quotaRefusals = 0
    /// The write backlog was logged; cleared when no write waits any more.
    private var backlogSaid = false
    private var writeRefusals = 0

    public init(ratePerSecond: Double = 10, burst: Int = 10, time: any TimeSource = SystemTimeSource(),
                decreaseFactor: Double = 0.5, minimumRate: Double = 1, increasePerSuccess: Double = 0.1,
                decreaseInterval: Double = 1, waiting: Waiting = .sleeping,
                quota: QuotaBudget? = nil, writes: WriteBudget? = nil,
                quotaShares: [Double] = Pacer.defaultQuotaShares, activeSpell: Double = 10) {
        // Nonsense settings are clamped rather than trusted: a rate ≤ 0 would wait forever.
        let configured = ratePerSecond > 0 && ratePerSecond.isFinite ? ratePerSecond : 10
        self.ratePerSecond = configured
        self.burst = Double(max(1, burst))
        self.decreaseFactor = decreaseFactor > 0 && decreaseFactor < 1 ? decreaseFactor : 0.5
        self.minimumRate = min(configured, minimumRate > 0 && minimumRate.isFinite ? minimumRate : 1)
        self.increasePerSuccess = max(0, increasePerSuccess.isFinite ? increasePerSuccess : 0.1)
        self.decreaseInterval = max(0, decreaseInterval.isFinite ? decreaseInterval : 1)
        self.waiting = waiting
        self.quota = quota
        self.writes = writes
        self.quotaShares = RequestPriority.allCases.map { p in
            p == .interactive ? 1 : min(1, max(0.05, p.rawValue < quotaShares.count ? quotaShares[p.rawValue] : 0.5))
        }
        self.activeSpell = max(0, activeSpell)
        self.time = time
        self.origin = time.now()
        self.requests = RateLane(start: configured, ceiling: configured, burst: self.burst, minimumRate: self.minimumRate,
                                 probeIncrease: self.increasePerSuccess, increase: self.increasePerSuccess,
                                 decreaseFactor: self.decreaseFactor)
        // The write lane probes up to its ceiling and may fall to a tenth of where it starts.
        self.writeLane = writes.map {
            RateLane(start: $0.perSecond, ceiling: $0.ceiling, burst: Double($0.burst), minimumRate: $0.perSecond / 10,
                     probeIncrease: WriteBudget.probeIncrease, increase: WriteBudget.increase,
                     decreaseFactor: WriteBudget.decreaseFactor)
        }
    }

    /// Never before the time the last sleep ended at, and a reading just past it (100 µs) is taken
    /// as it: a sleep to a slot takes the slot, whatever the rounding of an epoch clock summed over
    /// many sleeps (a manual clock drifts by ±2.4e-7 s a sleep) or a real clock's small oversleep.
    private func now() -> Double {
        let reading = time.now() - origin
        guard let wokeAt else { return reading }
        return reading <= wokeAt + 1e-4 ? wokeAt : reading
    }

    /// The quota lane's request rate now (below `ratePerSecond` after a quota refusal).
    public var currentRate: Double {
        condition.lock(); defer { condition.unlock() }
        return requests.rate
    }

    /// The write lane's rate now (nil without a write lane).
    public var currentWriteRate: Double? {
        condition.lock(); defer { condition.unlock() }
        return writeLane?.rate
    }

    /// When a `Retry-After` holds the quota lane back, the time it ends (`TimeSource` seconds).
    public var blockedUntilTime: Double? {
        condition.lock(); defer { condition.unlock() }
        return requests.blockedUntil > now() ? origin + requests.blockedUntil : nil
    }

    /// Requests waiting in the pacer now.
    public var queued: Int {
        condition.lock(); defer { condition.unlock() }
        return waiters.count
    }

    public var status: Status {
        condition.lock(); defer { condition.unlock() }
        let now = now()
        window.expire(now: now)
        return Status(requestRate: requests.rate, configuredRequestRate: ratePerSecond, quota: quota,
                      quotaUsedLastMinute: window.used, writeRate: writeLane?.rate, writes: writes,
                      queued: waiters.count, writesQueued: waiters.filter(\.isWrite).count,
                      quotaRefusals: quotaRefusals, writeRefusals: writeRefusals,
                      quotaBlockedUntil: requests.blockedUntil > now ? origin + requests.blockedUntil : nil,
                      writesBlockedUntil: writeLane.flatMap { $0.blockedUntil > now ? origin + $0.blockedUntil : nil })
    }

    /// Blocks until the caller may send one request (interactive, no deadline). Returns the seconds waited.
    @discardableResult
    public func acquire() -> Double {
        if case .granted(let waited) = acquire(priority: .interactive, deadline: nil, cancellation: nil) { return waited }
        return 0
    }

    /// Waits for a slot for a request that costs `charge`, behind every waiting request of a more
    /// urgent priority and every earlier one of the same priority that needs a lane it needs.
    public func acquire(priority: RequestPriority, charge: RequestCharge = .read, deadline: Double? = nil,
                        cancellation: CancellationFlag? = nil) -> Admission {
        let cost = quota?.cost(of: charge) ?? 0
        // What spends no quota and is no write (a resumable upload's chunks) needs no lane.
        let needsQuota = quota == nil || cost > 0
        let isWrite = writes != nil && charge.isWrite
        if !needsQuota && !isWrite { return cancellation?.isCancelled == true ? .cancelled : .granted(waited: 0) }
        // A cancel wakes this waiter wherever it waits: the sleep on the time source (`wakeup`) or
        // the condition. Added before the lock is taken (it runs at once when the flag is set
        // already), and its broadcast takes the lock, so it cannot fall between the loop's look at
        // the flag and its wait. The pacer's lock is a leaf: the cancelling thread may hold others.
        let wakeup = Wakeup()
        let registration = cancellation?.onCancel { [condition] in
            wakeup.wake()
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
        defer { cancellation?.remove(registration) }
        condition.lock()
        defer { condition.unlock() }
        let started = now()
        let deadline = deadline.map { $0 - origin }
        let ticket = nextTicket
        nextTicket &+= 1
        let me = Waiter(ticket: ticket, priority: priority, cost: cost, needsQuota: needsQuota, isWrite: isWrite)
        let at = waiters.firstIndex { $0.priority > priority } ?? waiters.count
        waiters.insert(me, at: at)
        changed()
        if isWrite, let line = backlogNews(now: started) {
            // Said once per backlog, outside the lock (the state is whole here).
            condition.unlock()
            Log.shared.info("pacer", line)
            condition.lock()
        }
        func leave(_ admission: Admission) -> Admission {
            waiters.removeAll { $0.ticket == ticket }
            changed()
            return admission
        }
        while true {
            if cancellation?.isCancelled == true { return leave(.cancelled) }
            let now = now()
            window.expire(now: now)
            guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { return .cancelled }
            if let deadline, max(estimatedSlot(index, now: now), now) >= deadline { return leave(.pastDeadline) }
            if mayGo(index, now: now) {
                grant(index, now: now)
                return .granted(waited: max(0, now - started))
            }
            switch waiting {
            case .ticked:
                condition.wait()
            case .sleeping:
                let next = nextEvent(now: now)
                if sleepingUntil == nil, let next {
                    // Sleep on the time source for everyone (outside the lock), until the next
                    // event or this waiter's cancel (then the others elect a new sleeper).
                    // The step is measured on the clock's own reading, so that its rounding does
                    // not add up over many sleeps.
                    let reading = time.now() - origin
                    let step = max(0, next - reading)
                    sleepingUntil = reading + step
                    condition.unlock()
                    var woken = false
                    if cancellation != nil { woken = time.sleep(step, until: wakeup) } else { time.sleep(step) }
                    condition.lock()
                    sleepingUntil = nil
                    wokeAt = woken ? max(now, time.now() - origin) : max(now, reading + step)
                    changed()
                } else {
                    // Woken by every grant, departure, wake-up, change of a lane and cancel; a waiter
                    // due before the sleeper wakes (real clock), or whose deadline comes first, looks
                    // again on its own then. Nothing else moves its slot later: with the state
                    // unchanged, a slot only comes nearer as time passes.
                    var wait: Double?
                    if let deadline { wait = deadline - now }
                    if let sleepingUntil, let own = nextEvent(now: now, only: index), own < sleepingUntil {
                        wait = min(wait ?? .infinity, own - now)
                    }
                    if let wait {
                        _ = condition.wait(until: Date(timeIntervalSinceNow: max(0.001, wait)))
                    } else {
                        condition.wait()
                    }
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
        while waiters.count != count {
            if !condition.wait(until: limit) { return waiters.count == count }
        }
        return true
    }

    /// A successful answer to a request that cost `charge`: each lane it used climbs by its
    /// increase, up to its ceiling.
    public func recordSuccess(_ charge: RequestCharge = .read) {
        condition.lock()
        let now = now()
        var recovered: [String] = []
        if quota == nil || quota!.cost(of: charge) > 0, requests.speedUp(now: now) {
            recovered.append("recovered: back at \(Self.format(requests.ceiling)) requests/s")
        }
        if charge.isWrite, writeLane != nil, writeLane!.speedUp(now: now) {
            recovered.append("writes recovered: back at \(Self.format(writeLane!.ceiling)) writes/s")
        }
        changed()
        condition.unlock()
        for line in recovered { Log.shared.info("pacer", line) }
    }

    /// A rate-limit or quota answer (`what` says which, for the log): slows the quota lane, which
    /// every request that spends quota passes.
    public func recordRateLimit(retryAfter: Double?, what: String) {
        recordRefusal(.quota, retryAfter: retryAfter, what: what)
    }

    /// A refusal that concerns `lane`: slows that lane only (without a write lane, `.writes` slows
    /// the quota lane, as every request passes it).
    public func recordRefusal(_ lane: Lane, retryAfter: Double?, what: String) {
        condition.lock()
        let now = now()
        let line: String?
        if lane == .writes, var writeLane {
            writeRefusals += 1
            let (slowed, blocked) = writeLane.slowDown(now: now, retryAfter: retryAfter, interval: decreaseInterval)
            self.writeLane = writeLane
            let hold = blocked ? "; no write is sent for \(Self.format(retryAfter ?? 0)) s (Retry-After)" : ""
            line = slowed || blocked ? "\(what): slowing writes to \(Self.format(writeLane.rate)) writes/s\(hold); reads are not held" : nil
        } else {
            quotaRefusals += 1
            let (slowed, blocked) = requests.slowDown(now: now, retryAfter: retryAfter, interval: decreaseInterval)
            let hold = blocked ? "; nothing is sent for \(Self.format(retryAfter ?? 0)) s (Retry-After)" : ""
            let which = quota == nil && writes == nil ? "every request" : "every request that spends quota"
            line = slowed || blocked ? "\(what): slowing \(which) to \(Self.format(requests.rate)) requests/s\(hold)" : nil
        }
        changed()
        condition.unlock()
        // Logged outside the lock: no I/O while waiters are held.
        if let line { Log.shared.warning("pacer", line) }
    }

    // MARK: - Scheduling (condition held)

    private struct Waiter {
        let ticket: UInt64
        let priority: RequestPriority
        /// Units (or requests) against the minute's budget.
        let cost: Int
        let needsQuota: Bool
        let isWrite: Bool
    }

    private func changed() {
        condition.broadcast()
    }

    /// The budget `priority` may fill the minute to now.
    private func quotaLimit(_ priority: RequestPriority, now: Double) -> Int {
        guard let quota else { return .max }
        guard priority != .interactive, now - lastInteractive < activeSpell else { return quota.perMinute }
        return Int(Double(quota.perMinute) * quotaShares[priority.rawValue])
    }

    /// Whether the minute has room for `w` (a cost above the whole budget goes into an empty minute).
    private func windowOpen(_ w: Waiter, now: Double) -> Bool {
        guard quota != nil, w.cost > 0 else { return true }
        let limit = quotaLimit(w.priority, now: now)
        return window.used + w.cost <= limit || (window.used == 0 && w.cost > limit)
    }

    private func quotaOpen(_ w: Waiter, now: Double) -> Bool {
        !w.needsQuota || (requests.slot() <= now + Self.tolerance && windowOpen(w, now: now))
    }

    private func writesOpen(_ w: Waiter, now: Double) -> Bool {
        guard w.isWrite, let writeLane else { return true }
        return writeLane.slot() <= now + Self.tolerance
    }

    /// Whether the waiter at `index` may go now: its lanes are open, and no waiter ahead of it
    /// claims one of them.
    private func mayGo(_ index: Int, now: Double) -> Bool {
        let w = waiters[index]
        guard quotaOpen(w, now: now), writesOpen(w, now: now) else { return false }
        for a in waiters[..<index] {
            if w.needsQuota && a.needsQuota && writesOpen(a, now: now) { return false }
            if w.isWrite && a.isWrite && quotaOpen(a, now: now) { return false }
        }
        return true
    }

    /// Once per backlog: writes queued beyond the write lane's burst, held by the write lane alone.
    private func backlogNews(now: Double) -> String? {
        guard !backlogSaid, let writes, let writeLane, writeLane.slot() > now + Self.tolerance else { return nil }
        let queued = waiters.filter(\.isWrite).count
        guard queued > writes.burst else { return nil }
        backlogSaid = true
        return "writes are held back by Google's write limit: \(queued) queued at \(Self.format(writeLane.rate)) writes/s "
            + "(reads are not held); said once until the queue is empty"
    }

    private func grant(_ index: Int, now: Double) {
        let w = waiters.remove(at: index)
        if w.isWrite && backlogSaid && !waiters.contains(where: \.isWrite) { backlogSaid = false }
        if w.needsQuota {
            requests.take(now: now)
            window.add(w.cost, now: now)
        }
        if w.isWrite { writeLane?.take(now: now) }
        if w.priority == .interactive { lastInteractive = now }
        changed()
    }

    /// The earliest time `w` could go if nothing changed, with `aheadQuota` / `aheadWrites` waiters
    /// before it in each rate lane.
    private func earliest(_ w: Waiter, aheadQuota: Int = 0, aheadWrites: Int = 0, now: Double) -> Double {
        var t = now
        if w.needsQuota {
            t = max(t, requests.slot(after: aheadQuota))
            if let quota, w.cost > 0, !windowOpen(w, now: now) {
                var room = window.roomTime(for: w.cost, limit: quotaLimit(w.priority, now: now))
                if quotaLimit(w.priority, now: now) < quota.perMinute {
                    // Held to its share while the user is active: the whole budget once they are not.
                    room = min(room, max(lastInteractive + activeSpell, window.roomTime(for: w.cost, limit: quota.perMinute)))
                }
                t = max(t, room)
            }
        }
        if w.isWrite, let writeLane { t = max(t, writeLane.slot(after: aheadWrites)) }
        return t
    }

    /// The waiter's own slot plus one interval per waiter ahead of it in each rate lane it needs.
    private func estimatedSlot(_ index: Int, now: Double) -> Double {
        let w = waiters[index]
        var aheadQuota = 0
        var aheadWrites = 0
        for a in waiters[..<index] {
            if w.needsQuota && a.needsQuota { aheadQuota += 1 }
            if w.isWrite && a.isWrite { aheadWrites += 1 }
        }
        return earliest(w, aheadQuota: aheadQuota, aheadWrites: aheadWrites, now: now)
    }

    /// The earliest future time a waiter (every one, or the one at `only`) could go.
    private func nextEvent(now: Double, only: Int? = nil) -> Double? {
        var next: Double?
        for (i, w) in waiters.enumerated() where only == nil || only == i {
            let t = earliest(w, now: now)
            if t > now + Self.tolerance { next = min(next ?? t, t) }
        }
        return next
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }
}

extension Pacer {
    /// The units charged in the sliding minute ending now, oldest first, at their times in seconds
    /// since the epoch (`QuotaCarryOver`: what a mount leaves for the next one). Empty without a
    /// quota budget.
    public func quotaSpentLastMinute() -> [QuotaCarryOver.Spend] {
        condition.lock(); defer { condition.unlock() }
        guard quota != nil else { return [] }
        window.expire(now: now())
        return window.live.map { QuotaCarryOver.Spend(at: origin + $0.at, units: $0.cost) }
    }

    /// Counts units an earlier process charged (times in seconds since the epoch) in this pacer's
    /// sliding minute, as if it had charged them itself: a mount started right after a busy one
    /// waits for them to leave the minute instead of overrunning Google's per-user budget. Charges
    /// a minute old or older are dropped; one dated in the future (a clock set back) counts as now.
    /// Returns the units taken in. Nothing without a quota budget.
    @discardableResult
    public func carryOver(_ spent: [QuotaCarryOver.Spend]) -> Int {
        condition.lock(); defer { condition.unlock() }
        guard quota != nil else { return 0 }
        let now = now()
        let taken = spent.compactMap { s -> (at: Double, cost: Int)? in
            let at = min(s.at - origin, now)
            return at > now - Self.minute && s.units > 0 ? (at, s.units) : nil
        }
        window.merge(taken)
        window.expire(now: now)
        changed()
        return taken.reduce(0) { $0 + $1.cost }
    }
}

/// One rate with a burst (GCRA), adapted AIMD, held by a `Retry-After`. Times in the pacer's seconds.
///
/// The rate starts at `start` and never leaves [`minimumRate`, `ceiling`]: each success adds
/// `probeIncrease` until the lane's first refusal and `increase` after it; a refusal multiplies it
/// by `decreaseFactor`.
private struct RateLane {
    let ceiling: Double
    let burst: Double
    let minimumRate: Double
    let probeIncrease: Double
    let increase: Double
    let decreaseFactor: Double
    var rate: Double
    var tat = 0.0
    var blockedUntil = 0.0
    var lastDecrease = -Double.infinity
    /// A refusal slowed the lane since it was last at its ceiling (a climb back there is a recovery).
    var slowed = false
    /// The lane was ever slowed: it climbs by `increase` from then on.
    var everRefused = false

    init(start: Double, ceiling: Double, burst: Double, minimumRate: Double, probeIncrease: Double, increase: Double,
         decreaseFactor: Double) {
        self.ceiling = ceiling
        self.burst = max(1, burst)
        self.minimumRate = min(start, minimumRate)
        self.probeIncrease = probeIncrease
        self.increase = increase
        self.decreaseFactor = decreaseFactor
        self.rate = min(start, ceiling)
    }

    /// The earliest time the next request may go.
    func slot() -> Double { slot(after: 0) }

    /// The earliest time the request with `ahead` others before it may go, if nothing changes.
    func slot(after ahead: Int) -> Double {
        let interval = 1 / rate
        return max(tat - (burst - 1) * interval + Double(ahead) * interval, blockedUntil + Double(ahead) * interval)
    }

    mutating func take(now: Double) { tat = max(tat, now) + 1 / rate }

    /// Slows by `decreaseFactor` at most once per `interval`, empties the burst, and holds the lane
    /// for `retryAfter` seconds.
    mutating func slowDown(now: Double, retryAfter: Double?, interval: Double) -> (slowed: Bool, blocked: Bool) {
        var slowed = false
        if now - lastDecrease >= interval {
            lastDecrease = now
            everRefused = true
            self.slowed = true
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
        return (slowed, blocked)
    }

    /// Climbs towards the ceiling; true when this success brought a slowed lane back to it.
    mutating func speedUp(now: Double) -> Bool {
        guard rate < ceiling else { return false }
        setRate(min(ceiling, rate + (everRefused ? increase : probeIncrease)), now: now)
        guard rate >= ceiling, slowed else { return false }
        slowed = false
        return true
    }

    /// Changes the rate, keeping the backlog (in requests) that `tat` holds ahead of now.
    private mutating func setRate(_ newRate: Double, now: Double) {
        if tat > now { tat = now + (tat - now) * rate / newRate }
        rate = newRate
    }
}

/// The units charged in the sliding minute: a unit charged at `t` counts until `t + 60 s` (as
/// Google's and the emulator's window: `at <= now - 60` has left it).
private struct QuotaWindow {
    private var entries: [(at: Double, cost: Int)] = []
    private var head = 0
    private(set) var used = 0

    mutating func expire(now: Double) {
        while head < entries.count, entries[head].at <= now - Pacer.minute {
            used -= entries[head].cost
            head += 1
        }
        if head > 1024, head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    mutating func add(_ cost: Int, now: Double) {
        guard cost > 0 else { return }
        entries.append((max(now, entries.last?.at ?? now), cost))
        used += cost
    }

    /// The charges still in the minute, oldest first.
    var live: ArraySlice<(at: Double, cost: Int)> { entries[head...] }

    /// Adds charges made elsewhere (another process, at their own times), keeping the order by time
    /// that `expire` and `roomTime` rely on.
    mutating func merge(_ earlier: [(at: Double, cost: Int)]) {
        let all = (earlier.filter { $0.cost > 0 } + entries[head...]).sorted { $0.at < $1.at }
        entries = all
        head = 0
        used = all.reduce(0) { $0 + $1.cost }
    }

    /// The time enough units leave the minute for `cost` more to fit under `limit` (or for the
    /// minute to be empty, when `cost` alone is above it).
    func roomTime(for cost: Int, limit: Int) -> Double {
        if used + cost <= limit { return 0 }
        var left = used
        var i = head
        while i < entries.count {
            left -= entries[i].cost
            if left + cost <= limit || (left == 0 && cost > limit) { return entries[i].at + Pacer.minute }
            i += 1
        }
        return entries.last.map { $0.at + Pacer.minute } ?? 0
    }
}
