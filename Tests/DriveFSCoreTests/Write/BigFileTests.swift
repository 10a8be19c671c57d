import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Files Drive cannot hold, or the account has no room for, and large sparse files (the issue
/// "Not one accepted byte lost": `truncate -s 1T` then `drivefs unmount`).
///
/// - Past Drive's largest file (5 TiB; a small `maximumFileSize` here): `truncate`, `ftruncate`
///   and a write that would pass it answer EFBIG at once and change nothing.
/// - Growth the account's free space (`about.storageQuota`) cannot hold: the last close and
///   `fsync` answer ENOSPC, the content stays (journaled, not uploaded), and a truncate, a removal
///   or room made on Drive lets it go.
/// - A sparse content file is hashed without reading its holes, and the queue's status says that
///   a job is hashing, and how far it got.
final class BigFileTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    private static let smallMaximum: Int64 = 1 << 20

    private func mount(_ configure: @escaping (inout DriveFSConfiguration) -> Void = { _ in }) throws {
        harness = try CoreHarness {
            $0.readOnly = false
            $0.maximumFileSize = BigFileTests.smallMaximum
            configure(&$0)
        }
        try harness.mount()
        fake.resetCounters()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    private func driveChild(_ name: String) -> DriveFile? {
        fake.children(of: fake.rootID).first { $0.name == name }
    }

    private func setSize(_ inode: Inode, _ size: Int64, handle: UInt64? = nil) throws -> FileAttributes {
        try BlockingCall.wait { fs.setAttributes(inode, AttributeChanges(size: size), handle: handle, reply: $0) }
    }

    private func assertErrno<T>(_ expected: Int32, _ what: String, file: StaticString = #filePath, line: UInt = #line,
                                _ body: () throws -> T) {
        XCTAssertThrowsError(try body(), what, file: file, line: line) { error in
            XCTAssertEqual((error as? FilesystemError)?.errno, expected, "\(what): \(error)", file: file, line: line)
        }
    }

    // MARK: EFBIG: past Drive's largest file

    func testDrivesLargestFileIsFiveTebibytesByDefault() {
        let configuration = DriveFSConfiguration(userID: 0, groupID: 0, cacheDirectory: URL(fileURLWithPath: "/nonexistent"))
        XCTAssertEqual(configuration.maximumFileSize, 5_497_558_138_880)
    }

    func testATruncatePastTheLargestFileIsEFBIGAndChangesNothing() throws {
        try mount()
        let bytes = CoreHarness.pattern(1_000, seed: 3)
        let inode = try harness.writeFile(.root, "small.bin", bytes)
        drain()
        let before = try XCTUnwrap(driveChild("small.bin"))
        fake.resetCounters()

        // truncate(2): no handle.
        assertErrno(EFBIG, "truncate past the largest file") { try setSize(inode, Self.smallMaximum + 1) }
        assertErrno(EFBIG, "truncate -s 1T") { try setSize(inode, 1 << 40) }
        XCTAssertEqual(try harness.lookup(.root, "small.bin").size, 1_000, "the size changed")

        // ftruncate(2): through a handle open for writing.
        let handle = try harness.open(inode, O_WRONLY)
        assertErrno(EFBIG, "ftruncate past the largest file") { try setSize(inode, Self.smallMaximum + 1, handle: handle) }
        XCTAssertEqual(try harness.lookup(.root, "small.bin").size, 1_000, "the size changed")
        try harness.close(inode, handle)
        drain()
        XCTAssertTrue(fake.content(of: before.id) == bytes, "Drive's content changed")
        XCTAssertEqual(fake.file(before.id)?.headRevisionId, before.headRevisionId, "a new revision was uploaded")
        XCTAssertTrue(try harness.read(inode) == bytes, "the file does not read back what was written")

        // The largest file itself is fine.
        XCTAssertEqual(try setSize(inode, Self.smallMaximum).size, UInt64(Self.smallMaximum))
    }

    func testAWriteAtOrPastTheLargestFileIsEFBIGAndOneAcrossItIsShort() throws {
        try mount()
        let created = try harness.create(.root, "sparse.bin")
        let inode = created.attributes.inode, handle = created.opened.handle
        assertErrno(EFBIG, "a write at the largest size") { try harness.write(inode, handle, [1, 2, 3], at: Self.smallMaximum) }
        assertErrno(EFBIG, "a write at 1 PiB") { try harness.write(inode, handle, [1], at: 1 << 50) }
        XCTAssertEqual(try harness.lookup(.root, "sparse.bin").size, 0, "a refused write changed the size")
        // As the kernel does for its own limit: what fits is written, the rest is refused.
        XCTAssertEqual(try harness.write(inode, handle, Array(repeating: 7, count: 10), at: Self.smallMaximum - 4), 4)
        XCTAssertEqual(try harness.lookup(.root, "sparse.bin").size, UInt64(Self.smallMaximum))
        try harness.close(inode, handle)
        drain()
        let content = try XCTUnwrap(fake.content(of: try XCTUnwrap(driveChild("sparse.bin")).id))
        XCTAssertEqual(content.count, Int(Self.smallMaximum))
        XCTAssertEqual(Array(content.suffix(5)), [0, 7, 7, 7, 7])
    }

    // MARK: ENOSPC at close: no room on Drive

    /// Commits the copy as close(2) does, the flush answering; then the release.
    private func closeExpecting(_ expected: Int32?, _ inode: Inode, _ handle: UInt64, file: StaticString = #filePath,
                                line: UInt = #line) {
        do {
            try BlockingCall.wait { fs.flush(inode, handle: handle, reply: $0) }
            if let expected { XCTFail("close succeeded; expected errno \(expected)", file: file, line: line) }
        } catch {
            XCTAssertEqual(error.errno, expected ?? 0, "close: \(error)", file: file, line: line)
        }
        fs.release(inode, handle: handle)
    }

    func testAFileThatDoesNotFitInDrivesFreeSpaceIsENOSPCAtCloseAndKeptUntilTruncated() throws {
        try mount { $0.maximumFileSize = DriveFSConfiguration.driveMaximumFileSize }
        fake.storageQuota = (limit: 10 << 20, usage: 9 << 20)   // 1 MiB free
        let bytes = CoreHarness.pattern(2 << 20, seed: 5)
        let created = try harness.create(.root, "big.bin")
        let inode = created.attributes.inode
        try harness.write(inode, created.opened.handle, bytes, at: 0)
        closeExpecting(ENOSPC, inode, created.opened.handle)
        drain()
        XCTAssertNil(driveChild("big.bin"), "a file Drive has no room for was uploaded")
        XCTAssertEqual(fake.requests["files.create"] ?? 0, 0, "requests: \(fake.requestSummary)")
        // Nothing accepted is lost: the file shows what was written.
        XCTAssertEqual(try harness.lookup(.root, "big.bin").size, UInt64(bytes.count))
        XCTAssertTrue(try harness.read(inode) == bytes, "the file does not read back what was written")

        // Again: the quota known is reused (at most one about.get a refresh interval).
        let handle = try harness.open(inode, O_WRONLY)
        closeExpecting(ENOSPC, inode, handle)
        XCTAssertLessThanOrEqual(fake.requests["about.get"] ?? 0, 1, "requests: \(fake.requestSummary)")

        // The user makes it fit: truncate(2) commits it, and it goes up.
        XCTAssertEqual(try setSize(inode, 512 << 10).size, 512 << 10)
        drain()
        let file = try XCTUnwrap(driveChild("big.bin"), "the truncated file did not go up")
        XCTAssertTrue(fake.content(of: file.id) == Array(bytes.prefix(512 << 10)), "Drive holds other bytes")
    }

    func testRoomMadeOnDriveLetsAHeldFileGoUpAtTheNextFsync() throws {
        try mount {
            $0.maximumFileSize = DriveFSConfiguration.driveMaximumFileSize
            $0.quotaRefreshInterval = 0
            // No upload delay: the fsync of a new file waits for Drive (with one, it answers once kept here).
            $0.newFileSettle = 0
        }
        fake.storageQuota = (limit: 10 << 20, usage: 9 << 20)
        let bytes = CoreHarness.pattern(2 << 20, seed: 6)
        let created = try harness.create(.root, "later.bin")
        let inode = created.attributes.inode
        try harness.write(inode, created.opened.handle, bytes, at: 0)
        assertErrno(ENOSPC, "fsync without room on Drive") {
            try BlockingCall.wait { fs.synchronize(inode, handle: created.opened.handle, dataOnly: false, reply: $0) }
        }
        fake.storageQuota = (limit: 100 << 20, usage: 9 << 20)
        try BlockingCall.wait { fs.synchronize(inode, handle: created.opened.handle, dataOnly: false, reply: $0) }
        XCTAssertTrue(fake.content(of: try XCTUnwrap(driveChild("later.bin")).id) == bytes, "Drive holds other bytes")
        try harness.close(inode, created.opened.handle)
    }

    func testAHeldFileIsNotLostWhenTheDaemonDies() throws {
        try mount { $0.maximumFileSize = DriveFSConfiguration.driveMaximumFileSize }
        fake.storageQuota = (limit: 10 << 20, usage: 9 << 20)
        let bytes = CoreHarness.pattern(2 << 20, seed: 7)
        let created = try harness.create(.root, "kept.bin")
        try harness.write(created.attributes.inode, created.opened.handle, bytes, at: 0)
        closeExpecting(ENOSPC, created.attributes.inode, created.opened.handle)
        harness.crash()
        fake.storageQuota = (limit: 100 << 20, usage: 9 << 20)
        try harness.mount()
        drain()
        XCTAssertTrue(fake.content(of: try XCTUnwrap(driveChild("kept.bin")).id) == bytes, "the held file was lost")
    }

    func testAnUnmountCountsAHeldFileAsLeftInTheJournal() throws {
        try mount { $0.maximumFileSize = DriveFSConfiguration.driveMaximumFileSize }
        fake.storageQuota = (limit: 10 << 20, usage: 9 << 20)
        let created = try harness.create(.root, "left.bin")
        try harness.write(created.attributes.inode, created.opened.handle, CoreHarness.pattern(2 << 20, seed: 12), at: 0)
        closeExpecting(ENOSPC, created.attributes.inode, created.opened.handle)
        let cache = harness.configuration.cacheDirectory.path
        harness.unmount()
        XCTAssertEqual(UnfinishedUploads.read(cacheDirectory: cache), 1, "drivefs unmount would say nothing was left")
    }

    func testGrowthNotSizeIsWhatMustFitAndUnlimitedAccountsAlwaysFit() throws {
        try mount { $0.maximumFileSize = DriveFSConfiguration.driveMaximumFileSize }
        let old = CoreHarness.pattern(2 << 20, seed: 8)
        let id = fake.addFile("existing.bin", content: old)
        fake.storageQuota = (limit: 10 << 20, usage: 9 << 20)
        let inode = try harness.lookup(.root, "existing.bin").inode
        // The same size again: it takes no more room.
        let new = CoreHarness.pattern(2 << 20, seed: 9)
        try harness.rewrite(inode, new)
        drain()
        XCTAssertTrue(fake.content(of: id) == new, "Drive holds other bytes")
        // No limit (an unlimited account): anything fits.
        fake.storageQuota = (limit: nil, usage: 1 << 40)
        try harness.writeFile(.root, "unlimited.bin", CoreHarness.pattern(3 << 20, seed: 10))
        drain()
        XCTAssertNotNil(driveChild("unlimited.bin"))
    }

    // MARK: Sparse files: hashing without reading holes

    /// Bytes this process read through read(2)/pread(2) so far (`rchar` of /proc/self/io).
    private static func bytesRead() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") {
            return Int64(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    func testASparseContentFileIsHashedWithoutReadingItsHoles() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-sparse-\(UUID().uuidString)").path
        defer { unlink(path) }
        let size = 64 << 20
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, off_t(size)), 0)
        var dense = [UInt8](repeating: 0, count: size)
        let data = CoreHarness.pattern(8_192, seed: 11)
        for offset in [0, 5 << 20, 40 << 20 + 123, size - 8_192] {
            XCTAssertEqual(data.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }, data.count)
            dense.replaceSubrange(offset..<offset + data.count, with: data)
        }
        close(fd)
        var expected = Digest(.md5)
        dense.withUnsafeBytes { expected.update($0) }
        let expectedMD5 = expected.hexDigest()

        let before = Self.bytesRead()
        let measured = try LocalFiles.digest(path)
        let read = Self.bytesRead() - before
        XCTAssertEqual(measured.md5, expectedMD5)
        XCTAssertEqual(measured.size, Int64(size))
        XCTAssertLessThan(read, 16 << 20, "the holes were read from disk (\(read) bytes read for \(size))")
    }

    func testTheStatusShowsAJobBeingHashedAndHowFar() throws {
        let queueHarness = try UploadQueueHarness()
        let queue = try queueHarness.makeQueue(transfers: 1)
        let gate = DispatchSemaphore(value: 0)
        let hashed = Locked<[Int64]>([])
        queue.setHashingHook { done in
            hashed.withLock { $0.append(done) }
            if hashed.withLock({ $0.count }) == 2 { gate.wait() }
        }
        let path = queueHarness.content([])
        XCTAssertEqual(truncate(path, off_t(64 << 20)), 0)
        try queue.commit(try queueHarness.newFile("sparse.bin"), contentPath: path, ready: true)
        queueHarness.start(queue)
        var seen: UploadProgress?
        queueHarness.waitUntil("the job is hashing") {
            seen = queue.status.running.first
            return seen?.phase == .hashing && (seen?.bytesDone ?? 0) > 0
        }
        XCTAssertEqual(seen?.size, 64 << 20)
        XCTAssertLessThan(seen?.bytesDone ?? 0, 64 << 20)
        gate.signal()
        queueHarness.waitUntil("the upload landed") { queue.status.isIdle }
        XCTAssertEqual(queueHarness.outcomes.withLock { $0.count }, 1)
        queue.stop()
    }

    func testTheUnmountProgressLineSaysWhatEachUploadDoes() {
        let status = UploadQueueStatus(queued: 1, running: [
            UploadProgress(path: "/big.bin", size: 1 << 40, bytesDone: 300 << 20, phase: .hashing),
            UploadProgress(path: "/small.bin", size: 20 << 20, bytesDone: 8 << 20, phase: .sending),
            UploadProgress(path: "/other.bin", size: 1, bytesDone: 0),
        ])
        XCTAssertEqual(status.progressSummary, "1 queued, 3 running (hashing /big.bin: 300 of 1048576 MiB; "
                       + "sending /small.bin: 8 of 20 MiB; 1 more)")
        XCTAssertEqual(UploadQueueStatus(queued: 2).progressSummary, "2 queued, 0 running")
    }

    func testAJobCancelledWhileHashingStopsHashingAndSendsNothing() throws {
        let queueHarness = try UploadQueueHarness()
        let queue = try queueHarness.makeQueue(transfers: 1)
        let request = try queueHarness.newFile("gone.bin")
        let hashed = Locked<[Int64]>([])
        queue.setHashingHook { done in
            let count = hashed.withLock { h -> Int in h.append(done); return h.count }
            // rm of the file while its upload hashes (the same flag stops it at unmount).
            if count == 2 { _ = try? queue.cancel(request.fileID) }
        }
        let path = queueHarness.content([])
        XCTAssertEqual(truncate(path, off_t(64 << 20)), 0)
        try queue.commit(request, contentPath: path, ready: true)
        queueHarness.fake.resetCounters()
        queueHarness.start(queue)
        queueHarness.waitUntil("the job ended") { queue.status.isIdle && !hashed.withLock { $0.isEmpty } }
        XCTAssertLessThanOrEqual(hashed.withLock { $0.count }, 3, "hashing went on after the job was cancelled")
        XCTAssertEqual(queueHarness.fake.requests.filter { $0.key.hasPrefix("files.create") }.count, 0,
                       queueHarness.fake.requestSummary)
        queue.stop()
    }
}
