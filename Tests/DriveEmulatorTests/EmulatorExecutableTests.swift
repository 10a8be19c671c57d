import XCTest
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `drivefs-emulator` binary: flags, the ready line, signals.
final class EmulatorExecutableTests: XCTestCase {
    func spawn(_ arguments: [String]) throws -> SpawnedProcess {
        try SpawnedProcess(executable: try ExecutableLocator.url(of: "drivefs-emulator"), arguments: arguments)
    }

    /// Starts the emulator on a free port and returns it with its base URL's port.
    func startEmulator(_ extra: [String] = []) throws -> (SpawnedProcess, Int) {
        let process = try spawn(["--port", "0"] + extra)
        guard let line = process.waitForLine(prefix: "listening on ", timeout: 20) else {
            process.terminate()
            throw StartFailure(description: "emulator did not start: no ready line; stderr: \(process.stderr)")
        }
        let pattern = #/^listening on http://127\.0\.0\.1:(\d+)/$/#
        guard let match = line.wholeMatch(of: pattern), let port = Int(match.1) else {
            process.terminate()
            throw StartFailure(description: "bad ready line: \(line)")
        }
        return (process, port)
    }

    /// Thrown (a failure, not a skip) when the spawned emulator does not come up as promised.
    struct StartFailure: Error, CustomStringConvertible { let description: String }

    func testAMissingBinaryIsAFailureNotASkip() {
        XCTAssertThrowsError(try ExecutableLocator.url(of: "drivefs-no-such-binary")) { error in
            XCTAssertFalse(error is XCTSkip, "a missing binary must fail the test, not skip it")
            XCTAssertTrue("\(error)".contains("drivefs-no-such-binary is not built"), "\(error)")
        }
    }

