import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// `GET /__emulator/usage`: what the drives hold, for "has everything landed" checks that must not
/// show in the request counters.
final class ControlUsageTests: XCTestCase {
    func testUsageCountsFilesFoldersAndBytesOutsideTheTrashAndIsNotCounted() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let port = emulator.port
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let token = try XCTUnwrap(try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                      body: form).json?["access_token"] as? String)
        let auth = [("Authorization", "Bearer \(token)")]
        func usage() throws -> [String: Int] {
            let r = try RawHTTP.request(port: port, "GET", "/__emulator/usage")
            XCTAssertEqual(r.status, 200, r.text)
            return (r.json ?? [:]).compactMapValues { $0 as? Int }
        }
        XCTAssertEqual(try usage(), ["files": 0, "folders": 0, "bytes": 0], "the root is not counted")
        let folder = try RawHTTP.request(port: port, "POST", "/drive/v3/files", headers: auth + [("Content-Type", "application/json")],
                                         body: Array(#"{"name":"f","mimeType":"application/vnd.google-apps.folder"}"#.utf8))
        XCTAssertEqual(folder.status, 200)
        let a = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=media", headers: auth, body: [1, 2, 3])
        let b = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=media", headers: auth, body: [1, 2, 3, 4, 5])
        XCTAssertEqual([a.status, b.status], [200, 200])
        XCTAssertEqual(try usage(), ["files": 2, "folders": 1, "bytes": 8])
        let id = try XCTUnwrap(b.json?["id"] as? String)
        XCTAssertEqual(try RawHTTP.request(port: port, "PATCH", "/drive/v3/files/\(id)", headers: auth + [("Content-Type", "application/json")],
                                           body: Array(#"{"trashed":true}"#.utf8)).status, 200)
        XCTAssertEqual(try usage(), ["files": 1, "folders": 1, "bytes": 3], "the trash is left out")
        XCTAssertEqual(emulator.usage(), DriveUsage(files: 1, folders: 1, bytes: 3))
        XCTAssertNil(emulator.stats().methods["unknown"], "control requests are not counted")
        XCTAssertEqual(emulator.stats().totals.requests, 5)
        XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/usage").status, 405)
    }
}
