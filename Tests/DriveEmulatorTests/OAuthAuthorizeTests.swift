import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class OAuthAuthorizeTests: XCTestCase {
    func testConsentRedirectsWithStateCodeAndScope() throws {
        let h = OAuthHarness()
        let q = OAuthHarness.query([("client_id", "c"), ("redirect_uri", "http://127.0.0.1:5000/cb?x=1"), ("response_type", "code"),
                                    ("scope", "https://www.googleapis.com/auth/drive https://www.googleapis.com/auth/drive.file"),
                                    ("state", "a b&c=d")])
        let r = try h.send("GET", "/o/oauth2/v2/auth?" + q)
        XCTAssertEqual(r.status, 302)
        let location = try XCTUnwrap(r.headers["Location"])
        XCTAssertTrue(location.hasPrefix("http://127.0.0.1:5000/cb?x=1&state="), location)
        let p = OAuthHarness.redirectParams(location)
        XCTAssertEqual(p["state"], "a b&c=d", "state passes through unchanged")
        XCTAssertEqual(p["x"], "1")
        XCTAssertTrue(p["code"]?.hasPrefix("4/") == true)
        XCTAssertEqual(p["scope"], "https://www.googleapis.com/auth/drive https://www.googleapis.com/auth/drive.file")
    }

    func testLegacyPathAndLoopbackVariants() throws {
        let h = OAuthHarness()
        for redirect in ["http://localhost:1234/", "http://[::1]:80/x", "http://127.0.0.1"] {
            let q = OAuthHarness.query([("client_id", "c"), ("redirect_uri", redirect), ("response_type", "code"), ("scope", "s")])
            let r = try h.send("GET", "/o/oauth2/auth?" + q)
            XCTAssertEqual(r.status, 302, redirect)
            XCTAssertNil(OAuthHarness.redirectParams(r.headers["Location"]!)["state"], "no state asked, none sent")
        }
    }

    func testErrorsArePagesNeverRedirects() throws {
        let h = OAuthHarness()
        let good: [String: String] = ["client_id": "c", "redirect_uri": OAuthHarness.redirect, "response_type": "code", "scope": "s"]
        let cases: [([String: String?], String, String)] = [
            (["client_id": nil], "Error 400: invalid_request", "Missing required parameter: client_id"),
            (["redirect_uri": nil], "Error 400: invalid_request", "Missing required parameter: redirect_uri"),
            (["response_type": nil], "Error 400: invalid_request", "Missing required parameter: response_type"),
            (["scope": nil], "Error 400: invalid_request", "Missing required parameter: scope"),
            (["scope": ""], "Error 400: invalid_request", "Missing required parameter: scope"),
            (["redirect_uri": "urn:ietf:wg:oauth:2.0:oob"], "Error 400: invalid_request", "out-of-band"),
            (["redirect_uri": "https://evil.example.com/cb"], "Error 400: redirect_uri_mismatch", "loopback"),
            (["redirect_uri": "http://192.168.1.1:80/"], "Error 400: redirect_uri_mismatch", "loopback"),
            (["redirect_uri": "::garbage::"], "Error 400: redirect_uri_mismatch", "loopback"),
            (["response_type": "token"], "Error 400: unsupported_response_type", "Invalid response_type: token"),
            (["code_challenge": "short"], "Error 400: invalid_request", "Invalid code_challenge"),
            (["code_challenge_method": "S256"], "Error 400: invalid_request", "Missing required parameter: code_challenge"),
        ]
        for (change, title, detail) in cases {
            var params = good
            for (k, v) in change { params[k] = v }
            let q = OAuthHarness.query(params.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            let r = try h.send("GET", "/o/oauth2/v2/auth?" + q)
            XCTAssertEqual(r.status, 400, "\(change)")
            XCTAssertNil(r.headers["Location"], "\(change)")
            XCTAssertEqual(r.headers["Content-Type"], "text/html; charset=utf-8")
            let page = OAuthHarness.text(r)
            XCTAssertTrue(page.contains(title), "\(change): \(page)")
            XCTAssertTrue(page.contains(detail), "\(change): \(page)")
        }
    }

    func testUserInputIsEscapedInErrorPages() throws {
        let h = OAuthHarness()
        let q = OAuthHarness.query([("client_id", "c"), ("redirect_uri", OAuthHarness.redirect), ("response_type", "<script>"), ("scope", "s")])
        let page = OAuthHarness.text(try h.send("GET", "/o/oauth2/v2/auth?" + q))
        XCTAssertFalse(page.contains("<script>"))
        XCTAssertTrue(page.contains("&lt;script&gt;"))
    }

    func testRoutesAndMethodNames() {
        let h = OAuthHarness()
        func name(_ target: String) -> String? { h.service.route(for: HTTPRequest(method: "GET", target: target))?.method }
        XCTAssertEqual(name("/token"), "token")
        XCTAssertEqual(name("/o/oauth2/token"), "token")
        XCTAssertEqual(name("/o/oauth2/v2/auth?client_id=x"), "oauth.authorize")
        XCTAssertEqual(name("/o/oauth2/auth"), "oauth.authorize")
        XCTAssertEqual(name("/revoke?token=x"), "oauth.revoke")
        XCTAssertEqual(name("/tokeninfo"), "oauth.tokeninfo")
        XCTAssertNil(name("/drive/v3/files"))
        XCTAssertNil(name("/tokens"))
    }
}
