import DriveClient
import DriveFSCore
import DriveSupport
import XCTest

/// The block cache on its own: persistence through the index, and crash safety around eviction
/// (a crash at any point may lose cached blocks, never serve wrong ones).
final class BlockCacheTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-blocks-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private let blockSize = 64 * 1024

    private func fetcher(_ content: [UInt8], count: Locked<Int>) -> BlockCache.Fetcher {
        { offset, length, sink in
            count.withLock { $0 += 1 }
            guard case .callback(let deliver) = sink else { return 0 }
            let slice = Array(content[Int(offset)..<Int(offset + length)])
            _ = slice.withUnsafeBytes { deliver($0) }
            return length
        }
    }

    private func read(_ handle: BlockCache.Handle, _ offset: Int64, _ length: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: length)
        let n = buffer.withUnsafeMutableBytes { pread(handle.descriptor, $0.baseAddress, length, off_t(offset)) }
        return Array(buffer.prefix(max(0, n)))
    }

    /// `--cache-min-free`: under the cap, content is evicted while the filesystem has less free than
    /// asked, counting evicted blocks whose holes the next index write punches; kept content stays.
    func testMinimumFreeEvictsBelowTheCapButNeverKeptContent() throws {
        // A disk of 40 blocks holding only the cache: free = 40 blocks - cached + evicted-but-unpunched.
        let disk = Int64(40 * blockSize)
        let onDisk = Locked<Int64>(0)
        let cache = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize, minimumFree: Int64(20 * blockSize),
                                   freeSpace: { disk - onDisk.withLock { $0 } })
        let fetches = Locked(0)
        func fill(_ id: String, blocks: Int) throws {
            let content = CoreHarness.pattern(blocks * blockSize, seed: UInt64(id.utf8.first!))
            let handle = try cache.open(ContentKey(fileID: id, version: "v1"), size: Int64(content.count))
            // The bytes are on disk as they arrive: before the cache marks them present.
            let fetch: BlockCache.Fetcher = { offset, length, sink in
                onDisk.withLock { $0 += length }
                return try self.fetcher(content, count: fetches)(offset, length, sink)
            }
            try cache.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetch)
            cache.release(handle)
        }
        cache.setKept(["kept"])
        try fill("kept", blocks: 12)
        try fill("a", blocks: 6)
        XCTAssertEqual(cache.bytesUsed, Int64(18 * blockSize), "22 blocks free: nothing to evict")
        try fill("b", blocks: 6)
        // 16 free: 4 blocks more are wanted, and only unkept content may give them.
        XCTAssertEqual(cache.keptBytes, Int64(12 * blockSize))
        let used = cache.bytesUsed
        XCTAssertLessThanOrEqual(used, Int64(20 * blockSize), "evicted below the cap (1 GiB) for free space")
        XCTAssertGreaterThanOrEqual(used, Int64(12 * blockSize))
        XCTAssertGreaterThan(cache.counterValues.blocksEvicted, 0)
        // Asked for more free than unkept content can give: all of it goes, the kept stays whole.
        try fill("c", blocks: 10)
        try fill("d", blocks: 10)
        XCTAssertEqual(cache.keptBytes, Int64(12 * blockSize))
        let key = ContentKey(fileID: "kept", version: "v1")
        XCTAssertEqual(cache.presentBytes(key, size: Int64(12 * blockSize)), Int64(12 * blockSize))
    }

    func testBlocksArePersistedByTheIndexNotByClosing() throws {
        let content = CoreHarness.pattern(5 * blockSize + 100, seed: 4)
        let key = ContentKey(fileID: "f1", version: "v1", revision: "r1")
        let fetches = Locked(0)
        do {
            let cache = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
            let handle = try cache.open(key, size: Int64(content.count))
            try cache.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetcher(content, count: fetches))
            cache.release(handle)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("index.json").path),
                           "closing a file writes nothing")
            cache.flush()
        }
        let again = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        let handle = try again.open(key, size: Int64(content.count))
        XCTAssertTrue(again.isPresent(handle, offset: 0, length: content.count))
        XCTAssertEqual(read(handle, 0, content.count), content)
        again.release(handle)
        XCTAssertEqual(fetches.withLock { $0 }, 1)
    }

    /// The crash order's first step failing: blocks whose data file could not be made durable
    /// (fdatasync failed) are not listed by the index written after it, so a crash cannot make
    /// them read back as zeros; the next flush whose sync works lists them. (Before, the failure
    /// was ignored and the index listed them.)
    func testBlocksWhoseDataCouldNotBeSyncedAreLeftOutOfTheIndex() throws {
        let content = CoreHarness.pattern(3 * blockSize, seed: 9)
        let lost = ContentKey(fileID: "f9", version: "v1"), kept = ContentKey(fileID: "f10", version: "v1")
        let fetches = Locked(0)
        let syncWorks = Locked(false)
        do {
            let cache = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize,
                                       syncData: { _ in syncWorks.withLock { $0 } })
            for key in [lost, kept] {
                let handle = try cache.open(key, size: Int64(content.count))
                try cache.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetcher(content, count: fetches))
                cache.release(handle)
                cache.flush()
                // The disk recovers before the second file: the next flush lists both.
                syncWorks.withLock { $0 = true }
            }
            // A crash after a flush whose sync failed would have found `lost` listed; here the second
            // flush (sync working) lists it again, with `kept`.
        }
        let again = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        for key in [lost, kept] {
            let handle = try again.open(key, size: Int64(content.count))
            XCTAssertTrue(again.isPresent(handle, offset: 0, length: content.count), "\(key) listed once its sync worked")
            XCTAssertEqual(read(handle, 0, content.count), content)
            again.release(handle)
        }
        XCTAssertEqual(fetches.withLock { $0 }, 2)
    }

    func testAnIndexWrittenAfterAFailedSyncDoesNotListThoseBlocks() throws {
        let content = CoreHarness.pattern(3 * blockSize, seed: 11)
        let key = ContentKey(fileID: "f11", version: "v1")
        let fetches = Locked(0)
        do {
            let cache = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize, syncData: { _ in false })
            let handle = try cache.open(key, size: Int64(content.count))
            try cache.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetcher(content, count: fetches))
            cache.release(handle)
            cache.flush()
            // A crash now: the disk may not hold those bytes.
        }
        let again = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        let handle = try again.open(key, size: Int64(content.count))
        XCTAssertFalse(again.isPresent(handle, offset: 0, length: blockSize), "listed though never made durable")
        try again.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetcher(content, count: fetches))
        XCTAssertEqual(read(handle, 0, content.count), content)
        again.release(handle)
        XCTAssertEqual(fetches.withLock { $0 }, 2, "fetched again")
    }

    func testUnflushedBlocksAreFetchedAgainNeverServedBlank() throws {
        let content = CoreHarness.pattern(3 * blockSize, seed: 5)
        let key = ContentKey(fileID: "f2", version: "v1")
        let fetches = Locked(0)
        do {
            let cache = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
            let handle = try cache.open(key, size: Int64(content.count))
            try cache.ensure(handle, offset: 0, length: blockSize, cancellation: nil, fetch: fetcher(content, count: fetches))
            cache.flush()
            try cache.ensure(handle, offset: Int64(blockSize), length: 2 * blockSize, cancellation: nil,
                             fetch: fetcher(content, count: fetches))
            // A crash now: the second fetch is not in the index.
        }
        let again = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        let handle = try again.open(key, size: Int64(content.count))
        XCTAssertTrue(again.isPresent(handle, offset: 0, length: blockSize))
        XCTAssertFalse(again.isPresent(handle, offset: Int64(blockSize), length: blockSize))
        try again.ensure(handle, offset: 0, length: content.count, cancellation: nil, fetch: fetcher(content, count: fetches))
        XCTAssertEqual(read(handle, 0, content.count), content)
        again.release(handle)
    }

    func testAnEvictedBlockIsNeverListedWhileItsHoleIsPunched() throws {
        let a = CoreHarness.pattern(4 * blockSize, seed: 6)
        let b = CoreHarness.pattern(4 * blockSize, seed: 7)
        let keyA = ContentKey(fileID: "a", version: "1")
        let keyB = ContentKey(fileID: "b", version: "1")
        let fetches = Locked(0)
        do {
            // Room for 6 blocks: reading b evicts 3 of a's 4 (down to 90% of the cap).
            let cache = try BlockCache(directory: directory, capacity: Int64(6 * blockSize), blockSize: blockSize)
            let ha = try cache.open(keyA, size: Int64(a.count))
            try cache.ensure(ha, offset: 0, length: a.count, cancellation: nil, fetch: fetcher(a, count: fetches))
            cache.release(ha)
            cache.flush()
            let hb = try cache.open(keyB, size: Int64(b.count))
            try cache.ensure(hb, offset: 0, length: b.count, cancellation: nil, fetch: fetcher(b, count: fetches))
            XCTAssertLessThanOrEqual(cache.bytesUsed, Int64(6 * blockSize), "some of a's blocks were evicted")
            cache.release(hb)
            // A crash now, before the next index write: the index on disk still lists all of a.
        }
        let afterCrash = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        let ha = try afterCrash.open(keyA, size: Int64(a.count))
        XCTAssertTrue(afterCrash.isPresent(ha, offset: 0, length: a.count), "the last index listed all of a")
        XCTAssertTrue(read(ha, 0, a.count) == a, "every block listed as present still holds its bytes (no hole yet)")
        afterCrash.release(ha)
    }

    func testAfterAFlushEvictedBlocksAreGoneFromTheIndexAndFetchedAgain() throws {
        let a = CoreHarness.pattern(4 * blockSize, seed: 8)
        let b = CoreHarness.pattern(4 * blockSize, seed: 9)
        let keyA = ContentKey(fileID: "a", version: "1")
        let keyB = ContentKey(fileID: "b", version: "1")
        let fetches = Locked(0)
        do {
            let cache = try BlockCache(directory: directory, capacity: Int64(5 * blockSize), blockSize: blockSize)
            let ha = try cache.open(keyA, size: Int64(a.count))
            try cache.ensure(ha, offset: 0, length: a.count, cancellation: nil, fetch: fetcher(a, count: fetches))
            cache.release(ha)
            let hb = try cache.open(keyB, size: Int64(b.count))
            try cache.ensure(hb, offset: 0, length: b.count, cancellation: nil, fetch: fetcher(b, count: fetches))
            cache.release(hb)
            cache.flush()
        }
        let again = try BlockCache(directory: directory, capacity: 1 << 30, blockSize: blockSize)
        let ha = try again.open(keyA, size: Int64(a.count))
        XCTAssertFalse(again.isPresent(ha, offset: 0, length: a.count), "evicted blocks are not listed")
        try again.ensure(ha, offset: 0, length: a.count, cancellation: nil, fetch: fetcher(a, count: fetches))
        XCTAssertEqual(read(ha, 0, a.count), a)
        again.release(ha)
        let hb = try again.open(keyB, size: Int64(b.count))
        XCTAssertEqual(read(hb, 0, b.count), b)
        again.release(hb)
    }
}
