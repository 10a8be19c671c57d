import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The per-user rate limit through the real server and the real OAuth service, on an injected clock:
/// Google's 403 body exactly, per user and per project, what is charged and what is not, the stats.
final class UserRateLimitTests: XCTestCase {
    var emulator: Emulator!
    let clock = ManualTimeSource(now: 1_700_000_000)
    var port: Int { emulator.port }
    let form = [("Content-Type", "application/x-www-form-urlencoded")]

    let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("rate-sa-\(UUID().uuidString).json")

    override func setUpWithError() throws {
        var config = EmulatorConfig(port: 0, writeServiceAccount: keyFile, clock: clock)
        config.userRateLimit = UserRateLimit(perSecond: 2, burst: 3)
        emulator = try Emulator(config: config)
        try emulator.start()
    }

    override func tearDown() {
        emulator.stop()
        try? FileManager.default.removeItem(at: keyFile)
    }

    func token(clientID: String = "bench") throws -> String {
        let body = "grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=\(clientID)&client_secret=s"
        let r = try RawHTTP.request(port: port, "POST", "/token", headers: form, body: Array(body.utf8))
        XCTAssertEqual(r.status, 200, r.text)
        return try XCTUnwrap(r.json?["access_token"] as? String)
    }

    func list(_ token: String?) throws -> RawHTTPResponse {
        try RawHTTP.request(port: port, "GET", "/drive/v3/files?fields=files(id)",
                            headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    static let console = "https://console.developers.google.com/apis/api/drive.googleapis.com/quotas?project="

    /// Google's answer, member by member (tidyverse/googledrive#380, transloadit/uppy#1040).
    func assertUserRateLimitExceeded(_ r: RawHTTPResponse, project: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 403, r.text, file: file, line: line)
        XCTAssertTrue(r.header("Content-Type")?.hasPrefix("application/json") == true, file: file, line: line)
        let message = "User Rate Limit Exceeded. Rate of requests for user exceed configured project quota. You may consider re-evaluating expected per-user traffic to the API and adjust project quota limits accordingly. You may monitor aggregate quota usage and adjust limits in the API Console: \(Self.console)\(project)"
        let error = r.json?["error"] as? [String: Any]
        XCTAssertEqual(error?["code"] as? Int, 403, file: file, line: line)
        XCTAssertEqual(error?["message"] as? String, message, file: file, line: line)
        XCTAssertNil(error?["status"], file: file, line: line)
        let items = error?["errors"] as? [[String: Any]]
        XCTAssertEqual(items?.count, 1, file: file, line: line)
        XCTAssertEqual(items?.first?["domain"] as? String, "usageLimits", file: file, line: line)
        XCTAssertEqual(items?.first?["reason"] as? String, "userRateLimitExceeded", file: file, line: line)
        XCTAssertEqual(items?.first?["message"] as? String, message, file: file, line: line)
        XCTAssertEqual(items?.first?["extendedHelp"] as? String, Self.console + project, file: file, line: line)
        XCTAssertEqual(Set(items?.first?.keys.map { $0 } ?? []), ["message", "domain", "reason", "extendedHelp"], file: file, line: line)
        XCTAssertNil(r.header("Retry-After"), "Google sends none", file: file, line: line)
    }

    func testPastTheBurstGooglesAnswerAndTheStatsSayHowMany() throws {
        let t = try token()
        XCTAssertEqual(try (0..<3).map { _ in try list(t).status }, [200, 200, 200])
        assertUserRateLimitExceeded(try list(t), project: OAuthService.projectNumber)
        XCTAssertEqual(try list(t).status, 403, "a refused request does not use the budget, nor does it refill it")
        clock.advance(0.5)
        XCTAssertEqual(try list(t).status, 200, "half a second at 2/s earns one request")
        XCTAssertEqual(try list(t).status, 403)
        clock.advance(10)
        XCTAssertEqual(try (0..<4).map { _ in try list(t).status }, [200, 200, 200, 403], "an idle user banks the burst, no more")

        let stats = emulator.stats()
        XCTAssertEqual(stats.methods["files.list"]?.rateLimited, 4)
        XCTAssertEqual(stats.methods["files.list"]?.statuses, ["200": 7, "403": 4])
        XCTAssertEqual(stats.totals.rateLimited, 4)
        XCTAssertEqual(stats.methods["token"]?.rateLimited, 0)
        // The same over the control API.
        let json = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json
        XCTAssertEqual(((json?["totals"] as? [String: Any])?["rateLimited"] as? Int), 4)
        XCTAssertEqual((((json?["methods"] as? [String: Any])?["files.list"] as? [String: Any])?["rateLimited"] as? Int), 4)
        emulator.resetStats()
        XCTAssertEqual(emulator.stats().totals.rateLimited, 0)
    }

    /// Every Drive method shares the user's one budget: media, uploads, metadata alike.
    func testEveryDriveMethodDrawsOnTheSameBudget() throws {
        let t = try token()
        let auth = [("Authorization", "Bearer \(t)")]
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/drive/v3/about?fields=user", headers: auth).status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=media", headers: auth,
                                           body: [1, 2, 3]).status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/drive/v3/changes/startPageToken", headers: auth).status, 200)
        let refused = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=media", headers: auth, body: [4, 5])
        assertUserRateLimitExceeded(refused, project: OAuthService.projectNumber)
        XCTAssertEqual(emulator.stats().methods["files.create.upload"]?.rateLimited, 1)
        clock.advance(0.5)
        let listed = try list(t)
        XCTAssertEqual(listed.status, 200)
        XCTAssertEqual((listed.json?["files"] as? [[String: Any]])?.count, 1, "the refused upload stored nothing")
    }

