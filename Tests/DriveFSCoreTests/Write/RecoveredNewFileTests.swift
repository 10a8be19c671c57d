import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A new file whose upload was still queued when the daemon died is shown again after the restart,
/// in its folder, even when that folder is known only from the restored index (packed, not
/// listed yet): a lookup finds it, so a program that writes the name again writes this file
/// rather than making a second one beside it (the chaos run: after a `kill -9`, `open` answered
/// ENOENT, the program created the file anew, and Drive ended with two under the name).
final class RecoveredNewFileTests: XCTestCase {
    func testAQueuedNewFileInAFolderOnlyTheIndexKnowsIsShownAfterACrash() throws {
        let h = try CoreHarness { $0.readOnly = false }
        // The held queues are let go before the unmount (it waits for every upload).
        var holds: [HeldUploadQueue] = []
        defer {
            holds.forEach { $0.release() }
            h.remove()
        }
        let dir = h.backend.addFolder("dir")
        let sub = h.backend.addFolder("sub", in: dir)
        h.backend.addFile("old.txt", in: sub, content: Array("old\n".utf8))
        // A first run walks the folders and saves the index at its unmount.
        try h.mount()
        XCTAssertEqual(try h.read(try h.resolve("dir/sub/old.txt").inode), Array("old\n".utf8))
        h.unmount()

        // The second run writes a new file; its upload never starts; the daemon dies.
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        holds.append(HeldUploadQueue(queue))
        try h.mount(uploads: holds[0])
        let folder = try h.resolve("dir/sub").inode
        try h.writeFile(folder, "new.txt", Array("written before the crash\n".utf8))
        queue.crashNow()
        h.crash()

        // The third run: the file is there before its upload lands, and writing it again is
        // writing this one.
        let again = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(again)
        holds.append(held)
        try h.mount(uploads: held)
        let found = try h.resolve("dir/sub/new.txt")
        XCTAssertEqual(try h.read(found.inode), Array("written before the crash\n".utf8))
        try h.rewrite(found.inode, Array("written again\n".utf8))
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let onDrive = h.backend.children(of: sub).map(\.name).sorted()
        XCTAssertEqual(onDrive, ["new.txt", "old.txt"], "one new.txt on Drive")
        let file = try XCTUnwrap(h.backend.children(of: sub).first { $0.name == "new.txt" })
        XCTAssertEqual(h.backend.content(of: file.id), Array("written again\n".utf8))
    }

    /// The restored index is older than Drive (a file moved in and one made there after it was
    /// saved, as before a `kill -9`), and the change feed cannot be read yet: a name the index does
    /// not have is looked up on Drive (the folder listed), never answered ENOENT from the old index.
    func testANameTheRestoredIndexLacksIsLookedUpOnDriveUntilTheFeedCaughtUp() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let dir = h.backend.addFolder("dir")
        let other = h.backend.addFolder("other")
        let moved = h.backend.addFile("moved.txt", in: other, content: Array("moved\n".utf8))
        try h.mount()
        _ = try h.listPlus(try h.resolve("dir").inode)
        _ = try h.resolve("other/moved.txt")
        h.unmount()
        XCTAssertTrue(FileManager.default.fileExists(atPath: h.configuration.cacheDirectory.appendingPathComponent(IndexStore.fileName).path))
        // After the index was saved: a file moved into dir, another made there.
        h.backend.moveFile(moved, to: dir)
        h.backend.addFile("late.txt", in: dir, content: Array("late\n".utf8))
        h.backend.failNext(method: "changes.list", count: 1_000)
        try h.mount()
        XCTAssertEqual(try h.read(try h.resolve("dir/late.txt").inode), Array("late\n".utf8))
        XCTAssertEqual(try h.read(try h.resolve("dir/moved.txt").inode), Array("moved\n".utf8))
        XCTAssertThrowsError(try h.resolve("dir/absent.txt"), "a name Drive does not have is still ENOENT")
        h.backend.clearFaults()
    }
}
