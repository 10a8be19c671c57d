import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A rename or a removal whose request Drive carried out but whose answer was lost (a reset, a
/// server error once the tries ran out), and a removal Drive refused while the file's new content
/// was queued: what the call answers must be what Drive and the mount then hold. Found by
/// NamespaceModelCheckTests: the rename and the unlink answered EIO while Drive had done them (the
/// mount showed the old state until the next page of changes), and an unlink Drive refused had
/// already dropped the file's queued content: the file stayed, with the bytes of its older version.
final class LostAnswerTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func remove(_ name: String) throws {
        try BlockingCall.wait { harness.fs.removeFile(parent: .root, name: name, reply: $0) }
    }

    func testARenameWhoseAnswerWasLostSucceedsAndShowsTheNewName() throws {
        let id = fake.addFile("old.txt", content: Array("kept\n".utf8))
        try harness.mount()
        _ = try harness.lookup(.root, "old.txt")
        fake.failNext(method: "files.update", afterLanding: true)
        XCTAssertNoThrow(try harness.rename(.root, "old.txt", to: .root, "new.txt"), "Drive renamed it: the rename holds")
        XCTAssertEqual(fake.file(id)?.name, "new.txt")
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "new.txt").inode), Array("kept\n".utf8))
        XCTAssertThrowsError(try harness.lookup(.root, "old.txt"))
    }

    /// Chaos finding 30 (`ünïcode 0-4008.tar.gz`): a rename over a file whose first step Drive
    /// carried out but whose answer was lost, and Drive could not be asked then whether the source
    /// took the name: the rename fails and is left to be decided. Once Drive answers again (the
    /// next read of the change feed), it is decided in this run, as a restart would: the source
    /// holds the name, so the replaced file goes. Before, it stayed on Drive under the name beside
    /// the source until the next start.
    func testARenameOverAFileLeftUndecidedIsDecidedOnceDriveAnswersAgain() throws {
        let source = fake.addFile("source.txt", content: Array("source\n".utf8))
        let target = fake.addFile("target.txt", content: Array("target\n".utf8))
        try harness.mount()
        _ = try harness.lookup(.root, "source.txt")
        _ = try harness.lookup(.root, "target.txt")
        let refused = DriveError.unauthorized(GoogleErrorInfo(status: 401, reason: "authError", message: "Invalid Credentials"))
        fake.failNext(method: "files.update", error: refused, afterLanding: true)
        fake.failNext(method: "files.get", count: 10, error: refused)
        XCTAssertThrowsError(try harness.rename(.root, "source.txt", to: .root, "target.txt"))
        XCTAssertEqual(fake.file(source)?.name, "target.txt", "the first step landed")
        XCTAssertEqual(fake.file(target)?.trashed, false, "undecided")
        fake.clearFaults()
        try harness.fs.pollChanges()
        XCTAssertTrue(waitUntil("the replaced file trashed", timeout: 60) { self.fake.file(target)?.trashed == true })
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "\(harness.fs.uploadStatus)")
        XCTAssertEqual(fake.children(of: fake.rootID).map(\.id), [source])
        try harness.fs.pollChanges()
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "target.txt").inode), Array("source\n".utf8))
        XCTAssertThrowsError(try harness.lookup(.root, "source.txt"))
    }

    func testARenameDriveRefusedFailsAndChangesNothing() throws {
        let id = fake.addFile("old.txt", content: Array("kept\n".utf8))
        try harness.mount()
        _ = try harness.lookup(.root, "old.txt")
        fake.failNext(method: "files.update")
        XCTAssertThrowsError(try harness.rename(.root, "old.txt", to: .root, "new.txt"))
        XCTAssertEqual(fake.file(id)?.name, "old.txt")
        XCTAssertNoThrow(try harness.lookup(.root, "old.txt"))
        XCTAssertThrowsError(try harness.lookup(.root, "new.txt"))
    }

    func testAnUnlinkWhoseAnswerWasLostSucceeds() throws {
        let id = fake.addFile("gone.txt", content: Array("bye\n".utf8))
        try harness.mount()
        _ = try harness.lookup(.root, "gone.txt")
        fake.failNext(method: "files.update", afterLanding: true)
        XCTAssertNoThrow(try remove("gone.txt"), "Drive trashed it: the unlink holds")
        XCTAssertEqual(fake.file(id)?.trashed, true)
        XCTAssertThrowsError(try harness.lookup(.root, "gone.txt"))
    }

    /// A mkdir whose create landed but whose answer was lost: the folder Drive made is the one
    /// the mount shows (before, the mkdir answered EIO; made again by the program under another
    /// ID, the first one stayed on Drive after an rmdir: chaos seed 975288757273).
    func testAMkdirWhoseAnswerWasLostSucceedsWithTheFolderDriveMade() throws {
        try harness.mount()
        fake.failNext(method: "files.create", afterLanding: true)
        let made = try harness.makeDirectory(.root, "made")
        let folders = fake.children(of: fake.rootID).filter { $0.name == "made" }
        XCTAssertEqual(folders.count, 1, "one folder on Drive")
        XCTAssertEqual(harness.fs.table.node(made.inode)?.file.id, folders.first?.id)
        try BlockingCall.wait { harness.fs.removeDirectory(parent: .root, name: "made", reply: $0) }
        XCTAssertTrue(fake.children(of: fake.rootID).filter { $0.name == "made" }.isEmpty, "and the rmdir removes it")
    }

    /// Chaos finding 35 (seed 663910146966, `w0/d0-58/d0-258/d0-1223`): a mkdir whose create
    /// Drive carried out but whose answer was lost, when Drive could not be asked whether it made
    /// it (an outage began), is queued under its reserved ID and answered; an rmdir before the
    /// queued create ran must still take the folder off Drive. Before, the rmdir cancelled the
    /// queued create as if nothing had reached Drive, and the folder Drive made stayed there.
    func testAFolderWhoseCreateMayHaveLandedIsTakenOffDriveByAnRmdirBeforeItsQueuedCreateRuns() throws {
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 1, initialBackoff: 0.01,
                                    maximumBackoff: 0.05)
        let held = HeldUploadQueue(queue)
        try harness.mount(uploads: held)
        fake.failNext(method: "files.create", afterLanding: true)
        fake.failNext(method: "files.get", count: 10)
        _ = try harness.makeDirectory(.root, "made")
        XCTAssertEqual(fake.children(of: fake.rootID).filter { $0.name == "made" && !$0.trashed }.count, 1, "Drive made it")
        try BlockingCall.wait { harness.fs.removeDirectory(parent: .root, name: "made", reply: $0) }
        XCTAssertThrowsError(try harness.lookup(.root, "made"), "gone from the mount at once")
        held.release()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "\(harness.fs.uploadStatus)")
        XCTAssertTrue(fake.children(of: fake.rootID).filter { $0.name == "made" && !$0.trashed }.isEmpty,
                      "the folder Drive made is gone: \(fake.requestSummary)")
    }

    /// The file's new content is queued (its upload held) when it is removed and Drive refuses
    /// the trash: the removal is the queue's (after the upload it drops), so the unlink holds and
    /// the file goes once Drive takes it. Before, the unlink failed after dropping the queued
    /// content, and the file read its older version.
    func testAnUnlinkDriveRefusesWhileNewContentIsQueuedLosesNothingAndLands() throws {
        let id = fake.addFile("doc.txt", content: Array("old\n".utf8))
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 1, initialBackoff: 0.01,
                                    maximumBackoff: 0.05)
        let held = HeldUploadQueue(queue)
        try harness.mount(uploads: held)
        try harness.rewrite(try harness.lookup(.root, "doc.txt").inode, Array("new, queued\n".utf8))
        fake.failNext(method: "files.update", count: 2)
        XCTAssertNoThrow(try remove("doc.txt"), "the removal is journaled: the unlink holds")
        XCTAssertThrowsError(try harness.lookup(.root, "doc.txt"), "gone from the mount at once")
        held.release()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "\(harness.fs.uploadStatus)")
        XCTAssertEqual(fake.file(id)?.trashed, true, "trashed once Drive took it")
        XCTAssertEqual(fake.content(of: id), Array("old\n".utf8), "the dropped content was never sent")
        XCTAssertThrowsError(try harness.lookup(.root, "doc.txt"))
    }
}
