@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Folders idle long enough are shed (NodeTable+Shedding.swift): the kernel is asked to drop the
/// entries of their files, and the forgets it then sends pack the folders again
/// (NodeTable+Repack.swift). A folder used, open, with a file open or a write pending is left
/// alone; folders' own entries are never asked for; the work of one call is bounded.
final class IdleSheddingTests: XCTestCase {
    private var harness: CoreHarness!
    private let clock = ManualTimeSource()
    private static let idle = 60.0

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    private var table: NodeTable { harness.fs.table }
    private var materialized: Int { table.withState { $0.materializedFolders } }
    private var nodes: Int { table.withState { $0.nodes.count } }

    /// Root → 4 folders → 5 subfolders each → 6 files each (the shedder's thread off: the test
    /// sheds by hand, with the clock it advances).
    private func mountTree(readOnly: Bool = true) throws -> Int {
        harness = try CoreHarness(time: clock) {
            $0.releaseIdleAfter = 0
            $0.readOnly = readOnly
        }
        let entries = CoreHarness.buildTree(harness.backend, top: 4, sub: 5, files: 6)
        try harness.mount()
        return entries
    }

    /// What the kernel does with an entry it was told to drop and nobody uses: the dentry goes,
    /// the inode is evicted, and the forget of every lookup it held arrives.
    private func kernelDrops(_ entries: [(parent: Inode, name: String)]) {
        for entry in entries {
            guard let child = table.withState({ $0.nodes[entry.parent]?.listing?.children[entry.name] }) else { continue }
            let count = harness.fs.lookupCount(of: child)
            if count > 0 { harness.fs.forget(child, count: count) }
        }
    }

    private func folder(_ walked: [String: FileAttributes], _ path: String) -> Inode { walked[path]!.inode }

