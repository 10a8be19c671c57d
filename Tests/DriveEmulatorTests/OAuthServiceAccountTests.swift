@testable import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class OAuthServiceAccountTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-sa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    private func writeKey(_ h: OAuthHarness, tokenURL: String = "http://127.0.0.1:8080/token") throws -> (json: [String: Any], key: RSAKey) {
        let file = dir.appendingPathComponent("sa.json")
        try h.service.writeServiceAccountKey(to: file, tokenURL: tokenURL)
        let attrs = try FileManager.default.attributesOfItem(atPath: file.path)
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        return (json, try RSAKey(privateKeyPEM: try XCTUnwrap(json["private_key"] as? String)))
    }

    private func assertion(_ key: RSAKey, iss: String = OAuthService.serviceAccountEmail, aud: String = "https://oauth2.googleapis.com/token",
                           iat: Double, lifetime: Double = 3600, scope: String? = "https://www.googleapis.com/auth/drive",
                           sub: String? = nil) throws -> String {
        var claims: [String: LooseClaims.Value] = ["iss": .string(iss), "aud": .string(aud), "iat": .int(Int(iat)), "exp": .int(Int(iat + lifetime))]
        if let scope { claims["scope"] = .string(scope) }
        if let sub { claims["sub"] = .string(sub) }
        return try JWT.signRS256(claims: LooseClaims(claims), key: key, keyID: "k")
    }

    private func grant(_ h: OAuthHarness, _ assertion: String) throws -> (status: Int, json: [String: Any]) {
        try h.token([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)])
    }

    func testKeyFileHasGoogleFormat() throws {
        let h = OAuthHarness()
        let (json, _) = try writeKey(h)
        XCTAssertEqual(json["type"] as? String, "service_account")
        XCTAssertEqual(json["client_email"] as? String, OAuthService.serviceAccountEmail)
        XCTAssertEqual(json["token_uri"] as? String, "http://127.0.0.1:8080/token")
        XCTAssertEqual((json["private_key_id"] as? String)?.count, 40)
        XCTAssertTrue((json["private_key"] as? String)?.hasPrefix("-----BEGIN PRIVATE KEY-----\n") == true)
        for field in ["project_id", "client_id", "auth_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain"] {
            XCTAssertNotNil(json[field] as? String, field)
        }
        let text = try String(contentsOf: dir.appendingPathComponent("sa.json"), encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("{\n  \"type\": \"service_account\",\n  \"project_id\""), "Google's member order")
        // A second write is the same identity and the same key.
        let (again, _) = try writeKey(h)
        XCTAssertEqual(again["private_key"] as? String, json["private_key"] as? String)
    }

    func testJWTBearerWithTheWrittenKey() throws {
        let h = OAuthHarness()
        let (_, key) = try writeKey(h)
        for aud in ["https://oauth2.googleapis.com/token", "http://127.0.0.1:8080/token"] {
            let r = try grant(h, try assertion(key, aud: aud, iat: h.clock.now(), sub: "user@example.com"))
            XCTAssertEqual(r.status, 200, "\(aud): \(r.json)")
            XCTAssertEqual(r.json["token_type"] as? String, "Bearer")
            XCTAssertNil(r.json["refresh_token"])
            XCTAssertEqual(h.bearer(r.json["access_token"]), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        }
    }

    func testWrongKeyIsRejected() throws {
        let h = OAuthHarness()
        _ = try writeKey(h)
        let r = try grant(h, try assertion(try RSAKey.generate(), iat: h.clock.now()))
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(r.json["error_description"] as? String, "Invalid JWT Signature.")
    }

    func testExpiredTooLongAndFutureAssertionsAreRejected() throws {
        let h = OAuthHarness()
        let (_, key) = try writeKey(h)
        let now = h.clock.now()
        for (iat, lifetime) in [(now - 7200, 3600.0), (now, 7200), (now + 3600, 3600), (now, -10)] {
            let r = try grant(h, try assertion(key, iat: iat, lifetime: lifetime))
            XCTAssertEqual(r.status, 400, "iat \(iat - now) lifetime \(lifetime)")
            XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
            XCTAssertTrue((r.json["error_description"] as? String)?.contains("short-lived") == true)
        }
        XCTAssertEqual(try grant(h, try assertion(key, iat: now + 60)).status, 200, "small clock skew is tolerated")
    }

    func testWrongAudienceIssuerScopeAndGarbage() throws {
        let h = OAuthHarness()
        let (_, key) = try writeKey(h)
        let now = h.clock.now()
        var r = try grant(h, try assertion(key, aud: "https://example.com/token", iat: now))
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        XCTAssertTrue((r.json["error_description"] as? String)?.contains("audience") == true)
        r = try grant(h, try assertion(key, iss: "someone@else.iam.gserviceaccount.com", iat: now))
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
        r = try grant(h, try assertion(key, iat: now, scope: nil))
        XCTAssertEqual(r.json["error"] as? String, "invalid_scope")
        r = try grant(h, "not.a.jwt")
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
    }

    /// Each claim left out, or of another JSON type, gets Google's answer for the check that reads
    /// it (docs/auth.md); `sub` may be left out, but one that is no string is refused.
    func testEachMissingOrIllTypedClaimGetsTheAnswerOfItsCheck() throws {
        let h = OAuthHarness()
        let (_, key) = try writeKey(h)
        let now = Int(h.clock.now())
        let complete: [String: LooseClaims.Value] = [
            "iss": .string(OAuthService.serviceAccountEmail), "aud": .string("https://oauth2.googleapis.com/token"),
            "iat": .int(now), "exp": .int(now + 3600), "scope": .string("https://www.googleapis.com/auth/drive"),
            "sub": .string("user@example.com"),
        ]
        let answers: [String: (error: String, description: String)] = [
            "iss": ("invalid_grant", "Invalid grant: account not found"),
            "aud": ("invalid_grant", "Invalid JWT: Failed audience check."),
            "iat": ("invalid_grant", OAuthService.shortLivedMessage),
            "exp": ("invalid_grant", OAuthService.shortLivedMessage),
            "scope": ("invalid_scope", "Invalid OAuth scope or ID token audience provided."),
            "sub": ("invalid_grant", "Bad Request"),
        ]
        for (name, answer) in answers.sorted(by: { $0.key < $1.key }) {
            var illTyped = complete
            illTyped[name] = name == "iat" || name == "exp" ? .string("\(now)") : .int(7)
            var missing = complete
            missing[name] = nil
            for (how, claims) in [("ill-typed", illTyped), ("missing", missing)] {
                let r = try grant(h, try JWT.signRS256(claims: LooseClaims(claims), key: key, keyID: "k"))
                if name == "sub" && how == "missing" {
                    XCTAssertEqual(r.status, 200, "no sub: \(r.json)")
                    continue
                }
                XCTAssertEqual(r.status, 400, "\(name) \(how)")
                XCTAssertEqual(r.json["error"] as? String, answer.error, "\(name) \(how)")
                XCTAssertEqual(r.json["error_description"] as? String, answer.description, "\(name) \(how)")
            }
        }
        XCTAssertEqual(try grant(h, try JWT.signRS256(claims: LooseClaims(complete), key: key, keyID: "k")).status, 200)
    }

    func testKeySurvivesRestartWithStateDirectory() throws {
        let state = dir.appendingPathComponent("state")
        let h1 = OAuthHarness(stateDirectory: state)
        let (_, key) = try writeKey(h1, tokenURL: "https://oauth2.example.test/token")
        let h2 = OAuthHarness(stateDirectory: state, clock: h1.clock)
        let r = try grant(h2, try assertion(key, aud: "https://oauth2.example.test/token", iat: h2.clock.now()))
        XCTAssertEqual(r.status, 200, "\(r.json)")
    }
}

/// Claims as a test writes them: any claim left out, or of another JSON type than Google's.
struct LooseClaims: Encodable {
    enum Value: Encodable {
        case string(String)
        case int(Int)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let s): try container.encode(s)
            case .int(let i): try container.encode(i)
            }
        }
    }

    private struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    let claims: [String: Value]
    init(_ claims: [String: Value]) { self.claims = claims }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in claims { try container.encode(value, forKey: Key(stringValue: name)) }
    }
}
