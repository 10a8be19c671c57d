import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// The pacer's lanes over an injected clock: the quota minute never overruns, writes keep to their
/// rate plus burst, a refusal slows only its lane, priorities hold across lanes, the crawl keeps to
/// its share while a user is active.
final class PacerLaneTests: XCTestCase {
    /// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
    struct Seeded {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let charges: [RequestCharge] = [.read, .list, .download, .write, .unmetered]

    // MARK: - Classification

    func testEveryMethodIsChargedWhatTheEmulatorsGoogleTableCharges() {
        for (method, units) in DriveLimits.googleCosts {
            let charge = RequestCharge.of(method: method, httpMethod: "POST")
            XCTAssertEqual(charge.units, units, method)
            XCTAssertEqual(charge.isWrite, DriveLimits.writeMethods.contains(method), method)
        }
        XCTAssertEqual(RequestCharge.of(method: "files.list"), .list)
        XCTAssertEqual(RequestCharge.of(method: "files.get.media"), .download)
        XCTAssertEqual(RequestCharge.of(method: "files.generateIds"), .read)
        XCTAssertEqual(RequestCharge.of(method: "files.create.upload", httpMethod: "POST"), .write, "a multipart upload or an initiation")
        XCTAssertEqual(RequestCharge.of(method: "files.update.upload", httpMethod: "PATCH"), .write)
        XCTAssertEqual(RequestCharge.of(method: "files.create.upload", httpMethod: "PUT"), .unmetered, "a resumable chunk")
        XCTAssertEqual(RequestCharge.of(method: "something.new"), .read, "an unknown method is taken for a metadata read")
        XCTAssertEqual(QuotaBudget.default.perMinute, 292_500, "90% of Google's 325,000")
        XCTAssertEqual(QuotaBudget.legacy(requestsPerMinute: 12_000).cost(of: .download), 1)
        XCTAssertEqual(QuotaBudget.legacy(requestsPerMinute: 12_000).cost(of: .unmetered), 0)
    }

    func testRefusalsAreClassifiedByWhatTheyAnswered() {
        func rate(_ status: Int, _ reason: String?, message: String = "Rate Limit Exceeded") -> DriveError {
            status == 429 ? .rateLimited(GoogleErrorInfo(status: 429, reason: reason, message: message))
                : .rateLimited(GoogleErrorInfo(status: 403, reason: reason, message: message))
        }
        let lane = DriveRequestExecutor.lane(slowedBy:charge:)
        XCTAssertEqual(lane(rate(403, "rateLimitExceeded"), .write), .writes)
        XCTAssertEqual(lane(rate(429, nil), .write), .writes)
        XCTAssertEqual(lane(rate(403, "userRateLimitExceeded"), .write), .quota, "a quota answer slows what spends quota")
        XCTAssertEqual(lane(rate(403, "rateLimitExceeded"), .download), .quota, "a project's quota answers rateLimitExceeded")
        XCTAssertEqual(lane(rate(403, "userRateLimitExceeded"), .read), .quota)
        XCTAssertEqual(lane(rate(403, nil, message: "Quota exceeded for quota metric 'Queries'"), .write), .quota)
        XCTAssertEqual(lane(.server(GoogleErrorInfo(status: 503, message: "x", retryAfter: 3)), .write), .writes)
        XCTAssertNil(lane(.server(GoogleErrorInfo(status: 503, message: "x")), .read))
        XCTAssertNil(lane(.permissionDenied(GoogleErrorInfo(status: 403, reason: "insufficientFilePermissions", message: "x")), .write))
    }

    // MARK: - Budgets (properties over random schedules)

