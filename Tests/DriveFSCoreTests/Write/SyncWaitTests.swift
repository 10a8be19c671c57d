import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// `fsync` (and `--sync-close`) waiting for an upload, through the core over the in-memory Drive:
/// the waited-for upload goes before the backlog, a wait holds none of the interactive threads
/// (lookups, creates and mkdir still answer while many fsyncs wait), and answers no retry mends for
/// now (a full Drive, a dead grant) reach the waiter at once while the upload stays queued and
/// lands once the cause is gone. Every wait is bounded (a hang guard of a minute), never a sleep.
final class SyncWaitTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }
    /// Whatever a test's hook holds is let go at the end, pass or fail.
    private var cleanups: [() -> Void] = []

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        cleanups.reversed().forEach { $0() }
        cleanups = []
        fake.writeHook = nil
        harness?.remove()
        harness = nil
    }

    /// A queue of the core's directory with short backoffs (retries come at once, on the real clock).
    private func makeQueue(transfers: Int) throws -> UploadQueue {
        try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: transfers, initialBackoff: 0.01,
                        maximumBackoff: 0.05)
    }

    /// A new file in the root written and closed by its writer (`flush`: committed), handle still open.
    private func written(_ name: String, _ bytes: [UInt8]) throws -> (inode: Inode, handle: UInt64, id: String) {
        let created = try harness.create(.root, name)
        let inode = created.attributes.inode
        try harness.write(inode, created.opened.handle, bytes, at: 0)
        try BlockingCall.wait { fs.flush(inode, handle: created.opened.handle, reply: $0) }
        return (inode, created.opened.handle, fs.table.node(inode)!.file.id)
    }

    private func fsync(_ file: (inode: Inode, handle: UInt64, id: String), cancellation: CancellationFlag? = nil) -> Pending<Void> {
        let pending = Pending<Void>(cancellation: cancellation)
        fs.synchronize(file.inode, handle: file.handle, dataOnly: false, reply: pending.reply)
        return pending
    }

    // MARK: A waited-for upload goes first

    func testAnFsyncedUploadGoesBeforeTheBacklog() throws {
        let queue = try makeQueue(transfers: 1)
        try harness.mount(uploads: queue)
        let order = Locked<[String]>([])
        let gate = WriteGate(method: "files.create.upload")
        cleanups.append { gate.open() }
        let hold = gate.hook
        fake.writeHook = { method, phase, id in
            if method == "files.create.upload", phase == .before { order.withLock { $0.append(id ?? "?") } }
            try hold(method, phase, id)
        }
        let backlog = 6
        for n in 0..<backlog { try harness.writeFile(.root, "backlog-\(n).txt", Array("queued \(n)".utf8)) }
        // The first of the backlog is on the wire (held there), the others wait for the one transfer.
        waitUntil("the first upload to be held") { gate.waiting == 1 }
        let ours = try written("ours.txt", Array("fsynced".utf8))
        let answer = fsync(ours)
        waitUntil("the fsync to wait for its upload") { queue.waitingFiles.contains(ours.id) }
        gate.open()
        guard let result = answer.wait(seconds: 60) else { return XCTFail("fsync did not answer within a minute") }
        XCTAssertNoThrow(try result.get())
        XCTAssertEqual(fake.content(of: ours.id), Array("fsynced".utf8))
        let before = order.withLock { $0.firstIndex(of: ours.id) }
        XCTAssertNotNil(before)
        XCTAssertLessThanOrEqual(before ?? .max, 1,
                                 "the fsynced file went after \(before ?? -1) uploads (at most the one running may go first): \(order.withLock { $0 })")
        fs.release(ours.inode, handle: ours.handle)
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60) { _ in })
        XCTAssertEqual(fake.children(of: fake.rootID).count, backlog + 1, "every file of the backlog lands too")
    }

    // MARK: A wait holds no interactive thread

    func testFsyncsWaitingHoldNoInteractiveThread() throws {
        harness.configuration.indexWholeDrive = false
        let elsewhere = fake.addFolder("elsewhere")
        fake.addFile("inside.txt", in: elsewhere, content: Array("inside".utf8))
        let held = HeldUploadQueue(try makeQueue(transfers: 1))
        cleanups.append { held.release() }
        try harness.mount(uploads: held)
        let folder = try harness.lookup(.root, "elsewhere")
        let waiting = harness.configuration.interactiveThreads + 4
        var files: [(inode: Inode, handle: UInt64, id: String)] = []
        var answers: [Pending<Void>] = []
        for n in 0..<waiting { files.append(try written("held-\(n).txt", Array("held \(n)".utf8))) }
        for file in files { answers.append(fsync(file)) }
        // No upload can land (the transfers are held): every fsync waits. Other requests answer.
        let deadline = Date(timeIntervalSinceNow: 60)
        let lookup = Pending<FileAttributes>()
        fs.lookup(parent: folder.inode, name: "inside.txt", reply: lookup.reply)
        let created = Pending<CreatedFile>()
        fs.create(parent: .root, name: "another.txt", mode: 0o644, flags: O_WRONLY | O_CREAT, reply: created.reply)
        let made = Pending<FileAttributes>()
        fs.makeDirectory(parent: .root, name: "made", mode: 0o755, reply: made.reply)
        let found = lookup.wait(until: deadline)
        let opened = created.wait(until: deadline)
        let folderMade = made.wait(until: deadline)
        XCTAssertNotNil(found, "a lookup did not answer while \(waiting) fsyncs waited")
        XCTAssertNotNil(opened, "a create did not answer while \(waiting) fsyncs waited")
        XCTAssertNotNil(folderMade, "a mkdir did not answer while \(waiting) fsyncs waited")
        XCTAssertEqual(try found?.get().size, 6)
        XCTAssertTrue(answers.allSatisfy { !$0.isAnswered }, "an fsync answered before its upload landed")

        held.release()
        for (n, answer) in answers.enumerated() {
            guard let result = answer.wait(until: Date(timeIntervalSinceNow: 60)) else { return XCTFail("fsync \(n) never answered") }
            XCTAssertNoThrow(try result.get())
            XCTAssertEqual(fake.content(of: files[n].id), Array("held \(n)".utf8))
        }
        for file in files { fs.release(file.inode, handle: file.handle) }
        if let opened = try? opened?.get() {
            try harness.close(opened.attributes.inode, opened.opened.handle)
        }
    }

    func testAnInterruptedFsyncAnswersEINTRAndTheUploadStaysQueued() throws {
        let held = HeldUploadQueue(try makeQueue(transfers: 1))
        cleanups.append { held.release() }
        try harness.mount(uploads: held)
        let file = try written("interrupted.txt", Array("kept".utf8))
        let flag = CancellationFlag()
        let answer = fsync(file, cancellation: flag)
        waitUntil("the fsync to wait for its upload") { held.inner.waitingFiles.contains(file.id) }
        flag.cancel()
        guard let result = answer.wait(seconds: 60) else { return XCTFail("an interrupted fsync did not answer") }
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EINTR) }
        held.release()
        guard let again = fsync(file).wait(seconds: 60) else { return XCTFail("the second fsync did not answer") }
        XCTAssertNoThrow(try again.get())
        XCTAssertEqual(fake.content(of: file.id), Array("kept".utf8))
        fs.release(file.inode, handle: file.handle)
    }

    // MARK: Answers no retry mends for now reach the waiter at once

    func testAFullDriveAnswersENOSPCAtOnceAndTheUploadLandsOnceThereIsRoom() throws {
        try checkHeldFailure(.quotaExceeded(GoogleErrorInfo(status: 403, reason: "storageQuotaExceeded",
                                                            message: "The user's Drive storage quota has been exceeded.")),
                             errno: ENOSPC)
    }

    func testARevokedGrantAnswersEACCESAtOnceAndTheUploadLandsAfterLoggingInAgain() throws {
        try checkHeldFailure(.unauthorized(GoogleErrorInfo(status: 401, reason: "invalid_grant", message: DriveError.loginAgainMessage)),
                             errno: EACCES)
    }

    /// Drive answers `error` to the upload's first try and holds its second until the cause is
    /// gone: fsync answers `errno` after that first failure, the job is still queued (nothing
    /// failed for good, nothing moved aside), and once the fault is cleared the file lands and a
    /// second fsync answers success. Another file's upload is not affected.
    private func checkHeldFailure(_ error: DriveError, errno expected: Int32, file: StaticString = #filePath,
                                  line: UInt = #line) throws {
        let queue = try makeQueue(transfers: 2)
        try harness.mount(uploads: queue)
        let fault = PersistentFault(method: "files.create.upload", error: error)
        cleanups.append { fault.clear() }
        let bytes = Array("accepted, then Drive said no".utf8)
        // The file's ID is known from its create on; the fault is in place before its commit.
        let created = try harness.create(.root, "refused.txt")
        let id = fs.table.node(created.attributes.inode)!.file.id
        let ours = (inode: created.attributes.inode, handle: created.opened.handle, id: id)
        fake.writeHook = { method, phase, writeID in
            guard writeID == id else { return }
            try fault.hook(method, phase, writeID)
        }
        try harness.write(ours.inode, ours.handle, bytes, at: 0)
        try BlockingCall.wait { fs.flush(ours.inode, handle: ours.handle, reply: $0) }
        let answer = fsync(ours)
        guard let result = answer.wait(seconds: 60) else {
            return XCTFail("fsync did not answer while Drive refused the upload", file: file, line: line)
        }
        XCTAssertThrowsError(try result.get(), file: file, line: line) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, expected, file: file, line: line)
        }
        XCTAssertEqual(fault.thrown, 1, "fsync must answer at the first failure, not after retries", file: file, line: line)
        XCTAssertTrue(queue.journalState.jobs.values.contains { $0.fileID == id && $0.kind == .upload },
                      "the upload must stay queued", file: file, line: line)
        XCTAssertEqual(queue.status.failed, 0, "nothing failed for good", file: file, line: line)
        XCTAssertNil(fake.file(id))

        // Another file goes up meanwhile.
        let other = try written("other.txt", Array("unaffected".utf8))
        guard let otherResult = fsync(other).wait(seconds: 60) else { return XCTFail("the other fsync did not answer", file: file, line: line) }
        XCTAssertNoThrow(try otherResult.get(), file: file, line: line)

        // The retry is held on the wire; the user frees space (logs in again): it lands.
        waitUntil("the upload to be tried again") { fault.attempts >= 2 }
        let again = fsync(ours)
        fault.clear()
        guard let second = again.wait(seconds: 60) else { return XCTFail("fsync did not answer after the fault cleared", file: file, line: line) }
        XCTAssertNoThrow(try second.get(), file: file, line: line)
        XCTAssertEqual(fake.content(of: id), bytes, file: file, line: line)
        XCTAssertEqual(fake.content(of: other.id), Array("unaffected".utf8), file: file, line: line)
        XCTAssertEqual(queue.status.failed, 0, file: file, line: line)
        fs.release(ours.inode, handle: ours.handle)
        fs.release(other.inode, handle: other.handle)
    }
}

