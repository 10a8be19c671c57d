import DriveClient
@testable import DriveFSCore
import DriveSupport
import TestSupport
import XCTest

/// A file read at random is filled in the background (issue 16, "reads that spend quota well"):
/// after a handle's first misses, the rest of the file comes in a few large range requests at
/// background priority, so later random reads are local instead of a download (and 200 quota units)
/// each. Request counts are exact or bounded by construction; nothing is timed.
final class RandomReadFillTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    private static let size = 16 << 20
    private static let chunk: Int64 = 2 << 20

    private func mount(limit: Int64 = 1 << 30) throws -> (Inode, [UInt8]) {
        harness = try CoreHarness {
            $0.randomReadFillLimit = limit
            $0.randomReadFillChunk = Self.chunk
            $0.randomReadFillStreams = 2
            $0.randomReadFillAfter = 8
        }
        let content = CoreHarness.pattern(Self.size, seed: 21)
        harness.backend.addFile("random.bin", content: content)
        try harness.mount()
        return (try harness.resolve("random.bin").inode, content)
    }

    /// Offsets in eight blocks far apart, none next to the one before (so no read looks sequential).
    private static let scattered: [Int64] = [13, 2, 9, 5, 15, 0, 11, 7].map { Int64($0) << 20 | 12_288 }

    private func waitUntilDownloaded(_ bytes: Int64) {
        waitUntil("\(bytes) bytes downloaded, have \(harness.backend.downloadedBytes)") { harness.backend.downloadedBytes >= bytes }
    }

    func testAFileReadAtRandomIsFilledOnceInAFewRequestsAndThenReadLocally() throws {
        let (inode, content) = try mount()
        let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        for offset in Self.scattered {
            let bytes = try harness.read(inode, handle: opened.handle, offset: offset, size: 4096)
            XCTAssertEqual(bytes, Array(content[Int(offset)..<Int(offset) + 4096]))
        }
        // The eighth miss started the fill: the whole file arrives, each byte once.
        waitUntilDownloaded(Int64(Self.size))
        XCTAssertEqual(harness.backend.downloadedBytes, Int64(Self.size), "every byte downloaded exactly once")
        let requests = harness.backend.requests["revisions.get.media"] ?? 0
        // 8 misses, 8 chunks, and at most one more run per miss that split a chunk.
        XCTAssertLessThanOrEqual(requests, 8 + Self.size / Int(Self.chunk) + 8)

        var generator = SplitMix64(seed: 5)
        for _ in 0..<300 {
            let offset = Int64(generator.next() % UInt64(Self.size - 4096))
            let bytes = try harness.read(inode, handle: opened.handle, offset: offset, size: 4096)
            XCTAssertEqual(bytes, Array(content[Int(offset)..<Int(offset) + 4096]))
        }
        XCTAssertEqual(harness.backend.requests["revisions.get.media"] ?? 0, requests, "300 random reads after the fill: no download")
        harness.fs.release(inode, handle: opened.handle)
    }

    func testFewMissesAFileTooLargeOrASequentialReaderStartNoFill() throws {
        // Seven misses: below the threshold.
        var (inode, _) = try mount()
        var opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        for offset in Self.scattered.prefix(7) { _ = try harness.read(inode, handle: opened.handle, offset: offset, size: 4096) }
        harness.fs.release(inode, handle: opened.handle)
        XCTAssertEqual(harness.backend.requests["revisions.get.media"] ?? 0, 7)
        XCTAssertEqual(harness.backend.downloadedBytes, 7 * 128 << 10, "one block a miss")

        // Larger than the limit: misses fetch their blocks only.
        (inode, _) = try mount(limit: Int64(Self.size) - 1)
        opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        for offset in Self.scattered + Self.scattered.map({ $0 + 300_000 }) {
            _ = try harness.read(inode, handle: opened.handle, offset: offset, size: 4096)
        }
        harness.fs.release(inode, handle: opened.handle)
        XCTAssertEqual(harness.backend.requests["revisions.get.media"] ?? 0, 16)
        XCTAssertEqual(harness.backend.downloadedBytes, 16 * 128 << 10)
    }
}