    func testNoMinuteEverHoldsMoreThanTheBudget() {
        for seed in 1...20 as ClosedRange<UInt64> {
            var random = Seeded(state: seed)
            let time = ManualTimeSource()
            let budget = 1_000 + random.below(2_000)
            let pacer = Pacer(ratePerSecond: 1_000, burst: 1_000, time: time, quota: .units(perMinute: budget),
                              writes: WriteBudget(perSecond: 50, burst: 50))
            var grants: [(at: Double, units: Int)] = []
            for _ in 0..<300 {
                if random.below(10) == 0 { time.advance(Double(random.below(30_000)) / 1000) }
                let charge = Self.charges[random.below(Self.charges.count)]
                let priority = RequestPriority.allCases[random.below(RequestPriority.allCases.count)]
                guard case .granted = pacer.acquire(priority: priority, charge: charge) else { return XCTFail("refused") }
                grants.append((time.now(), charge.units))
            }
            // Every minute-long window ending at a grant: the units since (t - 60, t].
            for (i, g) in grants.enumerated() {
                let inMinute = grants[...i].filter { $0.at > g.at - 60 + 1e-5 }.reduce(0) { $0 + $1.units }
                XCTAssertLessThanOrEqual(inMinute, budget, "seed \(seed), grant \(i)")
            }
            XCTAssertLessThanOrEqual(pacer.status.quotaUsedLastMinute, budget)
        }
    }

    func testWritesNeverExceedTheirRatePlusBurst() {
        for seed in 1...20 as ClosedRange<UInt64> {
            var random = Seeded(state: seed)
            let time = ManualTimeSource()
            let writes = WriteBudget(perSecond: 2.5, burst: 1 + random.below(3))
            let pacer = Pacer(ratePerSecond: 100, burst: 200, time: time, quota: .default, writes: writes)
            var writeTimes: [Double] = []
            for _ in 0..<200 {
                if random.below(8) == 0 { time.advance(Double(random.below(5_000)) / 1000) }
                let charge = random.below(3) == 0 ? RequestCharge.read : .write
                _ = pacer.acquire(priority: .background, charge: charge)
                if charge.isWrite { writeTimes.append(time.now()) }
            }
            // In any interval [a, b] between two writes: at most burst + rate·(b − a) writes.
            for i in writeTimes.indices {
                for j in i..<writeTimes.count {
                    let allowed = Double(writes.burst) + writes.perSecond * (writeTimes[j] - writeTimes[i]) + 1e-4
                    XCTAssertLessThanOrEqual(Double(j - i + 1), allowed, "seed \(seed): writes \(i)...\(j)")
                }
            }
        }
    }

    // MARK: - Refusals slow only their lane

    func testAWriteRefusalSlowsWritesAndNotReads() {
        let time = ManualTimeSource()
        let start = time.now()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time, quota: .default, writes: .default)
        pacer.recordRefusal(.writes, retryAfter: nil, what: "files.create: HTTP 403 rateLimitExceeded")
        XCTAssertEqual(pacer.currentWriteRate!, 2.25, accuracy: 1e-9, "a tenth off (WriteBudget.decreaseFactor)")
        XCTAssertEqual(pacer.currentRate, 10, "the quota lane keeps its rate")
        for _ in 0..<10 { XCTAssertEqual(pacer.acquire(priority: .background, charge: .download), .granted(waited: 0)) }
        XCTAssertEqual(time.now(), start, "reads went at once, with their whole burst")
        // The write lane lost its burst: the next write waits a whole interval at the new rate.
        guard case .granted(let waited) = pacer.acquire(priority: .interactive, charge: .write) else { return XCTFail("not granted") }
        XCTAssertEqual(waited, 1 / 2.25, accuracy: 1e-6)
        XCTAssertEqual(pacer.status.writeRefusals, 1)
        XCTAssertEqual(pacer.status.quotaRefusals, 0)
    }

