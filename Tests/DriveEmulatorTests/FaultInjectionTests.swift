import XCTest
import Foundation
import DriveSupport
@testable import DriveEmulator

/// Each fault kind as a client sees it, latency and bandwidth shaping, and the counters.
final class FaultInjectionTests: XCTestCase {
    var emulator: Emulator!
    var port: Int { emulator.port }

    override func setUpWithError() throws { emulator = try startTestEmulator() }
    override func tearDown() { emulator?.stop(); emulator = nil }

    func postFaults(_ json: String, query: String = "") throws -> RawHTTPResponse {
        try RawHTTP.request(port: port, "POST", "/__emulator/faults\(query)", headers: [("Content-Type", "application/json")],
                            body: Array(json.utf8))
    }

    func testStatusFaultAnswersGoogleErrorForTheNextKRequests() throws {
        XCTAssertEqual(try postFaults(#"{"method":"test.hello","status":403,"reason":"userRateLimitExceeded","times":2,"retryAfter":7}"#).status, 200)
        for _ in 0..<2 {
            let r = try RawHTTP.request(port: port, "GET", "/hello")
            XCTAssertEqual(r.status, 403)
            XCTAssertEqual(r.googleReason, "userRateLimitExceeded")
            XCTAssertEqual(r.header("Retry-After"), "7")
            let error = r.json?["error"] as? [String: Any]
            XCTAssertEqual(error?["message"] as? String, "User rate limit exceeded.", "Google's current wording, which rclone matches")
            XCTAssertEqual((error?["errors"] as? [[String: Any]])?.first?["domain"] as? String, "usageLimits")
        }
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 200)
        // Other methods were never affected.
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/bytes?size=3").status, 200)
    }

    func testStatusFaultDefaultsPerCode() throws {
        emulator.addFaults([.status(401, method: "test.hello"), .status(429, method: "test.hello"),
                            .status(500, method: "test.hello"), .status(503, method: "test.hello")])
        let unauthorized = try RawHTTP.request(port: port, "GET", "/hello")
        XCTAssertEqual(unauthorized.status, 401)
        XCTAssertEqual(unauthorized.googleReason, "authError")
        XCTAssertNotNil(unauthorized.header("WWW-Authenticate"))
        XCTAssertEqual((unauthorized.json?["error"] as? [String: Any])?["status"] as? String, "UNAUTHENTICATED")
        let limited = try RawHTTP.request(port: port, "GET", "/hello")
        XCTAssertEqual([limited.status], [429])
        XCTAssertEqual(limited.googleReason, "rateLimitExceeded")
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").googleReason, "backendError")
        let unavailable = try RawHTTP.request(port: port, "GET", "/hello")
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 200)
    }

    func testResetAfterNResponseBodyBytes() throws {
        emulator.addFaults([FaultRule(method: "test.bytes", action: .reset(afterBytes: 1000))])
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/bytes?size=100000")
        do {
            _ = try connection.readResponse()
            XCTFail("the response must not arrive whole")
        } catch RawHTTPError.reset, RawHTTPError.closedEarly {
            XCTAssertEqual(connection.partialBody.count, 1000)
            XCTAssertEqual(connection.partialBody, (0..<1000).map { UInt8(truncatingIfNeeded: $0) })
        }
        XCTAssertEqual(emulator.stats().methods["test.bytes"]?.statuses["reset"], 1)
        let stats = waitForStats(emulator) { $0.methods["test.bytes"]?.bytesOut == 1000 }
        XCTAssertEqual(stats.methods["test.bytes"]?.bytesOut, 1000)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/bytes?size=100000").body.count, 100_000)
    }

