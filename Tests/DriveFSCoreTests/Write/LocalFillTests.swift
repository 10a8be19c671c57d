@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A local copy's fill from Drive (a read of bytes it does not hold yet, or a commit completing
/// it) never holds a kernel thread: while the fill is held mid-download in the in-memory Drive, a
/// read of a range the copy holds answers, a `release` of another handle returns, and a write
/// into the range being fetched answers and survives the fetch that lands after it. Every wait
/// is bounded; the calls that could block run off the test's thread, so a regression fails the
/// test instead of hanging it.
final class LocalFillTests: XCTestCase {
    private var harness: CoreHarness!
    private var fs: DriveFilesystem { harness.fs }
    private var blockSize: Int { harness.configuration.blockSize }
    private let gate = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    private var original: [UInt8] = []
    private var fileID = ""

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
        original = CoreHarness.pattern(16 * harness.configuration.blockSize, seed: 41)
        fileID = harness.backend.addFile("big.bin", content: original)
        try harness.mount()
    }

    override func tearDown() {
        // Whatever a test held is let go, pass or fail (the fake passes every download on after).
        harness?.backend.downloadGate = nil
        gate.signal()
        harness?.remove()
        harness = nil
    }

    /// Holds every download from now on at the gate, and waits until one is held there.
    private func holdDownloads() {
        harness.backend.downloadStarted = started
        harness.backend.downloadGate = gate
    }

    private func waitForHeldDownload(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(started.wait(timeout: .now() + 60), .success, "no download began", file: file, line: line)
    }

    /// Runs `call` on another thread (it may block, in the bug this guards against).
    private func offThread(_ call: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async(execute: call)
    }

    private func released(_ inode: Inode, _ handle: UInt64) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let fs = self.fs
        offThread {
            fs.release(inode, handle: handle)
            done.signal()
        }
        return done.wait(timeout: .now() + 20) == .success
    }

    func testAReadFillHeldOnDriveHoldsNoKernelThreadAndLosesNoWrite() throws {
        let inode = try harness.resolve("big.bin").inode
        let B = blockSize
        let writer = try harness.open(inode, O_RDWR)
        // Block 0 is local: the partial write fetched it (Drive answers at once here).
        try harness.write(inode, writer, [1, 2, 3], at: 5)
        let other = try harness.open(inode, O_RDONLY)
        var expected = original
        expected.replaceSubrange(5..<8, with: [1, 2, 3])

        // A read of blocks 4 to 11 through the writer: its fill is held in the middle of its download.
        holdDownloads()
        let held = Pending<ReadData>()
        fs.read(inode, handle: writer, offset: Int64(4 * B), size: 8 * B, reply: held.reply)
        waitForHeldDownload()

        // (a) A read of the local range of the same open file answers meanwhile.
        let local = Pending<ReadData>()
        let fs = self.fs
        offThread { fs.read(inode, handle: writer, offset: 0, size: 16, reply: local.reply) }
        let answer = local.wait(seconds: 20)
        XCTAssertNotNil(answer, "a read of bytes the copy holds waited for another range's download")
        if case .success(let data)? = answer { XCTAssertEqual(CoreHarness.bytes(data), Array(expected[0..<16])) }

        // (b) A release of another handle returns meanwhile.
        XCTAssertTrue(released(inode, other), "a release waited for a download")

        // (c) A write of a whole block inside the range being fetched answers meanwhile, and the
        // fetch landing after it does not write Drive's old bytes over it.
        let block = [UInt8](repeating: 0xAB, count: B)
        let whole = Pending<Int>()
        offThread { fs.write(inode, handle: writer, offset: Int64(6 * B), data: block, reply: whole.reply) }
        let wrote = whole.wait(seconds: 20)
        XCTAssertNotNil(wrote, "a write into a range being fetched waited for the download")
        if case .failure(let error)? = wrote { XCTFail("the write failed: \(error)") }
        expected.replaceSubrange(6 * B..<7 * B, with: block)

        // A write of part of a block being fetched needs Drive's other bytes: it waits for that
        // fetch (off the kernel's threads) and keeps both.
        let part = Pending<Int>()
        offThread { fs.write(inode, handle: writer, offset: Int64(9 * B + 10), data: [7, 7, 7], reply: part.reply) }
        expected.replaceSubrange(9 * B + 10..<9 * B + 13, with: [7, 7, 7])

        harness.backend.downloadGate = nil
        gate.signal()
        XCTAssertNotNil(held.wait(seconds: 60), "the held read never answered")
        if case .failure(let error)? = part.wait(seconds: 60) { XCTFail("the partial write failed: \(error)") }
        XCTAssertTrue(part.isAnswered, "the partial write never answered")

        assertSame(try harness.read(inode, handle: writer, offset: 0, size: 16 * B), expected, "the copy")
        try harness.close(inode, writer)
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)")
        assertSame(harness.backend.content(of: fileID), expected, "Drive's version")
    }

    func testACommitCompletingTheCopyHoldsNoKernelThread() throws {
        let inode = try harness.resolve("big.bin").inode
        let writer = try harness.open(inode, O_RDWR)
        try harness.write(inode, writer, [9, 9], at: 3)
        let reader = try harness.open(inode, O_RDONLY)
        let other = try harness.open(inode, O_RDONLY)
        var expected = original
        expected.replaceSubrange(3..<5, with: [9, 9])

        // close(2) of the only writer commits the copy: it fetches the rest of the file first.
        holdDownloads()
        let flushed = Pending<Void>()
        fs.flush(inode, handle: writer, reply: flushed.reply)
        waitForHeldDownload()

        let local = Pending<ReadData>()
        let fs = self.fs
        offThread { fs.read(inode, handle: reader, offset: 0, size: 8, reply: local.reply) }
        let answer = local.wait(seconds: 20)
        XCTAssertNotNil(answer, "a read of bytes the copy holds waited for the commit's download")
        if case .success(let data)? = answer { XCTAssertEqual(CoreHarness.bytes(data), Array(expected[0..<8])) }
        XCTAssertTrue(released(inode, other), "a release waited for the commit's download")

        harness.backend.downloadGate = nil
        gate.signal()
        if case .failure(let error)? = flushed.wait(seconds: 60) { XCTFail("the close failed: \(error)") }
        XCTAssertTrue(flushed.isAnswered, "the close never answered")
        fs.release(inode, handle: writer)
        fs.release(inode, handle: reader)
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)")
        assertSame(harness.backend.content(of: fileID), expected, "Drive's version")
    }

    /// Compares contents without printing a megabyte: the first byte that differs.
    private func assertSame(_ actual: [UInt8]?, _ expected: [UInt8], _ what: String, file: StaticString = #filePath,
                            line: UInt = #line) {
        guard let actual else { return XCTFail("\(what): no content", file: file, line: line) }
        guard actual != expected else { return }
        let first = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count)
        XCTFail("\(what) differs from what was written at byte \(first) (block \(first / blockSize)); "
                + "\(actual.count) bytes, \(expected.count) expected", file: file, line: line)
    }
}
