import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Early uploads (`EarlyUpload`): a large new file written from its start goes to Drive chunk by
/// chunk while it is written, and the job after its close only finishes the stream; whatever
/// breaks the stream's premise (a write or truncate below what was sent, a failed chunk, a removed
/// file) falls back to the ordinary upload, and Drive ends with the file's final bytes, once.
final class EarlyUploadTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }
    private let chunk = 64 << 10

    override func setUpWithError() throws {
        let backend = FakeDriveBackend()
        backend.chunkSize = Int64(chunk)
        backend.multipartLimit = Int64(chunk)
        harness = try CoreHarness(backend: backend) {
            $0.readOnly = false
            $0.earlyUploadThreshold = 3 << 16  // three chunks
        }
        try harness.mount()
        fake.resetCounters()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private var uploadRequests: Int { fake.requests["files.create.upload"] ?? 0 }

    /// Waits (bounded) until `condition` holds; the streaming thread runs on its own.
    private func waitFor(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        waitUntil("\(what); requests: \(fake.requests)", file: file, line: line, condition)
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    private func driveFiles(_ name: String) -> [DriveFile] { fake.children(of: fake.rootID).filter { $0.name == name } }

    /// Creates `name` and writes `bytes` in pieces of `piece` from its start, leaving it open.
    private func writeOpen(_ name: String, _ bytes: [UInt8], piece: Int = 32 << 10) throws -> CreatedFile {
        let created = try harness.create(.root, name)
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + piece)
            try harness.write(created.attributes.inode, created.opened.handle, Array(bytes[at..<end]), at: Int64(at))
            at = end
        }
        return created
    }

    func testALargeFileWrittenInOrderGoesUpWhileItIsWrittenAndLandsOnceAfterItsClose() throws {
        let bytes = CoreHarness.pattern(16 * chunk + 1234, seed: 7)
        let created = try writeOpen("big.bin", bytes)
        // Chunks go before the close: the session and at least one chunk (16 of the file's 17
        // chunks are full, so the stream keeps up to 16 of them behind the writer).
        waitFor("chunks sent while the file is open") { uploadRequests >= 2 }
        XCTAssertTrue(driveFiles("big.bin").isEmpty, "the file must not exist on Drive before its close")
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        let landed = driveFiles("big.bin")
        XCTAssertEqual(landed.count, 1, "exactly one file")
        XCTAssertEqual(try harness.lookup(.root, "big.bin").inode, created.attributes.inode, "the inode stays")
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == bytes, "Drive must hold the bytes written")
        XCTAssertEqual(fake.streamedCreates, 1)
        // The session, 16 full chunks and the last piece: each byte sent once.
        XCTAssertEqual(uploadRequests, 1 + 16 + 1, "requests: \(fake.requests)")
        XCTAssertLessThanOrEqual(fake.requests["files.update"] ?? 0, 1, "at most the time set after landing: \(fake.requests)")
    }

    func testASmallFileNeverStreams() throws {
        try harness.writeFile(.root, "small.bin", CoreHarness.pattern(2 * chunk, seed: 1))
        drain()
        XCTAssertEqual(fake.streamedCreates, 0)
        XCTAssertEqual(driveFiles("small.bin").count, 1)
    }

    func testAWriteBelowWhatWasSentFallsBackToAWholeUploadOfTheFinalBytes() throws {
        var bytes = CoreHarness.pattern(12 * chunk, seed: 3)
        let created = try writeOpen("edited.bin", bytes)
        waitFor("a chunk sent") { uploadRequests >= 2 }
        // An editor-style rewrite of the head after it was sent.
        let head = CoreHarness.pattern(1000, seed: 99)
        try harness.write(created.attributes.inode, created.opened.handle, head, at: 10)
        bytes.replaceSubrange(10..<1010, with: head)
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        let landed = driveFiles("edited.bin")
        XCTAssertEqual(landed.count, 1)
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == bytes, "Drive must hold the bytes as written last")
        XCTAssertEqual(fake.streamedCreates, 1, "the stream had begun")
    }

    func testATruncateBelowWhatWasSentFallsBack() throws {
        let bytes = CoreHarness.pattern(12 * chunk, seed: 4)
        let created = try writeOpen("cut.bin", bytes)
        waitFor("a chunk sent") { uploadRequests >= 2 }
        _ = try BlockingCall.wait {
            fs.setAttributes(created.attributes.inode, AttributeChanges(size: 1000), handle: created.opened.handle, reply: $0)
        }
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        let landed = driveFiles("cut.bin")
        XCTAssertEqual(landed.count, 1)
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == Array(bytes.prefix(1000)), "Drive must hold the bytes written")
        XCTAssertEqual(fake.streamedCreates, 1, "the stream had begun")
    }

    func testAFailedChunkFallsBackAndTheFileArrivesOnce() throws {
        // The session and one chunk pass, the next chunk fails (as after the client's retries).
        fake.failNext(method: "files.create.upload", count: 1, after: 2)
        let bytes = CoreHarness.pattern(12 * chunk, seed: 5)
        let created = try writeOpen("flaky.bin", bytes)
        waitFor("the failed chunk") { fake.pendingFaults.isEmpty }
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        let landed = driveFiles("flaky.bin")
        XCTAssertEqual(landed.count, 1)
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == bytes, "Drive must hold the bytes written")
    }

    func testAFileRemovedWhileItStreamsLeavesNothingOnDrive() throws {
        let before = fake.children(of: fake.rootID).count
        let created = try writeOpen("gone.bin", CoreHarness.pattern(12 * chunk, seed: 6))
        waitFor("a chunk sent") { uploadRequests >= 2 }
        try BlockingCall.wait { fs.removeFile(parent: .root, name: "gone.bin", reply: $0) }
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        XCTAssertEqual(fake.children(of: fake.rootID).count, before, "nothing may be left on Drive")
        XCTAssertEqual(fake.requests["files.update"] ?? 0, 0, "nothing was on Drive to trash: \(fake.requests)")
    }

    func testAFileRenamedWhileItStreamsLandsOnceUnderItsFinalName() throws {
        let folder = try harness.makeDirectory(.root, "dest")
        let bytes = CoreHarness.pattern(10 * chunk, seed: 8)
        let created = try writeOpen("draft.bin", bytes)
        waitFor("a chunk sent") { uploadRequests >= 2 }
        try harness.rename(.root, "draft.bin", to: folder.inode, "final.bin")
        try harness.close(created.attributes.inode, created.opened.handle)
        drain()
        XCTAssertTrue(driveFiles("draft.bin").isEmpty)
        let folderID = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "dest" }).id
        let landed = fake.children(of: folderID).filter { $0.name == "final.bin" }
        XCTAssertEqual(landed.count, 1)
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == bytes, "Drive must hold the bytes written")
    }

    func testAFileReopenedAndAppendedBeforeItsJobStartsStillLandsWhole() throws {
        let first = CoreHarness.pattern(8 * chunk, seed: 9)
        let created = try writeOpen("grow.bin", first)
        try harness.close(created.attributes.inode, created.opened.handle)
        let more = CoreHarness.pattern(6 * chunk + 17, seed: 10)
        let handle = try harness.open(created.attributes.inode, O_WRONLY | O_APPEND)
        try harness.write(created.attributes.inode, handle, more, at: Int64(first.count))
        try harness.close(created.attributes.inode, handle)
        drain()
        let landed = driveFiles("grow.bin")
        XCTAssertEqual(landed.count, 1)
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == first + more, "Drive must hold the bytes written")
    }

    func testACrashAfterTheStreamLandedIsRecoveredWithoutASecondFile() throws {
        harness.unmount()
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 1, initialBackoff: 0.01,
                                    maximumBackoff: 0.01)
        // The process dies once the stream's last chunk landed, before the journal says so.
        queue.setCrashHook { point in
            if case .landed = point { return true }
            return false
        }
        try harness.mount(uploads: queue)
        fake.resetCounters()
        let bytes = CoreHarness.pattern(10 * chunk, seed: 11)
        let created = try writeOpen("crash.bin", bytes)
        waitFor("a chunk sent") { uploadRequests >= 2 }
        try harness.close(created.attributes.inode, created.opened.handle)
        waitFor("the crash") { queue.hasCrashed }
        XCTAssertEqual(fake.streamedCreates, 1)
        XCTAssertEqual(driveFiles("crash.bin").count, 1, "the stream landed before the crash")
        harness.crash()
        try harness.mount()
        drain()
        let landed = driveFiles("crash.bin")
        XCTAssertEqual(landed.count, 1, "the recovered job must find the streamed file, not make a second one")
        XCTAssertTrue(fake.content(of: try XCTUnwrap(landed.first).id) == bytes, "Drive must hold the bytes written")
    }
}