    func testReadyLineThenServesAndStopsOnSIGTERM() throws {
        let (process, port) = try startEmulator()
        defer { process.terminate() }
        XCTAssertEqual(process.stdout.filter { $0 == "\n" }.count, 1, "exactly one line: \(process.stdout)")
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/health").status, 200)
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                        body: Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8))
        XCTAssertEqual(token.status, 200, token.text)
        process.signal(SIGTERM)
        XCTAssertEqual(process.waitForExit(timeout: 10), 0)
    }

    func testStopsOnSIGINTWithAnOpenConnection() throws {
        let (process, port) = try startEmulator()
        defer { process.terminate() }
        let idle = try RawHTTPConnection(port: port)
        try idle.sendRequest("GET", "/__emulator/health")
        XCTAssertEqual(try idle.readResponse().status, 200)
        process.signal(SIGINT)
        XCTAssertEqual(process.waitForExit(timeout: 10), 0)
    }

    func testDebugLogLineOmitsQueryAndAuthorization() throws {
        let (process, port) = try startEmulator(["--log-level", "debug"])
        defer { process.terminate() }
        _ = try RawHTTP.request(port: port, "GET", "/drive/v3/files?access_token=SECRET1",
                                headers: [("Authorization", "Bearer SECRET2")])
        let deadline = Date().addingTimeInterval(5)
        while !process.stderr.contains("/drive/v3/files") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(process.stderr.contains("GET /drive/v3/files"), process.stderr)
        XCTAssertFalse(process.stderr.contains("SECRET"))
    }

    func testHelpAndVersion() throws {
        let help = try spawn(["--help"])
        XCTAssertEqual(help.waitForExit(timeout: 10), 0)
        XCTAssertTrue(help.waitForStdout(containing: "stops on SIGINT or SIGTERM", timeout: 10), "the whole help: \(help.stdout)")
        for flag in ["--host", "--port", "--public-url", "--state-dir", "--seed", "--latency", "--bandwidth", "--total-bandwidth",
                     "--user-rate-limit", "--user-rate-burst", "--faults",
                     "--token-lifetime", "--refresh-token", "--write-service-account", "--log-level", "--max-parent-terms",
                     "--quirk-multi-parent-drop", "--quirk-seed", "--limits", "--quota-user-units", "--quota-project-units",
                     "--method-cost", "--write-rate", "--write-burst", "--daily-upload-bytes", "--max-folder-items",
                     "--max-shared-drive-items", "--quirk-refused-write-lands"] {
            XCTAssertTrue(help.stdout.contains(flag), "help mentions \(flag)")
        }
        let version = try spawn(["--version"])
        XCTAssertEqual(version.waitForExit(timeout: 10), 0)
        XCTAssertTrue(version.waitForStdout(containing: "\n", timeout: 10), version.stdout)
        XCTAssertTrue(version.stdout.hasPrefix("drivefs-emulator "))
    }

    func testBadOptionsExitWithStatus2NamingThem() throws {
        let cases: [([String], String)] = [
            (["--bogus"], "--bogus"),
            (["--port", "70000"], "--port"),
            (["--port", "abc"], "--port"),
            (["--port"], "--port"),
            (["--latency", "-5"], "--latency"),
            (["--bandwidth", "0"], "--bandwidth"),
            (["--total-bandwidth", "0"], "--total-bandwidth"),
            (["--total-bandwidth", "fast"], "--total-bandwidth"),
            (["--user-rate-limit", "0"], "--user-rate-limit"),
            (["--user-rate-limit", "-3"], "--user-rate-limit"),
            (["--user-rate-limit", "nan"], "--user-rate-limit"),
            (["--user-rate-limit", "10", "--user-rate-burst", "0"], "--user-rate-burst"),
            (["--user-rate-burst", "5"], "--user-rate-burst"),
            (["--log-level", "loud"], "--log-level"),
            (["--public-url", "ftp://x"], "--public-url"),
            (["stray"], "stray"),
            (["--quirk-multi-parent-drop", "1.5"], "--quirk-multi-parent-drop"),
            (["--quirk-seed", "-1"], "--quirk-seed"),
            (["--max-parent-terms", "0"], "--max-parent-terms"),
            (["--limits", "strict"], "--limits"),
            (["--quota-user-units", "-1"], "--quota-user-units"),
            (["--quota-project-units", "many"], "--quota-project-units"),
            (["--method-cost", "files.list"], "--method-cost"),
            (["--method-cost", "files.frobnicate=3"], "--method-cost"),
            (["--method-cost", "files.list=-1"], "--method-cost"),
            (["--write-rate", "-1"], "--write-rate"),
            (["--write-burst", "0"], "--write-burst"),
            (["--daily-upload-bytes", "1e9"], "--daily-upload-bytes"),
            (["--max-folder-items", "-2"], "--max-folder-items"),
            (["--max-shared-drive-items", "x"], "--max-shared-drive-items"),
            (["--quirk-refused-write-lands", "2"], "--quirk-refused-write-lands"),
        ]
        for (arguments, named) in cases {
            let process = try spawn(arguments)
            XCTAssertEqual(process.waitForExit(timeout: 10), 2, "\(arguments)")
            let deadline = Date().addingTimeInterval(2)
            while !process.stderr.contains(named) && Date() < deadline { usleep(20_000) }
            XCTAssertTrue(process.stderr.contains(named), "\(arguments): \(process.stderr)")
        }
    }

    func testBadFaultsFileFailsToStart() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("faults-\(UUID().uuidString).json")
        try Data("{".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = try spawn(["--port", "0", "--faults", file.path])
        XCTAssertEqual(process.waitForExit(timeout: 10), 1)
        XCTAssertTrue(process.stdout.isEmpty)
    }

    func testFlagsShapeTheEmulator() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("faults-\(UUID().uuidString).json")
        try Data(#"[{"method":"token","status":503,"times":1}]"#.utf8).write(to: file)
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json")
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: key)
        }
        let (process, port) = try startEmulator(["--faults", file.path, "--latency", "100", "--refresh-token", "my-refresh",
                                                 "--token-lifetime", "60", "--write-service-account", key.path])
        defer { process.terminate() }
        let form = Array("grant_type=refresh_token&refresh_token=my-refresh&client_id=a&client_secret=b".utf8)
        let headers = [("Content-Type", "application/x-www-form-urlencoded")]
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/token", headers: headers, body: form).status, 503)
        let started = Date()
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: headers, body: form)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.09)
        XCTAssertEqual(token.status, 200, token.text)
        XCTAssertEqual(token.json?["expires_in"] as? Int, 60)
        let keyJSON = try JSONSerialization.jsonObject(with: Data(contentsOf: key)) as? [String: Any]
        XCTAssertEqual(keyJSON?["type"] as? String, "service_account")
        XCTAssertEqual(keyJSON?["token_uri"] as? String, "http://127.0.0.1:\(port)/token")
    }

    func testListingFlagsShapeTheEmulator() throws {
        let (process, port) = try startEmulator(["--quirk-multi-parent-drop", "0.5", "--quirk-seed", "42", "--max-parent-terms", "2"])
        defer { process.terminate() }
        let quirks = try RawHTTP.request(port: port, "GET", "/__emulator/quirks")
        XCTAssertEqual(quirks.json?["multiParentDrop"] as? Double, 0.5)
        XCTAssertEqual(quirks.json?["seed"] as? Int, 42)
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                        body: form).json?["access_token"] as? String ?? ""
        let q = "%27a%27%20in%20parents%20or%20%27b%27%20in%20parents%20or%20%27c%27%20in%20parents"
        let r = try RawHTTP.request(port: port, "GET", "/drive/v3/files?q=\(q)", headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(r.status, 400, r.text)
        XCTAssertTrue(r.text.contains("The query is too complex."), r.text)
    }

    /// `--user-rate-limit` and `--user-rate-burst` reach the server: a rate so low that nothing refills
    /// during the test (one request per 1,000 s), a burst of 2, so the third request is refused.
    func testUserRateLimitFlagsRefusePastTheBurst() throws {
        let (process, port) = try startEmulator(["--user-rate-limit", "0.001", "--user-rate-burst", "2"])
        defer { process.terminate() }
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                        body: form).json?["access_token"] as? String ?? ""
        let statuses = try (0..<3).map { _ in
            try RawHTTP.request(port: port, "GET", "/drive/v3/files", headers: [("Authorization", "Bearer \(token)")])
        }
        XCTAssertEqual(statuses.map(\.status), [200, 200, 403])
        XCTAssertEqual(statuses[2].googleReason, "userRateLimitExceeded")
        let stats = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json
        XCTAssertEqual((stats?["totals"] as? [String: Any])?["rateLimited"] as? Int, 1)
    }

    /// `--limits google` and the flags that change its numbers reach the server, whatever their
    /// order on the line: a write rate so low that nothing refills during the test, a burst of 1,
    /// a list costing more than the user's minute.
    func testLimitFlagsReachTheServerWhateverTheirOrder() throws {
        let (process, port) = try startEmulator(["--write-rate", "0.001", "--write-burst", "1", "--method-cost", "files.list=400000",
                                                 "--limits", "google"])
        defer { process.terminate() }
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                        body: form).json?["access_token"] as? String ?? ""
        let auth = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
        let creates = try (0..<2).map { _ in
            try RawHTTP.request(port: port, "POST", "/drive/v3/files", headers: auth, body: Array(#"{"name":"x"}"#.utf8))
        }
        XCTAssertEqual(creates.map(\.status), [200, 403])
        XCTAssertEqual(creates[1].googleReason, "rateLimitExceeded")
        let list = try RawHTTP.request(port: port, "GET", "/drive/v3/files", headers: auth)
        XCTAssertEqual(list.status, 403)
        XCTAssertEqual(list.googleReason, "userRateLimitExceeded", "400,000 units is past google's 325,000 a minute")
        let users = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json?["users"] as? [String: Any]
        let me = users?["user@drivefs-emulator.test"] as? [String: Any]
        XCTAssertEqual(me?["writesRefused"] as? Int, 1)
        XCTAssertEqual(me?["quotaRefused"] as? Int, 1)
        XCTAssertEqual(me?["units"] as? Int, 50)
    }
}
