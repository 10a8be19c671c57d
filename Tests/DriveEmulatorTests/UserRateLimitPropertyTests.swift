import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The per-user rate limit's arithmetic over an injected clock (integer nanoseconds): random bursts
/// from several users, checked request by request against an independent model of the budget.
final class UserRateLimitPropertyTests: XCTestCase {
    /// The budget as Google's quota is usually described, written independently of `TokenBucket`:
    /// the generic cell rate algorithm. Each user has a theoretical arrival time `tat`; a request at
    /// `t` conforms when `t ≥ tat − (burst − 1)·T` (T = 1/rate), and only a conforming one moves `tat`
    /// to `max(tat, t) + T`. A user's first request finds a full budget.
    struct ReferenceModel {
        let interval: Int64
        let burst: Int64
        var tat: [String: Int64] = [:]

        init(perSecond: Double, burst: Int) {
            interval = max(1, Int64((1e9 / perSecond).rounded()))
            self.burst = Int64(burst)
        }

        mutating func admit(_ user: String, at t: Int64) -> Bool {
            let theoretical = tat[user] ?? t
            guard t >= theoretical - (burst - 1) * interval else { return false }
            tat[user] = max(theoretical, t) + interval
            return true
        }
    }

    static func identity(_ user: String) -> QuotaIdentity {
        QuotaIdentity(subject: user + "@example.com", project: "123456789012")
    }

    /// Random rates, bursts and arrival patterns (bursts at one instant, bursts spread over a few
    /// nanoseconds, pauses shorter and longer than the refill): the limiter refuses exactly the
    /// requests the model refuses, and no others.
    func testExactlyTheRequestsPastTheBudgetAreRefused() {
        var rng = SplitMix64(seed: 0x0A7E_0001)
        let rates: [Double] = [0.5, 1, 3, 7.5, 10, 200, 1000, 12_000 / 60]
        var refusedInAll = 0
        for trial in 0..<60 {
            let rate = rates[rng.next(below: rates.count)]
            let burst = 1 + rng.next(below: 40)
            let limit = UserRateLimit(perSecond: rate, burst: burst)
            let limiter = UserRateLimiter(limit)
            var model = ReferenceModel(perSecond: rate, burst: burst)
            let users = (0..<(1 + rng.next(below: 4))).map { "user\($0)" }
            var now: Int64 = Int64(rng.next(below: 1_000_000_000))
            var admitted: [String: Int] = [:], refused = 0
            for step in 0..<(200 + rng.next(below: 600)) {
                // The next arrival: often at the same instant, sometimes a nanosecond or a fraction
                // of an interval later, sometimes after a long pause.
                switch rng.next(below: 6) {
                case 0, 1: break
                case 2: now += 1
                case 3: now += Int64(rng.next(below: Int(model.interval) + 1))
                case 4: now += model.interval * Int64(1 + rng.next(below: 3))
                default: now += model.interval * Int64(rng.next(below: 3 * burst + 1)) + Int64(rng.next(below: 1000))
                }
                let user = users[rng.next(below: users.count)]
                let expected = model.admit(user, at: now)
                let got = limiter.admit(Self.identity(user), now: now)
                XCTAssertEqual(got, expected, "trial \(trial) step \(step): \(user) at \(now) ns, rate \(rate)/s, burst \(burst)")
                if got != expected { return }
                if got { admitted[user, default: 0] += 1 } else { refused += 1 }
            }
            refusedInAll += refused
        }
        XCTAssertGreaterThan(refusedInAll, 1000, "the patterns do go past the budget")
    }

    /// A burst at one instant: exactly `burst` pass; after k intervals exactly k more.
    func testABurstAtOneInstant() {
        let limiter = UserRateLimiter(UserRateLimit(perSecond: 200, burst: 50))
        let u = Self.identity("u")
        let t0: Int64 = 7_000_000_000
        XCTAssertEqual((0..<120).filter { _ in limiter.admit(u, now: t0) }.count, 50)
        // 5 ms per request at 200/s.
        XCTAssertEqual((0..<120).filter { _ in limiter.admit(u, now: t0 + 4_999_999) }.count, 0, "one nanosecond short")
        XCTAssertEqual((0..<120).filter { _ in limiter.admit(u, now: t0 + 5_000_000) }.count, 1)
        XCTAssertEqual((0..<120).filter { _ in limiter.admit(u, now: t0 + 5_000_000 * 11) }.count, 10)
        // A long pause refills only up to the burst.
        XCTAssertEqual((0..<120).filter { _ in limiter.admit(u, now: t0 + 3_600_000_000_000) }.count, 50)
    }

    /// Users (and the same user in another project) have budgets of their own.
    func testBudgetsArePerUserAndProject() {
        let limiter = UserRateLimiter(UserRateLimit(perSecond: 1, burst: 2))
        let a = QuotaIdentity(subject: "a@x", project: "1"), b = QuotaIdentity(subject: "b@x", project: "1")
        let aElsewhere = QuotaIdentity(subject: "a@x", project: "2")
        XCTAssertEqual([a, a, a].map { limiter.admit($0, now: 0) }, [true, true, false])
        XCTAssertEqual([b, b, b].map { limiter.admit($0, now: 0) }, [true, true, false])
        XCTAssertEqual([aElsewhere, aElsewhere, aElsewhere].map { limiter.admit($0, now: 0) }, [true, true, false])
        XCTAssertFalse(limiter.admit(a, now: 999_999_999))
        XCTAssertTrue(limiter.admit(a, now: 1_000_000_000))
    }

    /// Past 4,096 users idle budgets are swept; a swept user comes back to a full budget, which is
    /// what it had anyway, so the answers stay exactly the model's.
    func testManyUsersStayExact() {
        let limiter = UserRateLimiter(UserRateLimit(perSecond: 10, burst: 2))
        var model = ReferenceModel(perSecond: 10, burst: 2)
        var rng = SplitMix64(seed: 0x0A7E_0002)
        var now: Int64 = 0
        for step in 0..<20_000 {
            now += Int64(rng.next(below: 200_000))
            let user = "u\(rng.next(below: 6000))"
            let expected = model.admit(user, at: now)
            XCTAssertEqual(limiter.admit(Self.identity(user), now: now), expected, "step \(step)")
        }
        XCTAssertGreaterThan(model.tat.count, 5000, "most users came")
        XCTAssertLessThan(limiter.trackedUsers, model.tat.count, "idle budgets were swept")
    }

    func testDefaultBurstIsOneSecondOfBudget() {
        XCTAssertEqual(UserRateLimit(perSecond: 200).burst, 200)
        XCTAssertEqual(UserRateLimit(perSecond: 0.5).burst, 1)
        XCTAssertEqual(UserRateLimit(perSecond: 7.5).burst, 8)
        XCTAssertEqual(UserRateLimit(perSecond: 10, burst: 3).burst, 3)
    }
}
