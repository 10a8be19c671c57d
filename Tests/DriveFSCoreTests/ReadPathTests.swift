import DriveClient
import DriveFSCore
import DriveSupport
import XCTest

/// Reads through the block cache: bytes, ranges, version changes, random-read economy, read-ahead,
/// shared fetches, exports, shortcuts, and a stalled backend that must not stop cached answers.
final class ReadPathTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    func testWholeFileAndRangesMatchTheSource() throws {
        harness = try CoreHarness()
        let content = CoreHarness.pattern(3 * 1024 * 1024 + 123, seed: 7)
        harness.backend.addFile("big.bin", content: content)
        try harness.mount()
        let inode = try harness.resolve("big.bin").inode
        XCTAssertEqual(try harness.read(inode), content)
        XCTAssertEqual(try harness.read(inode, offset: 1_000_000, size: 4096), Array(content[1_000_000..<1_004_096]))
        XCTAssertEqual(try harness.read(inode, offset: Int64(content.count) - 10, size: 100), Array(content.suffix(10)))
        XCTAssertEqual(try harness.read(inode, offset: Int64(content.count) + 5, size: 100), [])
    }

    /// Each miss fetches its block, not megabytes around it (with the background fill of a file
    /// read at random off: `RandomReadFillTests` covers it).
    func testRandomSmallReadsFetchBlocksNotMegabytes() throws {
        harness = try CoreHarness { $0.randomReadFillLimit = 0 }
        let size = 64 * 1024 * 1024
        harness.backend.addFile("random.bin", content: CoreHarness.pattern(size, seed: 11))
        try harness.mount()
        let inode = try harness.resolve("random.bin").inode
        let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        var generator = SplitMix64(seed: 99)
        for _ in 0..<200 {
            let offset = Int64(generator.next() % UInt64(size - 4096)) & ~4095
            let bytes = try harness.read(inode, handle: opened.handle, offset: offset, size: 4096)
            XCTAssertEqual(bytes.count, 4096)
        }
        harness.fs.release(inode, handle: opened.handle)
        // At most one 128 KiB block per read (fewer when two reads share a block).
        XCTAssertLessThanOrEqual(harness.backend.downloadedBytes, 200 * 128 * 1024)
    }

    func testSequentialReadsReadAheadInParallelStreams() throws {
        harness = try CoreHarness()
        let content = CoreHarness.pattern(24 * 1024 * 1024, seed: 3)
        harness.backend.addFile("seq.bin", content: content)
        try harness.mount()
        let inode = try harness.resolve("seq.bin").inode
        XCTAssertEqual(try harness.read(inode), content)
        let media = harness.backend.requests["revisions.get.media"] ?? 0
        XCTAssertGreaterThan(media, 1, "read-ahead splits the file into range streams")
        XCTAssertLessThanOrEqual(harness.backend.downloadedBytes, Int64(content.count), "no byte fetched twice")
    }

    /// A cold sequential read takes few range requests: read-ahead pieces grow with the window (a
    /// quarter of it, up to 64 MiB), where fixed 4 MiB pieces in a 32 MiB window cost one request every
    /// 4 MiB (27 here before; 15 now, most of them the window's ramp).
    func testASequentialReadTakesFewGrowingRangeRequests() throws {
        harness = try CoreHarness()
        let content = CoreHarness.pattern(96 << 20, seed: 8)
        harness.backend.addFile("long.bin", content: content)
        try harness.mount()
        let inode = try harness.resolve("long.bin").inode
        XCTAssertEqual(try harness.read(inode), content)
        let media = harness.backend.requests["revisions.get.media"] ?? 0
        print("sequential read of 96 MiB: \(media) range requests")
        XCTAssertLessThanOrEqual(media, 16, "range requests for 96 MiB")
        XCTAssertLessThanOrEqual(harness.backend.downloadedBytes, Int64(content.count), "no byte fetched twice")
    }

    func testConcurrentReadersShareOneFetch() throws {
        harness = try CoreHarness()
        let content = CoreHarness.pattern(8 * 1024 * 1024, seed: 5)
        harness.backend.addFile("shared.bin", content: content)
        try harness.mount()
        let inode = try harness.resolve("shared.bin").inode
        let results = Locked<[[UInt8]]>([])
        nonisolated(unsafe) let harness = self.harness!
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let bytes = (try? harness.read(inode)) ?? []
            results.withLock { $0.append(bytes) }
        }
        for bytes in results.withLock({ $0 }) { XCTAssertEqual(bytes, content) }
        XCTAssertLessThanOrEqual(harness.backend.downloadedBytes, Int64(content.count), "each byte downloaded once")
    }

    func testANewVersionIsNeverServedFromTheOldBlocks() throws {
        harness = try CoreHarness()
        let id = harness.backend.addFile("changing.txt", content: Array("version one\n".utf8))
        try harness.mount()
        let inode = try harness.resolve("changing.txt").inode
        XCTAssertEqual(try harness.read(inode), Array("version one\n".utf8))
        harness.backend.replaceContent(id, with: Array("version two, longer\n".utf8))
        try harness.fs.pollChanges()
        XCTAssertTrue(harness.notifier.inodeList.contains(inode), "the kernel is told to drop its pages")
        XCTAssertEqual(try BlockingCall.wait { harness.fs.attributes(of: inode, reply: $0) }.size, 20)
        XCTAssertEqual(try harness.read(inode), Array("version two, longer\n".utf8))
        XCTAssertEqual(try harness.resolve("changing.txt").inode, inode, "the inode stays")
    }

    func testBlocksSurviveARemountAndEvictionKeepsTheCap() throws {
        harness = try CoreHarness { $0.cacheSize = 2 * 1024 * 1024 }
        let a = CoreHarness.pattern(1536 * 1024, seed: 1)
        let b = CoreHarness.pattern(1536 * 1024, seed: 2)
        harness.backend.addFile("a.bin", content: a)
        harness.backend.addFile("b.bin", content: b)
        try harness.mount()
        XCTAssertEqual(try harness.read(try harness.resolve("a.bin").inode), a)
        XCTAssertEqual(try harness.read(try harness.resolve("b.bin").inode), b)
        XCTAssertLessThanOrEqual(harness.fs.cachedBytes, 2 * 1024 * 1024, "closed content is evicted down to the cap")
        harness.unmount()

        harness.backend.resetCounters()
        try harness.mount()
        let again = try harness.read(try harness.resolve("b.bin").inode)
        XCTAssertEqual(again, b)
        XCTAssertLessThan(harness.backend.downloadedBytes, Int64(b.count), "what was cached before the remount is not fetched again")
    }

    func testDocumentsAreExportedWholeOnOpen() throws {
        harness = try CoreHarness()
        harness.backend.addDocument("Plan", text: "the plan\n")
        try harness.mount()
        let doc = try harness.resolve("Plan.docx")
        XCTAssertEqual(doc.size, 0, "Drive reports no size before the export")
        let opened = try BlockingCall.wait { harness.fs.open(doc.inode, flags: O_RDONLY, reply: $0) }
        XCTAssertTrue(opened.directIO, "read past the size the kernel was shown")
        let bytes = try harness.read(doc.inode, handle: opened.handle, offset: 0, size: 1 << 20)
        harness.fs.release(doc.inode, handle: opened.handle)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "export as application/vnd.openxmlformats-officedocument.wordprocessingml.document\nthe plan\n")
        XCTAssertEqual(try BlockingCall.wait { harness.fs.attributes(of: doc.inode, reply: $0) }.size, UInt64(bytes.count))
    }

    func testShortcutsAreRelativeLinksAndDanglingOnesDangle() throws {
        harness = try CoreHarness()
        let folder = harness.backend.addFolder("projects")
        let target = harness.backend.addFile("plan.txt", in: folder, content: Array("x".utf8))
        let elsewhere = harness.backend.addFolder("links")
        harness.backend.addShortcut("to plan", in: elsewhere, to: target)
        harness.backend.addShortcut("to nothing", to: "no-such-id")
        try harness.mount()
        let link = try harness.resolve("links/to plan")
        XCTAssertEqual(link.kind, .symbolicLink)
        XCTAssertEqual(try BlockingCall.wait { harness.fs.readLink(link.inode, reply: $0) }, "../projects/plan.txt")
        let dangling = try harness.resolve("to nothing")
        let path = try BlockingCall.wait { harness.fs.readLink(dangling.inode, reply: $0) }
        XCTAssertThrowsError(try harness.resolve(path)) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
    }

    /// With every network read stuck, what is cached still answers at once, on the caller's thread.
    func testAStalledBackendDoesNotFreezeCachedOperations() throws {
        harness = try CoreHarness()
        for i in 0..<16 { harness.backend.addFile("slow\(i).bin", content: CoreHarness.pattern(300_000, seed: UInt64(i))) }
        harness.backend.addFile("cached.txt", content: Array("here".utf8))
        try harness.mount()
        XCTAssertEqual(try harness.listPlus(.root).count, 2 + 17)
        let cached = try harness.resolve("cached.txt").inode
        let gate = DispatchSemaphore(value: 0)
        harness.backend.downloadGate = gate
        var pending: [Reply<ReadData>] = []
        for i in 0..<16 {
            let inode = try harness.resolve("slow\(i).bin").inode
            let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
            let reply = Reply<ReadData> { _ in }
            harness.fs.read(inode, handle: opened.handle, offset: 0, size: 4096, reply: reply)
            pending.append(reply)
        }
        // Each of these is answered before the call returns: nothing waits on the stuck downloads.
        let lookup = Reply<FileAttributes> { _ in }
        harness.fs.lookup(parent: .root, name: "cached.txt", reply: lookup)
        XCTAssertTrue(lookup.isAnswered)
        let attributes = Reply<FileAttributes> { _ in }
        harness.fs.attributes(of: cached, reply: attributes)
        XCTAssertTrue(attributes.isAnswered)
        let handle = try BlockingCall.wait { harness.fs.openDirectory(.root, reply: $0) }
        let buffer = CollectingDirectoryBuffer()
        let listing = Reply<Void> { _ in }
        harness.fs.readDirectory(.root, handle: handle, after: 0, plus: true, into: buffer, reply: listing)
        XCTAssertTrue(listing.isAnswered)
        XCTAssertEqual(buffer.entries.count, 19)
        harness.fs.releaseDirectory(.root, handle: handle)
        XCTAssertTrue(pending.contains { !$0.isAnswered }, "the stalled reads are still waiting")
        gate.signal()
        let deadline = Date().addingTimeInterval(60)
        while pending.contains(where: { !$0.isAnswered }) && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(pending.contains { !$0.isAnswered })
    }

    func testAnInterruptedReadAnswersEINTR() throws {
        harness = try CoreHarness()
        harness.backend.addFile("stuck.bin", content: CoreHarness.pattern(500_000, seed: 9))
        try harness.mount()
        let inode = try harness.resolve("stuck.bin").inode
        let gate = DispatchSemaphore(value: 0)
        harness.backend.downloadGate = gate
        let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
        let first = Reply<ReadData> { _ in }
        harness.fs.read(inode, handle: opened.handle, offset: 0, size: 4096, reply: first)
        // The first read is inside its download (held at the gate) before the second one comes:
        // otherwise the second could run first on the I/O threads and be the one fetching, and a
        // fetch held at the gate does not end on an interrupt (the test's own race, not the core's).
        let media = { let r = self.harness.backend.requests; return (r["files.get.media"] ?? 0) + (r["revisions.get.media"] ?? 0) }
        let started = Date().addingTimeInterval(30)
        while media() == 0 && Date() < started { usleep(2_000) }
        XCTAssertEqual(media(), 1, "the first read's fetch must have started")
        // A second reader of the same block waits for the first one's fetch; its interrupt frees it.
        let flag = CancellationFlag()
        let result = Locked<Result<ReadData, FilesystemError>?>(nil)
        let second = Reply<ReadData>(cancellation: flag) { r in result.withLock { $0 = r } }
        harness.fs.read(inode, handle: opened.handle, offset: 0, size: 4096, reply: second)
        flag.cancel()
        let deadline = Date().addingTimeInterval(30)
        while result.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(result.withLock { $0 }.flatMap { try? $0.get() }, nil)
        if case .failure(let error)? = result.withLock({ $0 }) { XCTAssertEqual(error.errno, EINTR) } else { XCTFail("no EINTR") }
        gate.signal()
        let end = Date().addingTimeInterval(30)
        while !first.isAnswered && Date() < end { usleep(10_000) }
        harness.fs.release(inode, handle: opened.handle)
    }

    func testWritesAreRefusedWithEROFS() throws {
        harness = try CoreHarness()
        harness.backend.addFile("ro.txt", content: [1])
        try harness.mount()
        let inode = try harness.resolve("ro.txt").inode
        for flags in [O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC] {
            XCTAssertThrowsError(try BlockingCall.wait { harness.fs.open(inode, flags: flags, reply: $0) }) {
                XCTAssertEqual($0 as? FilesystemError, .readOnly)
            }
        }
    }
}

