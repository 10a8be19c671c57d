import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The derived indexes (children in listing order, names, the change log) against full-scan
/// evaluation, over seeded random sequences of creates, renames, moves, trashes, restores, deletes
/// and restarts. Listings through the index (`'F' in parents`, paged) must equal the same query
/// answered by scanning every item (`'F' in parents or name = '<no such name>'`), name lookups must
/// equal a filter of the folder, and changes.list must page through the newest change per file.
final class DriveIndexPropertyTests: XCTestCase {
    private struct Model {
        var folders: [String]
        var files: [String] = []
    }

    func testIndexedListingsEqualFullScansOverRandomOperations() throws {
        for seed in [1, 2, 3] as [UInt64] {
            try runSequence(seed: seed, operations: 220)
        }
    }

    private func runSequence(seed: UInt64, operations: Int) throws {
        var rng = SplitMix64(seed: seed)
        let h = try DriveHarness()
        defer { h.shutdown() }
        let folderMime = "application/vnd.google-apps.folder"
        var model = Model(folders: [h.rootId])
        let names = ["a", "A", "b", "report.txt", "Report.TXT", "it's", "x\\y", "same"]
        for i in 0..<operations {
            // Deletes take subtrees with them: pick from what exists now.
            let live = h.service.store.read { s in s.data.items.values.sorted { $0.seq < $1.seq } }
            model.folders = [h.rootId] + live.filter { $0.isFolder && $0.id != h.rootId }.map(\.id)
            model.files = live.filter { !$0.isFolder }.map(\.id)
            let all = model.folders.dropFirst() + model.files
            switch all.isEmpty ? 0 : rng.next(below: 11) {
            case 0, 1, 2:
                model.files.append(try h.create(names[rng.next(below: names.count)], parent: model.folders[rng.next(below: model.folders.count)]))
            case 3:
                model.folders.append(try h.create("d\(i)", parent: model.folders[rng.next(below: model.folders.count)], mime: folderMime))
            case 4:
                let id = all[all.startIndex + rng.next(below: all.count)]
                _ = try h.call("PATCH", "/drive/v3/files/\(id)", json: ["name": names[rng.next(below: names.count)]])
            case 5:
                // A move; moving a folder into its own subtree is refused (400) and changes nothing.
                let id = all[all.startIndex + rng.next(below: all.count)]
                let (_, meta) = try h.call("GET", "/drive/v3/files/\(id)?fields=parents")
                let old = (meta["parents"] as? [String])?.first ?? h.rootId
                let target = model.folders[rng.next(below: model.folders.count)]
                let (status, _) = try h.call("PATCH", "/drive/v3/files/\(id)?addParents=\(target)&removeParents=\(old)", json: [:])
                XCTAssertTrue(status == 200 || status == 400, "move → \(status)")
            case 6, 7:
                let id = all[all.startIndex + rng.next(below: all.count)]
                _ = try h.call("PATCH", "/drive/v3/files/\(id)", json: ["trashed": rng.next(below: 3) != 0])
            case 8:
                let id = all[all.startIndex + rng.next(below: all.count)]
                let status = try h.send("DELETE", "/drive/v3/files/\(id)").status
                XCTAssertTrue(status == 204 || status == 404, "delete → \(status)")
            case 9 where i % 40 == 9:
                try h.restart()
            default:
                model.files.append(try h.create("n\(i)", parent: model.folders[rng.next(below: model.folders.count)]))
            }
            if i % 55 == 54 || i == operations - 1 {
                try checkIndexes(h, seed: seed, step: i)
            }
        }
        try h.restart()
        try checkIndexes(h, seed: seed, step: -1)
    }

    private func ids(_ h: DriveHarness, query: String, pageSize: Int) throws -> [String] {
        var out: [String] = []
        var token: String?
        repeat {
            let tokenPart = token.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""
            let (status, page) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(query))&pageSize=\(pageSize)\(tokenPart)&fields=nextPageToken,files(id,name,parents)")
            XCTAssertEqual(status, 200)
            out += (page["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            token = page["nextPageToken"] as? String
        } while token != nil && out.count < 10_000
        return out
    }

    private func checkIndexes(_ h: DriveHarness, seed: UInt64, step: Int) throws {
        let context = "seed \(seed) step \(step)"
        // Internal: the incrementally kept indexes equal indexes rebuilt from the items.
        h.service.store.read { s in
            let rebuilt = MetadataState(data: s.data)
            let keys = Set(s.children.keys.filter { !(s.children[$0]?.isEmpty ?? true) })
            XCTAssertEqual(keys, Set(rebuilt.children.keys.filter { !(rebuilt.children[$0]?.isEmpty ?? true) }), context)
            for key in keys { XCTAssertEqual(Array(s.children[key] ?? []), Array(rebuilt.children[key] ?? []), context) }
            XCTAssertEqual(s.names.filter { !$0.value.isEmpty }, rebuilt.names.filter { !$0.value.isEmpty }, context)
            for (id, item) in s.data.items {
                if let p = item.parent { XCTAssertTrue(s.children[p]?.contains(id) ?? false, context) }
            }
        }
        // Through the API: every folder, indexed and paged vs scanned.
        let folders = h.service.store.read { s in s.data.items.values.filter(\.isFolder).map(\.id) }
        for folder in folders {
            for extra in ["", " and trashed = false", " and trashed = true"] {
                let indexed = try ids(h, query: "'\(folder)' in parents\(extra)", pageSize: 3)
                let scanned = try ids(h, query: "('\(folder)' in parents or name = 'no such name 9q')\(extra)", pageSize: 1000)
                XCTAssertEqual(indexed, scanned, "\(context) folder \(folder)\(extra)")
                XCTAssertEqual(Set(indexed).count, indexed.count, "\(context): duplicates")
            }
            // Name lookups within the folder equal a filter of its listing (case-insensitive).
            let (_, listing) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q("'\(folder)' in parents"))&pageSize=1000&fields=files(id,name)")
            let children = listing["files"] as? [[String: Any]] ?? []
            for name in ["a", "report.txt", "it's", "x\\y", "same"] {
                let escaped = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
                let found = try ids(h, query: "name = '\(escaped)' and '\(folder)' in parents", pageSize: 2)
                let expected = children.filter { ($0["name"] as? String)?.lowercased() == name.lowercased() }.compactMap { $0["id"] as? String }
                XCTAssertEqual(found, expected, "\(context) name \(name)")
            }
        }
        // changes.list from the first token: one entry per file, token order, the newest change.
        var pageToken = "1"
        var seen: [String] = []
        while true {
            let (status, page) = try h.call("GET", "/drive/v3/changes?pageToken=\(pageToken)&pageSize=7&fields=nextPageToken,newStartPageToken,changes(fileId)")
            XCTAssertEqual(status, 200, context)
            seen += (page["changes"] as? [[String: Any]] ?? []).compactMap { $0["fileId"] as? String }
            guard let next = page["nextPageToken"] as? String else { break }
            pageToken = next
        }
        let expected = h.service.store.read { s in s.data.changes.values.sorted { $0.token < $1.token }.map(\.fileId) }
        XCTAssertEqual(seen, expected, context)
    }
}

