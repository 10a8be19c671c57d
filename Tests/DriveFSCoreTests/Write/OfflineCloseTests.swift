import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// What a close accepted is kept whatever Drive does at that moment: an append to a file never
/// read, closed while Drive's downloads fail, is journaled with the spans Drive could not give,
/// and once Drive answers again those are filled from the version it was based on and the whole
/// file goes up: the old bytes and the appended ones, nothing else. Also across a crash.
final class OfflineCloseTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private let original = CoreHarness.pattern(1 << 20, seed: 77)
    private let appended = Array("an append\n".utf8)

    override func setUpWithError() throws {
        harness = try CoreHarness { c in
            c.readOnly = false
            c.blockSize = 64 << 10
        }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func failDownloads() {
        for method in ["files.get.media", "revisions.get.media"] { fake.failNext(method: method, count: 1_000_000) }
    }

    /// open(O_WRONLY|O_APPEND), one write at the end, close, with every download failing.
    private func appendWhileDriveFails(_ inode: Inode) throws {
        failDownloads()
        let handle = try harness.open(inode, O_WRONLY | O_APPEND)
        try harness.write(inode, handle, appended, at: Int64(original.count))
        XCTAssertNoThrow(try harness.close(inode, handle), "close must keep what was written even when Drive cannot be read")
    }

    func testAnAppendClosedWhileDriveFailsReachesDriveWhole() throws {
        let id = fake.addFile("big.bin", content: original)
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 1, initialBackoff: 0.01,
                                    maximumBackoff: 0.02)
        try harness.mount(uploads: queue)
        let inode = try harness.lookup(.root, "big.bin").inode
        try appendWhileDriveFails(inode)
        XCTAssertEqual(try harness.lookup(.root, "big.bin").size, UInt64(original.count + appended.count))
        // The upload waits for the missing bytes; Drive still has the old file meanwhile.
        XCTAssertTrue(waitUntil("three downloads", timeout: 30) { self.fake.requests["revisions.get.media", default: 0] + self.fake.requests["files.get.media", default: 0] >= 3 },
                      "the upload did not try to fill what was missing")
        XCTAssertEqual(fake.content(of: id), original)
        fake.clearFaults()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        XCTAssertTrue(fake.content(of: id) == original + appended, "Drive must hold the old bytes and the append")
        XCTAssertEqual(fake.children(of: fake.rootID).map(\.name), ["big.bin"], "no conflicted copy, no second file")
        XCTAssertEqual(try harness.read(inode), original + appended)
    }

    func testAnAppendClosedWhileDriveFailsSurvivesACrash() throws {
        let id = fake.addFile("big.bin", content: original)
        // The queue's transfers never start in the first process: the close is all it does.
        let held = HeldUploadQueue(try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 1))
        try harness.mount(uploads: held)
        let inode = try harness.lookup(.root, "big.bin").inode
        try appendWhileDriveFails(inode)
        held.inner.crashNow()
        harness.crash()
        fake.clearFaults()
        try harness.mount()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        XCTAssertTrue(fake.content(of: id) == original + appended, "Drive must hold the old bytes and the append after a restart")
        XCTAssertEqual(fake.children(of: fake.rootID).map(\.name), ["big.bin"])
        let again = try harness.lookup(.root, "big.bin")
        XCTAssertEqual(try harness.read(again.inode), original + appended)
    }
}
