import DriveClient
import DriveSupport
import XCTest

final class PacerTests: XCTestCase {
    func testHundredAcquisitionsAtTenPerSecondWithBurstTenTakeNineSeconds() {
        let time = ManualTimeSource()
        let start = time.now()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        for _ in 0..<100 { pacer.acquire() }
        XCTAssertEqual(time.now() - start, 9.0, accuracy: 1e-6)
        XCTAssertEqual(time.sleeps.count, 90)
    }

    func testBurstIsFreeAndIdleTimeRefillsOnlyUpToTheBurst() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 5, burst: 3, time: time)
        for _ in 0..<3 { XCTAssertEqual(pacer.acquire(), 0) }
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-9)
        time.advance(100) // a long idle period refills to the burst, not beyond
        for _ in 0..<3 { XCTAssertEqual(pacer.acquire(), 0) }
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-9)
    }

    func testConcurrentAcquirersShareTheRate() {
        // Real threads, real clock (short): 5 threads × 5 acquisitions at 50/s with burst 5 need ≥ 0.4 s.
        let pacer = Pacer(ratePerSecond: 50, burst: 5, time: SystemTimeSource())
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: 5) { _ in
            for _ in 0..<5 { pacer.acquire() }
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(elapsed, 0.39)
        XCTAssertLessThan(elapsed, 10, "generous: a shared machine can be slow; the lower bound is the contract")
    }
}

