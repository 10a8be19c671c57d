import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class AuthGrantTests: XCTestCase {
    let tokenURL = "http://127.0.0.1:9/token"

    // MARK: RefreshTokenGrant, scripted

    func testRefreshGrantSendsTheFormAndComputesExpiry() throws {
        let t = ScriptedTransport()
        t.push(status: 200, json: #"{"access_token":"ya29.abc","expires_in":3599,"scope":"s1 s2","token_type":"Bearer"}"#)
        let clock = ManualTimeSource(now: 1000)
        let grant = RefreshTokenGrant(tokenURL: tokenURL, clientID: "cid", clientSecret: "csecret", refreshToken: "1//rt", transport: t, clock: clock)
        let token = try grant.fetchToken()
        XCTAssertEqual(token, AccessToken(value: "ya29.abc", expiresAt: 4599, scope: "s1 s2"))
        let req = try XCTUnwrap(t.requests.first)
        XCTAssertEqual(req.method, "POST")
        XCTAssertEqual(req.url, tokenURL)
        XCTAssertEqual(req.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(req.formFields, ["grant_type": "refresh_token", "refresh_token": "1//rt", "client_id": "cid", "client_secret": "csecret"])
    }

    func testRefreshGrantErrorsAreTypedAndCarryNoSecret() throws {
        let secret = "super-secret-value"
        let refresh = "1//refresh-token-value"
        let cases: [(Int, String, (OAuthError) -> Bool)] = [
            (400, #"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#, {
                if case .invalidGrant("Token has been expired or revoked.") = $0 { return true } else { return false } }),
            (401, #"{"error":"invalid_client","error_description":"Unauthorized"}"#, {
                if case .invalidClient = $0 { return true } else { return false } }),
            (401, #"{"error":"unauthorized_client","error_description":"Unauthorized"}"#, {
                if case .invalidClient = $0 { return true } else { return false } }),
            (400, #"{"error":"invalid_request","error_description":"Missing required parameter: refresh_token"}"#, {
                if case .invalidRequest = $0 { return true } else { return false } }),
            (503, "<html>unavailable</html>", { if case .server(503, nil, nil) = $0 { return true } else { return false } }),
            // A server that echoes what it got must not leak it into the error.
            (400, #"{"error":"invalid_grant","error_description":"bad token 1//refresh-token-value for super-secret-value"}"#, {
                if case .invalidGrant = $0 { return true } else { return false } }),
            (200, #"{"token_type":"Bearer"}"#, { if case .malformedResponse = $0 { return true } else { return false } }),
            (200, "not json", { if case .malformedResponse = $0 { return true } else { return false } }),
        ]
        for (status, body, matches) in cases {
            let t = ScriptedTransport()
            t.push(status: status, json: body)
            let grant = RefreshTokenGrant(tokenURL: tokenURL, clientID: "cid", clientSecret: secret, refreshToken: refresh, transport: t)
            XCTAssertThrowsError(try grant.fetchToken(), body) { error in
                guard let e = error as? OAuthError else { return XCTFail("\(error)") }
                XCTAssertTrue(matches(e), "\(body) → \(e)")
                XCTAssertFalse(e.description.contains(secret), e.description)
                XCTAssertFalse(e.description.contains(refresh), e.description)
                XCTAssertFalse(String(reflecting: e).contains(refresh))
            }
        }
    }

    func testInvalidGrantTellsTheUserToLogInAgainAndIsNotTransient() {
        let e = OAuthError.invalidGrant(description: "Token has been expired or revoked.")
        XCTAssertTrue(e.requiresLogin)
        XCTAssertFalse(e.isTransient)
        XCTAssertTrue(e.description.contains("drivefs auth login"))
        XCTAssertTrue(OAuthError.server(status: 503, error: nil, description: nil).isTransient)
        XCTAssertTrue(OAuthError.transport(.timedOut("x")).isTransient)
        XCTAssertFalse(OAuthError.invalidClient(description: "Unauthorized").isTransient)
    }

    func testTransportErrorsAreScrubbed() {
        let t = ScriptedTransport()
        t.push(error: .connectionLost("reset while sending refresh_token=1//abcdef"))
        let grant = RefreshTokenGrant(tokenURL: tokenURL, clientID: "cid", clientSecret: nil, refreshToken: "1//abcdef", transport: t)
        XCTAssertThrowsError(try grant.fetchToken()) { error in
            XCTAssertEqual(error as? OAuthError, .transport(.connectionLost("reset while sending refresh_token=[redacted]")))
        }
    }

    // MARK: RefreshTokenGrant against the emulator's OAuth server

    func testRefreshGrantAgainstEmulatorThenRevoked() throws {
        let clock = ManualTimeSource()
        let service = OAuthService(config: OAuthConfig(tokenLifetime: 120), clock: clock)
        let transport = RouteProviderTransport(service)
        let grant = RefreshTokenGrant(tokenURL: "http://127.0.0.1:8080/token", clientID: "any", clientSecret: "thing",
                                      refreshToken: "drivefs-emulator-refresh-token", transport: transport, clock: clock)
        let token = try grant.fetchToken()
        XCTAssertEqual(token.expiresAt, clock.now() + 120)
        XCTAssertEqual(service.check(authorization: "Bearer " + token.value), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        service.revoke(token: "drivefs-emulator-refresh-token")
        XCTAssertThrowsError(try grant.fetchToken()) { error in
            XCTAssertEqual(error as? OAuthError, .invalidGrant(description: "Token has been expired or revoked."))
            XCTAssertTrue((error as? OAuthError)?.requiresLogin == true)
        }
    }

    // MARK: ServiceAccountGrant

    private func emulatorKey(_ service: OAuthService, tokenURL: String) throws -> (ServiceAccountKey, URL) {
        let dir = try AuthTestFiles.temporaryDirectory("sa")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("key.json")
        try service.writeServiceAccountKey(to: file, tokenURL: tokenURL)
        return (try ServiceAccountKey.load(path: file.path), file)
    }

    func testServiceAccountGrantAgainstEmulator() throws {
        let clock = ManualTimeSource()
        let service = OAuthService(config: OAuthConfig(), clock: clock)
        let (key, _) = try emulatorKey(service, tokenURL: "http://127.0.0.1:8080/token")
        XCTAssertEqual(key.tokenURI, "http://127.0.0.1:8080/token")
        let grant = ServiceAccountGrant(key: key, scopes: ["https://www.googleapis.com/auth/drive.readonly"], subject: "user@example.com",
                                        transport: RouteProviderTransport(service), clock: clock)
        XCTAssertEqual(grant.tokenURL, "http://127.0.0.1:8080/token", "the key's token_uri when none is configured")
        let token = try grant.fetchToken()
        XCTAssertEqual(service.check(authorization: "Bearer " + token.value), .granted(scopes: ["https://www.googleapis.com/auth/drive.readonly"]))
        XCTAssertEqual(token.expiresAt, clock.now() + 3600)
    }

    func testServiceAccountAssertionClaims() throws {
        let service = OAuthService(config: OAuthConfig(), clock: ManualTimeSource())
        let (key, file) = try emulatorKey(service, tokenURL: "http://127.0.0.1:8080/token")
        let t = ScriptedTransport()
        t.push(status: 200, json: #"{"access_token":"ya29.c.x","expires_in":3599,"token_type":"Bearer"}"#)
        let clock = ManualTimeSource(now: 1_800_000_000.7)
        let grant = ServiceAccountGrant(key: key, scopes: ["a", "b"], subject: "boss@example.com", tokenURL: "https://oauth2.googleapis.com/token",
                                        transport: t, clock: clock)
        let token = try grant.fetchToken()
        XCTAssertEqual(token.scope, "a b", "Google answers no scope: the requested one is kept")
        let form = try XCTUnwrap(t.requests.first).formFields
        XCTAssertEqual(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as! [String: Any]
        let publicKey = try RSAKey(privateKeyPEM: json["private_key"] as! String)
        let verified = try JWT.verifyRS256(try XCTUnwrap(form["assertion"]), key: publicKey)
        XCTAssertEqual(try verified.claims(as: JWT.ServiceAccountClaims.self),
                       JWT.ServiceAccountClaims(iss: OAuthService.serviceAccountEmail, scope: "a b", aud: "https://oauth2.googleapis.com/token",
                                                iat: 1_800_000_000, exp: 1_800_003_600, sub: "boss@example.com"))
        XCTAssertEqual(verified.header.kid, json["private_key_id"] as? String)
    }

    func testServiceAccountRejectedAssertionIsInvalidGrant() throws {
        let clock = ManualTimeSource()
        let service = OAuthService(config: OAuthConfig(), clock: clock)
        let (key, _) = try emulatorKey(service, tokenURL: "http://127.0.0.1:8080/token")
        // Another emulator instance made another key: the assertion's signature does not verify.
        let other = OAuthService(config: OAuthConfig(), clock: clock)
        _ = try emulatorKey(other, tokenURL: "http://127.0.0.1:8080/token")
        let grant = ServiceAccountGrant(key: key, scopes: ["s"], transport: RouteProviderTransport(other), clock: clock)
        XCTAssertThrowsError(try grant.fetchToken()) { error in
            XCTAssertEqual(error as? OAuthError, .invalidGrant(description: "Invalid JWT Signature."))
        }
    }

    func testServiceAccountKeyParsingErrorsNameNoKeyMaterial() throws {
        let cases: [(String, String)] = [
            ("[]", "not a JSON object"),
            (#"{"type":"authorized_user"}"#, "\"type\""),
            (#"{"type":"service_account","private_key":"x"}"#, "client_email"),
            (#"{"type":"service_account","client_email":"a@b"}"#, "private_key"),
            (#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n-----END PRIVATE KEY-----\n"}"#, "not a PEM"),
        ]
        for (json, expected) in cases {
            XCTAssertThrowsError(try ServiceAccountKey(json: Data(json.utf8)), json) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains(expected), text)
                XCTAssertFalse(text.contains("SECRETSTUFF"))
            }
        }
    }

    // MARK: Over real HTTP, with the emulator's faults

    func testTokenEndpointFaultIsTransientThenTheGrantWorks() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        emulator.addFaults([FaultRule.status(503, method: "token")])
        let grant = RefreshTokenGrant(tokenURL: emulator.baseURL + "/token", clientID: "c", clientSecret: "s",
                                      refreshToken: "drivefs-emulator-refresh-token", transport: try CurlTransport())
        XCTAssertThrowsError(try grant.fetchToken()) { error in
            guard let e = error as? OAuthError, case .server(503, _, _) = e else { return XCTFail("\(error)") }
            XCTAssertTrue(e.isTransient)
            XCTAssertFalse(e.requiresLogin)
        }
        XCTAssertTrue(try grant.fetchToken().value.hasPrefix("ya29."))
    }

    func testUnreachableTokenEndpointIsATransportError() throws {
        let listener = try LoopbackListener()
        let port = listener.port
        listener.close()
        let grant = RefreshTokenGrant(tokenURL: "http://127.0.0.1:\(port)/token", clientID: "c", clientSecret: "s",
                                      refreshToken: "1//r", transport: try CurlTransport())
        XCTAssertThrowsError(try grant.fetchToken()) { error in
            guard case .transport = error as? OAuthError else { return XCTFail("\(error)") }
            XCTAssertTrue((error as? OAuthError)?.isTransient == true)
        }
    }

    // MARK: Under the TokenManager

    func testTokenManagerRefreshesThroughTheGrantAsTokensExpire() throws {
        let clock = ManualTimeSource()
        let service = OAuthService(config: OAuthConfig(tokenLifetime: 300), clock: clock)
        let grant = RefreshTokenGrant(tokenURL: "http://127.0.0.1:8080/token", clientID: "c", clientSecret: nil,
                                      refreshToken: "drivefs-emulator-refresh-token", transport: RouteProviderTransport(service), clock: clock)
        let manager = TokenManager(grant: grant, time: clock, margin: 60)
        let first = try manager.accessToken()
        XCTAssertEqual(service.check(authorization: "Bearer " + first), .granted(scopes: ["https://www.googleapis.com/auth/drive"]))
        clock.advance(200)
        XCTAssertEqual(try manager.accessToken(), first, "still valid for more than the margin")
        clock.advance(50)
        let second = try manager.accessToken()
        XCTAssertNotEqual(second, first, "refreshed inside the margin, before the server would refuse it")
        XCTAssertNotEqual(service.check(authorization: "Bearer " + second), .invalid)
        XCTAssertEqual(manager.refreshCount, 2)
        // The grant dies: the manager reports what the grant threw, a login-required error.
        service.revoke(token: "drivefs-emulator-refresh-token")
        clock.advance(300)
        XCTAssertThrowsError(try manager.accessToken()) { XCTAssertTrue(($0 as? OAuthError)?.requiresLogin == true, "\($0)") }
    }
}
