import Foundation
import XCTest
@testable import DriveEmulator

final class DrivePagingTests: XCTestCase {
    func testPagingOver2500FilesReturnsEveryIdOnce() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let folder = try h.create("many", mime: "application/vnd.google-apps.folder")
        var created = Set<String>()
        for i in 0..<2500 { created.insert(try h.create(String(format: "file-%05d", (i * 7919) % 2500), parent: folder)) }
        let q = DriveHarness.q("'\(folder)' in parents and trashed = false")

        for (pageSize, expectedPages) in [("&pageSize=1000", 3), ("", 25), ("&pageSize=5000", 3)] {
            var ids: [String] = []
            var names: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let tokenPart = token.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""
                let (s, page) = try h.call("GET", "/drive/v3/files?q=\(q)&orderBy=name\(pageSize)\(tokenPart)&fields=nextPageToken,files(id,name)")
                XCTAssertEqual(s, 200)
                let files = page["files"] as? [[String: Any]] ?? []
                ids += files.compactMap { $0["id"] as? String }
                names += files.compactMap { $0["name"] as? String }
                token = page["nextPageToken"] as? String
                pages += 1
            } while token != nil && pages < 100
            XCTAssertEqual(pages, expectedPages, "pageSize\(pageSize)")
            XCTAssertEqual(ids.count, 2500)
            XCTAssertEqual(Set(ids), created)
            XCTAssertEqual(names, names.sorted())
            XCTAssertEqual(names.first, "file-00000")
        }
    }

    /// Creating and deleting items between pages neither repeats nor skips the items that stay.
    func testPagesAreStableWhileTheFolderChanges() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        var ids: [String] = []
        for i in 0..<30 { ids.append(try h.create(String(format: "m%02d", i))) }
        let (_, first) = try h.call("GET", "/drive/v3/files?pageSize=10&orderBy=name&fields=nextPageToken,files(id)")
        var seen = (first["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        XCTAssertEqual(seen, Array(ids[0..<10]))
        // Between pages: three items sorting before the cursor appear, two already-listed ones go.
        for name in ["a1", "a2", "a3"] { try h.create(name) }
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(ids[0])").status, 204)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(ids[1])").status, 204)
        var token = first["nextPageToken"] as? String
        while let t = token {
            let (s, page) = try h.call("GET", "/drive/v3/files?pageSize=10&orderBy=name&fields=nextPageToken,files(id)&pageToken=\(DriveHarness.q(t))")
            XCTAssertEqual(s, 200)
            seen += (page["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            token = page["nextPageToken"] as? String
        }
        XCTAssertEqual(seen, ids)
    }
}