extension ReadPathTests {
    /// Even if the kernel never got the change notification, the first open of a new version
    /// drops the old pages, and reads past a size the kernel may still believe.
    func testANewVersionIsOpenedWithoutTheOldPages() throws {
        harness = try CoreHarness()
        let id = harness.backend.addFile("v.txt", content: Array("aaaa".utf8))
        try harness.mount()
        let inode = try harness.resolve("v.txt").inode
        func open() throws -> OpenedFile {
            let opened = try BlockingCall.wait { harness.fs.open(inode, flags: O_RDONLY, reply: $0) }
            harness.fs.release(inode, handle: opened.handle)
            return opened
        }
        var first = try open()
        XCTAssertTrue(first.keepCache)
        XCTAssertFalse(first.directIO)
        first = try open()
        XCTAssertTrue(first.keepCache, "same version: the pages stay")
        harness.backend.replaceContent(id, with: Array("bbbb".utf8))
        try harness.fs.pollChanges()
        let sameSize = try open()
        XCTAssertFalse(sameSize.keepCache, "a new version: the old pages go")
        XCTAssertFalse(sameSize.directIO)
        harness.backend.replaceContent(id, with: Array("longer content".utf8))
        try harness.fs.pollChanges()
        let grown = try open()
        XCTAssertFalse(grown.keepCache)
        XCTAssertTrue(grown.directIO, "a new size: reads must not stop at the size the kernel may still believe")
        XCTAssertTrue(try open().keepCache, "then cached again")
    }
}
