import DriveClient
import DriveFSCore
import DriveSupport
import XCTest

/// The node table through the filesystem: lookup counts, readdir budgets, TTLs, and what the
/// change feed does to names, places and the kernel's caches.
final class MetadataTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    func testLookupCountsFollowLibfuseRules() throws {
        harness = try CoreHarness()
        harness.backend.addFile("a.txt", content: [1])
        try harness.mount()
        let a = try harness.lookup(.root, "a.txt").inode
        _ = try harness.lookup(.root, "a.txt")
        XCTAssertEqual(harness.fs.lookupCount(of: a), 2)
        harness.fs.forget(a, count: 2)
        XCTAssertEqual(harness.fs.lookupCount(of: a), 0)
        XCTAssertThrowsError(try harness.lookup(.root, "missing")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
        XCTAssertThrowsError(try harness.lookup(a, "x")) { XCTAssertEqual($0 as? FilesystemError, .notADirectory) }
        XCTAssertThrowsError(try harness.lookup(.root, String(repeating: "n", count: 256))) {
            XCTAssertEqual($0 as? FilesystemError, .nameTooLong)
        }
    }

    /// readdirplus counts a lookup only for what fitted in the reply buffer.
    func testReaddirPlusCountsOnlyWhatFits() throws {
        harness = try CoreHarness()
        for i in 0..<10 { harness.backend.addFile("f\(i)", content: [UInt8(i)]) }
        try harness.mount()
        let handle = try BlockingCall.wait { harness.fs.openDirectory(.root, reply: $0) }
        let first = try harness.fs.listPlus(.root, handle: handle, after: 0, capacity: 5)
        XCTAssertEqual(first.map(\.entry.name), [".", "..", "f0", "f1", "f2"])
        for item in first.dropFirst(2) { XCTAssertEqual(harness.fs.lookupCount(of: item.entry.inode), 1, item.entry.name) }
        let f3 = try harness.lookup(.root, "f3").inode
        XCTAssertEqual(harness.fs.lookupCount(of: f3), 1, "f3 did not fit: only this lookup counted it")
        let rest = try harness.fs.listPlus(.root, handle: handle, after: first.last!.entry.nextOffset)
        XCTAssertEqual(rest.map(\.entry.name), (3..<10).map { "f\($0)" })
        harness.fs.releaseDirectory(.root, handle: handle)
    }

    func testListingsExpireAfterTheTTL() throws {
        let clock = ManualTimeSource()
        harness = try CoreHarness(time: clock) { $0.directoryCacheTTL = 300 }
        harness.backend.addFile("a", content: [1])
        try harness.mount()
        _ = try harness.listPlus(.root)
        harness.backend.resetCounters()
        _ = try harness.listPlus(.root)
        clock.advance(299)
        _ = try harness.lookup(.root, "a")
        XCTAssertEqual(harness.backend.totalRequests, 0, "within the TTL: from the cache")
        clock.advance(2)
        _ = try harness.lookup(.root, "a")
        XCTAssertEqual(harness.backend.requests["files.list"], 1, "after the TTL: listed again")
    }

    func testChangesMoveRenameAndRemoveEntriesAndTellTheKernel() throws {
        harness = try CoreHarness()
        let folder = harness.backend.addFolder("folder")
        let other = harness.backend.addFolder("other")
        let file = harness.backend.addFile("doc.txt", in: folder, content: [1, 2, 3])
        let gone = harness.backend.addFile("gone.txt", content: [9])
        try harness.mount()
        _ = try harness.walk()
        let inode = try harness.resolve("folder/doc.txt").inode
        harness.backend.resetCounters()

        harness.backend.rename(file, to: "renamed.txt")
        try harness.fs.pollChanges()
        XCTAssertThrowsError(try harness.resolve("folder/doc.txt"))
        XCTAssertEqual(try harness.resolve("folder/renamed.txt").inode, inode, "same inode after a rename")

        harness.backend.moveFile(file, to: other)
        try harness.fs.pollChanges()
        XCTAssertEqual(try harness.resolve("other/renamed.txt").inode, inode, "same inode after a move")
        XCTAssertThrowsError(try harness.resolve("folder/renamed.txt"))

        harness.backend.trashFile(gone)
        try harness.fs.pollChanges()
        XCTAssertThrowsError(try harness.resolve("gone.txt")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }

        let created = harness.backend.addFile("new.txt", in: other, content: [7])
        _ = created
        try harness.fs.pollChanges()
        XCTAssertEqual(try harness.resolve("other/new.txt").size, 1)
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, "the feed alone kept the listings current")

