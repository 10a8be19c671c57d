import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// `--cache-min-free` as a floor for writers (issue 18): a write that grows a file so far that the
/// cache disk would keep less than the floor first evicts cached content that may go (least
/// recently used, never pinned), and gets ENOSPC when even that leaves too little, instead of
/// filling the disk. The disk's free space is a value the test sets (no real full disk).
final class CacheFloorTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private let floor: Int64 = 8 << 20
    private let free = Locked<Int64>(0)

    override func setUpWithError() throws {
        let free = self.free
        free.withLock { $0 = floor + (4 << 20) }
        harness = try CoreHarness { c in
            c.readOnly = false
            c.blockSize = 64 << 10
            c.cacheMinimumFree = self.floor
            c.cacheFreeSpace = { free.withLock { $0 } }
        }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    func testAWriteBelowTheFloorEvictsWhatMayGoThenGetsENOSPC() throws {
        let cachedContent = CoreHarness.pattern(512 << 10, seed: 5)
        fake.addFile("cached.bin", content: cachedContent)
        try harness.mount()
        let cached = try harness.lookup(.root, "cached.bin").inode
        XCTAssertEqual(try harness.read(cached), cachedContent)
        XCTAssertEqual(harness.fs.cache.bytesUsed, 512 << 10)

        let created = try harness.create(.root, "new.bin")
        let inode = created.attributes.inode
        let handle = created.opened.handle
        let piece = CoreHarness.pattern(256 << 10, seed: 6)
        // 1 MiB above the floor: a 256 KiB write fits, nothing is evicted.
        free.withLock { $0 = floor + (1 << 20) }
        XCTAssertEqual(try harness.write(inode, handle, piece, at: 0), piece.count)
        XCTAssertEqual(harness.fs.cache.bytesUsed, 512 << 10)
        // 100 KiB above it: the next 256 KiB fit once cached blocks are evicted.
        free.withLock { $0 = floor + (100 << 10) }
        XCTAssertEqual(try harness.write(inode, handle, piece, at: Int64(piece.count)), piece.count)
        XCTAssertLessThan(harness.fs.cache.bytesUsed, 512 << 10, "cached content went first")
        // Nothing left that may go: 1 MiB more would take the disk below the floor.
        XCTAssertThrowsError(try harness.write(inode, handle, CoreHarness.pattern(1 << 20, seed: 7), at: Int64(2 * piece.count))) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, ENOSPC)
        }
        // An overwrite inside the file takes no more of the disk: it is not refused.
        XCTAssertEqual(try harness.write(inode, handle, Array(piece.prefix(1000)), at: 0), 1000)
        try harness.close(inode, handle)
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60))
        let onDrive = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "new.bin" })
        XCTAssertTrue(fake.content(of: onDrive.id) == piece + piece, "what was accepted is kept and uploaded")
    }
}
