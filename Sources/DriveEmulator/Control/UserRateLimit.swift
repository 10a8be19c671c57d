import DriveSupport
import Foundation

/// Who a request's quota is charged to: Google keeps its per-user quota per user and per Cloud project
/// (the OAuth client's project), the user being whoever the access token acts for.
public struct QuotaIdentity: Sendable, Hashable {
    /// The account the token acts for (`user@drivefs-emulator.test`, a service account's email).
    public var subject: String
    /// The Cloud project number of the OAuth client that got the token.
    public var project: String

    public init(subject: String, project: String) {
        self.subject = subject
        self.project = project
    }
}

/// Google's per-user rate limit as configured (`--user-rate-limit REQ_PER_S`, `--user-rate-burst N`).
public struct UserRateLimit: Sendable, Equatable {
    /// Requests per second each user earns (may be fractional, e.g. 0.5).
    public var perSecond: Double
    /// How many requests a user may send at once after being idle (≥ 1).
    public var burst: Int

    /// `burst` nil: one second of budget (at least 1).
    public init(perSecond: Double, burst: Int? = nil) {
        self.perSecond = perSecond
        self.burst = max(1, burst ?? Self.defaultBurst(perSecond: perSecond))
    }

    public static func defaultBurst(perSecond: Double) -> Int { max(1, Int(perSecond.rounded(.up))) }
}

/// Google's per-user rate limit (`--user-rate-limit`): each (user, project) has a token bucket of
/// `burst` requests refilled at `perSecond`; a request finding it empty is refused with 403
/// `userRateLimitExceeded` and does not use the budget. Thread-safe.
///
/// Google documents its default as 12,000 queries per 60 seconds per user (200 a second) and says
/// nothing about how bursts are smoothed; the emulator's bucket holds one second of budget unless
/// told otherwise (`UserRateLimit.burst`).
///
/// Time: integer nanoseconds of the clock the caller passes, so that tests decide exactly which
/// request is refused (`UserRateLimitPropertyTests`).
final class UserRateLimiter: Sendable {
    let settings: UserRateLimit
    private let cost: Int64
    private let capacity: Int64
    /// The budgets, and the size at which full (idle) ones are swept: then twice the survivors,
    /// at least 4,096, so sweeping stays amortised O(1) per request however many users there are.
    private let buckets = Locked<(table: [QuotaIdentity: TokenBucket], sweepAt: Int)>(([:], 4096))

    init(_ settings: UserRateLimit) {
        self.settings = settings
        cost = max(1, TokenBucket.cost(perSecond: settings.perSecond))
        let (product, overflow) = cost.multipliedReportingOverflow(by: Int64(settings.burst))
        capacity = overflow ? Int64.max / 2 : product
    }

    /// Whether `identity` may send a request at `now` (nanoseconds); takes one request's budget if so.
    /// A swept user comes back to a full budget, which is what it had.
    func admit(_ identity: QuotaIdentity, now: Int64) -> Bool {
        buckets.withLock { b in
            if b.table.count >= b.sweepAt {
                b.table = b.table.filter { _, bucket in
                    var refilled = bucket
                    refilled.refill(now: now)
                    return refilled.credit < refilled.capacity
                }
                b.sweepAt = max(4096, 2 * b.table.count)
            }
            var bucket = b.table[identity] ?? TokenBucket(capacity: capacity, now: now)
            let admitted = bucket.tryTake(cost, now: now)
            b.table[identity] = bucket
            return admitted
        }
    }

    /// How many users have a budget in memory (tests).
    var trackedUsers: Int { buckets.withLock { $0.table.count } }

    static func nanos(_ clock: any TimeSource) -> Int64 { Int64((clock.now() * 1e9).rounded()) }
}

extension GoogleError {
    /// The answer Google gives past the per-user quota (`errors[0].extendedHelp` included): the long
    /// form, which names the project's quota page. The short "User rate limit exceeded." is what
    /// Google sends for the 750 GB/day upload cap (rclone's `--drive-stop-on-upload-limit` keys on
    /// it and gives up), so the rate limit must not send it. drive-behaviours.md §4; transcripts in
    /// tidyverse/googledrive#380 (2021) and transloadit/uppy#1040 (2018).
    static func userRateLimitExceeded(project: String) -> GoogleError {
        let console = "https://console.developers.google.com/apis/api/drive.googleapis.com/quotas?project=\(project)"
        var e = GoogleError(403, reason: "userRateLimitExceeded",
                            message: "User Rate Limit Exceeded. Rate of requests for user exceed configured project quota. You may consider re-evaluating expected per-user traffic to the API and adjust project quota limits accordingly. You may monitor aggregate quota usage and adjust limits in the API Console: \(console)",
                            domain: "usageLimits")
        e.extendedHelp = console
        return e
    }
}
