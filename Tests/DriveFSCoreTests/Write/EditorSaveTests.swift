import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The way editors, `rsync` and `sed -i` save: a temporary file written and closed, then renamed
/// over the original. Before its upload starts, the temporary file's content becomes new content
/// for the original file: one update, the original's Drive ID (its sharing, comments, revision
/// history) kept, nothing created, nothing trashed.
final class EditorSaveTests: XCTestCase {
    /// A queue whose new files wait 30 s after their close (the mount's default is 1 s): far more
    /// than a rename right after a close takes on a loaded machine; a drain does not wait for it.
    private func mount(_ h: CoreHarness) throws -> HeldUploadQueue {
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 2, newFileSettle: 30)
        let held = HeldUploadQueue(queue)
        try h.mount(uploads: held)
        return held
    }

    private func writes(_ h: CoreHarness) -> Int {
        let counts = h.backend.requests
        return ["files.create", "files.create.upload", "files.update", "files.update.upload", "files.delete"]
            .reduce(0) { $0 + (counts[$1] ?? 0) }
    }

    private func names(_ h: CoreHarness, _ folder: String) -> [String] {
        h.backend.children(of: folder).map(\.name).sorted()
    }

    func testThreeSavesAreThreeUpdatesOfTheSameFile() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        let held = try mount(h)
        _ = try h.lookup(.root, "notes.txt")
        for save in 1...3 {
            let text = Array("save \(save)\n".utf8) + Array(repeating: UInt8(ascii: "a") + UInt8(save), count: 1000 * save)
            let before = writes(h)
            let swap = try h.writeFile(.root, ".notes.txt.swp", text)
            try h.rename(.root, ".notes.txt.swp", to: .root, "notes.txt")
            XCTAssertEqual(writes(h), before, "save \(save): the write and the rename send no write")
            XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), text, "save \(save) reads back at once")
            XCTAssertEqual(try h.lookup(.root, "notes.txt").inode, swap, "the name has the renamed file's inode (POSIX)")
            if save == 1 { held.release() }
            XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
            XCTAssertEqual(names(h, h.backend.rootID), ["notes.txt"], "save \(save)")
            XCTAssertEqual(h.backend.content(of: original), text, "save \(save): the original file holds the save")
        }
        let counts = h.backend.requests
        XCTAssertEqual(counts["files.update.upload"], 3, "one content update per save: \(counts)")
        XCTAssertNil(counts["files.create.upload"], "nothing created: \(counts)")
        XCTAssertNil(counts["files.create"], "nothing created: \(counts)")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID, includingTrashed: true).count, 1, "nothing trashed")
        XCTAssertEqual(h.backend.file(original)?.version, 4, "three new revisions of the original")
        // A fresh mount shows the same file with the last save.
        h.unmount()
        try h.mount()
        XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), h.backend.content(of: original))
    }

    /// A save as GLib, gedit, vim and office suites make it: the temporary file is fsynced before
    /// it is closed and renamed. Its fsync answers once the bytes are kept here (the file's upload
    /// waits its settle time, for such a rename): the save is still one update of the original,
    /// which keeps its ID. Before, the fsync uploaded the temporary file as a new file, and the
    /// rename trashed the original: three writes a save and the ID lost (`make bench`'s wan 10).
    func testAnFsyncedSaveIsStillOneUpdateOfTheOriginal() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 2, newFileSettle: 30)
        try h.mount(uploads: queue)
        _ = try h.lookup(.root, "notes.txt")
        for save in 1...3 {
            let text = Array("save \(save)\n".utf8) + Array(repeating: UInt8(ascii: "a") + UInt8(save), count: 700 * save)
            let before = writes(h)
            try fsyncedSave(h, ".goutputstream-\(save)", text, over: "notes.txt")
            XCTAssertEqual(writes(h), before, "save \(save): the fsync and the rename send no write")
            XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), text, "save \(save) reads back at once")
            XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
            XCTAssertEqual(names(h, h.backend.rootID), ["notes.txt"], "save \(save)")
            XCTAssertTrue(h.backend.content(of: original) == text, "save \(save): the original file holds the save")
        }
        let counts = h.backend.requests
        XCTAssertEqual(counts["files.update.upload"], 3, "one content update per save: \(counts)")
        XCTAssertNil(counts["files.create.upload"], "nothing created: \(counts)")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID, includingTrashed: true).count, 1, "nothing trashed")
    }

    /// An fsynced new file that no rename takes still goes to Drive: after its settle time, or
    /// at once when something waits for the queue (an unmount's drain); a second fsync after that waits
    /// for nothing more. With no settle time (`--upload-delay 0`) an fsync waits for Drive, as
    /// SyncWaitTests check.
    func testAnFsyncedNewFileNobodyRenamesStillGoesToDrive() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 0.2)
        try h.mount(uploads: queue)
        let created = try h.create(.root, "kept.log")
        let inode = created.attributes.inode
        try h.write(inode, created.opened.handle, Array("kept\n".utf8), at: 0)
        try fsync(h, inode, created.opened.handle)
        try h.close(inode, created.opened.handle)
        let id = try XCTUnwrap(h.fs.table.node(inode)?.file.id)
        waitUntil("the file to land after its settle time") { h.backend.content(of: id) == Array("kept\n".utf8) }
        XCTAssertEqual(h.backend.requests["files.create.upload"], 1, "\(h.backend.requests)")
    }

    /// An fsynced new file whose upload fails for good once it goes (its folder was deleted on
    /// Drive): the fsync answered when the file was kept here; the next fsync reports the failure.
    func testAnFsyncedNewFileThatCannotLandReportsItAtTheNextFsync() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let folderID = h.backend.addFolder("gone")
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 0.2)
        try h.mount(uploads: queue)
        let folder = try h.lookup(.root, "gone")
        let created = try h.create(folder.inode, "late.txt")
        let inode = created.attributes.inode
        try h.write(inode, created.opened.handle, Array("late".utf8), at: 0)
        _ = try h.backend.delete(folderID)
        try fsync(h, inode, created.opened.handle)
        let id = try XCTUnwrap(h.fs.table.node(inode)?.file.id)
        waitUntil("the upload to fail for good") { queue.phase(of: id) == .none }
        XCTAssertThrowsError(try fsync(h, inode, created.opened.handle), "the next fsync reports the failure")
        h.fs.release(inode, handle: created.opened.handle)
    }

    /// The original's own upload is on its way (an edit, or the last save, going up) when the next
    /// save is renamed over it: the save still becomes the original's content, queued behind that
    /// upload (two updates, the ID kept). Before, only an original with no upload running could
    /// take the save: the save was created as a new file and the original trashed, so a save loop
    /// slower than the settle time lost the file's ID at its second save.
    func testASaveOverAFileWhoseUploadIsRunningKeepsIt() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("doc.txt", content: Array("v0\n".utf8))
        let gate = WriteGate(method: "files.update.upload")
        h.backend.writeHook = gate.hook
        defer { gate.open() }
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 2, newFileSettle: 30)
        try h.mount(uploads: queue)
        let inode = try h.lookup(.root, "doc.txt").inode
        try h.rewrite(inode, Array("an edit\n".utf8))
        XCTAssertTrue(waitUntil("the edit's upload to be on the wire") { gate.waiting == 1 })
        let save = Array("the save after it\n".utf8)
        try fsyncedSave(h, ".doc.txt.swp", save, over: "doc.txt")
        XCTAssertEqual(try h.read(try h.lookup(.root, "doc.txt").inode), save)
        XCTAssertNil(h.backend.requests["files.create.upload"], "the save was made a file of its own: \(h.backend.requests)")
        gate.open()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(names(h, h.backend.rootID), ["doc.txt"])
        XCTAssertEqual(h.backend.content(of: original).map { String(decoding: $0, as: UTF8.self) }, "the save after it\n", "the original holds the save")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID, includingTrashed: true).count, 1, "nothing trashed")
        XCTAssertEqual(h.backend.requests["files.update.upload"], 2, "the edit, then the save: \(h.backend.requests)")
        XCTAssertNil(h.backend.requests["files.create.upload"], "\(h.backend.requests)")
        XCTAssertEqual(try h.read(try h.lookup(.root, "doc.txt").inode), save)
    }

    /// Creates `name`, writes `bytes`, fsyncs it (the answer bounded), closes it and renames it over `target`.
    private func fsyncedSave(_ h: CoreHarness, _ name: String, _ bytes: [UInt8], over target: String) throws {
        let created = try h.create(.root, name)
        try h.write(created.attributes.inode, created.opened.handle, bytes, at: 0)
        try fsync(h, created.attributes.inode, created.opened.handle)
        try h.close(created.attributes.inode, created.opened.handle)
        try h.rename(.root, name, to: .root, target)
    }

    private func fsync(_ h: CoreHarness, _ inode: Inode, _ handle: UInt64) throws {
        let answer = Pending<Void>()
        h.fs.synchronize(inode, handle: handle, dataOnly: false, reply: answer.reply)
        guard let result = answer.wait(seconds: 60) else { return XCTFail("the fsync did not answer within a minute") }
        try result.get()
    }

    /// The temporary file renamed over the original before its close's commit ran, and read,
    /// chmodded and saved again before anything went up: still one update with the last content.
    func testASaveSavedAgainBeforeItsUploadIsOneUpdate() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("report.md", content: Array("old\n".utf8))
        let held = try mount(h)
        try h.writeFile(.root, "report.md.tmp1", Array("first save\n".utf8))
        try h.rename(.root, "report.md.tmp1", to: .root, "report.md")
        try h.writeFile(.root, "report.md.tmp2", Array("second save\n".utf8))
        try h.rename(.root, "report.md.tmp2", to: .root, "report.md")
        let inode = try h.lookup(.root, "report.md").inode
        _ = try BlockingCall.wait { h.fs.setAttributes(inode, AttributeChanges(permissions: 0o600), handle: nil, reply: $0) }
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(names(h, h.backend.rootID), ["report.md"])
        XCTAssertEqual(h.backend.content(of: original), Array("second save\n".utf8))
        XCTAssertEqual(h.backend.file(original)?.appProperties?[AppPropertyKeys.mode], "600")
        XCTAssertEqual(h.backend.requests["files.update.upload"], 1, "\(h.backend.requests)")
        XCTAssertNil(h.backend.requests["files.create.upload"], "\(h.backend.requests)")
    }

    /// Someone changed the original on Drive after the mount saw it: the save is a conflict like
    /// any edit made on an old version (the colleague's version stays, ours goes beside it).
    /// Chaos (seed 670062432207): an edit of a file was on its way when an editor's save was renamed
    /// over it; the edit landed between the rename's look-up of the file and the save going in. The
    /// save was taken as written on the revision before that landing: a conflict with our own edit
    /// (the save went beside as a conflicted copy), and the name showed that older revision, so the
    /// next edit was made on it and sent over Drive's newer one.
    func testASaveOverAFileWhoseOwnEditLandedSinceTheRenameLookedItUpGoesOverThatEdit() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        let held = try mount(h)
        held.release()
        let inode = try h.lookup(.root, "notes.txt").inode
        // What the rename looked up: the file before the edit below landed.
        let lookedUp = try XCTUnwrap(h.fs.table.node(inode))
        let edit = Array("an edit, on its way\n".utf8)
        try h.rewrite(inode, edit)
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.content(of: original), edit)
        let landed = h.fs.table.node(inode)?.file.headRevisionId
        XCTAssertNotEqual(landed, lookedUp.file.headRevisionId, "the edit landed and the table heard of it")

        let save = Array("the editor's save, written on the edit\n".utf8)
        let swap = try h.writeFile(.root, ".notes.txt.swp", save)
        let source = try XCTUnwrap(h.fs.table.node(swap))
        h.fs.table.changesHere.begin()
        let saved = try h.fs.saveOver(source, lookedUp, parent: .root, name: ".notes.txt.swp", newParent: .root, newName: "notes.txt",
                                      newParentID: h.backend.rootID)
        h.fs.table.changesHere.end()
        XCTAssertTrue(saved, "saved as new content of notes.txt")
        XCTAssertEqual(h.fs.table.node(swap)?.file.headRevisionId, landed, "the name shows the revision Drive has, not the one looked up")
        XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), save)
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(names(h, h.backend.rootID), ["notes.txt"], "no conflicted copy: the edit that landed was ours")
        XCTAssertEqual(h.backend.content(of: original), save)
    }

    func testASaveOverAFileChangedOnDriveGoesBesideIt() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("plan.txt", content: Array("v1\n".utf8))
        let held = try mount(h)
        _ = try h.lookup(.root, "plan.txt")
        try h.writeFile(.root, ".plan.txt.swp", Array("ours\n".utf8))
        try h.rename(.root, ".plan.txt.swp", to: .root, "plan.txt")
        h.backend.replaceContent(original, with: Array("theirs\n".utf8))
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let files = h.backend.children(of: h.backend.rootID)
        XCTAssertEqual(files.count, 2, "\(files.map(\.name))")
        XCTAssertEqual(h.backend.content(of: original), Array("theirs\n".utf8), "the colleague's version stays")
        let copy = try XCTUnwrap(files.first { $0.id != original })
        XCTAssertTrue(copy.name.hasPrefix("plan (conflicted copy"), copy.name)
        XCTAssertEqual(h.backend.content(of: copy.id), Array("ours\n".utf8))
    }

    /// When the original cannot take the content (open, or with a queued upload of its own) the
    /// save is an ordinary rename: the new file created under the name, the original trashed.
    func testAnOpenOriginalIsReplacedTheOrdinaryWay() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("data.csv", content: Array("a,b\n".utf8))
        let held = try mount(h)
        let old = try h.lookup(.root, "data.csv").inode
        let reader = try h.open(old, O_RDONLY)
        try h.writeFile(.root, "data.csv.new", Array("c,d\n".utf8))
        try h.rename(.root, "data.csv.new", to: .root, "data.csv")
        XCTAssertEqual(try h.read(old, handle: reader, offset: 0, size: 100), Array("a,b\n".utf8), "the open file reads what it opened")
        try h.close(old, reader)
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let files = h.backend.children(of: h.backend.rootID)
        XCTAssertEqual(files.map(\.name), ["data.csv"])
        XCTAssertNotEqual(files.first?.id, original, "a new file")
        XCTAssertEqual(h.backend.file(original)?.trashed, true, "the original in the trash")
        XCTAssertEqual(files.first.flatMap { h.backend.content(of: $0.id) }, Array("c,d\n".utf8))
    }

    /// A crash right after the rename: the journal holds the save as the original's upload.
    func testASaveSurvivesACrashBeforeItsUpload() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("todo.txt", content: Array("old\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        try h.mount(uploads: HeldUploadQueue(queue))
        try h.writeFile(.root, "todo.txt~new", Array("new\n".utf8))
        try h.rename(.root, "todo.txt~new", to: .root, "todo.txt")
        queue.crashNow()
        h.crash()
        try h.mount()
        XCTAssertEqual(try h.read(try h.lookup(.root, "todo.txt").inode), Array("new\n".utf8), "shown before it lands")
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(names(h, h.backend.rootID), ["todo.txt"])
        XCTAssertEqual(h.backend.content(of: original), Array("new\n".utf8))
        XCTAssertNil(h.backend.requests["files.create.upload"], "\(h.backend.requests)")
    }
}
