import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class DriveChangesTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    func startToken() throws -> String {
        let (s, b) = try h.call("GET", "/drive/v3/changes/startPageToken")
        XCTAssertEqual(s, 200)
        XCTAssertEqual(b["kind"] as? String, "drive#startPageToken")
        return try XCTUnwrap(b["startPageToken"] as? String)
    }

    func changes(_ token: String, extra: String = "") throws -> [String: Any] {
        let (s, b) = try h.call("GET", "/drive/v3/changes?pageToken=\(token)\(extra)")
        XCTAssertEqual(s, 200, "\(b)")
        return b
    }

    func testFeedRecordsCreateRenameMoveTrashDelete() throws {
        let start = try startToken()
        let caughtUp = try changes(start)
        XCTAssertEqual((caughtUp["changes"] as? [Any])?.count, 0)
        XCTAssertEqual(caughtUp["newStartPageToken"] as? String, start)
        XCTAssertNil(caughtUp["nextPageToken"])

        let folder = try h.create("folder", mime: "application/vnd.google-apps.folder")
        let a = try h.create("a.txt")
        let b = try h.create("b.txt")
        _ = try h.call("PATCH", "/drive/v3/files/\(a)", json: ["name": "a2.txt"])
        _ = try h.call("PATCH", "/drive/v3/files/\(a)?addParents=\(folder)&removeParents=root", json: [:])
        _ = try h.call("PATCH", "/drive/v3/files/\(b)", json: ["trashed": true])
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(folder)").status, 204)

        let page = try changes(start, extra: "&fields=\(DriveHarness.q("changes(fileId,removed,file(name,parents,trashed)),nextPageToken,newStartPageToken"))")
        let entries = try XCTUnwrap(page["changes"] as? [[String: Any]])
        // One entry per file, oldest first: b (trashed), then folder and a (deleted with it).
        XCTAssertEqual(entries.map { $0["fileId"] as? String }, [b, a, folder])
        XCTAssertEqual(entries[0]["removed"] as? Bool, false)
        XCTAssertEqual((entries[0]["file"] as? [String: Any])?["trashed"] as? Bool, true)
        XCTAssertEqual(entries[1]["removed"] as? Bool, true)
        XCTAssertNil(entries[1]["file"])
        XCTAssertEqual(entries[2]["removed"] as? Bool, true)
        let newStart = try XCTUnwrap(page["newStartPageToken"] as? String)
        XCTAssertEqual(newStart, try startToken())
        XCTAssertGreaterThan(Int(newStart)!, Int(start)!)

        // Defaults: the full change shape.
        let plain = try changes(start)
        let first = (plain["changes"] as! [[String: Any]])[0]
        XCTAssertEqual(first["kind"] as? String, "drive#change")
        XCTAssertEqual(first["changeType"] as? String, "file")
        XCTAssertEqual(first["type"] as? String, "file")
        XCTAssertNotNil(first["time"])
        XCTAssertEqual(Set((first["file"] as? [String: Any] ?? [:]).keys), ["kind", "id", "name", "mimeType"])
        XCTAssertEqual(plain["kind"] as? String, "drive#changeList")

        // includeRemoved=false drops tombstones.
        let live = try changes(start, extra: "&includeRemoved=false&restrictToMyDrive=true")
        XCTAssertEqual((live["changes"] as? [[String: Any]])?.map { $0["fileId"] as? String }, [b])
    }

    func testPagingAndBadTokens() throws {
        let start = try startToken()
        for i in 0..<5 { try h.create("f\(i)") }
        var token = start
        var seen: [String] = []
        var pages = 0
        while true {
            let page = try changes(token, extra: "&pageSize=2")
            pages += 1
            seen += (page["changes"] as? [[String: Any]] ?? []).compactMap { $0["fileId"] as? String }
            if let next = page["nextPageToken"] as? String {
                XCTAssertNil(page["newStartPageToken"])
                token = next
            } else {
                XCTAssertNotNil(page["newStartPageToken"])
                break
            }
        }
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen.count, 5)
        XCTAssertEqual(Set(seen).count, 5)
        for bad in ["abc", "0", "999999", "-1"] {
            let (s, b) = try h.call("GET", "/drive/v3/changes?pageToken=\(bad)")
            XCTAssertEqual(s, 400, bad)
            XCTAssertEqual(DriveHarness.location(b), "pageToken")
        }
        XCTAssertEqual(try h.call("GET", "/drive/v3/changes").0, 400)
    }

    func testVersionGrowsWithEveryChange() throws {
        let id = try h.upload("v.txt", [1])
        var last = 0
        for step in 0..<3 {
            _ = try h.call("PATCH", "/drive/v3/files/\(id)", json: ["name": "v\(step).txt"])
            let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=version")
            let v = Int(f["version"] as! String)!
            XCTAssertGreaterThan(v, last)
            last = v
        }
    }
}
