import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
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