    func testResetAfterNRequestBodyBytesNeverCallsTheHandler() throws {
        let calls = Locked(0)
        emulator.stop()
        emulator = try startTestEmulator(extra: [TestRoutes.Entry(method: "test.upload", path: "/upload") { request in
            calls.withLock { $0 += 1 }
            try request.body.drain()
            return .json(200, [String: Any]())
        }])
        emulator.addFaults([FaultRule(method: "test.upload", action: .reset(afterBytes: 4096))])
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        XCTAssertEqual(connection.sendThenWaitForClose([UInt8](repeating: 1, count: 1_000_000), timeout: 5), .reset)
        XCTAssertEqual(calls.withLock { $0 }, 0)
        let stats = emulator.stats()
        XCTAssertEqual(stats.methods["test.upload"]?.bytesIn, 4096)
        // The next upload goes through.
        let ok = try RawHTTP.request(port: port, "POST", "/upload", body: [UInt8](repeating: 2, count: 10_000))
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(calls.withLock { $0 }, 1)
    }

    func testStallAnswersNothingThenCloses() throws {
        emulator.addFaults([FaultRule(method: "test.hello", action: .stall(seconds: 0.6))])
        let connection = try RawHTTPConnection(port: port)
        let started = Date()
        try connection.sendRequest("GET", "/hello")
        XCTAssertThrowsError(try connection.readResponse(timeout: 0.3)) { error in
            XCTAssertEqual(error as? RawHTTPError, .timedOut)
        }
        XCTAssertEqual(connection.waitForClose(timeout: 5), .eof)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.6, "a stall of 0.6 s answers nothing for at least 0.6 s")
        XCTAssertEqual(emulator.stats().methods["test.hello"]?.statuses["stall"], 1)
    }

    /// With a seed, a fraction hits the same requests every run.
    func testFractionIsDeterministicForASeed() throws {
        func pattern() throws -> [Int] {
            emulator.clearFaults()
            emulator.addFaults([.status(500, method: "test.hello", times: nil, fraction: 0.5)], seed: 1234)
            return try (0..<40).map { _ in try RawHTTP.request(port: port, "GET", "/hello").status }
        }
        let first = try pattern()
        let second = try pattern()
        XCTAssertEqual(first, second)
        let failures = first.filter { $0 == 500 }.count
        XCTAssertTrue((8...32).contains(failures), "about half fail: \(failures)")
        XCTAssertEqual(Set(first), [200, 500])
    }

    func testFractionWithTimesStopsAfterK() throws {
        emulator.addFaults([.status(503, method: "*", times: 3, fraction: 0.5)], seed: 9)
        let statuses = try (0..<60).map { _ in try RawHTTP.request(port: port, "GET", "/hello").status }
        XCTAssertEqual(statuses.filter { $0 == 503 }.count, 3)
    }

    /// Wall-clock bounds here hold on a loaded machine: the lower bound is what the mechanism
    /// guarantees (a latency of X makes a request take at least X), the upper bound is relative to a
    /// latency so large that a delayed control request could not hide under it.
    func testLatencyIsAddedToCountedRequestsOnly() throws {
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(latencyMs: 2000))
        var started = Date()
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 200)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 2.0)
        started = Date()
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/stats").status, 200)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0, "control requests are not delayed (the latency is 2 s)")
    }

    func testBandwidthLimitsResponseThroughput() throws {
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(bandwidthBytesPerSecond: 4 << 20))
        let started = Date()
        let response = try RawHTTP.request(port: port, "GET", "/bytes?size=\(1 << 20)")
        XCTAssertEqual(response.body.count, 1 << 20)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.15)
    }

    func testBandwidthLimitsRequestBodyThroughput() throws {
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(bandwidthBytesPerSecond: 4 << 20))
        let started = Date()
        let response = try RawHTTP.request(port: port, "POST", "/discard", body: [UInt8](repeating: 3, count: 1 << 20))
        XCTAssertEqual(response.json?["bytes"] as? Int, 1 << 20)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.15)
    }

    /// `--total-bandwidth`: connections share one budget. Two 1 MiB downloads at once through a
    /// 4 MiB/s total cap cannot both be done before (2 MiB − the cap's 1/20 s burst − a chunk per
    /// connection) / 4 MiB/s ≈ 0.42 s (a lower bound the mechanism guarantees; nothing is asserted
    /// about how much longer they take).
    func testTotalBandwidthIsSharedByAllConnections() throws {
        emulator.stop()
        var config = EmulatorConfig()
        config.totalBandwidthBytesPerSecond = 4 << 20
        emulator = try startTestEmulator(config)
        let port = self.port
        let sizes = Locked<[Int]>([])
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let count = (try? RawHTTP.request(port: port, "GET", "/bytes?size=\(1 << 20)").body.count) ?? -1
            sizes.withLock { $0.append(count) }
        }
        XCTAssertEqual(sizes.withLock { $0 }, [1 << 20, 1 << 20])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.35)
    }

    /// A request is counted before its answer is sent, so a client that has just read the answer
    /// sees it counted. Here the server still has work after answering (it must drain the 990
    /// unread body bytes the client holds back), so a count made after the exchange would be missing.
    func testARequestIsCountedBeforeItsAnswerIsSent() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        try connection.send([UInt8](repeating: 7, count: 10))
        XCTAssertEqual(try connection.readResponse().text, "hello")
        let counted = emulator.stats().methods["test.hello"]
        XCTAssertEqual(counted?.requests, 1)
        XCTAssertEqual(counted?.statuses, ["200": 1])
        try connection.send([UInt8](repeating: 7, count: 990))
        let done = waitForStats(emulator) { $0.methods["test.hello"]?.bytesIn == 1000 }.methods["test.hello"]
        XCTAssertEqual(done?.bytesIn, 1000, "the drained body is added once the exchange is over")
        XCTAssertEqual(done?.bytesOut, 5)
        XCTAssertEqual(done?.requests, 1)
        // Immediately, again and again, on a kept-alive connection.
        for i in 2...30 {
            try connection.sendRequest("GET", "/hello")
            XCTAssertEqual(try connection.readResponse().status, 200)
            XCTAssertEqual(emulator.stats().methods["test.hello"]?.statuses["200"], i)
        }
    }

    func testStatsCountRequestsStatusesAndBytes() throws {
        _ = try RawHTTP.request(port: port, "GET", "/hello")
        _ = try RawHTTP.request(port: port, "GET", "/hello")
        _ = try RawHTTP.request(port: port, "POST", "/echo", body: Array("abcdef".utf8))
        _ = try RawHTTP.request(port: port, "GET", "/nowhere")
        emulator.addFaults([.status(429, method: "test.hello")])
        _ = try RawHTTP.request(port: port, "GET", "/hello")
        _ = try RawHTTP.request(port: port, "GET", "/__emulator/stats") // not counted
        XCTAssertEqual(emulator.stats().totals.requests, 5, "counted before the answers were sent")
        // Byte counts are added once each exchange is over: those may trail the client.
        let stats = waitForStats(emulator) { $0.methods["test.hello"]?.bytesOut ?? 0 > 10 && $0.methods["test.echo"]?.bytesOut == 6 }
        XCTAssertEqual(stats.methods["test.hello"]?.requests, 3)
        XCTAssertEqual(stats.methods["test.hello"]?.statuses, ["200": 2, "429": 1])
        XCTAssertEqual(stats.methods["test.hello"]?.bytesOut ?? 0 > 10, true)
        XCTAssertEqual(stats.methods["test.echo"]?.bytesIn, 6)
        XCTAssertEqual(stats.methods["test.echo"]?.bytesOut, 6)
        XCTAssertEqual(stats.methods[RequestDispatcher.unknownRouteKey]?.statuses, ["404": 1])
        XCTAssertEqual(stats.totals.requests, 5)
        XCTAssertEqual(stats.totals.statuses["200"], 3)

        // The same over HTTP.
        let json = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json
        let methods = json?["methods"] as? [String: Any]
        let hello = methods?["test.hello"] as? [String: Any]
        XCTAssertEqual(hello?["requests"] as? Int, 3)
        XCTAssertEqual((hello?["statuses"] as? [String: Int])?["429"], 1)
        XCTAssertEqual((json?["totals"] as? [String: Any])?["requests"] as? Int, 5)

        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/reset-stats").status, 200)
        XCTAssertEqual(emulator.stats().totals.requests, 0)
    }

    func testFaultsControlAPI() throws {
        let added = try postFaults(#"{"seed":5,"faults":[{"method":"files.list","status":503},{"method":"token","stallSeconds":2,"times":4}]}"#)
        XCTAssertEqual(added.status, 200)
        let listed = try RawHTTP.request(port: port, "GET", "/__emulator/faults").json
        XCTAssertEqual(listed?["seed"] as? Int, 5)
        let faults = listed?["faults"] as? [[String: Any]]
        XCTAssertEqual(faults?.count, 2)
        XCTAssertEqual(faults?.last?["remaining"] as? Int, 4)
        XCTAssertEqual(faults?.last?["stallSeconds"] as? Double, 2)
        _ = try postFaults(#"[{"method":"files.get.media","resetAfterBytes":10}]"#, query: "?replace=true")
        XCTAssertEqual((try RawHTTP.request(port: port, "GET", "/__emulator/faults").json?["faults"] as? [Any])?.count, 1)
        XCTAssertEqual(try RawHTTP.request(port: port, "DELETE", "/__emulator/faults").status, 200)
        XCTAssertEqual((try RawHTTP.request(port: port, "GET", "/__emulator/faults").json?["faults"] as? [Any])?.count, 0)
    }

    func testMalformedFaultDocumentsAreRefused() throws {
        for bad in ["not json", #"{"status":500}"#, #"{"method":"x"}"#, #"{"method":"x","status":200}"#,
                    #"{"method":"x","status":500,"stallSeconds":1}"#, #"{"method":"x","status":500,"times":0}"#,
                    #"{"method":"x","status":500,"fraction":2}"#, #"{"method":"x","status":500,"colour":"red"}"#,
                    #"{"faults":{}}"#, #"[1]"#, #"{"method":"x","resetAfterBytes":-1}"#, #"{"method":"x","status":500,"times":true}"#] {
            let response = try postFaults(bad)
            XCTAssertEqual(response.status, 400, bad)
            XCTAssertEqual(response.googleReason, "badRequest", bad)
        }
        XCTAssertEqual((try RawHTTP.request(port: port, "GET", "/__emulator/faults").json?["faults"] as? [Any])?.count, 0)
    }

    func testFaultsFileIsLoadedAtStart() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("faults-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"faults":[{"method":"test.hello","status":500,"times":1}]}"#.utf8).write(to: file)
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(faultsFile: file))
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 500)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 200)

        try Data(#"{"faults":[{"method":"test.hello"}]}"#.utf8).write(to: file)
        XCTAssertThrowsError(try startTestEmulator(EmulatorConfig(faultsFile: file))) { error in
            XCTAssertTrue("\(error)".contains("status"), "\(error)")
        }
    }

    func testControlRequestsAreNeitherFaultedNorCounted() throws {
        emulator.addFaults([.status(500, method: "*", times: nil)])
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/stats").status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/health").status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/hello").status, 500)
        XCTAssertEqual(emulator.stats().totals.requests, 1)
        XCTAssertEqual(try RawHTTP.request(port: port, "PUT", "/__emulator/stats").status, 405)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/nothing").status, 404)
    }

    func testRevokeControlCallsTheService() throws {
        let revoked = Locked<[String?]>([])
        emulator.stop()
        emulator = try startTestEmulator(revoke: { token in revoked.withLock { $0.append(token) } })
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/revoke?token=abc").status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/revoke",
                                           headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                           body: Array("token=def".utf8)).status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/revoke").status, 200)
        XCTAssertEqual(revoked.withLock { $0 }, ["abc", "def", nil])
    }
}
