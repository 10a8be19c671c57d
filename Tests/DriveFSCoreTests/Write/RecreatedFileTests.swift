import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A file trashed on Drive while an edit of it waits is made again under a new ID (the queue's
/// `recreate`). Chaos finding 13: the edits queued behind that upload kept the old ID as their
/// key while the mount's node took the new one, so later edits of the same file ran as the
/// uploads of another file, beside the earlier ones and in no order: an older edit landed last,
/// and a rename went to the trashed file (or was undone by the older edit's landing).
final class RecreatedFileTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    /// A gate a write request waits at (bounded), opened by the test.
    final class Gate: @unchecked Sendable {
        // @unchecked: every field is behind `lock`.
        private let lock = NSCondition()
        private var open = false
        private var reached = false

        /// Called by the held request: notes it came, waits until opened (at most 30 s).
        func pass() {
            lock.lock(); defer { lock.unlock() }
            reached = true
            lock.broadcast()
            let end = Date(timeIntervalSinceNow: 30)
            while !open && lock.wait(until: end) {}
        }

        func release() { lock.lock(); open = true; lock.broadcast(); lock.unlock() }

        /// Waits (at most 30 s) until the held request came; false when it did not.
        func waitReached() -> Bool {
            lock.lock(); defer { lock.unlock() }
            let end = Date(timeIntervalSinceNow: 30)
            while !reached && lock.wait(until: end) {}
            return reached
        }
    }

    private func untrashed() -> [DriveFile] { fake.children(of: fake.rootID) }

    func testEditsQueuedBehindARecreateLandInOrderUnderTheLastName() throws {
        let old = fake.addFile("doc.txt", content: Array("version 0\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "doc.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("version 0\n".utf8))
        // A colleague trashes it; the mount has not heard of it when the edits come.
        fake.trashFile(old)

        let create = Gate()
        let firstUpdate = Gate()
        let heldUpdate = Locked(false)
        fake.writeHook = { method, phase, _ in
            guard phase == .before else { return }
            if method == "files.create.upload" { create.pass() }
            if method == "files.update.upload", !heldUpdate.withLock({ h in defer { h = true }; return h }) { firstUpdate.pass() }
        }
        // Edit 1 finds the file trashed and is created again under a new ID: held in its create.
        try harness.rewrite(inode, Array("edit 1\n".utf8))
        XCTAssertTrue(create.waitReached(), "the first edit is created again")
        // Edit 2 is queued behind it (under the file's old ID, as the mount knows it now).
        try harness.rewrite(inode, Array("edit 2, longer\n".utf8))
        create.release()
        // Edit 2 goes to the new file: held in its update, once the mount shows the new ID.
        XCTAssertTrue(firstUpdate.waitReached(), "the second edit updates the new file")
        waitUntil("the mount shows the file under its new ID") { harness.fs.table.node(inode)?.file.id != old }
        let recreated = try XCTUnwrap(harness.fs.table.node(inode)?.file.id)
        // Edit 3 and a rename, while edit 2 is in flight.
        try harness.rewrite(inode, Array("edit 3, the last one\n".utf8))
        try harness.rename(.root, "doc.txt", to: .root, "final.txt")
        firstUpdate.release()
        waitUntil("every upload landed") { harness.fs.uploadStatus.isIdle }

        let files = untrashed()
        XCTAssertEqual(files.map(\.name), ["final.txt"], "one file on Drive, under the name it was renamed to last")
        XCTAssertEqual(files.first?.id, recreated, "the file made again holds it")
        XCTAssertEqual(files.first.flatMap { fake.content(of: $0.id) }, Array("edit 3, the last one\n".utf8),
                       "the last edit is what Drive holds")
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "final.txt").inode), Array("edit 3, the last one\n".utf8))
        XCTAssertEqual(fake.file(old)?.name, "doc.txt", "the trashed file is left as the colleague left it")
    }

    /// A rename and a chmod made after the file was made again under a new ID but before the
    /// core heard of that landing (its node still shows the old ID): both go to the new file, and
    /// the node keeps the ID the table indexes it by until the landing is applied. (The chaos run
    /// of 30 minutes crashed here: the rename gave the node the new ID behind the table's back.)
    /// Found by the chaos run's second mount: another machine saved the file the way editors do
    /// (a new file renamed over it, which trashes it) while an edit of it waited here. The edit
    /// found the file trashed and made it again under the same name: two files named doc.txt,
    /// and each save after that replaced only one of them (six files under one name in a 90 s run).
    /// The other machine's file keeps the name; the edit goes beside it as a conflicted copy.
    func testAnEditOfAFileReplacedElsewhereGoesBesideTheReplacementAsAConflictedCopy() throws {
        let old = fake.addFile("doc.txt", content: Array("version 0\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "doc.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("version 0\n".utf8))
        // The other machine's save: its new file takes the name, the old one goes to the trash.
        let theirs = fake.addFile(".doc.txt.swp", content: Array("their save\n".utf8))
        fake.rename(theirs, to: "doc.txt")
        fake.trashFile(old)
        // The edit here, made before this mount heard of it.
        try harness.rewrite(inode, Array("our edit\n".utf8))
        waitUntil("every upload landed") { harness.fs.uploadStatus.isIdle }

        let files = untrashed()
        XCTAssertEqual(files.filter { $0.name == "doc.txt" }.map(\.id), [theirs], "one file under the name: the other machine's")
        XCTAssertEqual(fake.content(of: theirs), Array("their save\n".utf8))
        let copies = files.filter { $0.name.hasPrefix("doc (conflicted copy ") && $0.name.hasSuffix(").txt") }
        XCTAssertEqual(copies.count, 1, "our edit beside it as a conflicted copy: \(files.map(\.name))")
        XCTAssertEqual(copies.first.flatMap { fake.content(of: $0.id) }, Array("our edit\n".utf8))
        XCTAssertEqual(files.count, 2, "nothing else: \(files.map(\.name))")
    }

    func testARenameAndAChmodBeforeTheCoreHeardOfTheRecreateGoToTheNewFile() throws {
        let old = fake.addFile("doc.txt", content: Array("version 0\n".utf8))
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 2,
                                    initialBackoff: 0.01, maximumBackoff: 0.05)
        let gate = LandingGate(queue)
        defer { gate.openForGood() }
        try harness.mount(uploads: gate)
        let inode = try harness.lookup(.root, "doc.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("version 0\n".utf8))
        fake.trashFile(old)
        try harness.rewrite(inode, Array("edit 1\n".utf8))
        XCTAssertTrue(gate.waitForLanding(timeout: 30), "the edit landed as a new file")
        XCTAssertEqual(harness.fs.table.node(inode)?.file.id, old, "the core has not heard of the landing yet")
        try harness.rename(.root, "doc.txt", to: .root, "final.txt")
        var chmod = AttributeChanges()
        chmod.permissions = 0o600
        let asked = chmod
        _ = try BlockingCall.wait { harness.fs.setAttributes(inode, asked, handle: nil, reply: $0) }
        gate.deliverHeld()
        gate.openForGood()
        waitUntil("every upload landed") { harness.fs.uploadStatus.isIdle }

        let files = untrashed()
        XCTAssertEqual(files.map(\.name), ["final.txt"], "the file made again holds the new name")
        XCTAssertEqual(files.first.flatMap { fake.content(of: $0.id) }, Array("edit 1\n".utf8))
        XCTAssertEqual(files.first?.appProperties?[AppPropertyKeys.mode], "600", "the chmod went to it")
        XCTAssertNotEqual(files.first?.id, old)
        XCTAssertEqual(harness.fs.table.node(inode)?.file.id, files.first?.id, "the node shows it once the landing is applied")
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "final.txt").inode), Array("edit 1\n".utf8))
    }

    /// The move is part of the journal's fold: the queued edit is the new ID's after the landing,
    /// a call naming the old ID finds it, and a compacted journal replays to the same state.
    func testTheMoveToTheNewIDSurvivesReplayAndCompaction() {
        func request(_ name: String) -> UploadRequest {
            UploadRequest(fileID: "old", isNew: false, parentID: "root", name: name, baseRevision: "r0", displayPath: "/" + name)
        }
        let records: [UploadJournal.Record] = [
            .commit(seq: 1, request: request("doc.txt"), contentPath: "/c1", ready: true, replaces: nil, rebasedOn: nil),
            .commit(seq: 2, request: request("doc.txt"), contentPath: "/c2", ready: true, replaces: nil, rebasedOn: nil),
            .retarget(seq: 1, target: "new"),
            .done(seq: 1, landed: UploadJob.Landed(id: "new", headRevisionId: "n1", md5: "m1", wasConflict: false)),
        ]
        let state = UploadQueueState(replaying: records)
        XCTAssertEqual(state.currentID("old"), "new")
        XCTAssertTrue(state.jobs(of: "old").isEmpty, "no job is left under the old ID")
        let moved = state.jobs(of: "new")
        XCTAssertEqual(moved.map(\.seq), [2], "the queued edit is the new ID's")
        XCTAssertEqual(moved.first?.request.fileID, "new")
        XCTAssertEqual(moved.first?.target, "new")
        XCTAssertEqual(moved.first?.creates, false, "it updates the file made again")
        XCTAssertEqual(moved.first?.request.baseRevision, "n1", "written on the landing that made it")
        XCTAssertEqual(UploadQueueState(replaying: state.snapshot), state, "a compacted journal replays to the same state")
        XCTAssertEqual(UploadQueueState(replaying: state.snapshot).currentID("old"), "new")
        // A conflicted copy lands under its own ID: nothing moves.
        let conflict = UploadQueueState(replaying: [
            .commit(seq: 1, request: request("a.txt"), contentPath: "/c1", ready: true, replaces: nil, rebasedOn: nil),
            .conflict(seq: 1, copy: UploadJob.ConflictCopy(id: "copy", name: "a (conflicted copy).txt")),
            .done(seq: 1, landed: UploadJob.Landed(id: "copy", headRevisionId: "c1", md5: "m", wasConflict: true)),
        ])
        XCTAssertEqual(conflict.currentID("old"), "old")
    }
}