    func testAQuotaRefusalSlowsWhatSpendsQuotaAndLeavesTheWriteRate() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time, quota: .default, writes: .default)
        pacer.recordRefusal(.quota, retryAfter: 4, what: "files.list: HTTP 403 userRateLimitExceeded")
        XCTAssertEqual(pacer.currentRate, 5)
        XCTAssertEqual(pacer.currentWriteRate, 2.5)
        let start = time.now()
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .read), .granted(waited: 4), "held by the Retry-After")
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .unmetered), .granted(waited: 0),
                       "a resumable chunk spends no quota and is not held")
        XCTAssertEqual(time.now() - start, 4, accuracy: 1e-6)
        XCTAssertEqual(pacer.status.quotaRefusals, 1)
    }

    func testWriteSuccessesClimbTheWriteLaneBackAndEachRecoveryIsLoggedOnce() throws {
        try withCapturedLog { read in
            let time = ManualTimeSource()
            let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time, quota: .default, writes: .default)
            pacer.recordRefusal(.writes, retryAfter: nil, what: "files.create: HTTP 403 rateLimitExceeded")
            pacer.recordRefusal(.writes, retryAfter: nil, what: "files.create: HTTP 403 rateLimitExceeded")
            for _ in 0..<5 { pacer.recordSuccess(.read) }
            XCTAssertEqual(pacer.currentWriteRate!, 2.25, accuracy: 1e-9, "reads do not climb the write lane")
            // 0.002 a write after a refusal, up to the ceiling (3): 375 writes.
            for _ in 0..<380 { pacer.recordSuccess(.write) }
            XCTAssertEqual(pacer.currentWriteRate, 3)
            let log = read()
            XCTAssertEqual(log.components(separatedBy: "slowing writes to 2.25 writes/s; reads are not held").count, 2,
                           "refusals within a second are one slowdown, said once: \(log)")
            XCTAssertEqual(log.components(separatedBy: "writes recovered: back at 3 writes/s").count, 2, log)
            XCTAssertFalse(log.contains("slowing every request"), log)
        }
    }

    // MARK: - Priorities across lanes

    /// Runs `acquire` on a thread of its own; the semaphore is signalled once it returns.
    private func waiter(_ pacer: Pacer, _ priority: RequestPriority, _ charge: RequestCharge, _ name: String,
                        into order: Locked<[String]>) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = pacer.acquire(priority: priority, charge: charge)
            order.withLock { $0.append(name) }
            done.signal()
        }.start()
        return done
    }

    func testAReadIsNeverHeldBehindWritesTheWriteLaneHolds() throws {
        try withCapturedLog { read in
            readIsNeverHeldBehindWrites()
            let log = read()
            XCTAssertEqual(log.components(separatedBy: "writes are held back by Google's write limit: 3 queued at 2.50 writes/s").count, 2,
                           "the backlog is said once: \(log)")
        }
    }

    private func readIsNeverHeldBehindWrites() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 100, burst: 100, time: time, waiting: .ticked, quota: .default,
                          writes: WriteBudget(perSecond: 2.5, burst: 2))
        for _ in 0..<2 { XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .write), .granted(waited: 0)) }
        let order = Locked<[String]>([])
        var writes: [DispatchSemaphore] = []
        for n in 0..<5 {
            writes.append(waiter(pacer, .interactive, .write, "w\(n)", into: order))
            XCTAssertTrue(pacer.waitUntilQueued(n + 1, timeout: 10))
        }
        // Lower priority than every queued write, and no clock move: it goes at once.
        XCTAssertEqual(pacer.acquire(priority: .crawl, charge: .list), .granted(waited: 0))
        XCTAssertEqual(pacer.acquire(priority: .background, charge: .download), .granted(waited: 0))
        XCTAssertEqual(pacer.status.writesQueued, 5)
        XCTAssertEqual(order.withLock { $0 }, [], "no write went before its slot")
        for n in 0..<5 {
            time.advance(0.4)
            pacer.tick()
            XCTAssertTrue(pacer.waitUntilQueued(4 - n, timeout: 10))
        }
        for semaphore in writes { XCTAssertEqual(semaphore.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(order.withLock { $0 }.sorted(), ["w0", "w1", "w2", "w3", "w4"])
    }

    func testWritesGoByPriorityThenArrival() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 100, burst: 100, time: time, waiting: .ticked, quota: .default,
                          writes: WriteBudget(perSecond: 2, burst: 1))
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .write), .granted(waited: 0))
        let order = Locked<[String]>([])
        var done: [DispatchSemaphore] = []
        let arrivals: [(RequestPriority, String)] = [(.crawl, "c"), (.background, "b1"), (.interactive, "i"),
                                                     (.readAhead, "r"), (.background, "b2")]
        for (n, (priority, name)) in arrivals.enumerated() {
            done.append(waiter(pacer, priority, .write, name, into: order))
            XCTAssertTrue(pacer.waitUntilQueued(n + 1, timeout: 10))
        }
        for n in 0..<arrivals.count {
            time.advance(0.5)
            pacer.tick()
            XCTAssertTrue(pacer.waitUntilQueued(arrivals.count - n - 1, timeout: 10))
            let recorded = Date().addingTimeInterval(10)
            while order.withLock({ $0.count }) < n + 1 && Date() < recorded { usleep(1_000) }
        }
        for semaphore in done { XCTAssertEqual(semaphore.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(order.withLock { $0 }, ["i", "r", "b1", "b2", "c"])
    }

    func testAUserWaitingForRoomInTheMinuteHoldsBackSmallerBackgroundRequests() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 100, burst: 100, time: time, waiting: .ticked, quota: .units(perMinute: 1_000),
                          writes: .default)
        for _ in 0..<4 { XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .download), .granted(waited: 0)) }
        time.advance(30)
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .list), .granted(waited: 0), "900 units spent")
        let order = Locked<[String]>([])
        let user = waiter(pacer, .interactive, .download, "download", into: order)
        XCTAssertTrue(pacer.waitUntilQueued(1, timeout: 10))
        let background = waiter(pacer, .background, .read, "get", into: order)
        XCTAssertTrue(pacer.waitUntilQueued(2, timeout: 10), "the get would fit (905 ≤ 1000) but the user's download is ahead")
        time.advance(30) // the four downloads of t = 0 leave the minute
        pacer.tick()
        // Both fit now and one tick grants both, the download first; their threads then wake in
        // any order, so the order they record is not the pacer's (it failed once in CI that way).
        // The hold-back itself is the second waiter still queued above.
        XCTAssertEqual(user.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(background.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(Set(order.withLock { $0 }), ["download", "get"])
    }

    func testTheCrawlKeepsToItsShareWhileAUserIsActiveAndTakesAllWhenIdle() {
        let time = ManualTimeSource()
        let start = time.now()
        let pacer = Pacer(ratePerSecond: 1_000, burst: 1_000, time: time, quota: .units(perMinute: 1_000), activeSpell: 10)
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .read), .granted(waited: 0), "a user is active")
        for _ in 0..<4 { XCTAssertEqual(pacer.acquire(priority: .crawl, charge: .list), .granted(waited: 0)) }
        // 405 units: a fifth listing would take the crawl past its half of the minute.
        XCTAssertEqual(pacer.acquire(priority: .crawl, charge: .list), .granted(waited: 10), "once the user is idle (10 s)")
        for _ in 0..<4 { XCTAssertEqual(pacer.acquire(priority: .crawl, charge: .list), .granted(waited: 0)) }
        XCTAssertEqual(pacer.status.quotaUsedLastMinute, 905)
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .read), .granted(waited: 0), "the user still finds room")
        XCTAssertEqual(time.now() - start, 10, accuracy: 1e-6)
    }

    func testLegacyQuotaCountsRequests() {
        let time = ManualTimeSource()
        let start = time.now()
        let pacer = Pacer(ratePerSecond: 1_000, burst: 1_000, time: time, quota: .legacy(requestsPerMinute: 5))
        for _ in 0..<5 { XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .download), .granted(waited: 0)) }
        XCTAssertEqual(pacer.acquire(priority: .interactive, charge: .read), .granted(waited: 60))
        XCTAssertEqual(time.now() - start, 60, accuracy: 1e-6)
    }
}
