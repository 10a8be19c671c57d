import XCTest
import Foundation
import DriveSupport
@testable import DriveEmulator

/// The emulator with its standard services, over real HTTP, in-process.
final class EmulatorAssemblyTests: XCTestCase {
    let refreshForm = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
    let formHeaders = [("Content-Type", "application/x-www-form-urlencoded")]

    func testStandardEmulatorServesOAuthAndRevokesThroughTheControlAPI() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        XCTAssertTrue(emulator.baseURL.hasPrefix("http://127.0.0.1:"))
        XCTAssertNotEqual(emulator.port, 0)

        let token = try RawHTTP.request(port: emulator.port, "POST", "/token", headers: formHeaders, body: refreshForm)
        XCTAssertEqual(token.status, 200, token.text)
        XCTAssertNotNil(token.json?["access_token"] as? String)
        XCTAssertEqual(waitForStats(emulator) { $0.methods["token"] != nil }.methods["token"]?.statuses["200"], 1)

        XCTAssertEqual(try RawHTTP.request(port: emulator.port, "POST", "/__emulator/revoke?token=drivefs-emulator-refresh-token").status, 200)
        let refused = try RawHTTP.request(port: emulator.port, "POST", "/token", headers: formHeaders, body: refreshForm)
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.json?["error"] as? String, "invalid_grant")
    }

    func testTokenFaultAppliesToTheOAuthRoute() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        emulator.addFaults([.status(503, method: "token")])
        XCTAssertEqual(try RawHTTP.request(port: emulator.port, "POST", "/token", headers: formHeaders, body: refreshForm).status, 503)
        XCTAssertEqual(try RawHTTP.request(port: emulator.port, "POST", "/token", headers: formHeaders, body: refreshForm).status, 200)
    }

    func testStopIsIdempotentAndFreesThePort() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        let port = emulator.port
        emulator.stop()
        emulator.stop()
        XCTAssertThrowsError(try RawHTTPConnection(port: port))
        // The same port can be bound again.
        let again = try Emulator(config: EmulatorConfig(port: port))
        try again.start()
        defer { again.stop() }
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/__emulator/health").status, 200)
    }

    func testPortInUseFailsToStart() throws {
        let first = try Emulator(config: EmulatorConfig(port: 0))
        try first.start()
        defer { first.stop() }
        let second = try Emulator(config: EmulatorConfig(port: first.port))
        XCTAssertThrowsError(try second.start())
    }
}
