import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The sharing endpoints of the control API through the real server, while a client holds a token:
/// an item made as another user and shared shows up, unsharing takes it away, and none of it is
/// counted in the stats.
final class ControlSharingTests: XCTestCase {
    func testShareAndUnshareWhileAClientRuns() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let port = emulator.port
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let token = try XCTUnwrap(try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                      body: form).json?["access_token"] as? String)
        let auth = [("Authorization", "Bearer \(token)")]
        func control(_ method: String, _ name: String, _ json: String? = nil) throws -> RawHTTPResponse {
            try RawHTTP.request(port: port, method, "/__emulator/\(name)", headers: json == nil ? [] : [("Content-Type", "application/json")],
                                body: json.map { Array($0.utf8) } ?? (method == "POST" ? [] : nil))
        }
        let made = try control("POST", "items", #"{"owner":"colleague@example.com","name":"budget.csv","content":"a,b\n","role":"writer"}"#)
        XCTAssertEqual(made.status, 200, made.text)
        let id = try XCTUnwrap(made.json?["id"] as? String)
        XCTAssertEqual(made.json?["role"] as? String, "writer")
        let q = FileResource.queryEscape("sharedWithMe and trashed = false")
        let listed = try RawHTTP.request(port: port, "GET", "/drive/v3/files?q=\(q)&fields=files(id,owners(emailAddress))", headers: auth)
        XCTAssertEqual(listed.status, 200, listed.text)
        XCTAssertEqual((listed.json?["files"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [id])
        let state = try control("GET", "sharing")
        XCTAssertEqual(((state.json?["shared"] as? [[String: Any]])?.first)?["role"] as? String, "writer")

        XCTAssertEqual(try control("POST", "unshare", #"{"fileId":"\#(id)"}"#).status, 200)
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/drive/v3/files/\(id)", headers: auth).status, 404)
        XCTAssertEqual(try control("DELETE", "share").status, 405)
        XCTAssertEqual(try control("POST", "share", "{not json").status, 400)
        XCTAssertEqual(try control("POST", "nonsense").status, 404)
        XCTAssertNil(emulator.stats().methods["unknown"], "control requests are not counted")
        XCTAssertEqual(emulator.stats().totals.requests, 3, "the token, the listing and the 404")
    }
}
