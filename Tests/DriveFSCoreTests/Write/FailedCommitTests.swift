@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// Found by the chaos run (docs/chaos-findings.md, 20): a file accepted by a close, opened again
/// and written while the cache disk was full. Opening it for writing took its queued upload back
/// (`reclaim`: the job is "still open" again); the close's commit could not be journaled (ENOSPC),
/// so the job stayed "still open" with no handle left. A queue drains only ready jobs: `drivefs
/// unmount` returned at once, status 0, and the file was not on Drive (the next mount would have
/// sent it). A copy whose last commit failed is committed again when the disk has room: at the
/// next poll, and at the latest at unmount, before the drain.
final class FailedCommitTests: XCTestCase {
    private func setUp(_ h: CoreHarness) throws -> (UploadQueue, HeldUploadQueue, Inode) {
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(queue)
        try h.mount(uploads: held)
        let inode = try h.writeFile(.root, "doc.txt", Array("accepted by a close\n".utf8))
        let handle = try h.open(inode, O_RDWR)
        try h.write(inode, handle, Array("ACCEPTED".utf8), at: 0)
        queue.setJournalFault(FilesystemError(errno: ENOSPC))
        // close(2): the flush reports that it could not keep the write; the kernel releases all the same.
        XCTAssertThrowsError(try BlockingCall.wait { h.fs.flush(inode, handle: handle, reply: $0) })
        h.fs.release(inode, handle: handle)
        XCTAssertTrue(h.fs.commits.waitUntilIdle(timeout: 60))
        queue.setJournalFault(nil)  // room on the disk again
        return (queue, held, inode)
    }

    private func onDrive(_ h: CoreHarness) -> [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: h.backend.children(of: h.backend.rootID).map { ($0.name, h.backend.content(of: $0.id) ?? []) })
    }

    func testACopyWhoseCommitFailedIsSentAtUnmount() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let (_, held, _) = try setUp(h)
        held.release()
        h.unmount()
        XCTAssertEqual(onDrive(h), ["doc.txt": Array("ACCEPTED by a close\n".utf8)], "on Drive once the unmount returned")
    }

    func testACopyWhoseCommitFailedIsCommittedAgainAtThePoll() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let (_, held, inode) = try setUp(h)
        held.release()
        try h.fs.pollChanges()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(onDrive(h), ["doc.txt": Array("ACCEPTED by a close\n".utf8)])
        XCTAssertEqual(try h.read(inode), Array("ACCEPTED by a close\n".utf8))
    }

    /// Chaos finding 36 (the replay of seed 663910146966 on c045e6d; finding 30's `report-1-1742`):
    /// a new file whose only close could not be journaled (the cache disk full) is committed again
    /// once there is room and lands on Drive; the mount must show it under its name from then on,
    /// so that a program writing the name again writes that file, not a second one beside it.
    func testANewFileWhoseOnlyCloseFailedIsShownOnceItLands() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(queue)
        try h.mount(uploads: held)
        let created = try h.create(.root, "new.bin")
        try h.write(created.attributes.inode, created.opened.handle, Array("first bytes\n".utf8), at: 0)
        queue.setJournalFault(FilesystemError(errno: ENOSPC))
        XCTAssertThrowsError(try BlockingCall.wait { h.fs.flush(created.attributes.inode, handle: created.opened.handle, reply: $0) })
        h.fs.release(created.attributes.inode, handle: created.opened.handle)
        XCTAssertTrue(h.fs.commits.waitUntilIdle(timeout: 60))
        queue.setJournalFault(nil)
        held.release()
        try h.fs.pollChanges()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(onDrive(h), ["new.bin": Array("first bytes\n".utf8)], "committed again and landed")
        let shown = try h.lookup(.root, "new.bin")
        XCTAssertEqual(try h.read(shown.inode), Array("first bytes\n".utf8))
        // The program writes the name again (open with O_CREAT | O_TRUNC): the same file.
        try h.rewrite(shown.inode, Array("second\n".utf8))
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID).filter { !$0.trashed }.count, 1, "one file under the name")
        XCTAssertEqual(onDrive(h), ["new.bin": Array("second\n".utf8)])
    }
}
