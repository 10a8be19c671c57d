import DriveClient
import DriveSupport
import XCTest

/// The executor with its pacer: order (pacer, then token), priorities, account-wide slowdowns,
/// deadlines, and what it logs.
final class ExecutorPacingTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!
    var grant: CountingGrant!

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
        grant = CountingGrant(time: time)
    }

    private func executor(_ pacer: Pacer?, policy: RetryPolicy = RetryPolicy(random: FixedRandom(value: 1))) -> DriveRequestExecutor {
        DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant, time: time), pacer: pacer,
                             retryPolicy: policy, time: time)
    }

    private let request = TransportRequest(method: "GET", url: "https://example.test/drive/v3/files")

    func testTheTokenIsTakenAfterThePacerWait() throws {
        grant = CountingGrant(time: time, lifetime: 100)
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        let exec = executor(pacer)
        transport.push(status: 200, json: "{}")
        _ = try exec.execute("files.get", request)
        // Every request now waits 120 s in the pacer: longer than the token lives.
        pacer.recordRateLimit(retryAfter: 120, what: "test")
        transport.push(status: 200, json: "{}")
        _ = try exec.execute("files.get", request)
        XCTAssertEqual(transport.requests.map { $0.header("Authorization") }, ["Bearer token-1", "Bearer token-2"],
                       "the token is fetched after the wait, so it is fresh when the request leaves")
    }

    func testRequestsCarryTheirContextsPriorityIntoThePacer() throws {
        let pacer = Pacer(ratePerSecond: 1, burst: 1, time: time, waiting: .ticked)
        let exec = executor(pacer)
        let transport = self.transport!
        for _ in 0..<3 { transport.push { request in ScriptedTransport.response(200, body: Array(request.url.utf8)) } }
        _ = try exec.execute("files.get", request) // spends the burst
        var done: [DispatchSemaphore] = []
        for (n, (priority, name)) in [(RequestPriority.background, "background"), (.interactive, "interactive")].enumerated() {
            let semaphore = DispatchSemaphore(value: 0)
            let url = "https://example.test/\(name)"
            Thread {
                _ = try? RequestContext(priority: priority).scope {
                    try exec.execute("files.get", TransportRequest(method: "GET", url: url))
                }
                semaphore.signal()
            }.start()
            done.append(semaphore)
            XCTAssertTrue(pacer.waitUntilQueued(n + 1, timeout: 10))
        }
        for n in 0..<2 {
            time.advance(1)
            pacer.tick()
            XCTAssertTrue(pacer.waitUntilQueued(1 - n, timeout: 10))
            // The granted request reaches the transport on its own thread: let it get there before
            // the next slot opens, or the two could race to the transport.
            let sent = Date().addingTimeInterval(10)
            while transport.requests.count < n + 2 && Date() < sent { usleep(1_000) }
        }
        for semaphore in done { XCTAssertEqual(semaphore.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(transport.requests.map(\.url).dropFirst(),
                       ["https://example.test/interactive", "https://example.test/background"])
    }

    func testARateLimitAnswerSlowsEveryRequestAndSuccessesClimbBack() throws {
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        let exec = executor(pacer, policy: .none)
        transport.pushGoogleError(403, reason: "userRateLimitExceeded", message: "User rate limit exceeded.")
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(pacer.currentRate, 5)
        time.advance(1)
        transport.pushGoogleError(429, reason: "rateLimitExceeded", headers: ["retry-after": "30"])
        XCTAssertThrowsError(try exec.execute("files.get", request))
        XCTAssertEqual(pacer.currentRate, 2.5)
        XCTAssertEqual(pacer.blockedUntilTime, time.now() + 30)
        // Another call, of another method, waits out the Retry-After.
        let before = time.now()
        transport.push(status: 200, json: "{}")
        _ = try exec.execute("about.get", request)
        XCTAssertEqual(time.now() - before, 30, accuracy: 1e-6)
        XCTAssertEqual(pacer.currentRate, 2.6, accuracy: 1e-9, "a success adds 0.1 request/s")
    }

    func testQuotaSystemForbiddenAndRetryAfterOnAServerErrorSlowTheAccount() throws {
        let pacer = Pacer(ratePerSecond: 8, burst: 8, time: time)
        let exec = executor(pacer, policy: .none)
        transport.push(status: 403, json: """
        {"error":{"code":403,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'drive.googleapis.com' for consumer 'project_number:1'.","status":"PERMISSION_DENIED"}}
        """)
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(pacer.currentRate, 4)
        time.advance(1)
        transport.push(status: 503, headers: ["retry-after": "5"])
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(pacer.currentRate, 2)
        time.advance(1)
        transport.pushGoogleError(403, reason: "insufficientFilePermissions")
        XCTAssertThrowsError(try exec.execute("files.get", request))
        XCTAssertEqual(pacer.currentRate, 2, "a refusal that is not a rate limit does not slow anything")
    }

    func testAWriteRefusalSlowsOnlyWritesAndAQuotaRefusalOnlyWhatSpendsQuota() throws {
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time, quota: .default, writes: .default)
        let exec = executor(pacer, policy: .none)
        let create = TransportRequest(method: "POST", url: "https://example.test/upload/drive/v3/files?uploadType=multipart")
        transport.pushGoogleError(403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded")
        XCTAssertThrowsError(try exec.execute("files.create.upload", create))
        XCTAssertEqual(pacer.currentWriteRate!, 2.25, accuracy: 1e-9)
        XCTAssertEqual(pacer.currentRate, 10)
        let before = time.now()
        transport.push(status: 200, json: "{}")
        _ = try exec.execute("files.get.media", request)
        XCTAssertEqual(time.now(), before, "a download is not held by a write refusal")
        time.advance(1)
        transport.pushGoogleError(403, reason: "userRateLimitExceeded", message: "User rate limit exceeded.")
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(pacer.currentRate, 5, "a quota answer slows what spends quota")
        XCTAssertEqual(pacer.currentWriteRate!, 2.25, accuracy: 1e-9, "and leaves the write lane as it was")
        XCTAssertEqual(pacer.status.writeRefusals, 1)
        XCTAssertEqual(pacer.status.quotaRefusals, 1)
    }

    // MARK: - Deadlines

    func testBackoffStopsAtTheDeadlineWithTheLastFailure() {
        let exec = executor(nil)
        for _ in 0..<20 { transport.push(status: 503) }
        let start = time.now()
        XCTAssertThrowsError(try RequestContext(deadline: start + 10).scope { try exec.execute("files.get.media", request) }) { error in
            guard case .server(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.status, 503)
        }
        // Waits 1, 2, 4 (t = 7); the next wait (8) would end past the deadline: no waiting towards it.
        XCTAssertEqual(time.sleeps, [1, 2, 4])
        XCTAssertEqual(transport.requests.count, 4)
        XCTAssertEqual(exec.stats.counters(for: "files.get.media").failures, 1)
    }

    func testAUsersReadFailsInTensOfSecondsNotMinutes() {
        let exec = executor(Pacer(ratePerSecond: 10, burst: 10, time: time), policy: RetryPolicy(random: FixedRandom(value: 1)))
        for _ in 0..<20 { transport.push(error: .connectionLost("reset")) }
        let start = time.now()
        XCTAssertThrowsError(try RequestContext(priority: .interactive, deadline: start + 20).scope {
            try exec.execute("files.get.media", request)
        }) { error in
            XCTAssertEqual(error as? DriveError, .transport(.connectionLost("reset")))
        }
        XCTAssertLessThanOrEqual(time.now() - start, 20)
        XCTAssertEqual(time.sleeps, [1, 2, 4, 8])
    }

    func testAPacerSlotPastTheDeadlineSendsNothingAndIsCancelledWhenNothingFailedYet() {
        let pacer = Pacer(ratePerSecond: 0.5, burst: 1, time: time)
        let exec = executor(pacer)
        pacer.acquire()
        let start = time.now()
        XCTAssertThrowsError(try RequestContext(deadline: start + 1).scope { try exec.execute("files.get", request) }) { error in
            XCTAssertEqual(error as? DriveError, .cancelled)
        }
        XCTAssertTrue(transport.requests.isEmpty)
        XCTAssertEqual(time.now(), start, "failed at once, without waiting")
        XCTAssertEqual(exec.stats.counters(for: "files.get").failures, 1)
    }

    func testAPacerSlotPastTheDeadlineAfterAFailureGivesThatFailure() {
        // One request per 2 s; the retry's wait (0.5 s) ends before the deadline, its pacer slot after.
        let exec = executor(Pacer(ratePerSecond: 0.5, burst: 1, time: time), policy: RetryPolicy(random: FixedRandom(value: 0.5)))
        transport.push(status: 500)
        transport.push(status: 200, json: "{}")
        let start = time.now()
        XCTAssertThrowsError(try RequestContext(deadline: start + 1.5).scope { try exec.execute("files.get", request) }) { error in
            XCTAssertEqual((error as? DriveError)?.status, 500)
        }
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(time.now() - start, 0.5, accuracy: 1e-6)
    }

    func testAPassedDeadlineSendsNothing() {
        let exec = executor(nil)
        transport.push(status: 200, json: "{}")
        XCTAssertThrowsError(try RequestContext(deadline: time.now()).scope { try exec.execute("files.get", request) }) { error in
            XCTAssertEqual(error as? DriveError, .cancelled)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testADeadlineAlsoBoundsRetriesInsideResumableAndCreateBodies() {
        // `retrying` with a body that sends through the executor (as creates and uploads do).
        let exec = executor(Pacer(ratePerSecond: 0.5, burst: 1, time: time), policy: RetryPolicy(random: FixedRandom(value: 0.5)))
        transport.push(error: .timedOut("stall"))
        let start = time.now()
        XCTAssertThrowsError(try RequestContext(deadline: start + 1.5).scope {
            try exec.retrying("files.create") { _ in try exec.sendOnce("files.create", self.request) }
        }) { error in
            // `sendOnce` is public: its refusal at the deadline is `cancelled`.
            XCTAssertEqual(error as? DriveError, .cancelled)
        }
        XCTAssertEqual(transport.requests.count, 1)
    }

    // MARK: - Logging

    func testRetriesAndRefreshesAreLoggedWithoutTokens() throws {
        try withCapturedLog { read in
            let exec = executor(nil, policy: RetryPolicy(random: FixedRandom(value: 0.5)))
            transport.push(status: 503)
            transport.pushGoogleError(401, reason: "authError", message: "Invalid Credentials")
            transport.push(status: 200, json: "{}")
            _ = try exec.execute("files.list", request)
            let log = read()
            XCTAssertTrue(log.contains("client: files.list: retry 1 in 0.50 s after Drive server error"), log)
            XCTAssertTrue(log.contains("client: refreshing the access token (no usable token)"), log)
            XCTAssertTrue(log.contains("client: files.list: HTTP 401, refreshing the access token"), log)
            XCTAssertTrue(log.contains("client: access token refreshed, valid for 3600 s"), log)
            XCTAssertFalse(log.contains("token-1") || log.contains("token-2") || log.contains("Bearer"), log)
        }
    }

    func testADeadGrantIsSaidOnceWithTheFix() throws {
        try withCapturedLog { read in
            let exec = executor(nil)
            grant.failNext(with: DeadGrantError())
            grant.failNext(with: DeadGrantError())
            XCTAssertThrowsError(try exec.execute("files.list", request))
            XCTAssertThrowsError(try exec.execute("files.list", request))
            let log = read()
            let said = log.components(separatedBy: "\n").filter { $0.contains("ERROR client:") && $0.contains("drivefs auth login") }
            // Once per process: an earlier test may have said it already.
            XCTAssertLessThanOrEqual(said.count, 1, log)
            XCTAssertEqual(log.components(separatedBy: "token refresh failed").count - 1, 2, log)
        }
    }
}
