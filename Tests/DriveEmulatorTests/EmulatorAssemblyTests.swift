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
        XCTAssertEqual(emulator.stats().methods["token"]?.statuses["200"], 1)

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

    func testStandardEmulatorServesDriveBehindOAuthWithFaults() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let port = emulator.port
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/drive/v3/about?fields=user").status, 401)
        let token = try RawHTTP.request(port: port, "POST", "/token", headers: formHeaders, body: refreshForm)
        let access = try XCTUnwrap(token.json?["access_token"] as? String)
        let auth = [("Authorization", "Bearer \(access)")]
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/drive/v3/about?fields=user", headers: auth).status, 200)

        let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let created = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=media&fields=id",
                                          headers: auth + [("Content-Type", "application/octet-stream")], body: content)
        XCTAssertEqual(created.status, 200, created.text)
        let id = try XCTUnwrap(created.json?["id"] as? String)

        emulator.addFaults([FaultRule(method: "files.get.media", action: .reset(afterBytes: 1000))])
        let cut = try RawHTTPConnection(port: port)
        try cut.sendRequest("GET", "/drive/v3/files/\(id)?alt=media", headers: auth)
        XCTAssertThrowsError(try cut.readResponse())
        XCTAssertEqual(cut.partialBody, Array(content[0..<1000]))

        let whole = try RawHTTP.request(port: port, "GET", "/drive/v3/files/\(id)?alt=media", headers: auth)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.body, content)
        let stats = emulator.stats()
        XCTAssertEqual(stats.methods["files.get.media"]?.statuses, ["reset": 1, "200": 1])
        XCTAssertEqual(stats.methods["files.create.upload"]?.bytesIn, 100_000)
    }
}
