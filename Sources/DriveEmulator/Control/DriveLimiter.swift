import DriveSupport
import Foundation

/// Amounts admitted over a sliding window of time: an amount admitted at `t` counts in every window
/// `(now − length, now]` that holds `t`. A new amount is admitted only when the sum in the window
/// ending now, plus it, stays within the limit, so no window of `length` ever holds more than the
/// limit (the last amount admitted in any window saw all the others of it when it was admitted).
///
/// Time: integer nanoseconds; an earlier `now` than the last entry's is taken as that entry's time.
/// INVARIANT: `sum` is the sum of `entries[head...]`; entries are in time order.
struct SlidingWindow: Sendable {
    let length: Int64
    private var entries: [(at: Int64, amount: Int64)] = []
    private var head = 0
    private(set) var sum: Int64 = 0

    init(length: Int64) { self.length = length }

    /// Forgets what left the window ending at `now`.
    mutating func expire(now: Int64) {
        while head < entries.count, entries[head].at <= now - length {
            sum -= entries[head].amount
            head += 1
        }
        if head > 1024, head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// Whether `amount` more fits under `limit` in the window ending at `now` (call `expire` first).
    func fits(_ amount: Int64, limit: Int64) -> Bool { sum + amount <= limit }

    mutating func add(_ amount: Int64, now: Int64) {
        guard amount > 0 else { return }
        let at = max(now, entries.last?.at ?? now)
        entries.append((at, amount))
        sum += amount
    }

    var isEmpty: Bool { head == entries.count }
}

/// What the limits say of one request.
enum LimitVerdict: Equatable, Sendable {
    case admitted
    /// Past the user's quota units: Google's long 403 `userRateLimitExceeded`.
    case userQuotaExceeded
    /// Past the project's quota units: 403 `rateLimitExceeded`.
    case projectQuotaExceeded
    /// Past the write limit: 403 `rateLimitExceeded`; `lands` under the quirk (carry it out anyway).
    case writeLimited(lands: Bool)
    /// Past the daily upload cap: 403 `userRateLimitExceeded` "User rate limit exceeded.".
    case uploadCapReached

    func error(project: String) -> GoogleError? {
        switch self {
        case .admitted: return nil
        case .userQuotaExceeded: return .userRateLimitExceeded(project: project)
        case .projectQuotaExceeded, .writeLimited: return .rateLimitExceeded
        case .uploadCapReached: return .uploadLimitExceeded
        }
    }
}

/// Per-user counters of the limits (`GET /__emulator/stats` → `users`).
public struct UserLimitStats: Sendable, Equatable {
    /// Quota units charged in the minute ending now (all projects of the user).
    public var unitsLastMinute: Int64 = 0
    /// Quota units charged since the start (or the last reset of the stats).
    public var units: Int64 = 0
    /// Writes admitted by the write limit.
    public var writes = 0
    /// Requests refused by the write limit (those that landed under the quirk included).
    public var writesRefused = 0
    /// Requests refused for quota units (user's or project's).
    public var quotaRefused = 0
    /// Requests refused by the daily upload cap.
    public var uploadsRefused = 0
    /// Bytes of uploads and copies charged in the 24 hours ending now.
    public var uploadBytesLastDay: Int64 = 0

    public init() {}

    var json: [String: Any] {
        ["unitsLastMinute": unitsLastMinute, "units": units, "writes": writes, "writesRefused": writesRefused,
         "quotaRefused": quotaRefused, "uploadsRefused": uploadsRefused, "uploadBytesLastDay": uploadBytesLastDay]
    }
}

/// Google's request limits (`DriveLimits`), enforced per request before the handler runs: quota
/// units over a sliding minute per (user, project) and per project, the write limit per account (a
/// token bucket like `UserRateLimiter`'s), the daily upload bytes per user over a sliding 24 hours.
/// Thread-safe: one lock over all of it, so a request is checked against every limit and charged to
/// all of them at once, or to none.
///
/// Contract: a refused request is charged nothing: no units, no write budget, no bytes (Google does
/// not charge refused requests either; a client retrying at once stays refused until it backs off).
/// Checks run in the order quota (user, then project), write limit, upload cap; the first that
/// refuses answers.
final class DriveLimiter: Sendable {
    static let minute: Int64 = 60_000_000_000
    static let day: Int64 = 86_400 * 1_000_000_000

    let limits: DriveLimits
    private let writeCost: Int64
    private let writeCapacity: Int64

    private struct State {
        var userUnits: [QuotaIdentity: SlidingWindow] = [:]
        var projectUnits: [String: SlidingWindow] = [:]
        var writes: [String: TokenBucket] = [:]
        var uploads: [String: SlidingWindow] = [:]
        var stats: [String: UserLimitStats] = [:]
        var random: SplitMix64
        /// Table size at which idle entries are swept (amortised O(1), as `UserRateLimiter`).
        var sweepAt = 4096
    }
    private let state: Locked<State>

