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
}