/// The pacer as a scheduler: priorities, exact accounting, AIMD, Retry-After, deadlines.
final class PacerSchedulingTests: XCTestCase {
    /// Runs `acquire` on a thread of its own; the returned semaphore is signalled once it returns.
    private func waiter(_ pacer: Pacer, _ priority: RequestPriority, _ name: String, into order: Locked<[String]>,
                        deadline: Double? = nil, result: Locked<[String: Pacer.Admission]>? = nil) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let admission = pacer.acquire(priority: priority, deadline: deadline)
            order.withLock { $0.append(name) }
            result?.withLock { $0[name] = admission }
            done.signal()
        }
        thread.start()
        return done
    }

    func testWaitingRequestsAreServedByPriorityThenArrival() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 2, burst: 1, time: time, waiting: .ticked)
        XCTAssertEqual(pacer.acquire(priority: .interactive), .granted(waited: 0), "the burst")
        let order = Locked<[String]>([])
        var done: [DispatchSemaphore] = []
        let arrivals: [(RequestPriority, String)] = [(.background, "bg1"), (.readAhead, "ra1"), (.interactive, "i1"),
                                                     (.background, "bg2"), (.interactive, "i2"), (.readAhead, "ra2")]
        for (n, (priority, name)) in arrivals.enumerated() {
            done.append(waiter(pacer, priority, name, into: order))
            XCTAssertTrue(pacer.waitUntilQueued(n + 1, timeout: 10), "\(name) queued")
        }
        let start = time.now()
        var grantTimes: [Double] = []
        for n in 0..<arrivals.count {
            pacer.tick()
            XCTAssertEqual(order.withLock { $0.count }, n, "nothing goes before its slot")
            time.advance(0.5)
            pacer.tick()
            XCTAssertTrue(pacer.waitUntilQueued(arrivals.count - n - 1, timeout: 10))
            // The granted thread records itself after `acquire` returns: wait for that (bounded),
            // or the next check could run before it and see one name too few.
            let recorded = Date().addingTimeInterval(10)
            while order.withLock({ $0.count }) < n + 1 && Date() < recorded { usleep(1_000) }
            XCTAssertEqual(order.withLock { $0.count }, n + 1, "one grant per slot")
            grantTimes.append(time.now() - start)
        }
        for semaphore in done { XCTAssertEqual(semaphore.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(order.withLock { $0 }, ["i1", "i2", "ra1", "ra2", "bg1", "bg2"])
        XCTAssertEqual(grantTimes, [0.5, 1, 1.5, 2, 2.5, 3], "one slot per interval whatever the priority")
    }

    func testTheRateHoldsExactlyAcrossPriorities() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 4, burst: 2, time: time)
        let start = time.now()
        var sent: [Double] = []
        for n in 0..<10 {
            _ = pacer.acquire(priority: RequestPriority.allCases[n % 3])
            sent.append(time.now() - start)
        }
        XCTAssertEqual(sent, [0, 0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2])
    }

    func testRateLimitHalvesTheRateDownToTheFloorOncePerInterval() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        pacer.recordRateLimit(retryAfter: nil, what: "test")
        XCTAssertEqual(pacer.currentRate, 5)
        pacer.recordRateLimit(retryAfter: nil, what: "test")
        XCTAssertEqual(pacer.currentRate, 5, "refusals within one second are one signal")
        for expected in [2.5, 1.25, 1, 1] as [Double] {
            time.advance(1)
            pacer.recordRateLimit(retryAfter: nil, what: "test")
            XCTAssertEqual(pacer.currentRate, expected)
        }
    }

    func testSlowdownPacesEveryRequestWithoutABurstAndSuccessesClimbBack() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time, increasePerSuccess: 1)
        pacer.recordRateLimit(retryAfter: nil, what: "test")
        let start = time.now()
        // (1e-6: readings of an epoch clock resolve about 2.4e-7 s.)
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-6, "no burst after a refusal: a whole interval at 5/s")
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-6)
        XCTAssertEqual(time.now() - start, 0.4, accuracy: 1e-6)
        for n in 1...5 {
            pacer.recordSuccess()
            XCTAssertEqual(pacer.currentRate, min(10, 5 + Double(n)))
        }
        pacer.recordSuccess()
        XCTAssertEqual(pacer.currentRate, 10, "never above the configured rate")
    }

    func testRetryAfterHoldsEveryRequestBackThenPaces() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        let start = time.now()
        pacer.recordRateLimit(retryAfter: 7, what: "test")
        XCTAssertEqual(pacer.blockedUntilTime, start + 7)
        pacer.acquire()
        XCTAssertEqual(time.now() - start, 7, accuracy: 1e-6, "nothing before the Retry-After has passed")
        pacer.acquire()
        XCTAssertEqual(time.now() - start, 7.2, accuracy: 1e-6, "then the halved rate, no saved-up burst")
        XCTAssertNil(pacer.blockedUntilTime)
    }

    func testASlotAfterTheDeadlineFailsAtOnceAndTakesNothing() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 1, burst: 1, time: time)
        let start = time.now()
        pacer.acquire()
        XCTAssertEqual(pacer.acquire(priority: .interactive, deadline: start + 0.5), .pastDeadline)
        XCTAssertEqual(time.now(), start, "no waiting for a slot that cannot be used")
        XCTAssertEqual(pacer.acquire(priority: .interactive, deadline: start + 5), .granted(waited: 1))
        XCTAssertEqual(pacer.queued, 0)
    }

    func testAWaiterBehindOthersFailsWhenItsEstimatedSlotIsPastItsDeadline() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 1, burst: 1, time: time, waiting: .ticked)
        let start = time.now()
        pacer.acquire()
        let order = Locked<[String]>([])
        let results = Locked<[String: Pacer.Admission]>([:])
        let first = waiter(pacer, .interactive, "first", into: order, result: results)
        XCTAssertTrue(pacer.waitUntilQueued(1, timeout: 10))
        // Its slot is the second after `first`'s (start + 2), after its deadline.
        let late = waiter(pacer, .interactive, "late", into: order, deadline: start + 1.5, result: results)
        XCTAssertEqual(late.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(results.withLock { $0["late"] }, .pastDeadline)
        time.advance(1)
        pacer.tick()
        XCTAssertEqual(first.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(results.withLock { $0["first"] }, .granted(waited: 1))
    }

    func testCancelledWaiterLeaves() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 1, burst: 1, time: time)
        pacer.acquire()
        let flag = CancellationFlag()
        flag.cancel()
        XCTAssertEqual(pacer.acquire(priority: .background, cancellation: flag), .cancelled)
        XCTAssertEqual(pacer.queued, 0)
    }

    func testSlowdownsAndRecoveryAreLoggedWithoutSecrets() throws {
        try withCapturedLog { read in
            let time = ManualTimeSource()
            let pacer = Pacer(ratePerSecond: 2, burst: 1, time: time, increasePerSuccess: 1)
            pacer.recordRateLimit(retryAfter: 3, what: "files.list: HTTP 429 rateLimitExceeded")
            pacer.recordSuccess()
            pacer.recordSuccess()
            let log = read()
            XCTAssertTrue(log.contains("WARN  pacer: files.list: HTTP 429 rateLimitExceeded: slowing every request to 1 requests/s; nothing is sent for 3 s"), log)
            XCTAssertEqual(log.components(separatedBy: "recovered: back at 2 requests/s").count, 2, "recovery said once: \(log)")
        }
    }
}

/// Sends `Log.shared` to a temporary file at debug level for `body`, then back to standard error.
func withCapturedLog(_ body: (_ read: () -> String) throws -> Void) throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)").path
    try Log.shared.configure(level: .debug, path: path)
    defer {
        try? Log.shared.configure(level: .warning, path: nil)
        try? FileManager.default.removeItem(atPath: path)
    }
    try body { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
}
