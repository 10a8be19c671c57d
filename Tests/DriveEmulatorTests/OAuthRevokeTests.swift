import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class OAuthRevokeTests: XCTestCase {
    private func login(_ h: OAuthHarness) throws -> (refresh: String, access: String) {
        let j = try h.exchange(try h.authorize()).json
        return (try XCTUnwrap(j["refresh_token"] as? String), try XCTUnwrap(j["access_token"] as? String))
    }

    private func refresh(_ h: OAuthHarness, _ token: String, client: String = "client-1") throws -> (status: Int, json: [String: Any]) {
        try h.token([("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", client), ("client_secret", "secret-1")])
    }

    func testRevokeEndpointKillsRefreshTokenAndItsAccessTokens() throws {
        let h = OAuthHarness()
        let (rt, at1) = try login(h)
        let at2 = try refresh(h, rt).json["access_token"]
        let (otherRT, otherAT) = try login(h)
        let r = try h.send("POST", "/revoke?token=" + OAuthHarness.encode(rt))
        XCTAssertEqual(r.status, 200)
        let again = try refresh(h, rt)
        XCTAssertEqual(again.status, 400)
        XCTAssertEqual(again.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(again.json["error_description"] as? String, "Token has been expired or revoked.")
        XCTAssertEqual(h.bearer(at1), .invalid)
        XCTAssertEqual(h.bearer(at2), .invalid)
        XCTAssertEqual(try refresh(h, otherRT).status, 200, "other grants are untouched")
        XCTAssertNotEqual(h.bearer(otherAT), .invalid)
    }

    func testRevokingAnAccessTokenRevokesItsGrant() throws {
        let h = OAuthHarness()
        let (rt, at) = try login(h)
        XCTAssertEqual(try h.send("POST", "/revoke", form: [("token", at)]).status, 200)
        XCTAssertEqual(h.bearer(at), .invalid)
        XCTAssertEqual(try refresh(h, rt).status, 400)
        let unknown = try h.send("POST", "/revoke", form: [("token", at)])
        XCTAssertEqual(unknown.status, 400)
        XCTAssertEqual(OAuthHarness.json(unknown)["error"] as? String, "invalid_token")
        XCTAssertEqual(try h.send("POST", "/revoke").status, 400)
    }

    func testWellKnownTokenCanBeRevoked() throws {
        let h = OAuthHarness()
        let at = try refresh(h, "drivefs-emulator-refresh-token", client: "any").json["access_token"]
        XCTAssertTrue(h.service.revoke(token: "drivefs-emulator-refresh-token"))
        XCTAssertEqual(h.bearer(at), .invalid)
        let r = try refresh(h, "drivefs-emulator-refresh-token", client: "any")
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json["error"] as? String, "invalid_grant")
    }

    func testRevokeEverythingThenLoginAgain() throws {
        let h = OAuthHarness()
        let (rt, at) = try login(h)
        let pendingCode = try h.authorize()
        h.service.revoke(token: nil)
        XCTAssertEqual(h.bearer(at), .invalid)
        XCTAssertEqual(try refresh(h, rt).status, 400)
        XCTAssertEqual(try refresh(h, "drivefs-emulator-refresh-token").status, 400)
        XCTAssertEqual(try h.exchange(pendingCode).status, 400)
        XCTAssertFalse(h.service.revoke(token: "nothing-like-this"))
        let (rt2, _) = try login(h)
        XCTAssertEqual(try refresh(h, rt2).status, 200, "new logins work after a revoke-all")
    }

    func testStatePersistsAcrossRestarts() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = ManualTimeSource()
        let h1 = OAuthHarness(stateDirectory: dir, clock: clock)
        let (rt, at) = try login(h1)
        let (revokedRT, _) = try login(h1)
        h1.service.revoke(token: revokedRT)
        h1.service.revoke(token: "drivefs-emulator-refresh-token")
        let attrs = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("oauth.json").path)
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)

        let h2 = OAuthHarness(stateDirectory: dir, clock: clock)
        XCTAssertNotEqual(h2.bearer(at), .invalid)
        XCTAssertEqual(try refresh(h2, rt).status, 200)
        XCTAssertEqual(try refresh(h2, revokedRT).status, 400)
        XCTAssertEqual(try refresh(h2, "drivefs-emulator-refresh-token").status, 400)
    }
}