    init(_ limits: DriveLimits, seed: UInt64 = 1) {
        self.limits = limits
        let rate = limits.writesPerSecond ?? 1
        writeCost = max(1, TokenBucket.cost(perSecond: rate))
        let (product, overflow) = writeCost.multipliedReportingOverflow(by: Int64(max(1, limits.writeBurst)))
        writeCapacity = overflow ? Int64.max / 2 : product
        state = Locked(State(random: SplitMix64(seed: seed)))
    }

    /// Checks `method` from `identity` at `now` (nanoseconds) against every limit; when all admit,
    /// charges them all. `uploadBytes`: the bytes an upload or copy brings (nil for other methods;
    /// 0 when unknown, as a resumable session that did not declare its length).
    func admit(_ identity: QuotaIdentity, method: String, uploadBytes: Int64? = nil, now: Int64) -> LimitVerdict {
        let cost = Int64(limits.cost(of: method))
        let isWrite = limits.writesPerSecond != nil && DriveLimits.writeMethods.contains(method)
        let bytes = DriveLimits.uploadMethods.contains(method) ? max(0, uploadBytes ?? 0) : nil
        return state.withLock { s -> LimitVerdict in
            sweep(&s, now: now)
            var user = s.userUnits[identity] ?? SlidingWindow(length: Self.minute)
            var project = s.projectUnits[identity.project] ?? SlidingWindow(length: Self.minute)
            user.expire(now: now)
            project.expire(now: now)
            var stats = s.stats[identity.subject] ?? UserLimitStats()
            defer { s.stats[identity.subject] = stats }
            if cost > 0, let limit = limits.unitsPerUserPerMinute, !user.fits(cost, limit: Int64(limit)) {
                stats.quotaRefused += 1
                return .userQuotaExceeded
            }
            if cost > 0, let limit = limits.unitsPerProjectPerMinute, !project.fits(cost, limit: Int64(limit)) {
                stats.quotaRefused += 1
                return .projectQuotaExceeded
            }
            var bucket = s.writes[identity.subject] ?? TokenBucket(capacity: writeCapacity, now: now)
            if isWrite {
                bucket.refill(now: now)
                guard bucket.credit >= writeCost else {
                    stats.writesRefused += 1
                    let f = limits.refusedWriteLands
                    return .writeLimited(lands: f > 0 && s.random.nextUnitDouble() < f)
                }
            }
            var uploaded = s.uploads[identity.subject] ?? SlidingWindow(length: Self.day)
            if let bytes, let cap = limits.dailyUploadBytes {
                uploaded.expire(now: now)
                guard uploaded.sum < cap, uploaded.fits(bytes, limit: cap) else {
                    stats.uploadsRefused += 1
                    return .uploadCapReached
                }
            }
            // Admitted: charge every limit.
            if cost > 0, limits.unitsPerUserPerMinute != nil || limits.unitsPerProjectPerMinute != nil {
                user.add(cost, now: now)
                project.add(cost, now: now)
                s.userUnits[identity] = user
                s.projectUnits[identity.project] = project
                stats.units += cost
            }
            if isWrite {
                _ = bucket.tryTake(writeCost, now: now)
                s.writes[identity.subject] = bucket
                stats.writes += 1
            }
            if let bytes, limits.dailyUploadBytes != nil {
                uploaded.add(bytes, now: now)
                s.uploads[identity.subject] = uploaded
            }
            return .admitted
        }
    }

    /// Drops windows and buckets that hold nothing any more (a swept entry comes back as it was:
    /// empty, or full).
    private func sweep(_ s: inout State, now: Int64) {
        let size = s.userUnits.count + s.projectUnits.count + s.writes.count + s.uploads.count
        guard size >= s.sweepAt else { return }
        func live(_ w: SlidingWindow) -> Bool { var w = w; w.expire(now: now); return !w.isEmpty }
        s.userUnits = s.userUnits.filter { live($0.value) }
        s.projectUnits = s.projectUnits.filter { live($0.value) }
        s.uploads = s.uploads.filter { live($0.value) }
        s.writes = s.writes.filter { var b = $0.value; b.refill(now: now); return b.credit < b.capacity }
        s.sweepAt = max(4096, 2 * (s.userUnits.count + s.projectUnits.count + s.writes.count + s.uploads.count))
    }

    /// The counters per user (subject) at `now`, with the units of the last minute summed over
    /// the user's projects.
    func userStats(now: Int64) -> [String: UserLimitStats] {
        state.withLock { s in
            var out = s.stats
            for (identity, window) in s.userUnits {
                var w = window
                w.expire(now: now)
                out[identity.subject, default: UserLimitStats()].unitsLastMinute += w.sum
            }
            for (subject, window) in s.uploads {
                var w = window
                w.expire(now: now)
                out[subject, default: UserLimitStats()].uploadBytesLastDay = w.sum
            }
            return out
        }
    }

    /// Zeroes the counters (`POST /__emulator/reset-stats`); the budgets stay as they are.
    func resetStats() { state.withLock { $0.stats = [:] } }

    /// Quota units charged to `identity` in the minute ending at `now` (tests).
    func unitsInWindow(_ identity: QuotaIdentity, now: Int64) -> Int64 {
        state.withLock { s in
            var w = s.userUnits[identity] ?? SlidingWindow(length: Self.minute)
            w.expire(now: now)
            return w.sum
        }
    }
}