/// A reply a test can look at before it comes, and wait for with a bound (a hang here is a failure).
final class Pending<T: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let box = Locked<Result<T, FilesystemError>?>(nil)
    let reply: Reply<T>

    init(cancellation: CancellationFlag? = nil) {
        let box = self.box
        let done = self.done
        reply = Reply(cancellation: cancellation) { result in
            box.withLock { $0 = result }
            done.signal()
        }
    }

    var isAnswered: Bool { box.withLock { $0 != nil } }

    func wait(seconds: Double) -> Result<T, FilesystemError>? { wait(until: Date(timeIntervalSinceNow: seconds)) }

    func wait(until deadline: Date) -> Result<T, FilesystemError>? {
        if let result = box.withLock({ $0 }) { return result }
        guard done.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .success else { return nil }
        done.signal()
        return box.withLock { $0 }
    }
}

/// A fault that lasts until cleared, as a full Drive or a revoked grant does: the first request of
/// `method` fails with `error`; later ones wait on the wire until `clear()` (so the test knows how
/// many failures came before an answer), then pass.
final class PersistentFault: @unchecked Sendable {
    // @unchecked: all state is behind `condition`.
    private let condition = NSCondition()
    private var cleared = false
    private var tries = 0
    private var failures = 0
    let method: String
    let error: DriveError

    init(method: String, error: DriveError) {
        self.method = method
        self.error = error
    }

    var hook: FakeDriveBackend.WriteHook {
        { [self] method, phase, _ in
            guard method == self.method, phase == .before else { return }
            condition.lock()
            defer { condition.unlock() }
            tries += 1
            condition.broadcast()
            if cleared { return }
            if tries == 1 {
                failures += 1
                throw error
            }
            let limit = Date(timeIntervalSinceNow: 120)
            while !cleared && Date() < limit { _ = condition.wait(until: limit) }
            if !cleared {
                failures += 1
                throw error
            }
        }
    }

    var attempts: Int { condition.lock(); defer { condition.unlock() }; return tries }
    var thrown: Int { condition.lock(); defer { condition.unlock() }; return failures }

    func clear() {
        condition.lock()
        cleared = true
        condition.broadcast()
        condition.unlock()
    }
}
