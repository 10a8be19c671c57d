import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Found by the chaos run (docs/chaos-findings.md, 18): a rename of a file whose upload was on its
/// way was answered with Drive's file as it was before that upload landed; the landing was applied
/// to the table while the answer travelled, and the answer then replaced the node's file whole. The
/// node went back to the revision before the landing, with no local copy left, so reads served
/// that older revision. An answer older than what the table shows changes only what its request
/// changed. (A touch or chmod cannot race so: while an upload of the file is queued or running it
/// rides in that upload.)
final class StaleAnswerTests: XCTestCase {
    /// Holds the content upload of `id` until a metadata request of `id` has been answered,
    /// then lets it land and waits (bounded) until the mount applied it before that answer returns.
    private func raceTheAnswer(_ h: CoreHarness, _ id: String, metadataMethod: String) -> Locked<(arrived: Bool, open: Bool, raced: Bool)> {
        let state = Locked((arrived: false, open: false, raced: false))
        let fs = Locked<DriveFilesystem?>(nil)
        h.backend.writeHook = { method, phase, asked in
            guard asked == id else { return }
            if method == "files.update.upload", phase == .before {
                state.withLock { $0.arrived = true }
                let end = Date(timeIntervalSinceNow: 30)
                while !state.withLock({ $0.open }) && Date() < end { usleep(500) }
            }
            if method == metadataMethod, phase == .after, state.withLock({ $0.arrived && !$0.raced }) {
                // Drive applied the metadata request; its answer is the file before the upload.
                state.withLock { $0.open = true; $0.raced = true }
                let end = Date(timeIntervalSinceNow: 30)
                while !(fs.withLock { $0 }?.uploadStatus.isIdle ?? false) && Date() < end { usleep(1_000) }
            }
        }
        fs.withLock { $0 = h.fs }
        return state
    }

    func testARenameAnsweredBeforeAnUploadLandedDoesNotRollTheFileBack() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let id = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        try h.mount()
        let inode = try h.lookup(.root, "notes.txt").inode
        let state = raceTheAnswer(h, id, metadataMethod: "files.update")
        let edit = Array("the edit, landed while the rename's answer travelled\n".utf8)
        try h.rewrite(inode, edit)
        waitUntil("the edit's upload is on its way") { state.withLock { $0.arrived } }
        try h.rename(.root, "notes.txt", to: .root, "renamed.txt")
        XCTAssertTrue(state.withLock { $0.raced }, "the rename's answer came before the landing was applied")
        XCTAssertTrue(h.fs.drainUploads(timeout: 60))
        let node = try XCTUnwrap(h.fs.table.node(inode))
        XCTAssertEqual(node.file.headRevisionId, h.backend.file(id)?.headRevisionId, "the node shows Drive's revision, the landed one")
        XCTAssertEqual(node.name, "renamed.txt")
        XCTAssertEqual(try h.read(try h.lookup(.root, "renamed.txt").inode), edit)
        XCTAssertEqual(h.backend.content(of: id), edit)
        XCTAssertEqual(h.backend.file(id)?.name, "renamed.txt")
    }
}

/// A rename whose request Drive refused (the call failed) must not reach Drive later through the
/// file's queued upload, which the rename had given the new name first: the mount showed the old
/// name (the rename failed), and the upload's landing renamed the file on Drive (a lead of chaos
/// finding 21: a rename cut short, then a file in no folder of the mount).
final class FailedRenameTests: XCTestCase {
    func testARenameDriveRefusedIsNotCarriedByTheQueuedUpload() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let id = h.backend.addFile("a.txt", content: Array("first\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(queue)
        try h.mount(uploads: held)
        let inode = try h.lookup(.root, "a.txt").inode
        let edit = Array("edited, its upload queued\n".utf8)
        try h.rewrite(inode, edit)
        h.backend.failNext(method: "files.update")
        XCTAssertThrowsError(try h.rename(.root, "a.txt", to: .root, "b.txt"), "Drive refused the rename")
        XCTAssertEqual(try h.lookup(.root, "a.txt").inode, inode, "the mount shows the old name")
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.file(id)?.name, "a.txt", "Drive keeps the name the mount shows")
        XCTAssertEqual(h.backend.content(of: id), edit)
        XCTAssertEqual(try h.read(try h.lookup(.root, "a.txt").inode), edit)
    }
}
