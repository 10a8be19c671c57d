@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// The synthetic index `drivefs debug index-restore` measures (IndexStore+Synthetic.swift): a drive
/// of 20,000 items written through the real save path comes back through the real load path
/// unchanged, packed, with no item decoded until a folder is listed. No timing is asserted here:
/// the figures are scripts/bench.sh's.
final class SyntheticIndexTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("synthetic-index-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        super.tearDown()
    }

    private let items = 20_000
    private let folders = 200

    func testTwentyThousandItemsRoundTripThroughSaveAndLoadWithoutDecodingAnItem() throws {
        let configuration = SyntheticIndex.configuration(directory: directory)
        let time = ManualTimeSource()
        let table = SyntheticIndex.table(items: items, folders: folders, configuration: configuration, time: time)
        let original = table.withState { $0.packed }
        XCTAssertEqual(table.withState { $0.nodes.count }, 1, "only the root is a node")
        XCTAssertEqual(table.withState { $0.packedItems }, items, "every item once, in one packed listing")
        XCTAssertEqual(original.count, folders + 1, "the root's listing and each folder's")

        let path = directory + "/" + IndexStore.fileName
        IndexStore(path: path).save(table, changeToken: SyntheticIndex.changeToken)
        let saved = try Data(contentsOf: URL(fileURLWithPath: path))

        let restored = try XCTUnwrap(IndexStore(path: path).load(root: SyntheticIndex.root, configuration: configuration,
                                                                 now: time.now()))
        XCTAssertEqual(restored.items, items)
        XCTAssertEqual(restored.folders, folders + 1)
        XCTAssertEqual(restored.changeToken, SyntheticIndex.changeToken)
        XCTAssertEqual(restored.state.nodes.count, 1, "loading makes no node but the root")
        XCTAssertEqual(restored.state.packedItems, items, "every item comes back packed")
        XCTAssertEqual(restored.state.packedLocation.count, items, "each item's location, by its ID's hash")
        XCTAssertNil(restored.state.nodes[.root]?.listing, "not even the root's listing is decoded")
        for (id, listing) in original {
            let back = try XCTUnwrap(restored.state.packed[id], "folder \(id)")
            XCTAssertEqual(back.bytes, listing.bytes, "folder \(id): the packed bytes, as saved")
            XCTAssertEqual(back.count, listing.count)
            XCTAssertEqual(back.subfolders, listing.subfolders)
            XCTAssertEqual(back.idHashes, listing.idHashes)
            XCTAssertTrue(back.trusted)
        }

        // Saved again from the restored table (nothing materialized): the same file, byte for byte.
        let again = NodeTable(restoring: restored.state, configuration: configuration, time: time)
        let pathAgain = directory + "/again.bin"
        IndexStore(path: pathAgain).save(again, changeToken: SyntheticIndex.changeToken)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: pathAgain)), saved)

        // Listing the root, then its first folder, decodes those two listings and nothing else.
        let top = SyntheticIndex.topFolderCount(folders)
        let rootEntries = try XCTUnwrap(again.entries(of: .root))
        XCTAssertEqual(rootEntries.count, top)
        XCTAssertTrue(rootEntries.allSatisfy { $0.kind == .directory })
        let first = try XCTUnwrap(again.node(rootEntries[0].inode))
        let firstEntries = try XCTUnwrap(again.entries(of: first.inode))
        let k = try XCTUnwrap((0..<top).first { SyntheticIndex.folderID($0) == first.file.id })
        let subfolders = Array(stride(from: top + k, to: folders, by: top))
        let files = Array(stride(from: k, to: items - folders, by: folders))
        XCTAssertEqual(firstEntries.count, subfolders.count + files.count)
        XCTAssertEqual(again.withState { $0.packedItems }, items - top - firstEntries.count, "two listings decoded, no more")
        // Every field as generated (a file of the folder, through the node the listing made).
        let j = files[files.count / 2]
        let expected = SyntheticIndex.file(j, parent: first.file.id)
        let inode = try XCTUnwrap(again.inode(forID: expected.id))
        XCTAssertEqual(again.node(inode)?.file, expected)
        XCTAssertEqual(expected.id.utf8.count, 33)
        XCTAssertEqual(expected.headRevisionId?.utf8.count, 51)
    }

    /// What the debug command runs: the same file from the same shape, and a restore that decodes
    /// only the two listings it reads.
    /// The file is mapped, not read: the listings are ranges of the mapping; a byte changed
    /// anywhere (header, a listing's bytes, the trailer) or a cut file is refused by the checksum;
    /// and a table restored from a mapping still reads its listings after the file was replaced
    /// by a save (a rename: the mapping keeps the old file).
    func testAMappedIndexIsRefusedWhenDamagedAndOutlivesItsReplacement() throws {
        let configuration = SyntheticIndex.configuration(directory: directory)
        let time = ManualTimeSource()
        let table = SyntheticIndex.table(items: 2_000, folders: 20, configuration: configuration, time: time)
        let path = directory + "/" + IndexStore.fileName
        IndexStore(path: path).save(table, changeToken: SyntheticIndex.changeToken)
        let saved = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        func load() -> IndexStore.Restored? {
            IndexStore(path: path).load(root: SyntheticIndex.root, configuration: configuration, now: time.now())
        }
        let restored = try XCTUnwrap(load())
        XCTAssertTrue(restored.state.packed.values.allSatisfy(\.isMapped), "every listing is a range of the mapping")

        for at in [20, saved.count / 3, saved.count / 2, saved.count - 12, saved.count - 1] {
            var damaged = saved
            damaged[at] ^= 0x20
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            XCTAssertNil(load(), "a byte changed at \(at) of \(saved.count)")
        }
        try Data(saved.prefix(saved.count - 100)).write(to: URL(fileURLWithPath: path))
        XCTAssertNil(load(), "a cut file")

        try Data(saved).write(to: URL(fileURLWithPath: path))
        let mapped = NodeTable(restoring: try XCTUnwrap(load()).state, configuration: configuration, time: time)
        let original = table.withState { $0.packed }
        // Replaced by a save of another drive while mapped.
        let other = SyntheticIndex.table(items: 500, folders: 5, configuration: configuration, time: time)
        IndexStore(path: path).save(other, changeToken: "other")
        XCTAssertEqual(load()?.items, 500)
        for (id, listing) in original {
            XCTAssertEqual(mapped.withState { $0.packed[id]?.bytes }, listing.bytes, "folder \(id) reads as saved")
        }
        XCTAssertEqual(try XCTUnwrap(mapped.entries(of: .root)).count, SyntheticIndex.topFolderCount(20))
    }

    func testTheCommandsWriteIsDeterministicAndItsRestoreListsTheRootAndAFolder() throws {
        let written = SyntheticIndex.write(items: items, folders: folders, directory: directory)
        XCTAssertEqual(written.items, items)
        XCTAssertGreaterThan(written.fileBytes, 0)
        let first = try Data(contentsOf: URL(fileURLWithPath: written.path))
        XCTAssertEqual(first.count, written.fileBytes)

        let restore = try XCTUnwrap(SyntheticIndex.restore(directory: directory))
        XCTAssertEqual(restore.nodesAfterLoad, 1)
        XCTAssertEqual(restore.packedItemsAfterLoad, items)
        XCTAssertEqual(restore.foldersLoaded, folders + 1)
        XCTAssertEqual(restore.rootEntries, SyntheticIndex.topFolderCount(folders))
        XCTAssertGreaterThan(restore.firstFolderEntries, 0)

        let other = directory + "/other"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let second = SyntheticIndex.write(items: items, folders: folders, directory: other)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: second.path)), first, "the same shape, the same bytes")
    }
    /// `debug index-restore --walk`: every folder visited once through the table and each entry
    /// looked up; once idle, every listing is packed again and a node is left per folder (the
    /// kernel still holds the folders), none per file, nothing lost.
    func testAWalkThroughTheRestoredTableVisitsEveryFolderAndLeavesItPacked() throws {
        let small = 2_000, smallFolders = 40
        _ = SyntheticIndex.write(items: small, folders: smallFolders, directory: directory)
        let restore = try XCTUnwrap(SyntheticIndex.restore(directory: directory, walk: true))
        let walk = try XCTUnwrap(restore.walk)
        XCTAssertEqual(walk.foldersVisited, 1 + smallFolders)
        XCTAssertEqual(walk.itemsVisited, small)
        XCTAssertGreaterThan(walk.peakMaterialized, 0)
        XCTAssertEqual(walk.materializedAfter, 0, "every listing packed again")
        XCTAssertEqual(walk.nodesAfter, 1 + smallFolders, "the root and the folders the walk still holds")
        XCTAssertEqual(walk.packedItemsAfter, small)
    }
}
