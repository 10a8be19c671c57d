import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Property: a grouped listing (`'A' in parents or 'B' in parents …`) followed to the end returns
/// exactly the union of the groups' children, once each, whatever the tree, the grouping, the page
/// size and the `fields`; with the multi-parent quirk on, each answer is a subset (still without
/// repeats) and a single-parent listing stays exact. Seeded, so a failure replays.
final class DriveGroupedListingPropertyTests: XCTestCase {
    struct Tree {
        var folders: [String] = []
        /// folder id → ids of its children (files and folders), trashed or not.
        var children: [String: [String]] = [:]
        var trashed: Set<String> = []
    }

    static func buildTree(_ h: DriveHarness, _ random: inout SplitMix64) throws -> Tree {
        var tree = Tree()
        tree.folders = [h.rootId]
        let folderCount = 1 + random.next(below: 8)
        for i in 0..<folderCount {
            let parent = tree.folders[random.next(below: tree.folders.count)]
            let id = try h.create("d\(i)", parent: parent, mime: DriveMime.folder)
            tree.folders.append(id)
            tree.children[parent, default: []].append(id)
        }
        let fileCount = random.next(below: 70)
        for i in 0..<fileCount {
            let parent = tree.folders[random.next(below: tree.folders.count)]
            let trash = random.next(below: 6) == 0
            let id = try h.create("f\(i)", parent: parent, extra: trash ? ["trashed": true] : [:])
            if trash { tree.trashed.insert(id) }
            tree.children[parent, default: []].append(id)
        }
        return tree
    }

    /// Every id of the listing, in order, following `nextPageToken` (bounded).
    static func list(_ h: DriveHarness, _ q: String, pageSize: Int, fields: String) throws -> [String] {
        var ids: [String] = []
        var token: String?
        var pages = 0
        repeat {
            var target = "/drive/v3/files?q=\(DriveHarness.q(q))&pageSize=\(pageSize)&fields=\(DriveHarness.q(fields))"
            if let token { target += "&pageToken=\(DriveHarness.q(token))" }
            let (status, body) = try h.call("GET", target)
            guard status == 200 else { throw NSError(domain: "list \(status) \(body)", code: 0) }
            ids += (body["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            token = body["nextPageToken"] as? String
            pages += 1
        } while token != nil && pages < 500
        return ids
    }

    static let fieldChoices = ["nextPageToken,files(id)", "nextPageToken,files(id,parents)", "nextPageToken,files(id,name,mimeType,parents)",
                               "nextPageToken,files/id,files/parents"]

    func testGroupedListingsReturnExactlyTheUnionOfChildren() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        for trial in 0..<12 {
            let h = try DriveHarness()
            defer { h.shutdown() }
            let tree = try Self.buildTree(h, &random)
            for round in 0..<6 {
                let context = "trial \(trial) round \(round)"
                // A random group (with repeats and the `root` alias now and then).
                var group = (0..<(1 + random.next(below: min(6, tree.folders.count)))).map { _ in tree.folders[random.next(below: tree.folders.count)] }
                if random.next(below: 4) == 0, let i = group.firstIndex(of: h.rootId) { group[i] = "root" }
                let excludeTrashed = random.next(below: 2) == 0
                let chain = group.map { "'\($0)' in parents" }.joined(separator: " or ")
                let q = excludeTrashed ? "(\(chain)) and trashed = false" : chain
                let pageSize = 1 + random.next(below: 25)
                let fields = Self.fieldChoices[random.next(below: Self.fieldChoices.count)]

                let resolved = Set(group.map { $0 == "root" ? h.rootId : $0 })
                let expected = resolved.flatMap { tree.children[$0] ?? [] }.filter { !excludeTrashed || !tree.trashed.contains($0) }
                let ids = try Self.list(h, q, pageSize: pageSize, fields: fields)
                XCTAssertEqual(ids.count, expected.count, "\(context): \(q) pageSize \(pageSize)")
                XCTAssertEqual(Set(ids), Set(expected), context)
            }
        }
    }

    func testWithTheQuirkAnswersAreSubsetsAndSingleParentListingsExact() throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        for trial in 0..<8 {
            let h = try DriveHarness()
            defer { h.shutdown() }
            let tree = try Self.buildTree(h, &random)
            h.quirks.set(.init(multiParentDropFraction: [0.2, 0.5, 1][random.next(below: 3)], seed: random.next()))
            for round in 0..<8 {
                let context = "trial \(trial) round \(round)"
                let size = 1 + random.next(below: min(5, tree.folders.count))
                let group = Array(tree.folders.shuffled(using: &random).prefix(size))
                let q = "(" + group.map { "'\($0)' in parents" }.joined(separator: " or ") + ") and trashed = false"
                let pageSize = 1 + random.next(below: 25)
                let fields = Self.fieldChoices[random.next(below: Self.fieldChoices.count)]
                let expected = Set(group.flatMap { tree.children[$0] ?? [] }.filter { !tree.trashed.contains($0) })
                let ids = try Self.list(h, q, pageSize: pageSize, fields: fields)
                XCTAssertEqual(Set(ids).count, ids.count, "\(context): no repeats")
                XCTAssertTrue(Set(ids).isSubset(of: expected), context)
                if group.count == 1 { XCTAssertEqual(Set(ids), expected, "\(context): a single parent is exact") }
                // Each folder alone is always exact.
                let alone = group[random.next(below: group.count)]
                let single = try Self.list(h, "'\(alone)' in parents and trashed = false", pageSize: pageSize, fields: fields)
                XCTAssertEqual(single.count, Set(single).count, context)
                XCTAssertEqual(Set(single), Set((tree.children[alone] ?? []).filter { !tree.trashed.contains($0) }), context)
            }
        }
    }
}
