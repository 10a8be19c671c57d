@testable import DriveClient
import DriveSupport
import XCTest

final class DriveRequestExecutorTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!
    var grant: CountingGrant!

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
        grant = CountingGrant(time: time)
    }

    private func executor(policy: RetryPolicy = RetryPolicy(random: FixedRandom(value: 0.5)), pacer: Pacer? = nil) -> DriveRequestExecutor {
        DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant, time: time), pacer: pacer,
                             retryPolicy: policy, time: time)
    }

    private let request = TransportRequest(method: "GET", url: "https://example.test/drive/v3/files")

    func testSuccessCarriesTheBearerToken() throws {
        transport.push(status: 200, json: "{}")
        let response = try executor().execute("files.list", request)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(transport.requests.first?.header("Authorization"), "Bearer token-1")
    }

    func testRateLimitBurstIsRetriedWithBackoff() throws {
        for _ in 0..<3 { transport.pushGoogleError(403, reason: "userRateLimitExceeded") }
        transport.push(status: 200, json: "{}")
        let exec = executor()
        XCTAssertEqual(try exec.execute("files.list", request).status, 200)
        XCTAssertEqual(time.sleeps, [0.5, 1, 2], "full jitter at 0.5 of 1, 2, 4")
        let c = exec.stats.counters(for: "files.list")
        XCTAssertEqual(c.requests, 4)
        XCTAssertEqual(c.retries, 3)
        XCTAssertEqual(c.failures, 0)
    }

    func testRetryAfterIsHonoured() throws {
        transport.pushGoogleError(429, reason: "rateLimitExceeded", headers: ["retry-after": "12"])
        // now = 22:13:20; after the first 12 s wait it is 22:13:32, so this date is 8 s ahead.
        transport.push(status: 503, headers: ["retry-after": "Tue, 14 Nov 2023 22:13:40 GMT"])
        transport.push(status: 200, json: "{}")
        XCTAssertEqual(time.now(), 1_700_000_000)
        _ = try executor().execute("files.list", request)
        XCTAssertEqual(time.sleeps, [12, 8])
    }

    func testServerStormIsBoundedByAttemptCount() {
        let exec = executor(policy: RetryPolicy(maxAttempts: 8, maxElapsed: 10_000, random: FixedRandom(value: 1)))
        for _ in 0..<20 { transport.push(status: 503) }
        XCTAssertThrowsError(try exec.execute("files.get", request)) { error in
            XCTAssertEqual((error as? DriveError)?.status, 503)
            guard case .server = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(transport.requests.count, 8)
        XCTAssertEqual(time.sleeps, [1, 2, 4, 8, 16, 32, 32])
        XCTAssertEqual(exec.stats.counters(for: "files.get").failures, 1)
        XCTAssertEqual(exec.stats.counters(for: "files.get").retries, 7)
    }

    func testServerStormIsBoundedByTotalTime() {
        let exec = executor(policy: RetryPolicy(maxAttempts: 100, maxElapsed: 60, random: FixedRandom(value: 1)))
        for _ in 0..<100 { transport.push(status: 500) }
        let start = time.now()
        XCTAssertThrowsError(try exec.execute("files.get", request))
        // 1+2+4+8+16+32 = 63 > 60: the sixth wait would overrun the budget, so five retries happen.
        XCTAssertEqual(time.sleeps, [1, 2, 4, 8, 16])
        XCTAssertLessThanOrEqual(time.now() - start, 60)
        XCTAssertEqual(transport.requests.count, 6)
    }

    func testConnectionFailuresAreRetried() throws {
        transport.push(error: .couldNotConnect("refused"))
        transport.push(error: .connectionLost("reset"))
        transport.push(error: .timedOut("stalled"))
        transport.push(status: 200, json: "{}")
        XCTAssertEqual(try executor().execute("files.get", request).status, 200)
        XCTAssertEqual(transport.requests.count, 4)
    }

    func testNonRetryableFailuresAreNotRetried() {
        let rows: [(Int, String, (DriveError) -> Bool)] = [
            (400, "invalid", { if case .invalidArgument = $0 { true } else { false } }),
            (403, "insufficientFilePermissions", { if case .permissionDenied = $0 { true } else { false } }),
            (403, "storageQuotaExceeded", { if case .quotaExceeded = $0 { true } else { false } }),
            (404, "notFound", { if case .notFound = $0 { true } else { false } }),
            (409, "fileIdInUse", { if case .conflict = $0 { true } else { false } }),
            (412, "conditionNotMet", { if case .preconditionFailed = $0 { true } else { false } }),
            (416, "requestedRangeNotSatisfiable", { if case .rangeNotSatisfiable = $0 { true } else { false } }),
        ]
        for (status, reason, matches) in rows {
            setUp()
            transport.pushGoogleError(status, reason: reason, message: "File not found: abc.")
            transport.push(status: 200, json: "{}")
            XCTAssertThrowsError(try executor().execute("files.get", request), "\(status) \(reason)") { error in
                XCTAssertTrue(matches(error as! DriveError), "\(status) \(reason) → \(error)")
                XCTAssertEqual((error as? DriveError)?.reason, reason)
            }
            XCTAssertEqual(transport.requests.count, 1, "\(status) \(reason) must not be retried")
            XCTAssertTrue(time.sleeps.isEmpty)
        }
    }

    func testUnauthorizedRefreshesOnceAndRetries() throws {
        transport.pushGoogleError(401, reason: "authError", message: "Invalid Credentials")
        transport.push(status: 200, json: "{}")
        let exec = executor()
        XCTAssertEqual(try exec.execute("files.list", request).status, 200)
        XCTAssertEqual(transport.requests.map { $0.header("Authorization") }, ["Bearer token-1", "Bearer token-2"])
        XCTAssertEqual(grant.calls, 2)
        XCTAssertTrue(time.sleeps.isEmpty, "a 401 replay does not back off")
    }

    func testUnauthorizedTwiceIsAnError() {
        transport.pushGoogleError(401, reason: "authError", message: "Invalid Credentials")
        transport.pushGoogleError(401, reason: "authError", message: "Invalid Credentials")
        transport.push(status: 200, json: "{}")
        XCTAssertThrowsError(try executor().execute("files.list", request)) { error in
            guard case .unauthorized(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.reason, "authError")
            XCTAssertFalse(String(describing: error).contains("token-"), "errors never carry tokens")
        }
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(grant.calls, 2)
    }

    func testInvalidGrantSaysToLogInAgain() {
        grant.failNext(with: DeadGrantError())
        XCTAssertThrowsError(try executor().execute("files.list", request)) { error in
            guard case .unauthorized(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.reason, "invalid_grant")
            XCTAssertTrue(info.message.contains("drivefs auth login"))
        }
        XCTAssertEqual(transport.requests.count, 0, "nothing is sent without a token")
    }

    func testTokenEndpointOutageIsRetried() throws {
        grant.failNext(with: TransportError.couldNotConnect("token endpoint down"))
        transport.push(status: 200, json: "{}")
        XCTAssertEqual(try executor().execute("files.list", request).status, 200)
        XCTAssertEqual(grant.calls, 2)
    }

    func testRequestIsRebuiltForEachAttempt() throws {
        transport.push(error: .connectionLost("cut"))
        transport.push(status: 200, json: "{}")
        _ = try executor().execute("files.get.media") { attempt in
            TransportRequest(method: "GET", url: "https://example.test/a", headers: [("Range", "bytes=\(attempt * 10)-")])
        }
        XCTAssertEqual(transport.requests.map { $0.header("Range") }, ["bytes=0-", "bytes=10-"])
    }

    func testCancelledScopeSendsNothing() {
        transport.push(status: 200, json: "{}")
        let flag = CancellationFlag()
        flag.cancel()
        XCTAssertThrowsError(try flag.scope { try executor().execute("files.get", request) }) { error in
            XCTAssertEqual(error as? DriveError, .cancelled)
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    func testCancellationStopsTheBackoff() {
        let flag = CancellationFlag()
        transport.push { request in
            XCTAssertTrue(request.cancellation === flag, "requests carry the scope's flag to the transport")
            flag.cancel()
            return ScriptedTransport.response(503)
        }
        transport.push(status: 200, json: "{}")
        XCTAssertThrowsError(try flag.scope { try executor().execute("files.get", request) }) { error in
            XCTAssertEqual(error as? DriveError, .cancelled)
        }
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNil(CancellationFlag.current, "the scope ends with the call")
    }

    func testEveryRequestPassesThePacer() throws {
        for _ in 0..<15 { transport.push(status: 200, json: "{}") }
        let exec = executor(pacer: Pacer(ratePerSecond: 10, burst: 5, time: time))
        let start = time.now()
        for _ in 0..<15 { _ = try exec.execute("files.get", request) }
        XCTAssertEqual(time.now() - start, 1.0, accuracy: 1e-6)
    }

    func testCountersTrackBytes() throws {
        transport.push(status: 200, json: "{\"id\":\"x\"}")
        let exec = executor()
        _ = try exec.execute("files.create", TransportRequest(method: "POST", url: "https://example.test/f", body: .bytes(Array(repeating: 1, count: 100))))
        let c = exec.stats.counters(for: "files.create")
        XCTAssertEqual(c.bytesOut, 100)
        XCTAssertEqual(c.bytesIn, 10)
        XCTAssertEqual(exec.stats.total().requests, 1)
    }

    /// The debug trace of write requests names the path only: no host, no query (a resumable
    /// session's `upload_id` is a credential).
    func testTheRequestTraceKeepsThePathOnly() {
        XCTAssertEqual(DriveRequestExecutor.tracePath("https://www.googleapis.com/drive/v3/files/abc?fields=id&x=1"), "/drive/v3/files/abc")
        XCTAssertEqual(DriveRequestExecutor.tracePath("http://127.0.0.1:4000/upload/drive/v3/files?uploadType=resumable&upload_id=SECRET"),
                       "/upload/drive/v3/files")
        XCTAssertEqual(DriveRequestExecutor.tracePath("http://127.0.0.1:4000"), "/")
    }
}
