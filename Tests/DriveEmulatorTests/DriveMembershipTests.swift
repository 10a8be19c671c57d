import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The user's role in each shared drive: capabilities by role, writes refused with Google's 403,
/// joining and leaving through the control API, and what the change feed says of it.
final class DriveMembershipTests: XCTestCase {
    var h: DriveHarness!

    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    func membership(_ driveId: String, _ role: String?) throws -> Int {
        let body = Array(try JSONSerialization.data(withJSONObject: ["driveId": driveId, "role": role as Any? ?? NSNull()]))
        let request = HTTPRequest(method: "POST", target: "/__emulator/membership", headers: HTTPHeaders([("Content-Type", "application/json")]),
                                  body: BufferedRequestBody(body), baseURL: "http://127.0.0.1:9999")
        return try XCTUnwrap(h.service.controlResponse("membership", request)).status
    }

    func makeDrive(_ name: String) throws -> String {
        let (status, body) = try h.call("POST", "/drive/v3/drives?requestId=\(UUID().uuidString)", json: ["name": name])
        XCTAssertEqual(status, 200)
        return try XCTUnwrap(body["id"] as? String)
    }

    func create(_ name: String, parent: String, folder: Bool = false) throws -> String {
        var meta: [String: Any] = ["name": name, "parents": [parent]]
        if folder { meta["mimeType"] = DriveMime.folder }
        let (status, body) = try h.call("POST", "/drive/v3/files?supportsAllDrives=true", json: meta)
        XCTAssertEqual(status, 200, "\(body)")
        return try XCTUnwrap(body["id"] as? String)
    }

    func driveCapabilities(_ id: String) throws -> [String: Bool] {
        let (status, body) = try h.call("GET", "/drive/v3/drives/\(id)?fields=capabilities")
        XCTAssertEqual(status, 200, "\(body)")
        return body["capabilities"] as? [String: Bool] ?? [:]
    }

    func testCapabilitiesAndWritesFollowTheRole() throws {
        let drive = try makeDrive("Team")
        let folder = try create("f", parent: drive, folder: true)
        let file = try create("a.txt", parent: folder)
        XCTAssertTrue(try driveCapabilities(drive).values.allSatisfy { $0 }, "an organizer may do everything")

        let expectations: [(String, add: Bool, trash: Bool, delete: Bool, manage: Bool, comment: Bool)] = [
            ("organizer", true, true, true, true, true), ("fileOrganizer", true, true, false, false, true),
            ("writer", true, false, false, false, true), ("commenter", false, false, false, false, true),
            ("reader", false, false, false, false, false),
        ]
        for (role, add, trash, delete, manage, comment) in expectations {
            XCTAssertEqual(try membership(drive, role), 200)
            let caps = try driveCapabilities(drive)
            XCTAssertEqual(caps["canAddChildren"], add, role)
            XCTAssertEqual(caps["canTrashChildren"], trash, role)
            XCTAssertEqual(caps["canDeleteChildren"], delete, role)
            XCTAssertEqual(caps["canManageMembers"], manage, role)
            XCTAssertEqual(caps["canRenameDrive"], manage, role)
            XCTAssertEqual(caps["canComment"], comment, role)
            XCTAssertEqual(caps["canDownload"], true, role)
            XCTAssertEqual(caps["canListChildren"], true, role)
            let fileCaps = try XCTUnwrap(try h.call("GET", "/drive/v3/files/\(file)?supportsAllDrives=true&fields=capabilities").1["capabilities"]
                as? [String: Bool])
            XCTAssertEqual(fileCaps["canEdit"], add, role)
            XCTAssertEqual(fileCaps["canTrash"], trash, role)
            XCTAssertEqual(fileCaps["canDelete"], delete, role)

            let created = try h.call("POST", "/drive/v3/files?supportsAllDrives=true", json: ["name": "n-\(role)", "parents": [folder]])
            XCTAssertEqual(created.0, add ? 200 : 403, role)
            if !add { XCTAssertEqual(DriveHarness.reason(created.1), "insufficientFilePermissions", role) }
            let renamed = try h.call("PATCH", "/drive/v3/files/\(file)?supportsAllDrives=true", json: ["description": role])
            XCTAssertEqual(renamed.0, add ? 200 : 403, role)
            let rename = try h.call("PATCH", "/drive/v3/drives/\(drive)", json: ["name": "Team"])
            XCTAssertEqual(rename.0, manage ? 200 : 403, role)
            if !manage { XCTAssertEqual(DriveHarness.reason(rename.1), "insufficientFilePermissions", role) }
            if !trash {
                let trashed = try h.call("PATCH", "/drive/v3/files/\(file)?supportsAllDrives=true", json: ["trashed": true])
                XCTAssertEqual(trashed.0, 403, role)
                XCTAssertEqual(DriveHarness.message(trashed.1), "The user does not have sufficient permissions for file \(file).")
            }
            if !delete {
                XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/\(file)?supportsAllDrives=true").0, 403, role)
                XCTAssertEqual(try h.call("DELETE", "/drive/v3/drives/\(drive)").0, 403, role)
                XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/trash?driveId=\(drive)").0, 403, role)
            }
        }
    }

