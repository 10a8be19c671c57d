import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class OAuthTokenTests: XCTestCase {
    func testAuthorizationCodeWithS256IssuesGoogleShapedTokens() throws {
        let h = OAuthHarness()
        let code = try h.authorize()
        let r = try h.send("POST", "/token", form: [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", "client-1"), ("client_secret", "secret-1"),
            ("redirect_uri", OAuthHarness.redirect), ("code_verifier", OAuthHarness.verifier),
        ])
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.headers["Content-Type"], "application/json; charset=utf-8")
        XCTAssertEqual(r.headers["Cache-Control"], "no-cache, no-store, max-age=0, must-revalidate")
        XCTAssertEqual(r.headers["Server"], "ESF")
        let j = OAuthHarness.json(r)
        let access = try XCTUnwrap(j["access_token"] as? String)
        XCTAssertTrue(access.hasPrefix("ya29."))
        XCTAssertTrue((j["refresh_token"] as? String)?.hasPrefix("1//") == true)
        XCTAssertEqual(j["token_type"] as? String, "Bearer")
        XCTAssertEqual(j["scope"] as? String, "https://www.googleapis.com/auth/drive")
        XCTAssertEqual((j["expires_in"] as? NSNumber)?.intValue, 3600, "a number, not a string")
        XCTAssertFalse(j["expires_in"] is String)
        XCTAssertEqual(h.bearer(access), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
    }

    func testWithoutOfflineAccessNoRefreshToken() throws {
        let h = OAuthHarness()
        let j = try h.exchange(try h.authorize(offline: false))
        XCTAssertEqual(j.status, 200)
        XCTAssertNil(j.json["refresh_token"])
    }

    func testWrongVerifierMissingVerifierAndReuse() throws {
        let h = OAuthHarness()
        var r = try h.exchange(try h.authorize(), verifier: "wrong-verifier-0123456789-0123456789-0123456789")
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(r.json["error_description"] as? String, "Invalid code verifier.")

        r = try h.exchange(try h.authorize(), verifier: nil)
        XCTAssertEqual(r.json["error_description"] as? String, "Missing code verifier.")

        let code = try h.authorize()
        XCTAssertEqual(try h.exchange(code).status, 200)
        r = try h.exchange(code)
        XCTAssertEqual(r.status, 400, "a code is one-shot")
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(r.json["error_description"] as? String, "Bad Request")
    }

    func testPlainChallenge() throws {
        let h = OAuthHarness()
        let plain = OAuthHarness.verifier
        XCTAssertEqual(try h.exchange(try h.authorize(challenge: plain, method: "plain")).status, 200)
        XCTAssertEqual(try h.exchange(try h.authorize(challenge: plain, method: nil)).status, 200, "method defaults to plain")
        XCTAssertEqual(try h.exchange(try h.authorize(challenge: plain, method: "plain"), verifier: plain + "x").status, 400)
    }

    func testCodeIsBoundToRedirectAndClientAndExpires() throws {
        let h = OAuthHarness()
        var r = try h.exchange(try h.authorize(), redirect: "http://127.0.0.1:45679/callback")
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        r = try h.exchange(try h.authorize(), client: "other-client")
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        let code = try h.authorize()
        h.clock.advance(601)
        XCTAssertEqual(try h.exchange(code).json["error"] as? String, "invalid_grant", "codes live ten minutes")
        r = try h.exchange("garbage")
        XCTAssertEqual(r.json["error_description"] as? String, "Malformed auth code.")
    }

    func testMissingParametersAndClient() throws {
        let h = OAuthHarness()
        var r = try h.token([("grant_type", "authorization_code"), ("code", "4/x"), ("redirect_uri", OAuthHarness.redirect)])
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_request")
        XCTAssertEqual(r.json["error_description"] as? String, "Could not determine client ID from request.")
        r = try h.token([("grant_type", "authorization_code"), ("client_id", "c"), ("redirect_uri", OAuthHarness.redirect)])
        XCTAssertEqual(r.json["error_description"] as? String, "Missing required parameter: code")
        r = try h.token([("grant_type", "authorization_code"), ("client_id", "c"), ("code", "4/x")])
        XCTAssertEqual(r.json["error_description"] as? String, "Missing required parameter: redirect_uri")
        r = try h.token([("grant_type", "refresh_token"), ("client_id", "c")])
        XCTAssertEqual(r.json["error_description"] as? String, "Missing required parameter: refresh_token")
        r = try h.token([("grant_type", Self.jwt)])
        XCTAssertEqual(r.json["error_description"] as? String, "Missing required parameter: assertion")
    }

    static let jwt = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    func testUnsupportedGrantAndMalformedBodies() throws {
        let h = OAuthHarness()
        var r = try h.token([("grant_type", "password")])
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "unsupported_grant_type")
        XCTAssertEqual(r.json["error_description"] as? String, "Invalid grant_type: password")
        r = try h.token([])
        XCTAssertEqual(r.json["error_description"] as? String, "Invalid grant_type: ")

        for raw: [UInt8] in [Array("%%%&&&==".utf8), [0xFF, 0xFE, 0x00], Array("grant_type".utf8)] {
            let resp = try h.send("POST", "/token", rawBody: raw, headers: [("Content-Type", "application/x-www-form-urlencoded")])
            XCTAssertEqual(resp.status, 400, "\(raw)")
            XCTAssertNotNil(OAuthHarness.json(resp)["error"], "\(raw)")
        }
        let badJSON = try h.send("POST", "/token", rawBody: Array("{not json".utf8), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(OAuthHarness.json(badJSON)["error"] as? String, "invalid_request")
        let huge = try h.send("POST", "/token", rawBody: [UInt8](repeating: 0x61, count: 100_000))
        XCTAssertEqual(huge.status, 413)
        let get = try h.send("GET", "/token")
        XCTAssertEqual(get.status, 405)
        XCTAssertEqual(get.headers["Cache-Control"], "private")
    }

    func testJSONBodyAndBasicClientCredentials() throws {
        let h = OAuthHarness()
        let body = try JSONSerialization.data(withJSONObject: ["grant_type": "refresh_token", "refresh_token": "drivefs-emulator-refresh-token",
                                                               "client_id": "json-client"])
        let r = try h.send("POST", "/token", rawBody: Array(body), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(r.status, 200)

        // Client credentials in HTTP Basic bind the issued refresh token like form ones do.
        let code = try h.authorize(client: "basic client")
        let basic = "Basic " + Data("basic%20client:s%3Acret".utf8).base64EncodedString()
        let ex = try h.token([("grant_type", "authorization_code"), ("code", code), ("redirect_uri", OAuthHarness.redirect),
                              ("code_verifier", OAuthHarness.verifier)], headers: [("Authorization", basic)])
        XCTAssertEqual(ex.status, 200, "\(ex.json)")
        let refresh = try XCTUnwrap(ex.json["refresh_token"] as? String)
        let ok = try h.token([("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "basic client"), ("client_secret", "s:cret")])
        XCTAssertEqual(ok.status, 200)
    }

    func testRefreshTokenGrantIsBoundToItsClient() throws {
        let h = OAuthHarness()
        let refresh = try XCTUnwrap(try h.exchange(try h.authorize()).json["refresh_token"] as? String)
        var r = try h.token([("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "client-1"), ("client_secret", "secret-1")])
        XCTAssertEqual(r.status, 200)
        XCTAssertNil(r.json["refresh_token"], "a refresh answers no new refresh token")
        XCTAssertEqual(r.json["scope"] as? String, "https://www.googleapis.com/auth/drive")
        r = try h.token([("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "client-2"), ("client_secret", "secret-1")])
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.json["error"] as? String, "unauthorized_client")
        r = try h.token([("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "client-1"), ("client_secret", "wrong")])
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.json["error"] as? String, "invalid_client")
        r = try h.token([("grant_type", "refresh_token"), ("refresh_token", "1//unknown"), ("client_id", "client-1")])
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(r.json["error_description"] as? String, "Token has been expired or revoked.")
    }

    func testRefreshMayNarrowButNotWidenScopes() throws {
        let h = OAuthHarness()
        let code = try h.authorize(scope: "https://www.googleapis.com/auth/drive https://www.googleapis.com/auth/drive.file")
        let refresh = try XCTUnwrap(try h.exchange(code).json["refresh_token"] as? String)
        let base = [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "client-1"), ("client_secret", "secret-1")]
        let narrow = try h.token(base + [("scope", "https://www.googleapis.com/auth/drive.file")])
        XCTAssertEqual(narrow.status, 200)
        XCTAssertEqual(h.bearer(narrow.json["access_token"]), .granted(scopes: ["https://www.googleapis.com/auth/drive.file"]))
        let wide = try h.token(base + [("scope", "https://www.googleapis.com/auth/gmail")])
        XCTAssertEqual(wide.json["error"] as? String, "invalid_scope")
    }

    func testWellKnownRefreshTokenWorksForAnyClient() throws {
        let h = OAuthHarness()
        for (id, secret) in [("a", "b"), ("rclone", ""), ("12345.apps.googleusercontent.com", "GOCSPX-x")] {
            let r = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", id),
                                 ("client_secret", secret)])
            XCTAssertEqual(r.status, 200, id)
            XCTAssertEqual(h.bearer(r.json["access_token"]), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        }
        let ro = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "a"),
                              ("scope", "https://www.googleapis.com/auth/drive.readonly")])
        XCTAssertEqual(h.bearer(ro.json["access_token"]), .granted(scopes: ["https://www.googleapis.com/auth/drive.readonly"]))
    }

    func testAccessTokensExpireAfterTheLifetime() throws {
        let h = OAuthHarness(lifetime: 5)
        let r = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "a")])
        XCTAssertEqual((r.json["expires_in"] as? NSNumber)?.intValue, 5)
        let token = r.json["access_token"]
        XCTAssertEqual(h.bearer(token), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        h.clock.advance(4.9)
        XCTAssertEqual(h.bearer(token), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        h.clock.advance(0.2)
        XCTAssertEqual(h.bearer(token), .invalid)
    }

    func testValidatorHeaderForms() throws {
        let h = OAuthHarness()
        let token = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "a")])
            .json["access_token"] as! String
        XCTAssertEqual(h.service.check(authorization: nil), .missing)
        XCTAssertEqual(h.service.check(authorization: ""), .missing)
        XCTAssertEqual(h.service.check(authorization: "bearer \(token)"), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        XCTAssertEqual(h.service.check(authorization: "Basic \(token)"), .invalid)
        XCTAssertEqual(h.service.check(authorization: "Bearer"), .invalid)
        XCTAssertEqual(h.service.check(authorization: "Bearer ya29.unknown"), .invalid)
    }

    func testTokenInfo() throws {
        let h = OAuthHarness()
        let token = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "a")])
            .json["access_token"] as! String
        h.clock.advance(100)
        let r = try h.send("GET", "/tokeninfo?access_token=" + token)
        let j = OAuthHarness.json(r)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(j["scope"] as? String, "https://www.googleapis.com/auth/drive")
        XCTAssertEqual(j["expires_in"] as? String, "3500")
        XCTAssertEqual(j["azp"] as? String, "a")
        XCTAssertEqual(try h.send("GET", "/tokeninfo?access_token=nope").status, 400)
    }
}
