import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Random trees of another user's items, shared and unshared at random: what the user sees
/// (files.get, folder listings, `sharedWithMe`, capabilities) and what the change feed tells a
/// client that follows it always agree with a model of Drive's rule (an item is visible with the
/// strongest role shared on it or a folder above it).
final class DriveSharingPropertyTests: XCTestCase {
    func testVisibilityRolesAndTheFeedFollowAModel() throws {
        var rng = SplitMix64(seed: 7_2026)
        let roles: [DriveRole] = [.reader, .commenter, .writer]
        for round in 0..<5 {
            let h = try DriveHarness()
            defer { h.shutdown() }
            var parent: [String: String?] = [:]
            var folders: [String] = []
            var direct: [String: DriveRole] = [:]
            var order: [String] = []
            for i in 0..<(12 + rng.next(below: 12)) {
                let isFolder = folders.isEmpty || rng.next(below: 3) == 0
                let p: String? = folders.isEmpty || rng.next(below: 4) == 0 ? nil : folders[rng.next(below: folders.count)]
                let item = try h.service.makeForeignItem(owner: "colleague@example.com", name: "n\(round)-\(i)",
                                                         mimeType: isFolder ? DriveMime.folder : "text/plain", parent: p,
                                                         content: isFolder ? nil : Array("\(i)".utf8), role: nil)
                parent[item.id] = p
                if isFolder { folders.append(item.id) }
                order.append(item.id)
            }
            func modelRole(_ id: String) -> DriveRole? {
                var best: DriveRole?
                var next: String? = id
                while let current = next {
                    if let r = direct[current] { best = max(best ?? r, r) }
                    next = parent[current] ?? nil
                }
                return best
            }
            var token = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)
            var followed = Set<String>()
            for step in 0..<25 {
                let target = order[rng.next(below: order.count)]
                if rng.next(below: 3) == 0 {
                    try h.service.unshare(target)
                    direct[target] = nil
                } else {
                    let role = roles[rng.next(below: roles.count)]
                    try h.service.share(target, role: role)
                    direct[target] = role
                }
                // Follow the feed as a client does.
                var pages = 0
                while pages < 50 {
                    pages += 1
                    let (status, body) = try h.call("GET", "/drive/v3/changes?pageToken=\(token)&pageSize=7&fields=*")
                    XCTAssertEqual(status, 200)
                    for c in body["changes"] as? [[String: Any]] ?? [] {
                        let id = try XCTUnwrap(c["fileId"] as? String)
                        if c["removed"] as? Bool == true { followed.remove(id) } else { followed.insert(id) }
                    }
                    if let next = body["nextPageToken"] as? String { token = next; continue }
                    token = try XCTUnwrap(body["newStartPageToken"] as? String)
                    break
                }
                let visible = Set(order.filter { modelRole($0) != nil })
                XCTAssertEqual(followed, visible, "round \(round) step \(step): the feed")
                for id in order {
                    let (status, file) = try h.call("GET", "/drive/v3/files/\(id)?fields=capabilities,parents,sharedWithMeTime")
                    let role = modelRole(id)
                    XCTAssertEqual(status, role == nil ? 404 : 200, "round \(round) step \(step)")
                    guard let role else { continue }
                    let caps = file["capabilities"] as? [String: Bool] ?? [:]
                    XCTAssertEqual(caps["canEdit"], role == .writer)
                    XCTAssertEqual(caps["canComment"], role != .reader)
                    XCTAssertEqual(caps["canTrash"], false)
                    let p = parent[id] ?? nil
                    XCTAssertEqual(file["parents"] as? [String], p.flatMap { modelRole($0) != nil ? [$0] : nil })
                    XCTAssertEqual(file["sharedWithMeTime"] != nil, direct[id] != nil)
                }
                for folder in folders where modelRole(folder) != nil {
                    let (_, list) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q("'\(folder)' in parents"))&fields=files(id)")
                    let ids = Set((list["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
                    XCTAssertEqual(ids, Set(order.filter { parent[$0] == folder }))
                }
                let (_, shared) = try h.call("GET", "/drive/v3/files?q=sharedWithMe&fields=files(id)&pageSize=1000")
                XCTAssertEqual(Set((shared["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }), Set(direct.keys))
            }
        }
    }
}
