import DriveClient
import DriveFSCore
import DriveSupport
import XCTest

/// Request budgets of the read side (issue "drivefs mount, read side": numbers to reach), over the
/// in-memory backend. Request counts are deterministic, so they are asserted exactly or as bounds.
final class ListingBudgetTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    /// Root → 10 folders → 24 subfolders each → 19 files each: 250 folders, 4,820 entries.
    func testColdRecursiveListingPaysPerLevelAndWarmCostsNothing() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 10, sub: 24, files: 19)
        XCTAssertGreaterThan(entries, 4_800)
        try harness.mount()
        harness.backend.resetCounters()

        let cold = try harness.walk()
        XCTAssertEqual(cold.count, entries)
        XCTAssertEqual(cold["dir3/sub7/file5.txt"]?.size, UInt64("content 3/7/5\n".utf8.count))
        XCTAssertTrue(harness.fs.waitForPrefetch())
        let coldRequests = harness.backend.totalRequests
        XCTAssertLessThanOrEqual(coldRequests, 23, harness.backend.requestSummary)  // + files.get root + start token = 25

        let warm = try harness.walk()
        XCTAssertEqual(warm.count, entries)
        XCTAssertEqual(harness.backend.totalRequests, coldRequests, "a warm walk asks Drive nothing: \(harness.backend.requestSummary)")
    }

    func testColdStatFiveFoldersDeepCostsOneListingPerLevel() throws {
        harness = try CoreHarness()
        var parent: String? = nil
        for level in 0..<5 {
            let folder = harness.backend.addFolder("level\(level)", in: parent)
            for other in 0..<3 { harness.backend.addFolder("other\(level)-\(other)", in: parent) }
            parent = folder
        }
        harness.backend.addFile("deep.txt", in: parent, content: Array("deep".utf8))
        try harness.mount()
        harness.backend.resetCounters()

        let attributes = try harness.resolve("level0/level1/level2/level3/level4/deep.txt")
        XCTAssertEqual(attributes.size, 4)
        XCTAssertLessThanOrEqual(harness.backend.totalRequests, 6, harness.backend.requestSummary)
        let before = harness.backend.totalRequests
        _ = try harness.resolve("level0/level1/level2/level3/level4/deep.txt")
        XCTAssertEqual(harness.backend.totalRequests, before, "warm: no request")
    }

    func testRemountWithThePersistedIndexListsWithOneChangePoll() throws {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 5, sub: 10, files: 8)
        try harness.mount()
        XCTAssertEqual(try harness.walk().count, entries)
        harness.unmount()

        harness.backend.resetCounters()
        try harness.mount()
        XCTAssertEqual(try harness.walk().count, entries)
        try harness.fs.pollChanges()
        // files.get root and the start token are made by `mount` (2), then one changes.list per poll.
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
        XCTAssertLessThanOrEqual(harness.backend.totalRequests, 2 + 2, harness.backend.requestSummary)
    }

    /// Google's bug: grouped queries sometimes answer nothing. Folders that come back empty from a
    /// group are listed alone, so nothing is missing.
    func testGroupedListingBugLosesNothing() throws {
        let backend = FakeDriveBackend()
        backend.groupedQueriesAnswerNothing = true
        harness = try CoreHarness(backend: backend)
        let entries = CoreHarness.buildTree(backend, top: 4, sub: 6, files: 3)
        let empty = backend.addFolder("empty")
        _ = empty
        try harness.mount()
        let all = try harness.walk()
        XCTAssertEqual(all.count, entries + 1)
        XCTAssertNotNil(all["dir2/sub5/file2.txt"])
        XCTAssertTrue(harness.fs.waitForPrefetch())
    }

    /// More parents than Google accepts in one query: the group is split, nothing is lost.
    func testAGroupTooComplexForGoogleIsSplit() throws {
        harness = try CoreHarness { $0.listingGroupSize = 150 }
        let entries = CoreHarness.buildTree(harness.backend, top: 1, sub: 140, files: 1)
        try harness.mount()
        XCTAssertEqual(try harness.walk().count, entries)
    }
}
