import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Google's Drive limits (`DriveLimiter`) over random request streams on an injected clock (integer
/// nanoseconds): no sliding minute ever admits more units than the budget, per user and per
/// project; a client that stays under the limits is never refused; a refused request is charged
/// nothing; the write limit never admits more than its burst plus its rate.
final class DriveLimitsPropertyTests: XCTestCase {
    static let minute = DriveLimiter.minute
    static let methods = ["files.get", "files.list", "files.get.media", "files.update", "files.create",
                          "files.generateIds", "changes.list", "about.get", "files.delete"]

    struct Admission { let at: Int64; let identity: QuotaIdentity; let units: Int64 }

    /// Every minute-long window `(t − 60 s, t]` ending at an admission holds at most `budget` units
    /// of `key`'s admissions (the windows ending at admissions are the fullest ones).
    func assertNoMinuteOverBudget(_ admitted: [Admission], budget: Int64, key: (Admission) -> String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        var byKey: [String: [Admission]] = [:]
        for a in admitted { byKey[key(a), default: []].append(a) }
        for (k, list) in byKey {
            var start = 0, sum: Int64 = 0
            for (i, a) in list.enumerated() {
                sum += a.units
                while list[start].at <= a.at - Self.minute { sum -= list[start].units; start += 1 }
                if sum > budget {
                    XCTFail("\(k): \(sum) units in the minute ending at admission \(i), budget \(budget)", file: file, line: line)
                    return
                }
            }
        }
    }

    func testNoSlidingMinuteAdmitsMoreThanTheBudgetAndRefusalsChargeNothing() {
        var rng = SplitMix64(seed: 0xD1_0001)
        var refusedInAll = 0
        for trial in 0..<40 {
            var limits = DriveLimits(unitsPerUserPerMinute: 200 + rng.next(below: 2000),
                                     unitsPerProjectPerMinute: rng.next(below: 2) == 0 ? nil : 400 + rng.next(below: 3000))
            limits.methodCosts["files.list"] = 1 + rng.next(below: 300)
            let limiter = DriveLimiter(limits)
            let users = (0..<(1 + rng.next(below: 3))).map { "u\($0)@example.com" }
            let projects = (0..<(1 + rng.next(below: 2))).map { "10000000000\($0)" }
            var now = Int64(rng.next(below: 1_000_000_000))
            var admitted: [Admission] = []
            for _ in 0..<(300 + rng.next(below: 900)) {
                switch rng.next(below: 5) {
                case 0, 1: break
                case 2: now += Int64(rng.next(below: 1_000_000))
                case 3: now += Int64(rng.next(below: 2_000_000_000))
                default: now += Int64(rng.next(below: 70)) * 1_000_000_000 + Int64(rng.next(below: 3))
                }
                let identity = QuotaIdentity(subject: users[rng.next(below: users.count)],
                                             project: projects[rng.next(below: projects.count)])
                let method = Self.methods[rng.next(below: Self.methods.count)]
                let before = limiter.unitsInWindow(identity, now: now)
                let verdict = limiter.admit(identity, method: method, now: now)
                let after = limiter.unitsInWindow(identity, now: now)
                if verdict == .admitted {
                    admitted.append(Admission(at: now, identity: identity, units: Int64(limits.cost(of: method))))
                    XCTAssertEqual(after, before + Int64(limits.cost(of: method)), "trial \(trial)")
                } else {
                    refusedInAll += 1
                    XCTAssertEqual(after, before, "trial \(trial): a refused request is charged nothing")
                    XCTAssertTrue([.userQuotaExceeded, .projectQuotaExceeded].contains(verdict), "\(verdict)")
                }
            }
            assertNoMinuteOverBudget(admitted, budget: Int64(limits.unitsPerUserPerMinute!),
                                     key: { "\($0.identity.subject) \($0.identity.project)" })
            if let perProject = limits.unitsPerProjectPerMinute {
                assertNoMinuteOverBudget(admitted, budget: Int64(perProject), key: { $0.identity.project })
            }
        }
        XCTAssertGreaterThan(refusedInAll, 1000, "the streams did press on the limits")
    }

    /// A client that paces itself to the budget (its units in any minute within the quota, its writes
    /// within burst + rate) is never refused, whatever else it does.
    func testAClientUnderTheLimitsIsNeverRefused() {
        var rng = SplitMix64(seed: 0xD1_0002)
        for trial in 0..<30 {
            var limits = DriveLimits.google
            limits.unitsPerUserPerMinute = 2000 + rng.next(below: 20_000)
            limits.unitsPerProjectPerMinute = limits.unitsPerUserPerMinute! + rng.next(below: 1000)
            limits.writesPerSecond = [0.5, 1, 2, 3, 10][rng.next(below: 5)]
            limits.writeBurst = 1 + rng.next(below: 5)
            let limiter = DriveLimiter(limits)
            let me = QuotaIdentity(subject: "me@example.com", project: "100000000001")
            let writeInterval = Int64((1e9 / limits.writesPerSecond!).rounded(.up)) + 1
            var now: Int64 = 5_000_000_000
            var sent: [(at: Int64, units: Int64)] = []
            var lastWrite: Int64 = -1_000_000_000_000
            for step in 0..<800 {
                now += Int64(rng.next(below: 400_000_000))
                let method = Self.methods[rng.next(below: Self.methods.count)]
                let cost = Int64(limits.cost(of: method))
                let isWrite = DriveLimits.writeMethods.contains(method)
                // The client's own bookkeeping: it sends only what fits its minute and its write pace
                // (one write per interval: never more than the sustained rate, never a burst).
                let inMinute = sent.filter { $0.at > now - Self.minute }.reduce(0) { $0 + $1.units }
                guard inMinute + cost <= Int64(limits.unitsPerUserPerMinute!),
                      !isWrite || now - lastWrite >= writeInterval else { continue }
                XCTAssertEqual(limiter.admit(me, method: method, now: now), .admitted, "trial \(trial) step \(step) \(method)")
                sent.append((now, cost))
                if isWrite { lastWrite = now }
            }
        }
    }

