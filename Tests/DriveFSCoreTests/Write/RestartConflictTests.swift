import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A colleague's edit made on Drive while our change waits in the journal across a restart is
/// never overwritten: it stays the file, ours goes beside it as one conflicted copy, with exactly
/// the bytes written here (no zeros where the colleague's longer file was).
final class RestartConflictTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    /// Drive takes no content (updates and creates answer 503), as when it is away.
    private func failUploads() {
        fake.failNext(method: "files.update.upload", count: 1_000_000)
        fake.failNext(method: "files.create.upload", count: 1_000_000)
    }

    private func append(_ inode: Inode, _ bytes: [UInt8]) throws {
        // O_APPEND: the kernel writes at the size getattr gave.
        let size = try harness.lookup(.root, "doc.txt").size
        let handle = try harness.open(inode, O_WRONLY | O_APPEND)
        try harness.write(inode, handle, bytes, at: Int64(size))
        try harness.close(inode, handle)
    }

    private func conflictedCopies() -> [DriveFile] {
        fake.children(of: fake.rootID).filter { $0.name.hasPrefix("doc (conflicted copy ") }
    }

    /// The steps: our edit queued while updates fail, a `kill -9`, the colleague's
    /// version on Drive, a restart, an append (updates still failing), then Drive answers again.
    func testAColleaguesEditMadeWhileOurEditWaitedAcrossARestartIsKept() throws {
        let id = fake.addFile("doc.txt", content: Array("base version\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "doc.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("base version\n".utf8))
        failUploads()
        try harness.rewrite(inode, Array("local edit 1\n".utf8))
        harness.crash()
        let colleague = Array("colleague's version\n".utf8)
        fake.replaceContent(id, with: colleague)

        try harness.mount()
        let again = try harness.lookup(.root, "doc.txt")
        XCTAssertEqual(again.size, 13, "after the restart the file shows the queued edit's size, not Drive's")
        XCTAssertEqual(try harness.read(again.inode), Array("local edit 1\n".utf8))
        try append(again.inode, Array("local edit 2\n".utf8))
        XCTAssertEqual(try harness.read(again.inode), Array("local edit 1\nlocal edit 2\n".utf8))

        fake.clearFaults()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        XCTAssertEqual(fake.content(of: id), colleague, "the colleague's version stays the file")
        let copies = conflictedCopies()
        XCTAssertEqual(copies.count, 1, "one conflicted copy: \(fake.children(of: fake.rootID).map(\.name))")
        XCTAssertEqual(copies.first.flatMap { fake.content(of: $0.id) }, Array("local edit 1\nlocal edit 2\n".utf8),
                       "the copy holds what was written here, nothing else")
        XCTAssertEqual(fake.children(of: fake.rootID).count, 2)
    }

    /// Without a restart: an edit queued while updates fail, the colleague's version on Drive,
    /// a second edit on top of ours; one conflicted copy with the last bytes.
    func testTwoEditsOverAColleaguesEditMakeOneConflictedCopy() throws {
        let id = fake.addFile("doc.txt", content: Array("base version\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "doc.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("base version\n".utf8))
        failUploads()
        try harness.rewrite(inode, Array("local edit 1\n".utf8))
        let colleague = Array("colleague's version\n".utf8)
        fake.replaceContent(id, with: colleague)
        try append(inode, Array("local edit 2\n".utf8))
        fake.clearFaults()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        XCTAssertEqual(fake.content(of: id), colleague, "the colleague's version stays the file")
        let copies = conflictedCopies()
        XCTAssertEqual(copies.count, 1, "one conflicted copy: \(fake.children(of: fake.rootID).map(\.name))")
        XCTAssertEqual(copies.first.flatMap { fake.content(of: $0.id) }, Array("local edit 1\nlocal edit 2\n".utf8))
    }

    /// Our create landed but its answer was lost, and someone changed the file before the retry:
    /// the retry finds its ID in use and must not overwrite their change.
    func testACreateRetriedAfterSomeoneChangedItsLandingKeepsTheirChange() throws {
        try harness.mount()
        // The create lands, then fails (its answer lost); before the retry, a colleague edits it.
        let theirs = Array("their edit of our new file\n".utf8)
        fake.writeHook = { [fake] method, phase, id in
            guard method == "files.create.upload", phase == .after, let id else { return }
            fake.writeHook = nil
            fake.replaceContent(id, with: theirs)
            throw FakeDriveBackend.serverError
        }
        try harness.writeFile(.root, "new.txt", Array("ours\n".utf8))
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        let files = fake.children(of: fake.rootID)
        let named = files.first { $0.name == "new.txt" }
        XCTAssertEqual(named.flatMap { fake.content(of: $0.id) }, theirs, "their edit stays: \(files.map(\.name))")
        let copies = files.filter { $0.name.hasPrefix("new (conflicted copy ") }
        XCTAssertEqual(copies.count, 1, "ours beside it: \(files.map(\.name))")
        XCTAssertEqual(copies.first.flatMap { fake.content(of: $0.id) }, Array("ours\n".utf8))
    }
}
