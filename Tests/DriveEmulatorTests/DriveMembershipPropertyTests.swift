import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Random joins, leaves and role changes over a few shared drives: drives.list, the items a
/// client sees (files.list over all drives) and what a client following the change feed with
/// includeItemsFromAllDrives knows always agree with a model of the memberships.
final class DriveMembershipPropertyTests: XCTestCase {
    func testListingsAndTheFeedFollowTheMemberships() throws {
        var rng = SplitMix64(seed: 4_2026)
        let roles: [String?] = [nil, "reader", "commenter", "writer", "fileOrganizer", "organizer"]
        for round in 0..<4 {
            let h = try DriveHarness()
            defer { h.shutdown() }
            var drives: [String] = []
            var items: [String: String] = [:]  // item → its drive
            for d in 0..<(2 + rng.next(below: 3)) {
                let (_, drive) = try h.call("POST", "/drive/v3/drives?requestId=r\(round)-\(d)", json: ["name": "D\(d)"])
                let id = try XCTUnwrap(drive["id"] as? String)
                drives.append(id)
                var folders = [id]
                for i in 0..<(1 + rng.next(below: 6)) {
                    let folder = rng.next(below: 3) == 0
                    var meta: [String: Any] = ["name": "i\(i)", "parents": [folders[rng.next(below: folders.count)]]]
                    if folder { meta["mimeType"] = DriveMime.folder }
                    let (status, body) = try h.call("POST", "/drive/v3/files?supportsAllDrives=true", json: meta)
                    XCTAssertEqual(status, 200)
                    let item = try XCTUnwrap(body["id"] as? String)
                    items[item] = id
                    if folder { folders.append(item) }
                }
            }
            var role: [String: String?] = Dictionary(uniqueKeysWithValues: drives.map { ($0, "organizer") })
            var token = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)
            var knownItems = Set(items.keys)
            var knownDrives = Set(drives)
            for step in 0..<15 {
                let drive = drives[rng.next(below: drives.count)]
                let next = roles[rng.next(below: roles.count)]
                let body = Array(try JSONSerialization.data(withJSONObject: ["driveId": drive, "role": next as Any? ?? NSNull()]))
                let request = HTTPRequest(method: "POST", target: "/__emulator/membership", headers: HTTPHeaders([("Content-Type", "application/json")]),
                                          body: BufferedRequestBody(body), baseURL: "http://127.0.0.1:9999")
                XCTAssertEqual(h.service.controlResponse("membership", request)?.status, 200)
                role[drive] = next

                var pages = 0
                while pages < 50 {
                    pages += 1
                    let (status, feed) = try h.call("GET", "/drive/v3/changes?pageToken=\(token)&pageSize=5&supportsAllDrives=true"
                                                     + "&includeItemsFromAllDrives=true&fields=*")
                    XCTAssertEqual(status, 200)
                    for c in feed["changes"] as? [[String: Any]] ?? [] {
                        let removed = c["removed"] as? Bool == true
                        if c["changeType"] as? String == "drive" {
                            let id = try XCTUnwrap(c["driveId"] as? String)
                            if removed { knownDrives.remove(id) } else { knownDrives.insert(id) }
                            XCTAssertEqual(c["drive"] == nil, removed)
                        } else if let id = c["fileId"] as? String, items[id] != nil {
                            if removed { knownItems.remove(id) } else { knownItems.insert(id) }
                        }
                    }
                    if let n = feed["nextPageToken"] as? String { token = n; continue }
                    token = try XCTUnwrap(feed["newStartPageToken"] as? String)
                    break
                }
                let member = Set(drives.filter { (role[$0] ?? nil) != nil })
                let visible = Set(items.keys.filter { member.contains(items[$0]!) })
                XCTAssertEqual(knownDrives, member, "round \(round) step \(step): drives in the feed")
                XCTAssertEqual(knownItems, visible, "round \(round) step \(step): items in the feed")
                let (_, listed) = try h.call("GET", "/drive/v3/drives?pageSize=100&fields=drives(id,capabilities)")
                let rows = listed["drives"] as? [[String: Any]] ?? []
                XCTAssertEqual(Set(rows.compactMap { $0["id"] as? String }), member)
                for row in rows {
                    let r = role[row["id"] as! String]!!
                    let caps = row["capabilities"] as? [String: Bool] ?? [:]
                    XCTAssertEqual(caps["canAddChildren"], ["writer", "fileOrganizer", "organizer"].contains(r), r)
                    XCTAssertEqual(caps["canManageMembers"], r == "organizer", r)
                }
                var seen = Set<String>()
                var pageToken: String?
                var listPages = 0
                repeat {
                    listPages += 1
                    let (status, page) = try h.call("GET", "/drive/v3/files?corpora=allDrives&includeItemsFromAllDrives=true&supportsAllDrives=true"
                                                     + "&pageSize=7&fields=nextPageToken,files(id)" + (pageToken.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""))
                    XCTAssertEqual(status, 200)
                    seen.formUnion((page["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
                    pageToken = page["nextPageToken"] as? String
                } while pageToken != nil && listPages < 50
                XCTAssertEqual(seen, visible, "round \(round) step \(step): files.list over all drives")
            }
        }
    }
}