    /// Writes admitted in any span of T nanoseconds never exceed burst + rate·T, reads never count,
    /// and an account idle for long enough always gets its burst back.
    func testTheWriteLimitAdmitsNoMoreThanBurstPlusRate() {
        var rng = SplitMix64(seed: 0xD1_0003)
        for trial in 0..<40 {
            let rate = [0.5, 1, 2, 3, 7.5][rng.next(below: 5)]
            let burst = 1 + rng.next(below: 8)
            let limiter = DriveLimiter(DriveLimits(writesPerSecond: rate, writeBurst: burst))
            let who = QuotaIdentity(subject: "w@example.com", project: "1")
            var now: Int64 = 0
            var writes: [Int64] = []
            for _ in 0..<600 {
                now += rng.next(below: 3) == 0 ? 0 : Int64(rng.next(below: Int(1e9 / rate) * 2))
                if rng.next(below: 4) == 0 {
                    XCTAssertEqual(limiter.admit(who, method: "files.get", now: now), .admitted, "reads do not count")
                    continue
                }
                switch limiter.admit(who, method: "files.create", now: now) {
                case .admitted: writes.append(now)
                case .writeLimited(lands: false): break
                case let other: XCTFail("trial \(trial): \(other)")
                }
            }
            let cost = Double(TokenBucket.cost(perSecond: rate))
            for i in writes.indices {
                for j in i..<min(writes.count, i + 4 * burst + 8) {
                    let span = Double(writes[j] - writes[i])
                    XCTAssertLessThanOrEqual(Double(j - i + 1), Double(burst) + span / cost + 1e-9,
                                             "trial \(trial): \(j - i + 1) writes in \(span) ns at \(rate)/s burst \(burst)")
                }
            }
            now += Int64(Double(burst) * cost) + 1
            XCTAssertEqual((0..<burst).map { _ in limiter.admit(who, method: "files.update", now: now) },
                           Array(repeating: .admitted, count: burst), "trial \(trial): the burst comes back")
            XCTAssertEqual(limiter.admit(who, method: "files.update", now: now), .writeLimited(lands: false))
        }
    }

    /// The daily upload cap counts the bytes of uploads and copies over a sliding 24 hours; a refused
    /// upload is charged nothing, other methods pass whatever the bytes.
    func testTheDailyUploadCapOverASlidingDay() {
        let limiter = DriveLimiter(DriveLimits(dailyUploadBytes: 1000))
        let who = QuotaIdentity(subject: "up@example.com", project: "1")
        let hour: Int64 = 3_600_000_000_000
        XCTAssertEqual(limiter.admit(who, method: "files.create.upload", uploadBytes: 600, now: 0), .admitted)
        XCTAssertEqual(limiter.admit(who, method: "files.copy", uploadBytes: 500, now: hour), .uploadCapReached)
        XCTAssertEqual(limiter.admit(who, method: "files.copy", uploadBytes: 400, now: hour), .admitted, "the refusal took nothing")
        XCTAssertEqual(limiter.admit(who, method: "files.create.upload", uploadBytes: 0, now: 2 * hour), .uploadCapReached,
                       "at the cap even an upload of unknown size is refused")
        XCTAssertEqual(limiter.admit(who, method: "files.list", now: 2 * hour), .admitted)
        XCTAssertEqual(limiter.admit(who, method: "files.create.upload", uploadBytes: 600, now: 24 * hour), .admitted,
                       "the first 600 bytes left the window")
        XCTAssertEqual(limiter.userStats(now: 24 * hour)["up@example.com"]?.uploadBytesLastDay, 1000)
        XCTAssertEqual(limiter.userStats(now: 24 * hour)["up@example.com"]?.uploadsRefused, 2)
    }

    /// The quirk's draws: with F = 1 every refused write lands, with F = 0 none, and a seed always
    /// draws the same.
    func testRefusedWriteLandsIsSeededAndProportional() {
        func draws(_ f: Double, seed: UInt64) -> [Bool] {
            var limits = DriveLimits(writesPerSecond: 1, writeBurst: 1)
            limits.refusedWriteLands = f
            let limiter = DriveLimiter(limits, seed: seed)
            let who = QuotaIdentity(subject: "q@example.com", project: "1")
            XCTAssertEqual(limiter.admit(who, method: "files.create", now: 0), .admitted)
            return (0..<400).map { _ in
                guard case .writeLimited(let lands) = limiter.admit(who, method: "files.create", now: 0) else {
                    XCTFail("not refused"); return false
                }
                return lands
            }
        }
        XCTAssertEqual(draws(1, seed: 3).filter { $0 }.count, 400)
        XCTAssertEqual(draws(0, seed: 3).filter { $0 }.count, 0)
        XCTAssertEqual(draws(0.25, seed: 9), draws(0.25, seed: 9))
        XCTAssertTrue((60...140).contains(draws(0.25, seed: 9).filter { $0 }.count))
    }
}
