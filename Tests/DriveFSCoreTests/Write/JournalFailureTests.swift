import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A removal or a rename of a file whose upload is queued is a journal record: when the record
/// cannot be written (the cache disk full, failing), the call fails with that error and changes
/// nothing, rather than succeed and be undone by the next crash (the file uploaded again after the
/// user removed it, or a job retried forever once its content went: the chaos run's finding).
final class JournalFailureTests: XCTestCase {
    func testARemovalOrRenameTheJournalCannotKeepFailsAndChangesNothing() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        _ = h.backend.addFile("on-drive.txt", content: Array("on drive\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(queue)
        try h.mount(uploads: held)
        try h.writeFile(.root, "kept.txt", Array("kept\n".utf8))
        try h.writeFile(.root, "named.txt", Array("named\n".utf8))
        queue.setJournalFault(FilesystemError(errno: ENOSPC))
        XCTAssertThrowsError(try BlockingCall.wait { h.fs.removeFile(parent: .root, name: "kept.txt", reply: $0) }) { error in
            XCTAssertEqual((error as? FilesystemError)?.errno, ENOSPC, "\(error)")
        }
        XCTAssertThrowsError(try h.rename(.root, "named.txt", to: .root, "renamed.txt")) { error in
            XCTAssertEqual((error as? FilesystemError)?.errno, ENOSPC, "\(error)")
        }
        // A rename over a file on Drive is journaled as begun before its first step: refused too.
        let requestsBefore = h.backend.totalRequests
        XCTAssertThrowsError(try h.rename(.root, "named.txt", to: .root, "on-drive.txt")) { error in
            XCTAssertEqual((error as? FilesystemError)?.errno, ENOSPC, "\(error)")
        }
        XCTAssertEqual(h.backend.totalRequests, requestsBefore, "nothing was sent to Drive")
        XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 != "." && $0 != ".." }.sorted(),
                       ["kept.txt", "named.txt", "on-drive.txt"])

        // A crash now: the journal holds both files as they were, and they go up as they were.
        queue.setJournalFault(nil)
        queue.crashNow()
        h.crash()
        try h.mount()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let onDrive = h.backend.children(of: h.backend.rootID)
        XCTAssertEqual(onDrive.map(\.name).sorted(), ["kept.txt", "named.txt", "on-drive.txt"])
        XCTAssertEqual(onDrive.first { $0.name == "kept.txt" }.flatMap { h.backend.content(of: $0.id) }, Array("kept\n".utf8))
    }
}
