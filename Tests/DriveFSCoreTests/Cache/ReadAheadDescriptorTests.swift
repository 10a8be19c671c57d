import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// A fetch in flight writes only through a descriptor it holds: the version's last close, a
/// discard (its content changed) or an eviction while a download runs must not close the cache
/// file under it, or a reused descriptor number would take bytes meant for the cache (issue 17:
/// "cannot write to the cache file of …: Bad file descriptor" after a reader closed early).
///
/// Each test holds a download at a gate, does what closes the version's file, then — when the
/// number was let go — gives the same number to an unrelated file (`dup2`), as the next `open` in
/// the process would, and only then lets the download go on. That file must keep its bytes.
final class ReadAheadDescriptorTests: XCTestCase {
    private var harness: CoreHarness?
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-readahead-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        harness?.remove()
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// The identity of what `fd` is open on, or nil when the number is not open.
    private func identity(_ fd: Int32) -> (dev_t, ino_t)? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return (st.st_dev, st.st_ino)
    }

    /// Where a cache file's descriptor number was let go while a fetch held it, an unrelated file
    /// takes the number (what the next `open` in the process does); returns that file's
    /// descriptor (to close at the end), or nil when the cache still holds the number on its file.
    private func reuseIfLetGo(_ fd: Int32, was cacheFile: (dev_t, ino_t), victim: String) -> Int32? {
        if let now = identity(fd), now == cacheFile { return nil }
        XCTFail("the cache file's descriptor \(fd) was closed while a fetch was writing through it")
        guard identity(fd) == nil else { return nil }  // someone else has the number already
        let other = Glibc.open(victim, O_RDWR | O_CLOEXEC)  // the lowest free number: often `fd` itself
        XCTAssertGreaterThanOrEqual(other, 0)
        if other != fd {
            XCTAssertEqual(dup2(other, fd), fd)
            Glibc.close(other)
        }
        return fd
    }

    private func makeVictim(_ bytes: [UInt8]) throws -> String {
        let path = directory.appendingPathComponent("unrelated.bin").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    /// Compared without printing the bytes: a corrupted file is megabytes of numbers otherwise.
    private func assertUntouched(_ path: String, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let now = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
        let changed = zip(now, bytes).filter { $0 != $1 }.count + abs(now.count - bytes.count)
        XCTAssertTrue(now == bytes, "a file that took the descriptor's number keeps its bytes: it has \(now.count) bytes "
                      + "(had \(bytes.count)), \(changed) of them changed", file: file, line: line)
    }

    private func media(_ backend: FakeDriveBackend) -> Int {
        let r = backend.requests
        return (r["files.get.media"] ?? 0) + (r["revisions.get.media"] ?? 0)
    }

    /// The reader closes its file (the last handle) while its read-ahead stream is held at the gate.
    func testAReadAheadKeepsItsDescriptorPastTheReadersLastClose() throws {
        let harness = try CoreHarness()
        self.harness = harness
        let block = 128 * 1024
        let content = CoreHarness.pattern(5 * block, seed: 17)
        harness.backend.addFile("stream.bin", content: content)
        try harness.mount()
        let inode = try harness.resolve("stream.bin").inode
        // The first three blocks cached, each through a handle of its own (no sequential reader,
        // so no read-ahead and no extended fetch yet).
        for b in 0..<3 {
            XCTAssertTrue(try harness.read(inode, offset: Int64(b * block), size: block) == Array(content[b * block..<(b + 1) * block]))
        }
        let fetchedBefore = media(harness.backend)
        let gate = DispatchSemaphore(value: 0)
        harness.backend.downloadGate = gate
        defer { harness.backend.downloadGate = nil }

        // A sequential reader: its third read is answered from the cache and starts a read-ahead
        // of the last two blocks, which waits at the gate.
        let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        var descriptor: Int32 = -1
        for b in 0..<3 {
            let data = try BlockingCall.wait { harness.fs.read(inode, handle: opened.handle, offset: Int64(b * block), size: block, reply: $0) }
            if case .file(let fd, _, _) = data { descriptor = fd }
            XCTAssertTrue(CoreHarness.bytes(data) == Array(content[b * block..<(b + 1) * block]))
        }
        XCTAssertGreaterThanOrEqual(descriptor, 0, "cached reads are answered from the cache file's descriptor")
        let cacheFile = try XCTUnwrap(identity(descriptor))
        let started = Date().addingTimeInterval(60)
        while media(harness.backend) == fetchedBefore && Date() < started { usleep(2_000) }
        XCTAssertEqual(media(harness.backend), fetchedBefore + 1, "the read-ahead stream is at the gate")

        // The reader closes (`head -c` done); then the process opens something else.
        harness.fs.release(inode, handle: opened.handle)
        let unrelated = CoreHarness.pattern(64 * 1024, seed: 18)
        let victim = try makeVictim(unrelated)
        let reused = reuseIfLetGo(descriptor, was: cacheFile, victim: victim)
        defer { if let reused { Glibc.close(reused) } }

        gate.signal()
        XCTAssertTrue(harness.fs.readAhead.waitUntilIdle(timeout: 60), "the read-ahead ends")
        assertUntouched(victim, unrelated)
        if reused == nil {
            XCTAssertFalse(identity(descriptor).map { $0 == cacheFile } ?? false,
                           "the cache file is closed once the last fetch holding it ended")
        }
        // What the read-ahead fetched is in the cache: reading the rest costs no request.
        harness.backend.resetCounters()
        let rest = try harness.read(inode, offset: Int64(3 * block), size: 2 * block)
        XCTAssertTrue(rest == Array(content[(3 * block)...]), "the blocks read ahead hold the file's bytes: "
                      + "\(zip(rest, content[(3 * block)...]).filter { $0 != $1 }.count) of \(rest.count) differ")
        XCTAssertEqual(media(harness.backend), 0, "the read-ahead's blocks were cached")
    }

    /// The version is discarded (its content changed on Drive) and its last handle released while
    /// a claimed download is held: the file is removed only once the download let go of it.
    func testAFetchOfADiscardedVersionNeverWritesThroughAReusedNumber() throws {
        let blockSize = 64 * 1024
        let cacheDirectory = directory.appendingPathComponent("blocks")
        let cache = try BlockCache(directory: cacheDirectory, capacity: 1 << 30, blockSize: blockSize)
        let content = CoreHarness.pattern(4 * blockSize, seed: 19)
        let key = ContentKey(fileID: "f1", version: "v1", revision: "r1")
        let handle = try cache.open(key, size: Int64(content.count))
        let descriptor = handle.descriptor
        let cacheFile = try XCTUnwrap(identity(descriptor))
        let run = try XCTUnwrap(cache.claim(handle, offset: 0, length: Int64(content.count), maxBytes: Int64(content.count)))

        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<FilesystemError?>(nil)
        let thread = Thread {
            let fetch: BlockCache.Fetcher = { offset, length, sink in
                entered.signal()
                gate.wait()
                guard case .callback(let deliver) = sink else { return 0 }
                let going = Array(content[Int(offset)..<Int(offset + length)]).withUnsafeBytes { deliver($0) }
                if !going { throw DriveError.cancelled }
                return length
            }
            do throws(FilesystemError) {
                try cache.download(handle, blocks: run, fetch: fetch)
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        thread.start()
        XCTAssertEqual(entered.wait(timeout: .now() + 60), .success, "the download is at the gate")

        cache.discard(key)
        cache.release(handle)
        let unrelated = CoreHarness.pattern(32 * 1024, seed: 20)
        let victim = try makeVictim(unrelated)
        let reused = reuseIfLetGo(descriptor, was: cacheFile, victim: victim)
        defer { if let reused { Glibc.close(reused) } }

        gate.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "the download ends")
        XCTAssertNil(outcome.withLock { $0 }, "the download wrote through a descriptor it held")
        assertUntouched(victim, unrelated)
        XCTAssertEqual(cache.entryCount, 0)
        XCTAssertEqual(cache.bytesUsed, 0, "the discarded version's blocks are not counted once it is gone")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path), [],
                       "the discarded version's file is removed once the download ended")
    }
}
