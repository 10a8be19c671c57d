import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Files kept offline (`PinKeeper`, `user.drivefs.pinned`) and each file's sync state
/// (`user.drivefs.state`), over the fake backend. Nothing is timed: a test waits (bounded) for an
/// attribute's value and counts the fake's downloads.
final class PinTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    override func tearDown() {
        harness?.backend.writeHook = nil
        harness?.backend.unreachable = nil
        harness?.remove()
        harness = nil
    }

    private var downloads: Int { fake.requests["files.get.media", default: 0] + fake.requests["revisions.get.media", default: 0] }

    private func attribute(_ inode: Inode, _ name: String) throws -> String {
        String(decoding: try BlockingCall.wait { fs.extendedAttribute(inode, named: name, reply: $0) }, as: UTF8.self)
    }

    private func setPinned(_ inode: Inode, _ value: String) throws {
        try BlockingCall.wait { fs.setExtendedAttribute(inode, named: ExtendedAttributes.pinned, value: Array(value.utf8), flags: 0,
                                                        reply: $0) }
    }

    private func state(_ inode: Inode) throws -> String { try attribute(inode, ExtendedAttributes.state) }

    private func goOffline() {
        fake.unreachable = FakeDriveBackend.cannotConnect
        fake.reachability!.markOffline("test: connection refused")
    }

    // MARK: Keep offline

    func testPinnedBlocksSurviveEvictionPressure() throws {
        harness = try CoreHarness { $0.cacheSize = 1 << 20 }
        let keep = fake.addFolder("keep")
        let kept = CoreHarness.pattern(600_000, seed: 1)
        fake.addFile("kept.bin", in: keep, content: kept)
        for n in 0..<4 { fake.addFile("other-\(n).bin", in: nil, content: CoreHarness.pattern(600_000, seed: UInt64(10 + n))) }
        try harness.mount()
        let folder = try harness.resolve("keep").inode
        let file = try harness.lookup(folder, "kept.bin").inode
        XCTAssertEqual(try state(file), "cloud")
        try setPinned(folder, "1")
        XCTAssertEqual(try attribute(file, ExtendedAttributes.pinned), "1", "a folder's pin covers what is in it")
        try waitUntil("the pinned file is all local") { try state(file) == "offline" }

        // Each of these is more than half the cap: reading them evicts whatever may be evicted.
        for n in 0..<4 { _ = try harness.read(try harness.lookup(.root, "other-\(n).bin").inode) }
        XCTAssertGreaterThan(fs.cacheCounters.blocksEvicted, 0, "the cap was under pressure")
        XCTAssertEqual(try state(file), "offline")
        fake.resetCounters()
        XCTAssertEqual(try harness.read(file), kept)
        XCTAssertEqual(downloads, 0, "the pinned file was read from the cache: \(fake.requestSummary)")
        XCTAssertEqual(fs.status().cache.pinnedBytes, Int64(kept.count))

        // Unpinned, it is content like any other again.
        try setPinned(folder, "0")
        XCTAssertEqual(try attribute(file, ExtendedAttributes.pinned), "0")
        XCTAssertEqual(try state(file), "synced")
    }

    func testAPinnedFolderCoversAFileAddedToItLater() throws {
        harness = try CoreHarness { $0.readOnly = false }
        let keep = fake.addFolder("keep")
        fake.addFile("first.txt", in: keep, content: Array("first\n".utf8))
        try harness.mount()
        let folder = try harness.resolve("keep").inode
        try setPinned(folder, "1")
        let first = try harness.lookup(folder, "first.txt").inode
        try waitUntil("the first file is all local") { try state(first) == "offline" }

        // Added on Drive: the change feed brings it, the next sweep fetches it.
        let later = CoreHarness.pattern(200_000, seed: 7)
        fake.addFile("later.bin", in: keep, content: later)
        try fs.pollChanges()
        let added = try harness.lookup(folder, "later.bin").inode
        XCTAssertEqual(try attribute(added, ExtendedAttributes.pinned), "1")
        try waitUntil("the file added on Drive is all local") { try state(added) == "offline" }

        // Made here: pinned as it is made, and kept once it landed.
        let made = try harness.writeFile(folder, "made here.txt", Array("made\n".utf8))
        XCTAssertEqual(try attribute(made, ExtendedAttributes.pinned), "1")
        XCTAssertTrue(fs.drainUploads(timeout: 60))
        try waitUntil("the file made here is kept") { try state(made) == "offline" }

        goOffline()
        XCTAssertEqual(try harness.read(added), later)
        XCTAssertEqual(try harness.read(made), Array("made\n".utf8))
    }

    func testPinsPersistAcrossARestart() throws {
        harness = try CoreHarness()
        let keep = fake.addFolder("keep")
        let bytes = CoreHarness.pattern(300_000, seed: 3)
        fake.addFile("kept.bin", in: keep, content: bytes)
        fake.addFile("loose.bin", in: nil, content: CoreHarness.pattern(300_000, seed: 4))
        try harness.mount()
        try setPinned(try harness.resolve("keep").inode, "1")
        try waitUntil("the pinned file is all local") { try state(try harness.resolve("keep/kept.bin").inode) == "offline" }
        harness.unmount()

        try harness.mount()
        let file = try harness.resolve("keep/kept.bin").inode
        XCTAssertEqual(try attribute(file, ExtendedAttributes.pinned), "1", "the pin was kept in the cache directory")
        XCTAssertEqual(try attribute(try harness.resolve("loose.bin").inode, ExtendedAttributes.pinned), "0")
        XCTAssertEqual(try state(file), "offline")
        fake.resetCounters()
        XCTAssertEqual(try harness.read(file), bytes)
        XCTAssertEqual(downloads, 0, "\(fake.requestSummary)")
        // The summary is the last sweep's (the one at start may still run).
        try waitUntil("the sweep at start") { fs.pinSweepsDone > 0 && fs.pinSweepsIdle }
        let pins = fs.status().pins ?? []
        XCTAssertEqual(pins.map(\.path), ["/keep"])
        XCTAssertEqual(pins.first?.localBytes, Int64(bytes.count))
    }

    func testAContentChangeOnDriveIsFetchedAgain() throws {
        harness = try CoreHarness()
        let id = fake.addFile("notes.txt", in: nil, content: Array("version one\n".utf8))
        try harness.mount()
        let file = try harness.resolve("notes.txt").inode
        try setPinned(file, "1")
        try waitUntil("the first version is local") { try state(file) == "offline" }

        let second = Array("version two, longer\n".utf8)
        fake.replaceContent(id, with: second)
        fake.resetCounters()
        try fs.pollChanges()
        try waitUntil("the new version is local") { try state(file) == "offline" && downloads > 0 }
        goOffline()
        XCTAssertEqual(try harness.read(file), second, "the new version was fetched while online")
    }

    func testAPinnedDocumentIsKeptAsItsExportAndReadOffline() throws {
        harness = try CoreHarness()
        let keep = fake.addFolder("keep")
        let doc = fake.addDocument("Plan", in: keep, text: "the plan\n")
        try harness.mount()
        let folder = try harness.resolve("keep").inode
        let file = try harness.lookup(folder, "Plan.docx").inode
        XCTAssertEqual(try state(file), "cloud", "a document never opened has no export here")
        var exports: Int { fake.requests["files.export", default: 0] }

        try setPinned(folder, "1")
        try waitUntil("the document's export is local") { try state(file) == "offline" }
        XCTAssertEqual(exports, 1)
        let first = Array("export as application/vnd.openxmlformats-officedocument.wordprocessingml.document\nthe plan\n".utf8)
        try waitUntil("the sweep has counted the export") { fs.pinStatus.first?.documentsNotExported == 0 }
        XCTAssertEqual(fs.pinStatus.first?.files, 1)
        XCTAssertEqual(fs.pinStatus.first?.bytes, Int64(first.count), "the export's bytes, once made")
        XCTAssertEqual(fs.pinStatus.first?.localBytes, Int64(first.count))

        // Edited on Drive: a new version, exported again by the sweep after the poll.
        fake.replaceContent(doc, with: Array("the plan, revised\n".utf8))
        try fs.pollChanges()
        try waitUntil("the new version's export is local") { try state(file) == "offline" && exports == 2 }
        goOffline()
        fake.resetCounters()
        let read = try harness.read(file)
        XCTAssertEqual(String(decoding: read, as: UTF8.self),
                       "export as application/vnd.openxmlformats-officedocument.wordprocessingml.document\nthe plan, revised\n",
                       "offline, the pinned document opens as the export made while online")
        XCTAssertEqual(exports, 0, "the export was not asked of Drive again: \(fake.requestSummary)")

        // Unpinned, its export is cache content like any other.
        try setPinned(folder, "0")
        XCTAssertEqual(try state(file), "synced")
    }

    func testAPinFollowsARenameAndAnUnpinInsideAPinnedFolderIsItsOwn() throws {
        harness = try CoreHarness { $0.readOnly = false }
        let keep = fake.addFolder("keep")
        fake.addFile("a.txt", in: keep, content: Array("a".utf8))
        fake.addFile("b.txt", in: keep, content: Array("b".utf8))
        fake.addFolder("elsewhere")
        try harness.mount()
        let folder = try harness.resolve("keep").inode
        try setPinned(folder, "1")
        let a = try harness.lookup(folder, "a.txt").inode
        let b = try harness.lookup(folder, "b.txt").inode
        try setPinned(b, "0")
        XCTAssertEqual(try attribute(b, ExtendedAttributes.pinned), "0", "unpinned inside a pinned folder")
        XCTAssertEqual(try attribute(a, ExtendedAttributes.pinned), "1", "the rest of the folder stays pinned")
        try setPinned(a, "1")
        XCTAssertEqual(fs.pins.set.rules.count, 2, "a pin the folder gives already adds no rule: \(fs.pins.set.rules)")

        // The folder renamed and moved: the pin is its Drive ID's.
        let elsewhere = try harness.resolve("elsewhere").inode
        try harness.rename(.root, "keep", to: elsewhere, "kept")
        XCTAssertEqual(try attribute(try harness.resolve("elsewhere/kept/a.txt").inode, ExtendedAttributes.pinned), "1")
        // `drivefs pin --list` shows it where it is after the next sweep (the next poll's, here asked for).
        fs.sweepPins()
        try waitUntil("a sweep after the rename") { fs.pinSweepsIdle }
        XCTAssertEqual((fs.status().pins ?? []).map(\.path), ["/elsewhere/kept"])
    }

    // MARK: Each file's state

    func testAFileWalksLocalQueuedUploadingSynced() throws {
        harness = try CoreHarness {
            $0.readOnly = false
            $0.transfers = 1
            $0.newFileSettle = 0
        }
        try harness.mount()
        let held = Locked<Set<String>>([])
        let arrived = Locked<Set<String>>([])
        fake.writeHook = { _, phase, id in
            guard phase == .before, let id else { return }
            arrived.withLock { _ = $0.insert(id) }
            while held.withLock({ $0.contains(id) }) { usleep(500) }
        }
        // A first upload holds the one transfer.
        let blocker = try harness.create(.root, "blocker.txt")
        let blockerID = fs.table.node(blocker.attributes.inode)!.file.id
        held.withLock { _ = $0.insert(blockerID) }
        _ = try harness.write(blocker.attributes.inode, blocker.opened.handle, Array("b".utf8), at: 0)
        try harness.close(blocker.attributes.inode, blocker.opened.handle)
        try waitUntil("the blocker is on the wire") { arrived.withLock { $0.contains(blockerID) } }

        let created = try harness.create(.root, "new.txt")
        let inode = created.attributes.inode
        let id = fs.table.node(inode)!.file.id
        held.withLock { _ = $0.insert(id) }
        _ = try harness.write(inode, created.opened.handle, Array("new\n".utf8), at: 0)
        XCTAssertEqual(try state(inode), "local", "written, not closed")
        try harness.close(inode, created.opened.handle)
        // The last close's commit runs on a commit thread: `local` until it is journaled ready.
        try waitUntil("closed, it is queued behind the blocker") { try state(inode) == "queued" }
        XCTAssertEqual(try state(inode), "queued", "it stays queued while the one transfer is held")
        held.withLock { _ = $0.remove(blockerID) }
        try waitUntil("its upload is on the wire") { arrived.withLock { $0.contains(id) } }
        XCTAssertEqual(try state(inode), "uploading")
        held.withLock { _ = $0.remove(id) }
        XCTAssertTrue(fs.drainUploads(timeout: 60))
        try waitUntil("it is synced") { try state(inode) == "synced" }
        let names = try BlockingCall.wait { fs.extendedAttributeNames(inode, reply: $0) }
        XCTAssertTrue(names.contains(ExtendedAttributes.state))
        XCTAssertFalse(names.contains(ExtendedAttributes.pinned))
    }

    func testOnlyOneAndZeroArePinnedValues() throws {
        harness = try CoreHarness()
        fake.addFile("a.txt", in: nil, content: Array("a".utf8))
        try harness.mount()
        let file = try harness.resolve("a.txt").inode
        XCTAssertThrowsError(try setPinned(file, "maybe")) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EINVAL) }
        XCTAssertThrowsError(try BlockingCall.wait {
            fs.setExtendedAttribute(file, named: ExtendedAttributes.state, value: Array("synced".utf8), flags: 0, reply: $0)
        }) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EPERM) }
    }
}