        // The notification thread delivers asynchronously: wait (bounded) for the expected names.
        let deadline = Date().addingTimeInterval(30)
        let expected: Set<String> = ["doc.txt", "renamed.txt", "gone.txt", "new.txt"]
        while !expected.isSubset(of: Set(harness.notifier.entryNames)) && Date() < deadline { usleep(5_000) }
        XCTAssertTrue(expected.isSubset(of: Set(harness.notifier.entryNames)), "\(harness.notifier.entryNames)")
    }

    func testStatisticsComeFromTheQuota() throws {
        harness = try CoreHarness()
        try harness.mount()
        let stats = try BlockingCall.wait { harness.fs.statistics(reply: $0) }
        XCTAssertEqual(stats.blockSize * stats.totalBlocks, 15 << 30)
        XCTAssertEqual(stats.blockSize * stats.freeBlocks, 14 << 30)
        XCTAssertEqual(stats.maximumNameLength, 255)
        _ = try BlockingCall.wait { harness.fs.statistics(reply: $0) }
        XCTAssertEqual(harness.backend.requests["about.get"], 1, "cached for a minute")
    }

    func testUnexportableWorkspaceFilesAreListedButCannotBeOpened() throws {
        harness = try CoreHarness()
        harness.backend.addDocument("Survey", text: "", mimeType: "application/vnd.google-apps.form")
        harness.backend.addDocument("Sheet", text: "a,b", mimeType: "application/vnd.google-apps.spreadsheet")
        try harness.mount()
        let form = try harness.resolve("Survey")
        XCTAssertEqual(form.kind, .regular)
        XCTAssertEqual(form.size, 0)
        XCTAssertThrowsError(try BlockingCall.wait { harness.fs.open(form.inode, flags: O_RDONLY, reply: $0) }) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, EOPNOTSUPP)
        }
        XCTAssertNoThrow(try harness.resolve("Sheet.xlsx"), "a Sheet shows as .xlsx by default")
    }
}

extension MetadataTests {
    func testTwoMountsCannotShareACacheDirectory() throws {
        harness = try CoreHarness()
        try harness.mount()
        let root = try harness.backend.getFile("root")
        XCTAssertThrowsError(try DriveFilesystem(backend: harness.backend, root: root, startPageToken: "1",
                                                 configuration: harness.configuration)) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, EBUSY)
        }
        harness.unmount()
        XCTAssertNoThrow(try harness.mount(), "the lock goes with the filesystem that held it")
    }
}

extension MetadataTests {
    /// A saved change-feed position that Drive no longer takes: the feed starts afresh and every
    /// folder is listed again when next used, so nothing changed in between is missed.
    func testARefusedChangeTokenStartsTheFeedAgainAndRelists() throws {
        harness = try CoreHarness()
        harness.backend.addFile("a", content: [1])
        try harness.mount()
        XCTAssertEqual(try harness.listPlus(.root).count, 3)
        harness.unmount()
        harness.backend.forgetChangeLog()
        harness.backend.addFile("b", content: [2])
        harness.backend.resetCounters()
        try harness.mount()  // restores the index, whose token the backend now refuses
        XCTAssertEqual(harness.backend.requests["changes.getStartPageToken"] ?? 0, 2, "the mount's, and the fresh start")
        let names = try harness.listPlus(.root).map(\.entry.name)
        XCTAssertTrue(names.contains("b"), "\(names)")
    }
}
