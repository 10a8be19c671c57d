@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The compact index (issue 6, "a persistent index"): listings of folders nobody opened stay
/// packed, the change feed keeps them current without listing, a remount restores them without
/// decoding them, and a damaged index file is refused, never trusted.
final class PackedIndexTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    // MARK: The encoding

    /// A DriveFile with each optional field present or not at random, shaped like Google's.
    private static func randomFile(_ g: inout SplitMix64, folder: String, index: Int) -> DriveFile {
        func chance() -> Bool { g.next() % 2 == 0 }
        func text(_ n: Int) -> String {
            let alphabet = Array("abcXYZ019 _-.é∕😀/")
            return String((0..<n).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] })
        }
        let id = "1" + String((0..<32).map { _ in Array("ABCDEFabcdef0123456789_-")[Int(g.next() % 24)] })
        let mimes = [DriveFile.folderMimeType, "text/plain", "application/vnd.google-apps.document", "x/\(text(5))",
                     DriveFile.shortcutMimeType]
        var file = DriveFile(id: id, name: g.next() % 20 == 0 ? "" : text(Int(g.next() % 40)),
                             mimeType: mimes[Int(g.next() % UInt64(mimes.count))])
        file.parents = g.next() % 8 == 0 ? (0..<Int(g.next() % 3)).map { _ in text(10) } : [folder]
        if chance() { file.size = Int64(bitPattern: g.next()) >> Int64(g.next() % 64) }
        if chance() { file.md5Checksum = String(format: "%016llx%016llx", g.next(), g.next()) }
        if chance() { file.modifiedTime = Int64(bitPattern: g.next() % 4_000_000_000_000) - 1_000_000_000_000 }
        if chance() { file.createdTime = Int64(g.next() % 4_000_000_000_000) }
        if g.next() % 10 == 0 { file.trashed = true }
        if chance() { file.version = Int64(g.next() % 100_000) }
        if chance() { file.headRevisionId = "0B" + text(30) }
        if g.next() % 5 == 0 {
            file.shortcutDetails = DriveFile.ShortcutDetails(targetId: text(20), targetMimeType: chance() ? mimes[1] : nil)
        }
        if g.next() % 6 == 0 { file.exportLinks = ["application/pdf": "https://x/\(id)/pdf", text(3): text(9)] }
        if g.next() % 4 == 0 {
            file.capabilities = DriveFile.Capabilities(flags: (0..<7).map { _ in g.next() % 3 == 0 ? nil : chance() })
        }
        if g.next() % 4 == 0 { file.driveId = "0A" + text(8) }
        switch g.next() % 3 {
        case 0: file.webViewLink = "https://drive.google.com/file/d/\(id)/view?usp=drivesdk"
        case 1: file.webViewLink = "https://elsewhere/" + text(12)
        default: break
        }
        if chance() {
            file.lastModifyingUser = DriveFile.User(displayName: chance() ? "Ada " + text(3) : nil,
                                                    emailAddress: chance() ? "ada@example.com" : nil)
        }
        if g.next() % 5 == 0 { file.appProperties = ["drivefs.mode": "755", text(4): text(6)] }
        return file
    }

    func testPackedListingsGiveBackEveryFieldOfRandomFiles() {
        var g = SplitMix64(seed: 0x5eed)
        for round in 0..<300 {
            let folder = "folder\(round)"
            let entries = (0..<Int(g.next() % 40)).map { i in
                PackedListing.Entry(file: Self.randomFile(&g, folder: folder, index: i),
                                    exportedSize: g.next() % 4 == 0 ? Int64(g.next() % 1_000_000) : nil)
            }
            let packed = PackedListing(folderID: folder, entries: entries, listedAt: 1, trusted: true)
            XCTAssertEqual(packed.count, entries.count)
            XCTAssertEqual(packed.entries(folderID: folder), entries, "round \(round)")
            XCTAssertEqual(packed.idHashes, entries.map { PackedListing.hash($0.file.id) })
            XCTAssertEqual(packed.subfolders, entries.filter { $0.file.isFolder && !$0.file.trashed }.map(\.file.id))
        }
    }

    func testDamagedBytesAreRefusedNeverTrusted() {
        var g = SplitMix64(seed: 7)
        let entries = (0..<6).map { PackedListing.Entry(file: Self.randomFile(&g, folder: "f", index: $0)) }
        let packed = PackedListing(folderID: "f", entries: entries, listedAt: 1, trusted: true)
        // Every truncation is refused (the count no longer matches, or a field runs past the end).
        for cut in 0..<packed.bytes.count {
            var short = packed
            short.bytes = packed.bytes.prefix(cut)
            XCTAssertNil(short.entries(folderID: "f"), "cut at \(cut) of \(packed.bytes.count)")
        }
        // Random damage never traps (it may decode to something else: the index file's CRC catches it).
        for _ in 0..<2_000 {
            var damaged = packed
            damaged.bytes[packed.bytes.startIndex + Int(g.next() % UInt64(packed.bytes.count))] = UInt8(truncatingIfNeeded: g.next())
            _ = damaged.entries(folderID: "f")
        }
    }

    /// What the index costs per item, for items shaped like Google's (33-character IDs, md5s,
    /// revision IDs, web links, the last modifier): a node costs 1-2 KB.
    func testAPackedItemCostsAFewHundredBytes() {
        let folder = "1" + String(repeating: "F", count: 32)
        var entries: [PackedListing.Entry] = []
        for i in 0..<1_000 {
            let id = "1" + String(format: "%032x", i * 7919)
            var file = DriveFile(id: id, name: "IMG_\(20_240_000 + i).jpg", mimeType: "image/jpeg", parents: [folder],
                                 size: Int64(2_000_000 + i), md5Checksum: String(format: "%032x", i * 104_729),
                                 modifiedTime: 1_700_000_000_000 + Int64(i), createdTime: 1_690_000_000_000 + Int64(i),
                                 version: Int64(3 + i % 5), headRevisionId: "0B" + String(format: "%049x", i * 31))
            file.webViewLink = "https://drive.google.com/file/d/\(id)/view?usp=drivesdk"
            file.lastModifyingUser = DriveFile.User(displayName: "Ada Lovelace", emailAddress: "ada@example.com")
            entries.append(PackedListing.Entry(file: file))
        }
        let packed = PackedListing(folderID: folder, entries: entries, listedAt: 0, trusted: true)
        XCTAssertLessThanOrEqual(packed.bytes.count / entries.count, 200, "bytes per packed item")
        XCTAssertEqual(packed.entries(folderID: folder), entries)
    }

    // MARK: The table

    /// Root → 5 folders → 10 subfolders each → 8 files each: 455 entries below the root's 5.
    func testFoldersListedAheadStayPackedUntilUsedAndCostNothingThen() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 5, sub: 10, files: 8)
        try harness.mount()
        _ = try harness.listPlus(.root)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        let table = harness.fs.table
        XCTAssertEqual(table.packedSummary.items, entries - 5, "every listing below the root's is packed")
        XCTAssertEqual(table.packedSummary.folders, 5 + 50)
        XCTAssertLessThanOrEqual(table.withState { $0.nodes.count }, 1 + 5, "nodes only for what the kernel saw")
        XCTAssertEqual(harness.fs.knownItems, 1 + entries)

        harness.backend.resetCounters()
        XCTAssertEqual(try harness.resolve("dir2/sub3/file4.txt").size, UInt64("content 2/3/4\n".utf8.count))
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertEqual(harness.backend.totalRequests, 0, "packed listings are served as listed: \(harness.backend.requestSummary)")
        XCTAssertEqual(table.packedSummary.items, 0, "a walk materializes everything")
        XCTAssertEqual(harness.fs.knownItems, 1 + entries)
    }

    func testChangesInsidePackedFoldersKeepThemCurrentWithoutListing() throws {
        harness = try CoreHarness()
        let backend = harness.backend
        let a = backend.addFolder("a")
        let a1 = backend.addFolder("a1", in: a)
        let a2 = backend.addFolder("a2", in: a)
        let b = backend.addFolder("b")
        let b1 = backend.addFolder("b1", in: b)
        let renamed = backend.addFile("old-name.txt", in: a1, content: [1])
        let moved = backend.addFile("moving.txt", in: a1, content: [2, 2])
        let trashed = backend.addFile("trashed.txt", in: a2, content: [3])
        let up = backend.addFile("up.txt", in: b1, content: [4])
        let down = backend.addFile("down.txt", content: [5, 5, 5])
        let changed = backend.addFile("changed.txt", in: a2, content: [6])
        let twice = backend.addFile("twice.txt", in: a2, content: [7])
        try harness.mount()
        _ = try harness.listPlus(.root)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        XCTAssertEqual(harness.fs.table.packedSummary.folders, 5, "a, b, a1, a2, b1 are packed")

        backend.rename(renamed, to: "new-name.txt")
        backend.moveFile(moved, to: b1)
        backend.trashFile(trashed)
        backend.moveFile(up, to: backend.rootID)        // packed → the root's materialized listing
        backend.moveFile(down, to: a2)                  // materialized → packed
        backend.replaceContent(changed, with: [6, 6, 6, 6])
        backend.addFile("new.txt", in: b1, content: [8])
        backend.moveFile(twice, to: b1)                 // two changes to one item in one page
        backend.rename(twice, to: "twice-renamed.txt")
        try harness.fs.pollChanges()

        harness.backend.resetCounters()
        XCTAssertEqual(try harness.resolve("a/a1/new-name.txt").size, 1)
        XCTAssertThrowsError(try harness.resolve("a/a1/old-name.txt"))
        XCTAssertEqual(try harness.resolve("b/b1/moving.txt").size, 2)
        XCTAssertThrowsError(try harness.resolve("a/a1/moving.txt"))
        XCTAssertThrowsError(try harness.resolve("a/a2/trashed.txt"))
        XCTAssertEqual(try harness.resolve("up.txt").size, 1)
        XCTAssertThrowsError(try harness.resolve("b/b1/up.txt"))
        XCTAssertEqual(try harness.resolve("a/a2/down.txt").size, 3)
        XCTAssertThrowsError(try harness.resolve("down.txt"))
        XCTAssertEqual(try harness.resolve("a/a2/changed.txt").size, 4)
        XCTAssertEqual(try harness.resolve("b/b1/new.txt").size, 1)
        XCTAssertEqual(try harness.resolve("b/b1/twice-renamed.txt").size, 1)
        XCTAssertThrowsError(try harness.resolve("a/a2/twice.txt"))
        XCTAssertEqual(Set(try harness.walk().keys), ["a", "a/a1", "a/a1/new-name.txt", "a/a2", "a/a2/down.txt", "a/a2/changed.txt",
                                                    "b", "b/b1", "b/b1/moving.txt", "b/b1/new.txt", "b/b1/twice-renamed.txt",
                                                    "up.txt"])
        XCTAssertEqual(backend.requests["files.list"] ?? 0, 0, "the feed alone kept them current: \(backend.requestSummary)")
        _ = (a2, b1)
    }

    func testARemovedFolderTakesItsPackedListingOutOfTheIndex() throws {
        harness = try CoreHarness()
        let backend = harness.backend
        let gone = backend.addFolder("gone")
        let inner = backend.addFolder("inner", in: gone)
        backend.addFile("x.txt", in: inner, content: [1])
        backend.addFolder("kept")
        try harness.mount()
        _ = try harness.listPlus(.root)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        backend.trashFile(gone)
        try harness.fs.pollChanges()
        XCTAssertThrowsError(try harness.resolve("gone"))
        // What the index keeps is walked from the root: the trashed folder's subtree is not saved.
        let saved = harness.fs.table.indexSnapshot().folders.map(\.id)
        XCTAssertFalse(saved.contains(gone))
        XCTAssertFalse(saved.contains(inner))
    }

    // MARK: The whole-drive index

    private func waitForIndex(_ fs: DriveFilesystem) -> Bool {
        waitUntil("the index crawl to end") { !fs.lister.isIndexing } && fs.waitForPrefetch()
    }

    /// Root → 10 folders → 24 subfolders each → 19 files each: 250 folders, 4,820 entries.
    func testTheWholeDriveIsIndexedFromMountOnInAFewRequestsAndThenWalkedForNothing() throws {
        harness = try CoreHarness { $0.indexWholeDrive = true }
        let entries = CoreHarness.buildTree(harness.backend, top: 10, sub: 24, files: 19)
        try harness.mount()
        XCTAssertTrue(waitForIndex(harness.fs), "the index was not built in time")
        // Root, its 10 folders, 240 subfolders in groups of 50, pages of at most 460.
        XCTAssertLessThanOrEqual(harness.backend.requests["files.list"] ?? 0, 20, harness.backend.requestSummary)
        XCTAssertEqual(harness.fs.table.indexExtent.folders, 251)
        XCTAssertEqual(harness.fs.table.indexExtent.items, 1 + entries)
        XCTAssertLessThanOrEqual(harness.fs.table.withState { $0.nodes.count }, 1, "nothing materialized before it is used")

        // Saved as soon as it is built (a daemon killed later keeps it), not only at unmount.
        let indexFile = harness.configuration.cacheDirectory.appendingPathComponent(IndexStore.fileName).path
        waitUntil("the built index to be saved") { FileManager.default.fileExists(atPath: indexFile) }

        harness.backend.resetCounters()
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)
        harness.unmount()

        // A remount restores the whole index: nothing to list.
        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertTrue(waitForIndex(harness.fs))
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    /// Folders a user's lookups listed (whose subfolders nobody queued) are walked through, and
    /// what is below them indexed.
    func testIndexingWalksThroughListedFoldersToTheUnlistedOnesBelow() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 3, sub: 4, files: 2)
        try harness.mount()
        XCTAssertEqual(try harness.resolve("dir1/sub2/file1.txt").size, UInt64("content 1/2/1\n".utf8.count))
        harness.fs.lister.indexWholeDrive()
        XCTAssertTrue(waitForIndex(harness.fs))
        XCTAssertEqual(harness.fs.table.foldersNeedingListing(under: harness.backend.rootID), [])
        harness.backend.resetCounters()
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)
    }

    /// A folder that cannot be listed does not keep the index from finishing.
    func testIndexingEndsWhenAFolderKeepsFailing() throws {
        harness = try CoreHarness { $0.indexWholeDrive = true }
        _ = CoreHarness.buildTree(harness.backend, top: 2, sub: 2, files: 1)
        harness.backend.failNext(method: "files.list", count: 1_000, error: .permissionDenied(
            GoogleErrorInfo(status: 403, reason: "insufficientFilePermissions", message: "no")))
        try harness.mount()
        XCTAssertTrue(waitForIndex(harness.fs), "indexing never ended")
        harness.backend.clearFaults()
        XCTAssertEqual(try harness.walk().count, 2 + 4 + 4)
    }

    // MARK: The file

    private var indexPath: String { harness.configuration.cacheDirectory.appendingPathComponent(IndexStore.fileName).path }

    func testARemountRestoresTheIndexPackedAndCatchesUpFromTheFeed() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 4, sub: 6, files: 5)
        try harness.mount()
        _ = try harness.listPlus(.root)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        XCTAssertEqual(try harness.resolve("dir1/sub1/file1.txt").size, UInt64("content 1/1/1\n".utf8.count))
        harness.unmount()
        XCTAssertTrue(FileManager.default.fileExists(atPath: indexPath))

        // Meanwhile, another client: a rename, a new file, a removal, deep in folders never opened.
        let files = harness.backend.allFiles
        let deep = files.first { $0.name == "file3.txt" && harness.backend.file($0.parents[0])?.name == "sub2" }!
        harness.backend.rename(deep.id, to: "renamed.txt")
        let sub4 = files.first { $0.name == "sub4" && harness.backend.file($0.parents[0])?.name == "dir3" }!
        harness.backend.addFile("added.txt", in: sub4.id, content: [1, 2])
        let removed = files.first { $0.name == "file0.txt" && $0.parents[0] == sub4.id }!
        harness.backend.trashFile(removed.id)

        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertGreaterThan(harness.fs.table.packedSummary.items, entries / 2, "restored packed, not decoded")
        let all = try harness.walk()
        XCTAssertEqual(all.count, entries)
        XCTAssertEqual(all["dir3/sub4/added.txt"]?.size, 2)
        XCTAssertNil(all["dir3/sub4/file0.txt"])
        XCTAssertEqual(all.keys.filter { $0.hasSuffix("/renamed.txt") }.count, 1)
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    /// Inode numbers survive a remount (git's index and backup tools remember `st_ino`), and new
    /// items never take a saved number.
    func testInodeNumbersAreKeptAcrossARemount() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 3, sub: 3, files: 3)
        try harness.mount()
        let before = try harness.walk().mapValues(\.inode)
        XCTAssertEqual(before.count, entries)
        harness.unmount()
        harness.backend.addFile("later.txt", content: [1])
        try harness.mount()
        let after = try harness.walk()
        XCTAssertEqual(after.filter { $0.key != "later.txt" }.mapValues(\.inode), before)
        let later = try XCTUnwrap(after["later.txt"]?.inode)
        XCTAssertFalse(before.values.contains(later), "a new item took a saved inode number")
    }

    /// After a poll that changed something the index is saved, but at most once a minute (a large
    /// drive's index is hundreds of MB); unmount saves what is left.
    func testTheIndexIsSavedAfterChangesAtMostOnceAMinuteAndAtUnmount() throws {
        harness = try CoreHarness()
        let folder = harness.backend.addFolder("f")
        harness.backend.addFile("a.txt", in: folder, content: [1])
        try harness.mount()
        _ = try harness.walk()
        XCTAssertFalse(FileManager.default.fileExists(atPath: indexPath))
        harness.backend.addFile("b.txt", in: folder, content: [2])
        try harness.fs.pollChanges()
        let first = try XCTUnwrap(FileManager.default.contents(atPath: indexPath), "saved after the first change")
        harness.backend.addFile("c.txt", in: folder, content: [3])
        try harness.fs.pollChanges()
        XCTAssertEqual(FileManager.default.contents(atPath: indexPath), first, "not saved again within the minute")
        harness.unmount()
        XCTAssertNotEqual(FileManager.default.contents(atPath: indexPath), first, "saved at unmount")
        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertEqual(Set(try harness.walk().keys), ["f", "f/a.txt", "f/b.txt", "f/c.txt"])
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    func testADamagedIndexIsIgnoredAndTheFoldersListedAgain() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 3, sub: 3, files: 3)
        try harness.mount()
        XCTAssertEqual(try harness.walk().count, entries)
        harness.unmount()
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: indexPath))
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: indexPath))

        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertEqual(harness.fs.table.packedSummary.items, 0, "nothing restored from a damaged file")
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertGreaterThan(harness.backend.requests["files.list"] ?? 0, 0)
    }

    func testAnIndexMadeWithOtherExportSettingsIsIgnored() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 2, sub: 2, files: 2)
        try harness.mount()
        XCTAssertEqual(try harness.walk().count, entries)
        harness.unmount()
        harness.configuration.exportFormats = ExportFormats(preference: ["odt", "ods", "odp", "pdf"])
        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertEqual(harness.fs.table.packedSummary.items, 0)
        XCTAssertEqual(try harness.walk().count, entries)
        XCTAssertGreaterThan(harness.backend.requests["files.list"] ?? 0, 0)
    }
}
