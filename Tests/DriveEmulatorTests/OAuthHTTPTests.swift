import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// The OAuth endpoints through the emulator's real HTTP server: wire details that the in-process
/// route tests cannot see (chunked bodies, keep-alive, header casing, the aud "as reached").
final class OAuthHTTPTests: XCTestCase {
    private var emulator: Emulator!
    private var keyFile: URL!

    override func setUpWithError() throws {
        keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-http-\(UUID().uuidString).json")
        emulator = try Emulator(config: EmulatorConfig(port: 0, writeServiceAccount: keyFile))
        try emulator.start()
    }

    override func tearDown() {
        emulator.stop()
        try? FileManager.default.removeItem(at: keyFile)
    }

    private func form(_ items: [(String, String)]) -> [UInt8] { Array(OAuthHarness.query(items).utf8) }

    func testChunkedFormBasicAuthAndKeepAlive() throws {
        let c = try RawHTTPConnection(port: emulator.port)
        let body = form([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token")])
        let half = body.count / 2
        let crlf: [UInt8] = [13, 10]
        var chunked: [UInt8] = Array(String(half, radix: 16).utf8) + crlf
        chunked += body[..<half]
        chunked += crlf + Array(String(body.count - half, radix: 16).utf8) + crlf
        chunked += body[half...]
        chunked += crlf + Array("0\r\n\r\n".utf8)
        try c.sendRequest("POST", "/token", headers: [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Transfer-Encoding", "chunked"),
            ("Authorization", "Basic " + Data("raw-client:raw-secret".utf8).base64EncodedString()),
        ], body: chunked)
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(r.header("Content-Type"), "application/json; charset=utf-8")
        XCTAssertEqual(r.header("Cache-Control"), "no-cache, no-store, max-age=0, must-revalidate")
        let token = try XCTUnwrap(r.json?["access_token"] as? String)

        // Same connection: a malformed request answers Google's error and the connection still serves.
        try c.sendRequest("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: form([("grant_type", "magic")]))
        let bad = try c.readResponse()
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(bad.json?["error"] as? String, "unsupported_grant_type")
        try c.sendRequest("GET", "/tokeninfo?access_token=" + token)
        let info = try c.readResponse()
        XCTAssertEqual(info.status, 200, info.text)
        XCTAssertEqual(info.json?["azp"] as? String, "raw-client")
    }

    func testConsentRedirectOverHTTP() throws {
        let c = try RawHTTPConnection(port: emulator.port)
        let q = OAuthHarness.query([("client_id", "c"), ("redirect_uri", "http://127.0.0.1:9/"), ("response_type", "code"),
                                    ("scope", "https://www.googleapis.com/auth/drive"), ("state", "xyz")])
        try c.sendRequest("GET", "/o/oauth2/v2/auth?" + q)
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 302)
        let location = try XCTUnwrap(r.header("Location"))
        XCTAssertTrue(location.hasPrefix("http://127.0.0.1:9/?state=xyz&code=4%2F"), location)
        try c.sendRequest("GET", "/o/oauth2/v2/auth?client_id=c")
        let page = try c.readResponse()
        XCTAssertEqual(page.status, 400)
        XCTAssertTrue(page.text.contains("Missing required parameter: redirect_uri"))
    }

    func testServiceAccountKeyWrittenAtStartIsTrustedAtTheURLReached() throws {
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: keyFile)) as? [String: Any])
        XCTAssertEqual(json["token_uri"] as? String, emulator.baseURL + "/token")
        let key = try RSAKey(privateKeyPEM: try XCTUnwrap(json["private_key"] as? String))
        let now = Int(Date().timeIntervalSince1970)
        let jwt = try JWT.signRS256(claims: JWT.ServiceAccountClaims(iss: OAuthService.serviceAccountEmail,
                                                                     scope: "https://www.googleapis.com/auth/drive",
                                                                     aud: emulator.baseURL + "/token", iat: now, exp: now + 3600),
                                    key: key)
        let c = try RawHTTPConnection(port: emulator.port)
        try c.sendRequest("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                          body: form([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", jwt)]))
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertTrue((r.json?["access_token"] as? String)?.hasPrefix("ya29.c.") == true)
        // Counted before the answer was sent: no polling.
        XCTAssertEqual(emulator.stats().methods["token"]?.requests, 1, "counted under the method name 'token'")
    }

    func testControlRevokeReachesTheOAuthService() throws {
        emulator.revoke(token: nil)
        let c = try RawHTTPConnection(port: emulator.port)
        try c.sendRequest("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                          body: form([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "c")]))
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json?["error"] as? String, "invalid_grant")
    }
}
