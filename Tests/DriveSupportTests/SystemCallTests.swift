@testable import DriveSupport
import Foundation
import XCTest

final class SystemCallTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("systemcall-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testRetryingRetriesEINTRAndThrowsOtherErrnos() {
        var calls = 0
        let result = try? SystemCall.retrying("fake") { () -> Int in
            calls += 1
            if calls < 3 { errno = EINTR; return -1 }
            return 7
        }
        XCTAssertEqual(result, 7)
        XCTAssertEqual(calls, 3)

        XCTAssertThrowsError(try SystemCall.retrying("fdatasync") { () -> Int32 in errno = ENOSPC; return -1 }) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("fdatasync", errno: ENOSPC))
            XCTAssertTrue("\(error)".hasPrefix("fdatasync: No space left on device"), "\(error)")
        }
    }

    /// Short writes and interrupts in any order: every byte is written once, in order.
    func testWriteAllContinuesShortWritesAndInterrupts() throws {
        let source = Array((0..<100).map { UInt8($0) })
        var written: [UInt8] = []
        var calls = 0
        try SystemCall.writeAll("write", count: source.count) { done in
            calls += 1
            if calls % 2 == 0 { errno = EINTR; return -1 }
            let n = min(7, source.count - done)
            written += source[done..<(done + n)]
            return n
        }
        XCTAssertEqual(written, source)
        XCTAssertGreaterThan(calls, 2 * (100 / 7))
    }

    func testWriteAllThatMakesNoProgressThrowsEIO() {
        XCTAssertThrowsError(try SystemCall.writeAll("pwrite", count: 4) { _ in 0 }) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("pwrite", errno: EIO))
        }
    }

    func testReadFullyStopsAtTheEndAndRetriesInterrupts() throws {
        var calls = 0
        let got = try SystemCall.readFully("read", count: 10) { done in
            calls += 1
            if calls == 1 { errno = EINTR; return -1 }
            return done < 6 ? 3 : 0
        }
        XCTAssertEqual(got, 6)
    }

    /// A real pipe, which holds far less than is written: `writeAll` with a reader draining the
    /// other end delivers every byte, in order.
    func testWriteAllThroughAPipeArrivesWhole() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let received = Locked<[UInt8]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while let n = try? chunk.withUnsafeMutableBytes({ try SystemCall.read(readEnd, into: $0) }), n > 0 {
                received.withLock { $0 += chunk[0..<n] }
            }
            finished.signal()
        }
        try SystemCall.writeAll(writeEnd, bytes)
        close(writeEnd)
        XCTAssertEqual(finished.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(received.withLock { $0 }, bytes)
    }

    func testPwriteAndPreadOnAFile() throws {
        let path = directory.appendingPathComponent("f").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        try SystemCall.writeAll(fd, Array("hello world".utf8), at: 3)
        var buffer = [UInt8](repeating: 9, count: 20)
        let n = try buffer.withUnsafeMutableBytes { try SystemCall.readFully(fd, into: $0, at: 0) }
        XCTAssertEqual(n, 14)
        XCTAssertEqual(Array(buffer[0..<n]), [0, 0, 0] + Array("hello world".utf8))
        XCTAssertThrowsError(try SystemCall.writeAll(-1, [1], at: 0)) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("pwrite", errno: EBADF))
        }
    }

    func testOpenTruncateSizeAndSyncOnAFile() throws {
        let path = directory.appendingPathComponent("g").path
        let fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        defer { close(fd) }
        try SystemCall.truncate(fd, to: 5000)
        XCTAssertEqual(try SystemCall.size(fd), 5000)
        try SystemCall.fdatasync(fd)
        try SystemCall.fsync(fd)
        try SystemCall.truncate(fd, to: 10)
        XCTAssertEqual(try SystemCall.size(fd), 10)
        try SystemCall.flock(fd, LOCK_EX | LOCK_NB)
        try SystemCall.flock(fd, LOCK_UN)
        XCTAssertThrowsError(try SystemCall.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("open", errno: EEXIST))
        }
        XCTAssertThrowsError(try SystemCall.open(path + "-missing", O_RDONLY | O_CLOEXEC)) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("open", errno: ENOENT))
        }
        for (call, body) in [("ftruncate", { () throws -> Void in try SystemCall.truncate(-1, to: 0) }),
                             ("fstat", { _ = try SystemCall.size(-1) }), ("fdatasync", { try SystemCall.fdatasync(-1) }),
                             ("fsync", { try SystemCall.fsync(-1) }), ("flock", { try SystemCall.flock(-1, LOCK_EX) })] {
            XCTAssertThrowsError(try body()) { error in XCTAssertEqual(error as? SystemCallError, SystemCallError(call, errno: EBADF)) }
        }
    }

    func testReadingADirectoryThrowsEISDIR() throws {
        let fd = open(directory.path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try SystemCall.readFully(fd, into: $0) }) { error in
            XCTAssertEqual(error as? SystemCallError, SystemCallError("read", errno: EISDIR))
        }
    }
}
