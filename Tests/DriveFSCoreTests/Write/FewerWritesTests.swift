import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The write counts issue 16 names for work done before uploads start (its "Numbers"), counted on
/// the fake's requests: every write request saved is a third of a second on real Drive (about 3
/// writes a second per account). The uploads are held (`HeldUploadQueue`) until the work is done,
/// as a backlog or the upload delay holds them.
final class FewerWritesTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var held: HeldUploadQueue!

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 4, initialBackoff: 0.01,
                                    maximumBackoff: 0.05)
        held = HeldUploadQueue(queue)
        try harness.mount(uploads: held)
        fake.resetCounters()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    /// Requests that change Drive (Google's "writes and inserts").
    private var writes: Int {
        fake.requests.filter { method, _ in
            method.hasPrefix("files.create") || method.hasPrefix("files.update") || method == "files.delete"
                || method == "files.copy" || method == "files.emptyTrash"
        }.values.reduce(0, +)
    }

    private func drain() {
        held.release()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 120), "\(harness.fs.uploadStatus)")
    }

    func testAThousandFilesRenamedBeforeTheirUploadsAreCreatedOnceEachUnderTheirFinalNames() throws {
        let count = 1_000
        for i in 0..<count { try harness.writeFile(.root, "tmp-\(i).part", Array("file \(i)\n".utf8)) }
        for i in 0..<count { try harness.rename(.root, "tmp-\(i).part", to: .root, "file-\(i).txt") }
        drain()
        XCTAssertLessThanOrEqual(writes, count + 2, fake.requestSummary)
        let names = Set(fake.children(of: fake.rootID).filter { !$0.trashed }.map(\.name))
        XCTAssertEqual(names.count, count)
        XCTAssertTrue((0..<count).allSatisfy { names.contains("file-\($0).txt") }, "every file under its final name only")
        XCTAssertEqual(fake.content(of: try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "file-7.txt" }).id),
                       Array("file 7\n".utf8))
    }

    func testAHundredFilesRemovedBeforeTheirUploadsCostNoWrite() throws {
        for i in 0..<100 { try harness.writeFile(.root, "scratch-\(i)", Array("scratch \(i)\n".utf8)) }
        for i in 0..<100 { try BlockingCall.wait { harness.fs.removeFile(parent: .root, name: "scratch-\(i)", reply: $0) } }
        drain()
        XCTAssertEqual(writes, 0, fake.requestSummary)
        XCTAssertTrue(fake.children(of: fake.rootID).isEmpty)
    }

    /// A hundred saves the way editors make them (a temporary file written, renamed over the
    /// original), drained to Drive after every tenth: at most a hundred writes, all of them
    /// content updates of the original (a save made before the last one went up supersedes it);
    /// its Drive ID kept, nothing created or trashed, and Drive's revision list grown by exactly
    /// the versions sent, the last save's bytes the head. (EditorSaveTests drains after each save.)
    func testAHundredEditorSavesAreAtMostAHundredUpdatesOfTheOriginal() throws {
        // The temporary file's upload waits far longer than a save takes (no race with the
        // rename); a drain sends what waits at once.
        let h = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 600
        }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("draft\n".utf8))
        try h.mount()
        let revisionsBefore = try h.backend.listRevisions(original).count
        _ = try h.lookup(.root, "notes.txt")
        h.backend.resetCounters()
        var last: [UInt8] = []
        for save in 1...100 {
            last = Array("save \(save)\n".utf8)
            _ = try h.writeFile(.root, ".notes.txt.swp", last)
            try h.rename(.root, ".notes.txt.swp", to: .root, "notes.txt")
            if save % 10 == 0 {
                XCTAssertTrue(h.fs.drainUploads(timeout: 60), "save \(save): \(h.fs.uploadStatus)")
                XCTAssertEqual(h.backend.content(of: original), last, "save \(save) is the original's content")
            }
        }
        let counts = h.backend.requests
        let updates = counts["files.update.upload", default: 0]
        XCTAssertGreaterThanOrEqual(updates, 10, "one at least for each drain: \(h.backend.requestSummary)")
        XCTAssertLessThanOrEqual(updates, 100, h.backend.requestSummary)
        let others = counts.filter { ($0.key.hasPrefix("files.create") || $0.key.hasPrefix("files.update") || $0.key == "files.delete")
            && $0.key != "files.update.upload" }
        XCTAssertTrue(others.isEmpty, "no other write: \(h.backend.requestSummary)")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID, includingTrashed: true).map(\.id), [original], "the ID kept, nothing trashed")
        XCTAssertEqual(try h.backend.listRevisions(original).count, revisionsBefore + updates, "a revision a version sent")
    }

    // MARK: - Metadata rides along

    private func folderWrites(_ h: CoreHarness) -> [String: Int] {
        h.backend.requests.filter { $0.key.hasPrefix("files.create") || $0.key.hasPrefix("files.update") || $0.key == "files.delete" }
    }

    private func setTime(_ h: CoreHarness, _ inode: Inode, _ millis: Int64) throws {
        _ = try BlockingCall.wait { h.fs.setAttributes(inode, AttributeChanges(modified: .millis(millis)), handle: nil, reply: $0) }
    }

    private func setMode(_ h: CoreHarness, _ inode: Inode, _ mode: UInt32) throws {
        _ = try BlockingCall.wait { h.fs.setAttributes(inode, AttributeChanges(permissions: mode), handle: nil, reply: $0) }
    }

    /// `tar x` of N folders: each made, filled, then given its time and mode (tar sets a folder's
    /// after its content, as `cp -a` and `rsync -a` do): N folder creates, each carrying its time
    /// and mode, and one create a file; not 3N writes for the folders.
    func testATarShapedExtractionCostsOneWriteAFolder() throws {
        let h = try CoreHarness {
            $0.readOnly = false
            $0.posixMetadata = true
            $0.newFileSettle = 600
            $0.changeSettle = 600
        }
        defer { h.remove() }
        try h.mount()
        h.backend.resetCounters()
        let count = 10
        let top = try h.makeDirectory(.root, "tree")
        var folders: [(inode: Inode, time: Int64)] = []
        for i in 0..<count {
            let folder = try h.makeDirectory(top.inode, "d\(i)")
            for j in 0..<2 { try h.writeFile(folder.inode, "f\(j)", Array("folder \(i) file \(j)\n".utf8)) }
            folders.append((folder.inode, 1_600_000_000_000 + Int64(i) * 1000))
        }
        for (inode, time) in folders.reversed() {
            try setTime(h, inode, time)
            try setMode(h, inode, 0o750)
        }
        try setTime(h, top.inode, 1_500_000_000_000)
        try setMode(h, top.inode, 0o700)
        XCTAssertEqual(folderWrites(h), [:], "nothing sent before the upload delay")
        XCTAssertTrue(h.fs.drainUploads(timeout: 120), "\(h.fs.uploadStatus)")
        XCTAssertEqual(folderWrites(h), ["files.create": count + 1, "files.create.upload": count * 2],
                       "one write a folder, one a file: \(h.backend.requestSummary)")
        let tree = try XCTUnwrap(h.backend.children(of: h.backend.rootID).first { $0.name == "tree" })
        XCTAssertEqual(tree.modifiedTime, 1_500_000_000_000)
        XCTAssertEqual(tree.appProperties?[AppPropertyKeys.mode], "700")
        for (i, folder) in h.backend.children(of: tree.id).sorted(by: { $0.name < $1.name }).enumerated() {
            XCTAssertEqual(folder.name, "d\(i)")
            XCTAssertEqual(folder.modifiedTime, 1_600_000_000_000 + Int64(i) * 1000, folder.name)
            XCTAssertEqual(folder.appProperties?[AppPropertyKeys.mode], "750", folder.name)
            XCTAssertEqual(h.backend.children(of: folder.id).count, 2, folder.name)
        }
    }

    /// A folder already on Drive given a time and a mode one after the other (tar, rsync -a on a
    /// folder that exists): one files.update carries both.
    func testATimeAndAModeOfAFolderOnDriveAreOneUpdate() throws {
        let h = try CoreHarness {
            $0.readOnly = false
            $0.posixMetadata = true
            $0.changeSettle = 600
        }
        defer { h.remove() }
        let id = h.backend.addFolder("there")
        try h.mount()
        let folder = try h.lookup(.root, "there")
        h.backend.resetCounters()
        try setTime(h, folder.inode, 1_600_000_000_000)
        try setMode(h, folder.inode, 0o711)
        XCTAssertEqual(try h.lookup(.root, "there").permissions & 0o7777, 0o711, "shown at once")
        XCTAssertEqual(folderWrites(h), [:], "nothing sent before the upload delay")
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(folderWrites(h), ["files.update": 1], h.backend.requestSummary)
        XCTAssertEqual(h.backend.file(id)?.modifiedTime, 1_600_000_000_000)
        XCTAssertEqual(h.backend.file(id)?.appProperties?[AppPropertyKeys.mode], "711")
    }

    /// `cp -p` of a file: written, closed, then given its time and mode while its upload waits:
    /// the upload carries both (one create, no update).
    func testATimeAndAModeRideAlongWithAPendingUpload() throws {
        let h = try CoreHarness {
            $0.readOnly = false
            $0.posixMetadata = true
            $0.newFileSettle = 600
            $0.changeSettle = 600
        }
        defer { h.remove() }
        try h.mount()
        h.backend.resetCounters()
        let inode = try h.writeFile(.root, "copied.txt", Array("copied\n".utf8))
        try setTime(h, inode, 1_400_000_000_000)
        try setMode(h, inode, 0o600)
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(folderWrites(h), ["files.create.upload": 1], h.backend.requestSummary)
        let file = try XCTUnwrap(h.backend.children(of: h.backend.rootID).first { $0.name == "copied.txt" })
        XCTAssertEqual(file.modifiedTime, 1_400_000_000_000)
        XCTAssertEqual(file.appProperties?[AppPropertyKeys.mode], "600")
    }

    /// `mkdir d; touch -d T d; chmod 750 d` with the process killed after each journal record in
    /// turn (the create's, the time's, the mode's), then a restart: Drive ends with one folder
    /// `d` carrying every change whose call returned; a change whose record the crash cut short
    /// failed its call (nothing accepted is lost).
    func testACrashAfterAnyRecordKeepsTheFoldedTimeAndMode() throws {
        var point = 1
        while true {
            let h = try CoreHarness {
                $0.readOnly = false
                $0.posixMetadata = true
                $0.changeSettle = 600
            }
            defer { h.remove() }
            let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 600)
            let seen = Locked(0)
            let target = point
            queue.setCrashHook { _ in seen.withLock { $0 += 1; return $0 == target } }
            try h.mount(uploads: queue)
            var made = false
            var timed = false
            var moded = false
            do {
                let folder = try h.makeDirectory(.root, "d")
                made = true
                try setTime(h, folder.inode, 1_300_000_000_000)
                timed = true
                try setMode(h, folder.inode, 0o750)
                moded = true
            } catch {
                // The crash answered the call in flight.
            }
            let crashed = queue.hasCrashed
            if !crashed { queue.crashNow() }
            h.crash()
            XCTAssertEqual(folderWrites(h), [:], "point \(point): nothing reached Drive before the crash")
            try h.mount()
            XCTAssertTrue(h.fs.drainUploads(timeout: 60), "point \(point): \(h.fs.uploadStatus)")
            let live = h.backend.children(of: h.backend.rootID).filter { $0.name == "d" }
            let label = "point \(point) (made \(made), timed \(timed), moded \(moded)): \(h.backend.requestSummary)"
            // A create whose record was durable lands even when the crash failed its call.
            XCTAssertEqual(live.count, made ? 1 : live.count, label)
            XCTAssertLessThanOrEqual(live.count, 1, label)
            if timed { XCTAssertEqual(live.first?.modifiedTime, 1_300_000_000_000, label) }
            if moded { XCTAssertEqual(live.first?.appProperties?[AppPropertyKeys.mode], "750", label) }
            if made { XCTAssertEqual(folderWrites(h)["files.create"], 1, label) }
            h.unmount()
            if !crashed { break }
            point += 1
        }
        XCTAssertGreaterThanOrEqual(point, 4, "the create, the time and the mode were each crashed after")
    }

    /// An fsync of a file in folders whose creates wait (`changeSettle`) does not wait for them:
    /// the folders it goes into are made first, at once, and nothing else that waits is sent.
    /// (`--sync-close`: a new file's fsync waits for Drive, not only for the cache disk.)
    func testAnFsyncInAFolderThatWaitsDoesNotWaitTheDelay() throws {
        let h = try CoreHarness {
            $0.readOnly = false
            $0.syncClose = true
            $0.newFileSettle = 600
            $0.changeSettle = 600
        }
        defer { h.remove() }
        try h.mount()
        let outer = try h.makeDirectory(.root, "outer")
        let inner = try h.makeDirectory(outer.inode, "inner")
        _ = try h.makeDirectory(.root, "elsewhere")
        let created = try h.create(inner.inode, "f.txt")
        try h.write(created.attributes.inode, created.opened.handle, Array("synced\n".utf8), at: 0)
        let answer = Pending<Void>()
        h.fs.synchronize(created.attributes.inode, handle: created.opened.handle, dataOnly: false, reply: answer.reply)
        guard let result = answer.wait(seconds: 60) else { return XCTFail("the fsync did not answer within a minute") }
        try result.get()
        try h.close(created.attributes.inode, created.opened.handle)
        let outerOnDrive = try XCTUnwrap(h.backend.children(of: h.backend.rootID).first { $0.name == "outer" })
        let innerOnDrive = try XCTUnwrap(h.backend.children(of: outerOnDrive.id).first { $0.name == "inner" })
        XCTAssertEqual(h.backend.children(of: innerOnDrive.id).map(\.name), ["f.txt"])
        XCTAssertFalse(h.backend.children(of: h.backend.rootID).contains { $0.name == "elsewhere" }, "a folder nobody waits for waits")
    }

    /// A new file whose upload is on its way, moved into a folder made here whose create still
    /// waits (`changeSettle`): the upload lands, the folder is made, then the file moved into it.
    /// (Found by the chaos run, seed 480969916342, once a mkdir's create was queued: the move into
    /// the folder not made yet answered 404 and the upload failed for good, the file left on Drive
    /// under its old name.)
    func testAFileMovedIntoAWaitingFolderWhileItsUploadRunsLandsThere() throws {
        let h = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 0
            $0.changeSettle = 600
        }
        defer { h.remove() }
        let gate = Locked((entered: false, open: false))
        h.backend.writeHook = { method, phase, _ in
            guard method == "files.create.upload", phase == .before else { return }
            gate.withLock { $0.entered = true }
            let end = Date(timeIntervalSinceNow: 30)
            while !gate.withLock({ $0.open }) && Date() < end { usleep(500) }
        }
        try h.mount()
        try h.writeFile(.root, "f.txt", Array("moved while it uploads\n".utf8))
        waitUntil("the upload to be on its way") { gate.withLock { $0.entered } }
        let folder = try h.makeDirectory(.root, "new")
        try h.rename(.root, "f.txt", to: folder.inode, "f.txt")
        gate.withLock { $0.open = true }
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.fs.uploadStatus.failed, 0, "nothing failed: \(h.backend.requestSummary)")
        let made = try XCTUnwrap(h.backend.children(of: h.backend.rootID).first { $0.name == "new" }, h.backend.requestSummary)
        XCTAssertEqual(h.backend.children(of: made.id).map(\.name), ["f.txt"])
        XCTAssertEqual(h.backend.children(of: h.backend.rootID).map(\.name), ["new"], "nothing left where it was")
        XCTAssertEqual(h.backend.children(of: made.id).first.flatMap { h.backend.content(of: $0.id) },
                       Array("moved while it uploads\n".utf8))
    }
}