    func testLeavingAndJoiningADrive() throws {
        let drive = try makeDrive("Away")
        let file = try create("x.txt", parent: drive)
        let token = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)

        XCTAssertEqual(try membership(drive, nil), 200)
        let (status, body) = try h.call("GET", "/drive/v3/drives/\(drive)")
        XCTAssertEqual(status, 404)
        XCTAssertEqual(DriveHarness.message(body), "Shared drive not found: \(drive)")
        XCTAssertEqual((try h.call("GET", "/drive/v3/drives").1["drives"] as? [Any])?.count, 0)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(file)?supportsAllDrives=true").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?corpora=drive&driveId=\(drive)&includeItemsFromAllDrives=true&supportsAllDrives=true").0,
                       404)
        let (_, all) = try h.call("GET", "/drive/v3/files?corpora=allDrives&includeItemsFromAllDrives=true&supportsAllDrives=true")
        XCTAssertEqual((all["files"] as? [Any])?.count, 0)

        // The feed: the drive removed (changeType drive), and its items removed with
        // includeItemsFromAllDrives; a client without shared drives sees nothing of it.
        let (_, feed) = try h.call("GET", "/drive/v3/changes?pageToken=\(token)&supportsAllDrives=true&includeItemsFromAllDrives=true&fields=*")
        let changes = feed["changes"] as? [[String: Any]] ?? []
        let driveEntry = try XCTUnwrap(changes.first { $0["changeType"] as? String == "drive" })
        XCTAssertEqual(driveEntry["driveId"] as? String, drive)
        XCTAssertEqual(driveEntry["removed"] as? Bool, true)
        XCTAssertNil(driveEntry["drive"])
        XCTAssertNil(driveEntry["fileId"])
        let fileEntry = try XCTUnwrap(changes.first { $0["fileId"] as? String == file })
        XCTAssertEqual(fileEntry["removed"] as? Bool, true)
        XCTAssertNil(fileEntry["file"])
        let (_, plain) = try h.call("GET", "/drive/v3/changes?pageToken=\(token)")
        XCTAssertEqual((plain["changes"] as? [Any])?.count, 0)

        // Joining again as a reader: the drive and its items come back.
        let rejoin = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)
        XCTAssertEqual(try membership(drive, "reader"), 200)
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives/\(drive)").0, 200)
        let (_, back) = try h.call("GET", "/drive/v3/changes?pageToken=\(rejoin)&supportsAllDrives=true&includeItemsFromAllDrives=true&fields=*")
        let entries = back["changes"] as? [[String: Any]] ?? []
        let joined = try XCTUnwrap(entries.first { $0["changeType"] as? String == "drive" })
        XCTAssertEqual(joined["removed"] as? Bool, false)
        XCTAssertEqual((joined["drive"] as? [String: Any])?["id"] as? String, drive)
        XCTAssertEqual(((joined["drive"] as? [String: Any])?["capabilities"] as? [String: Bool])?["canEdit"], false)
        let item = try XCTUnwrap(entries.first { $0["fileId"] as? String == file })
        XCTAssertEqual(item["removed"] as? Bool, false)
        XCTAssertEqual(((item["file"] as? [String: Any])?["capabilities"] as? [String: Bool])?["canEdit"], false)
        // A drive's own feed has no drive entries.
        let (_, own) = try h.call("GET", "/drive/v3/changes?pageToken=\(rejoin)&driveId=\(drive)&supportsAllDrives=true&includeItemsFromAllDrives=true&fields=*")
        XCTAssertFalse((own["changes"] as? [[String: Any]] ?? []).contains { $0["changeType"] as? String == "drive" })
    }

    func testMembershipControlErrorsAndRestart() throws {
        XCTAssertEqual(try membership("0Anope", "reader"), 404)
        let drive = try makeDrive("Kept")
        XCTAssertEqual(try membership(drive, "owner"), 400)
        XCTAssertEqual(try membership(drive, "writer"), 200)
        try h.restart()
        XCTAssertEqual(try driveCapabilities(drive)["canDeleteDrive"], false)
        XCTAssertEqual(try driveCapabilities(drive)["canAddChildren"], true)
    }
}
