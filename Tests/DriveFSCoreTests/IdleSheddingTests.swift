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

    /// Forgets every lookup the kernel holds on `walked`, deepest paths first (a child's dentry pins
    /// its parent's).
    private func forget(_ walked: [String: FileAttributes]) {
        let order = walked.keys.sorted { a, b in
            let da = a.split(separator: "/").count, db = b.split(separator: "/").count
            return da != db ? da > db : a < b
        }
        for path in order {
            let count = harness.fs.lookupCount(of: walked[path]!.inode)
            if count > 0 { harness.fs.forget(walked[path]!.inode, count: count) }
        }
    }

    /// The mount left idle: shed, and the kernel drops what it was asked to (the files' entries).
    private func idleAndShed() {
        clock.advance(Self.idle + 1)
        let before = harness.notifier.entryList.count
        harness.fs.shedIdleFolders(idleFor: Self.idle)
        kernelDrops(Array(harness.notifier.entryList.dropFirst(before)))
    }

    /// The Drive ID of the item at `path`, from the fake (the table holds most of them packed).
    private func driveID(_ path: String) throws -> String {
        var current = harness.backend.rootID
        for part in path.split(separator: "/").map(String.init) {
            current = try XCTUnwrap(harness.backend.allFiles.first { $0.name == part && $0.parents.first == current }?.id, path)
        }
        return current
    }

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
        XCTAssertEqual(materialized, 0, "every folder is packed, those holding folders the kernel holds too")
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

    /// The kernel keeps the folders' entries (the shedder never asks for them): a folder whose
    /// subfolders it holds is packed all the same, its held subfolders kept as nodes under the
    /// packed listing (their inode numbers are in it), so a walk goes back to no listing at all and
    /// a node per folder; a lookup of a kept folder is answered without materializing its parent;
    /// a kept folder the kernel forgets goes too.
    func testFoldersTheKernelStillHoldsDoNotKeepTheirParentsMaterialized() throws {
        let entries = try mountTree()
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        XCTAssertEqual(materialized, 1 + 4 + 20)
        // Forgotten before it was shed (the kernel's own eviction of the files): the folders holding
        // folders wait until they are idle.
        forget(walked.filter { $0.value.kind != .directory })
        XCTAssertEqual(materialized, 1 + 4, "in use still: a folder is not packed for its held subfolders")

        idleAndShed()
        XCTAssertEqual(materialized, 0, "every folder is packed, those holding folders the kernel holds too")
        XCTAssertEqual(nodes, 1 + 4 + 20, "a node per folder the kernel holds, none per file")
        XCTAssertEqual(table.packedSummary.items, entries)
        XCTAssertEqual(harness.fs.knownItems, 1 + entries, "a kept folder is counted once (a packed entry and a node)")
        XCTAssertEqual(try XCTUnwrap(harness.fs.status().index).materializedFolders, 0)

        // The kernel looks a held folder up again (its entry's timeout passed): answered from the
        // kept node, its packed parent left packed.
        let dir2 = walked["dir2"]!.inode
        let sub3 = walked["dir2/sub3"]!.inode
        let held = harness.fs.lookupCount(of: sub3)
        XCTAssertEqual(try harness.lookup(dir2, "sub3").inode, sub3)
        XCTAssertEqual(harness.fs.lookupCount(of: sub3), held + 1)
        XCTAssertEqual(materialized, 0, "dir2 was not materialized to answer it")
        harness.fs.forget(sub3, count: 1)

        // A shell in dir2/sub3 lists it: that folder alone is materialized, and packed again once
        // its files are forgotten.
        let listed = try harness.listPlus(sub3)
        XCTAssertEqual(listed.filter { $0.entry.name.hasSuffix(".txt") }.count, 6)
        XCTAssertEqual(materialized, 1)
        forget(walked.filter { $0.key.hasPrefix("dir2/sub3/") })
        XCTAssertEqual(materialized, 0)
        XCTAssertEqual(nodes, 1 + 4 + 20)

        // The kernel forgets a kept folder: its node goes (the packed entry keeps its number).
        forget(["dir1/sub4": walked["dir1/sub4"]!])
        XCTAssertNil(table.node(walked["dir1/sub4"]!.inode))
        XCTAssertEqual(nodes, 1 + 4 + 20 - 1)

        harness.backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again.mapValues(\.inode), walked.mapValues(\.inode), "inode numbers survive")
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)

        // Everything forgotten, deepest first as the kernel does: only the root stays a node.
        forget(again)
        XCTAssertEqual(materialized, 0)
        XCTAssertEqual(nodes, 1)
        XCTAssertEqual(table.packedSummary.items, entries)
        XCTAssertEqual(try harness.walk().mapValues(\.inode), walked.mapValues(\.inode))
    }

    /// A folder kept as a node under a packed listing follows the change feed and fresh listings:
    /// renamed, moved or removed on Drive, its old entry is invalidated for the kernel and the next
    /// lookup finds it (the same inode) where Drive has it; a relisting without it lets it go.
    func testAFolderKeptUnderAPackedParentFollowsChangesAndListings() throws {
        _ = try mountTree()
        let backend = harness.backend
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        idleAndShed()
        XCTAssertEqual(materialized, 0)
        let inode = { (path: String) in walked[path]!.inode }

        let renamed = try driveID("dir1/sub1")
        let moved = try driveID("dir0/sub2")
        let trashed = try driveID("dir3/sub0")
        let noted = harness.notifier.entryList.count
        backend.rename(renamed, to: "renamed")
        backend.rename(moved, to: "moved")
        backend.moveFile(moved, to: try driveID("dir1"))
        backend.trashFile(trashed)
        try harness.fs.pollChanges()
        let asked = harness.notifier.entryList.dropFirst(noted).map { "\($0.parent.rawValue)/\($0.name)" }
        for (parent, name) in [("dir1", "sub1"), ("dir0", "sub2"), ("dir3", "sub0")] {
            XCTAssertTrue(asked.contains("\(inode(parent).rawValue)/\(name)"), "\(parent)/\(name) not invalidated: \(asked)")
        }
        XCTAssertTrue(harness.notifier.inodeList.contains(inode("dir3/sub0")), "the removed folder's inode")
        XCTAssertEqual(materialized, 0, "the changes were applied packed")

        backend.resetCounters()
        XCTAssertEqual(try harness.resolve("dir1/renamed").inode, inode("dir1/sub1"))
        XCTAssertEqual(try harness.resolve("dir1/moved").inode, inode("dir0/sub2"))
        XCTAssertThrowsError(try harness.resolve("dir1/sub1"))
        XCTAssertThrowsError(try harness.resolve("dir0/sub2"))
        XCTAssertThrowsError(try harness.resolve("dir3/sub0"))
        XCTAssertEqual(backend.requests["files.list"] ?? 0, 0, backend.requestSummary)

        // A fresh listing of a packed folder that no longer shows a kept folder: it leaves.
        let dir2 = try driveID("dir2")
        let sub4 = inode("dir2/sub4")
        XCTAssertEqual(table.node(sub4)?.parent, inode("dir2"))
        XCTAssertNil(table.node(inode("dir2"))?.listing)
        let shown = backend.allFiles.filter { $0.parents.first == dir2 && $0.name != "sub4" }
        let out = table.applyListing(dir2, files: shown, startedAt: table.generation)
        XCTAssertTrue(out.entries.contains { $0.parent == inode("dir2") && $0.name == "sub4" }, "\(out.entries)")
        XCTAssertNil(table.node(sub4)?.parent, "no longer in any listed folder")
        XCTAssertEqual(table.node(inode("dir2/sub3"))?.parent, inode("dir2"), "its sibling stays kept")
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
