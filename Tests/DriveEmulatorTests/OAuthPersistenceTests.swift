import DriveEmulator
import DriveSupport
import Foundation
import XCTest

final class OAuthPersistenceTests: XCTestCase {
    private var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-persist-\(UUID().uuidString)")
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    private func refresh(_ h: OAuthHarness) throws -> String {
        let r = try h.token([("grant_type", "refresh_token"), ("refresh_token", "drivefs-emulator-refresh-token"), ("client_id", "c")])
        return try XCTUnwrap(r.json["access_token"] as? String)
    }

    func testAppendedAccessTokensSurviveARestartButNotARevocation() throws {
        let clock = ManualTimeSource()
        let h1 = OAuthHarness(stateDirectory: dir, clock: clock)
        let first = try refresh(h1)
        let second = try refresh(h1)
        let log = dir.appendingPathComponent("oauth-access.log")
        XCTAssertEqual(AuthFileMode.of(log), 0o600)
        XCTAssertEqual(AuthFileMode.of(dir.appendingPathComponent("oauth.json")), 0o600)

        let h2 = OAuthHarness(stateDirectory: dir, clock: clock)
        XCTAssertNotEqual(h2.bearer(first), .invalid)
        XCTAssertNotEqual(h2.bearer(second), .invalid)

        // The revocation rewrites the state and empties the log: a third start sees neither token.
        h2.service.revoke(token: second)
        XCTAssertEqual((try? Data(contentsOf: log))?.count ?? 0, 0)
        let h3 = OAuthHarness(stateDirectory: dir, clock: clock)
        XCTAssertEqual(h3.bearer(first), .invalid, "the well-known grant was revoked with its access token")
        XCTAssertEqual(h3.bearer(second), .invalid)
    }

    func testManyTokensStayCheapAndExpiredOnesAreSwept() throws {
        let clock = ManualTimeSource()
        let h = OAuthHarness(lifetime: 10, stateDirectory: dir, clock: clock)
        let started = Date()
        var last = ""
        for i in 0..<3000 {
            last = try refresh(h)
            if i % 100 == 0 { clock.advance(1) }
        }
        // Generous on purpose (a loaded 2-core machine); the sweep itself is asserted below.
        XCTAssertLessThan(Date().timeIntervalSince(started), 60, "minting must not grow with the number of live tokens")
        XCTAssertNotEqual(h.bearer(last), .invalid)
        // After a restart only unexpired tokens come back.
        let again = OAuthHarness(stateDirectory: dir, clock: clock)
        XCTAssertNotEqual(again.bearer(last), .invalid)
        clock.advance(11)
        XCTAssertEqual(again.bearer(last), .invalid)
    }
}

enum AuthFileMode {
    static func of(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