    func testAWalkLeftIdleIsShedAndItsFilesPackedOnceTheKernelForgetsThem() throws {
        let entries = try mountTree()
        let walked = try harness.walk()
        XCTAssertEqual(walked.count, entries)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        XCTAssertEqual(materialized, 25)

        clock.advance(Self.idle - 1)
        XCTAssertEqual(harness.fs.shedIdleFolders(idleFor: Self.idle), 0, "nothing idle long enough yet")
        XCTAssertTrue(harness.notifier.entryList.isEmpty)

        clock.advance(2)
        XCTAssertEqual(harness.fs.shedIdleFolders(idleFor: Self.idle), 25)
        let asked = harness.notifier.entryList
        XCTAssertEqual(asked.count, 20 * 6, "every file's entry, no folder's")
        XCTAssertTrue(asked.allSatisfy { $0.name.hasPrefix("file") }, "\(asked.map(\.name))")
        XCTAssertEqual(Set(asked.map(\.parent)), Set(walked.filter { $0.key.contains("/sub") && $0.value.kind == .directory }.map(\.value.inode)))

        kernelDrops(asked)
        XCTAssertEqual(materialized, 1 + 4, "the 20 folders of files are packed; those holding held folders stay")
        XCTAssertEqual(nodes, 1 + 4 + 20, "a node per folder, none per file")
        XCTAssertEqual(harness.fs.knownItems, 1 + entries, "nothing is lost from the index")

        // Shed once: without a use since, nothing more is asked.
        clock.advance(Self.idle * 2)
        XCTAssertEqual(harness.fs.shedIdleFolders(idleFor: Self.idle), 0)
        XCTAssertEqual(harness.notifier.entryList.count, asked.count)

        // The next walk finds the same inodes, and nothing is asked of Drive.
        harness.backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again.mapValues(\.inode), walked.mapValues(\.inode))
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)
        // Used again, shed again once idle.
        clock.advance(Self.idle + 1)
        XCTAssertEqual(harness.fs.shedIdleFolders(idleFor: Self.idle), 25)
        XCTAssertEqual(harness.notifier.entryList.count, 2 * asked.count)
    }

    func testAFolderUsedOpenOrWithAFileOpenIsLeftAloneUntilIdleAgain() throws {
        _ = try mountTree()
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        clock.advance(Self.idle + 1)

        let looked = folder(walked, "dir0/sub0")
        _ = try harness.lookup(looked, "file1.txt")
        let file = walked["dir1/sub1/file0.txt"]!.inode
        let opened = try BlockingCall.wait { harness.fs.open(file, flags: O_RDONLY, reply: $0) }
        let listed = folder(walked, "dir2/sub2")
        let directory = try BlockingCall.wait { harness.fs.openDirectory(listed, reply: $0) }
        clock.advance(Self.idle + 1)
        _ = try harness.lookup(looked, "file2.txt")

        let shedCount = harness.fs.shedIdleFolders(idleFor: Self.idle)
        let parents = Set(harness.notifier.entryList.map(\.parent))
        XCTAssertEqual(shedCount, 25 - 4, "dir0/sub0, dir1/sub1, dir2/sub2 and dir2 (a folder open in it) are left")
        XCTAssertFalse(parents.contains(looked), "a lookup in it just now")
        XCTAssertFalse(parents.contains(folder(walked, "dir1/sub1")), "a file open in it")
        XCTAssertFalse(parents.contains(listed), "open itself")
        XCTAssertEqual(parents.count, 20 - 3)

        // Closed, the folders are looked at again once idle; the one still used is not.
        harness.fs.release(file, handle: opened.handle)
        harness.fs.releaseDirectory(listed, handle: directory)
        clock.advance(Self.idle / 2)
        _ = try harness.lookup(looked, "file3.txt")
        clock.advance(Self.idle / 2 + 1)
        let before = harness.notifier.entryList.count
        XCTAssertEqual(harness.fs.shedIdleFolders(idleFor: Self.idle), 3, "dir1/sub1, dir2/sub2 and dir2")
        let later = Set(harness.notifier.entryList.dropFirst(before).map(\.parent))
        XCTAssertEqual(later, [folder(walked, "dir1/sub1"), listed])
    }

    /// A file written here and not on Drive yet keeps its folder unshed; once its upload landed,
    /// the folder is shed at the next idle spell.
    func testAWritePendingKeepsItsFolderUntilItsUploadLanded() throws {
        harness = try CoreHarness(time: clock) {
            $0.releaseIdleAfter = 0
            $0.readOnly = false
        }
        CoreHarness.buildTree(harness.backend, top: 4, sub: 5, files: 6)
        let held = HeldUploadQueue(try UploadQueue(directory: harness.uploadsDirectory, backend: harness.backend, transfers: 1))
        try harness.mount(uploads: held)
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        let written = folder(walked, "dir3/sub4")
        let inode = walked["dir3/sub4/file5.txt"]!.inode
        try harness.rewrite(inode, Array("changed here\n".utf8))
        clock.advance(Self.idle + 1)

        harness.fs.shedIdleFolders(idleFor: Self.idle)
        XCTAssertFalse(harness.notifier.entryList.contains { $0.parent == written }, "a write not on Drive yet")
        XCTAssertTrue(harness.notifier.entryList.contains { $0.parent == folder(walked, "dir3/sub3") })

        held.release()
        let deadline = Date().addingTimeInterval(60)
        while !(harness.fs.uploadStatus.isIdle && table.node(inode)?.local == nil) && Date() < deadline { usleep(2_000) }
        XCTAssertNil(table.node(inode)?.local, "the upload did not land in time")
        clock.advance(Self.idle + 1)
        harness.fs.shedIdleFolders(idleFor: Self.idle)
        XCTAssertTrue(harness.notifier.entryList.contains { $0.parent == written }, "its upload landed")
    }

    /// One call looks at a bounded number of folders and children; the rest is shed by later calls.
    func testOneCallIsBounded() throws {
        _ = try mountTree()
        _ = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        clock.advance(Self.idle + 1)
        let first = table.shedIdleFolders(idleFor: Self.idle, budget: 10)
        XCTAssertGreaterThan(first.folders, 0)
        XCTAssertLessThanOrEqual(first.invalidations.entries.count, 6 * 2, "10 folders and children: at most two folders of 6 files")
        var total = first.folders
        for _ in 0..<100 {
            let next = table.shedIdleFolders(idleFor: Self.idle, budget: 10).folders
            if next == 0 { break }
            total += next
        }
        XCTAssertEqual(total, 25)
    }
}