    /// The budget is per user and per project: another client's project, or the service account,
    /// has its own; the same user through another token of the same client shares it.
    func testBudgetsArePerUserAndPerProject() throws {
        let first = try token(), second = try token()
        XCTAssertEqual(try (0..<3).map { _ in try list(first).status }, [200, 200, 200])
        XCTAssertEqual(try list(second).status, 403, "another token of the same user and project")
        let other = try token(clientID: "123456789012-abc.apps.googleusercontent.com")
        XCTAssertEqual(try (0..<3).map { _ in try list(other).status }, [200, 200, 200])
        assertUserRateLimitExceeded(try list(other), project: "123456789012")

        let key = try JSONSerialization.jsonObject(with: Data(contentsOf: keyFile)) as! [String: Any]
        let assertion = try JWT.signRS256(claims: JWT.ServiceAccountClaims(iss: OAuthService.serviceAccountEmail,
                                                                           scope: "https://www.googleapis.com/auth/drive",
                                                                           aud: emulator.baseURL + "/token",
                                                                           iat: Int(clock.now()), exp: Int(clock.now()) + 3600),
                                          key: try RSAKey(privateKeyPEM: key["private_key"] as! String), keyID: "k")
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let granted = try RawHTTP.request(port: port, "POST", "/token", headers: form, body: Array(body.utf8))
        let robot = try XCTUnwrap(granted.json?["access_token"] as? String, granted.text)
        XCTAssertEqual(try (0..<3).map { _ in try list(robot).status }, [200, 200, 200])
        assertUserRateLimitExceeded(try list(robot), project: OAuthService.projectNumber)
        XCTAssertEqual(emulator.stats().totals.rateLimited, 3)
    }

    /// Not charged: requests without a valid token (401 first, as Google authenticates before it
    /// counts), the token endpoint, control requests, and chunks sent to a resumable session URI
    /// (their upload_id is the credential).
    func testWhatIsNotCharged() throws {
        for _ in 0..<10 {
            XCTAssertEqual(try list(nil).status, 401)
            XCTAssertEqual(try list("not-a-token").status, 401)
            XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/health").status, 200)
        }
        let tokens = try (0..<6).map { _ in try token() }
        let t = tokens[0]
        let start = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=resumable",
                                        headers: [("Authorization", "Bearer \(t)"), ("Content-Type", "application/json"),
                                                  ("X-Upload-Content-Length", "\(2 * 262_144)")],
                                        body: Array(#"{"name":"r.bin"}"#.utf8))
        XCTAssertEqual(start.status, 200, start.text)
        let location = try XCTUnwrap(start.header("Location"))
        let target = String(location[location.range(of: "/upload/")!.lowerBound...])
        XCTAssertEqual(try (0..<2).map { _ in try list(t).status }, [200, 200], "the budget of 3 is down to 2 by the initiation")
        let chunk = [UInt8](repeating: 9, count: 262_144)
        let first = try RawHTTP.request(port: port, "PUT", target, headers: [("Content-Range", "bytes 0-262143/524288")], body: chunk)
        XCTAssertEqual(first.status, 308)
        let last = try RawHTTP.request(port: port, "PUT", target, headers: [("Content-Range", "bytes 262144-524287/524288")], body: chunk)
        XCTAssertEqual(last.status, 200, "session chunks are not refused although the budget is spent")
        XCTAssertEqual(try list(t).status, 403)
        XCTAssertEqual(emulator.stats().totals.rateLimited, 1)
        XCTAssertEqual(emulator.stats().methods["files.list"]?.statuses["401"], 20)
    }
}
