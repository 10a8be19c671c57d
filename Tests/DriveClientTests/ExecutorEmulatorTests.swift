import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// The request wrapper over real HTTP against the emulator's OAuth server and faults
/// (plain test routes stand in for Drive methods here).
final class ExecutorEmulatorTests: XCTestCase {
    var harness: EmulatorHarness!

    override func setUpWithError() throws {
        harness = try EmulatorHarness(extraProviders: [TransportTestRoutes()])
    }

    override func tearDown() { harness?.stop() }

    private var headersRequest: TransportRequest { TransportRequest(method: "GET", url: harness.emulator.baseURL + "/headers") }

    func testRequestsCarryATokenFromTheRefreshGrant() throws {
        let response = try harness.executor.execute("test.headers", headersRequest)
        let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String])
        XCTAssertTrue(echoed["authorization"]?.hasPrefix("Bearer ") ?? false)
        _ = try harness.executor.execute("test.headers", headersRequest)
        XCTAssertEqual(harness.tokens.refreshCount, 1, "the token is cached")
    }

    func testUnauthorizedRefreshesOnceAndRetries() throws {
        _ = try harness.executor.execute("test.headers", headersRequest)
        harness.emulator.addFaults([FaultRule.status(401, method: "test.headers", times: 1)])
        XCTAssertEqual(try harness.executor.execute("test.headers", headersRequest).status, 200)
        XCTAssertEqual(harness.tokens.refreshCount, 2)
        XCTAssertEqual(harness.executor.stats.counters(for: "test.headers").requests, 3)
    }

    func testUnauthorizedTwiceFails() {
        harness.emulator.addFaults([FaultRule.status(401, method: "test.headers", times: 2)])
        XCTAssertThrowsError(try harness.executor.execute("test.headers", headersRequest)) { error in
            guard case .unauthorized = error as? DriveError else { return XCTFail("\(error)") }
        }
    }

    func testRevokedRefreshTokenIsAClearLoginError() {
        harness.emulator.revoke(token: EmulatorHarness.refreshToken)
        XCTAssertThrowsError(try harness.executor.execute("test.headers", headersRequest)) { error in
            guard case .unauthorized(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.reason, "invalid_grant")
            XCTAssertTrue(String(describing: error).contains("drivefs auth login"))
            XCTAssertFalse(String(describing: error).contains(EmulatorHarness.refreshToken))
        }
        XCTAssertEqual(harness.requests("test.headers"), 0)
    }

    func testRateLimitBurstSucceedsAfterBackoff() throws {
        harness.emulator.addFaults([FaultRule.status(403, method: "test.headers", reason: "userRateLimitExceeded", times: 3)])
        XCTAssertEqual(try harness.executor.execute("test.headers", headersRequest).status, 200)
        // (The emulator records an exchange after answering it: count on the client side.)
        XCTAssertEqual(harness.executor.stats.counters(for: "test.headers").requests, 4)
        XCTAssertEqual(harness.executor.stats.counters(for: "test.headers").retries, 3)
        // The account's pacer slowed (1000 → 500 per second at least once; refusals within one
        // second count once) and the success began the climb back.
        let pacer = try XCTUnwrap(harness.executor.pacer)
        XCTAssertLessThan(pacer.currentRate, 1000)
        XCTAssertGreaterThanOrEqual(pacer.currentRate, 1000 * 0.5 * 0.5 * 0.5)
        let slowed = pacer.currentRate
        XCTAssertEqual(try harness.executor.execute("test.headers", headersRequest).status, 200)
        XCTAssertEqual(pacer.currentRate, min(1000, slowed + 0.1), accuracy: 1e-9)
    }

    func testServerStormIsBoundedByTheRetryBudget() {
        harness.emulator.addFaults([FaultRule.status(503, method: "test.headers", times: nil)])
        let start = Date()
        XCTAssertThrowsError(try harness.executor.execute("test.headers", headersRequest)) { error in
            guard case .server(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.status, 503)
        }
        XCTAssertEqual(harness.executor.stats.counters(for: "test.headers").requests, 8)
        XCTAssertLessThan(Date().timeIntervalSince(start), 30, "bounded by the retry budget, not by a wall-clock accident")
        XCTAssertEqual(harness.executor.stats.counters(for: "test.headers").failures, 1)
    }

    func testTokenEndpointOutageIsRetried() throws {
        harness.emulator.addFaults([FaultRule.status(503, method: "token", times: 2)])
        XCTAssertEqual(try harness.executor.execute("test.headers", headersRequest).status, 200)
        XCTAssertEqual(harness.tokens.refreshCount, 3)
    }
}
