import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Staging copies of files that were open when the daemon died (never closed: nothing promised)
/// are removed at the next start; the content the journal names stays and goes up.
final class StagingSweepTests: XCTestCase {
    func testAStartRemovesStagingFilesTheJournalDoesNotNameAndKeepsTheOnesItDoes() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        // The first run: one file closed (queued, its upload held back), one left open at the crash.
        let held = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        try h.mount(uploads: held)
        try h.writeFile(.root, "closed.txt", Array("closed and promised\n".utf8))
        let open = try h.create(.root, "open.txt")
        _ = try h.write(open.attributes.inode, open.opened.handle, Array(String(repeating: "x", count: 100_000).utf8), at: 0)
        let staging = h.configuration.cacheDirectory.appendingPathComponent("staging").path
        func names() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).sorted() }
        XCTAssertEqual(names().count, 2, "the closed file's queued content and the open file's copy: \(names())")
        held.inner.crashNow()
        h.crash()
        // A stray file of some other kind of leftover: a directory is not touched.
        try FileManager.default.createDirectory(atPath: staging + "/not-a-copy", withIntermediateDirectories: false)

        // The restart's uploads held until the sweep is checked (else the file may land first).
        let again = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        try h.mount(uploads: again)
        XCTAssertEqual(names().filter { $0 != "not-a-copy" }.count, 1, "only the queued content stays: \(names())")
        again.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let onDrive = h.backend.children(of: h.backend.rootID)
        XCTAssertEqual(onDrive.map(\.name), ["closed.txt"])
        XCTAssertEqual(onDrive.first.flatMap { h.backend.content(of: $0.id) }, Array("closed and promised\n".utf8))
        // The queue removes a landed job's content right after the core heard of it.
        waitUntil("its content to go once it landed: \(names())") { names() == ["not-a-copy"] }
    }
}
