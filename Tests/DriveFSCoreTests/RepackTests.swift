@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Folders packed again once nothing needs their nodes (issue 20, NodeTable+Repack.swift): a walk
/// forgotten by the kernel leaves the table packed, with the same inode numbers and no listing
/// asked of Drive again; a lookup still held, an open file or folder, or a write not on Drive yet
/// keeps a folder's nodes; the change feed keeps repacked folders current.
final class RepackTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    private var table: NodeTable { harness.fs.table }
    private var materialized: Int { table.withState { $0.materializedFolders } }
    private var nodes: Int { table.withState { $0.nodes.count } }

    /// Forgets every lookup the kernel holds on `walked` (a walk's result), deepest paths first, as
    /// the kernel does (a child's dentry pins its parent's), except the paths in `keeping`.
    private func forget(_ walked: [String: FileAttributes], keeping: Set<String> = []) {
        let order = walked.keys.sorted { a, b in
            let da = a.split(separator: "/").count, db = b.split(separator: "/").count
            return da != db ? da > db : a < b
        }
        for path in order where !keeping.contains(path) {
            let inode = walked[path]!.inode
            let count = harness.fs.lookupCount(of: inode)
            if count > 0 { harness.fs.forget(inode, count: count) }
        }
    }

    /// Root → 4 folders → 5 subfolders each → 6 files each: 144 entries.
    private func mountTree() throws -> Int {
        harness = try CoreHarness()
        let entries = CoreHarness.buildTree(harness.backend, top: 4, sub: 5, files: 6)
        try harness.mount()
        return entries
    }

    func testAWalkTheKernelForgotGoesBackToPackedAndAReWalkFindsTheSameInodesForNothing() throws {
        let entries = try mountTree()
        let walked = try harness.walk()
        XCTAssertEqual(walked.count, entries)
        XCTAssertTrue(harness.fs.waitForPrefetch())
        XCTAssertEqual(materialized, 1 + 4 + 20, "the walk materialized every folder")
        XCTAssertEqual(nodes, 1 + entries)
        let before = try XCTUnwrap(harness.fs.status().index)
        XCTAssertEqual(before.materializedFolders, 25)
        XCTAssertEqual(before.nodes, 1 + entries)

        forget(walked)
        XCTAssertEqual(materialized, 0, "every folder is packed again, the root too")
        XCTAssertEqual(nodes, 1, "only the root is a node")
        XCTAssertEqual(table.packedSummary.items, entries)
        XCTAssertEqual(harness.fs.knownItems, 1 + entries, "nothing is lost from the index")
        let after = try XCTUnwrap(harness.fs.status().index)
        XCTAssertEqual(after.materializedFolders, 0)
        XCTAssertEqual(after.packedItems, entries)
        XCTAssertLessThan(after.estimatedBytes, before.estimatedBytes / 4, "\(after) vs \(before)")
        XCTAssertTrue(table.withState { $0.repackQueue.isEmpty })

        harness.backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again.mapValues(\.inode), walked.mapValues(\.inode), "inode numbers survive packing and unpacking")
        XCTAssertEqual(again.mapValues(\.size), walked.mapValues(\.size))
        XCTAssertEqual(harness.backend.totalRequests, 0, "a repacked folder is not listed again: \(harness.backend.requestSummary)")
        XCTAssertEqual(try harness.resolve("dir3/sub4/file5.txt").inode, walked["dir3/sub4/file5.txt"]!.inode)
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)

        // Twice over, and through the saved index: the numbers are the same after a remount.
        forget(again)
        XCTAssertEqual(materialized, 0)
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.walk().mapValues(\.inode), walked.mapValues(\.inode))
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    /// A folder restored from the index (its listing a range of the mapped file) and packed again
    /// unchanged takes its mapped bytes back, with the inode numbers given in this run beside them
    /// (the index saved them for no item: none was ever a node): the same numbers on a re-walk and,
    /// through the index's save, after a remount.
    func testARestoredFolderPackedBackUnchangedStaysMappedWithItsInodeNumbers() throws {
        harness = try CoreHarness { $0.indexWholeDrive = true }
        CoreHarness.buildTree(harness.backend, top: 4, sub: 5, files: 6)
        try harness.mount()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        harness.unmount()
        try harness.mount()
        let mapped = { self.table.withState { s in s.packed.values.filter(\.isMapped).count } }
        XCTAssertEqual(mapped(), 25, "the root's listing and every folder's, restored mapped")

        let walked = try harness.walk()
        forget(walked)
        XCTAssertEqual(materialized, 0)
        XCTAssertEqual(mapped(), 25, "every folder packed back into its mapped bytes")
        XCTAssertEqual(table.withState { s in s.packed.values.filter { $0.inodeOverrides != nil }.count }, 25)

        harness.backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again.mapValues(\.inode), walked.mapValues(\.inode), "the numbers given in this run kept")
        forget(again)
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.walk().mapValues(\.inode), walked.mapValues(\.inode), "and saved with the index")
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    func testAFolderWithALookupStillHeldKeepsItsNodesAndSoDoItsAncestors() throws {
        let entries = try mountTree()
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        forget(walked, keeping: ["dir1/sub2/file3.txt"])
        XCTAssertEqual(materialized, 3, "the root, dir1 and dir1/sub2 stay materialized")
        XCTAssertEqual(nodes, 1 + 4 + 5 + 6, "the root's, dir1's and dir1/sub2's children")
        XCTAssertTrue(table.withState { s in s.nodes[walked["dir1/sub2"]!.inode]?.listing != nil })

        // The last lookup forgotten: the folder goes, then its parents, bottom-up.
        forget(["dir1/sub2/file3.txt": walked["dir1/sub2/file3.txt"]!])
        XCTAssertEqual(materialized, 0)
        XCTAssertEqual(table.packedSummary.items, entries)
    }

    func testAnOpenFileOrFolderKeepsItsFolderUntilClosed() throws {
        _ = try mountTree()
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        let file = walked["dir0/sub0/file0.txt"]!.inode
        let opened = try BlockingCall.wait { harness.fs.open(file, flags: O_RDONLY, reply: $0) }
        let folder = walked["dir2/sub1"]!.inode
        let directory = try BlockingCall.wait { harness.fs.openDirectory(folder, reply: $0) }
        forget(walked)
        XCTAssertEqual(materialized, 1 + 2 + 2, "dir0/sub0 (a file open in it) and dir2/sub1 (open) with their ancestors")

        harness.fs.release(file, handle: opened.handle)
        XCTAssertEqual(materialized, 1 + 1 + 1, "dir0/sub0 and dir0 go at the last close")
        XCTAssertEqual(harness.fs.lookupCount(of: folder), 0)
        harness.fs.releaseDirectory(folder, handle: directory)
        XCTAssertEqual(materialized, 0)

        harness.backend.resetCounters()
        XCTAssertEqual(try harness.walk().mapValues(\.inode), walked.mapValues(\.inode))
        XCTAssertEqual(harness.backend.totalRequests, 0, harness.backend.requestSummary)
    }

    /// A file written and closed whose upload has not landed (and a new one, not on Drive at all)
    /// keeps its folder's nodes; once the uploads land, the folder is packed again.
    func testAWriteNotOnDriveYetKeepsItsFolderUntilItsUploadLanded() throws {
        harness = try CoreHarness { $0.readOnly = false }
        CoreHarness.buildTree(harness.backend, top: 2, sub: 2, files: 2)
        let held = HeldUploadQueue(try UploadQueue(directory: harness.uploadsDirectory, backend: harness.backend, transfers: 1))
        try harness.mount(uploads: held)
        var walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        try harness.rewrite(walked["dir0/sub1/file1.txt"]!.inode, Array("changed here\n".utf8))
        let rewritten = walked["dir0/sub1/file1.txt"]!.inode
        let new = try harness.writeFile(walked["dir1/sub0"]!.inode, "new.txt", Array("new\n".utf8))
        walked["dir1/sub0/new.txt"] = try XCTUnwrap(harness.fs.table.node(new).map { harness.fs.table.attributes($0) })
        forget(walked)
        XCTAssertEqual(harness.fs.lookupCount(of: new), 0)
        XCTAssertEqual(materialized, 1 + 2 + 2, "dir0/sub1 and dir1/sub0 with their ancestors")
        XCTAssertNotNil(table.node(new)?.local)

        held.release()
        waitUntil("the uploads to land") {
            harness.fs.uploadStatus.isIdle && table.node(new)?.local == nil && table.node(rewritten)?.local == nil
        }
        // What the change poller does between polls.
        table.packUnneededFolders()
        XCTAssertEqual(materialized, 0)

        harness.backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again.mapValues(\.inode), walked.mapValues(\.inode))
        XCTAssertEqual(again["dir0/sub1/file1.txt"]?.size, UInt64("changed here\n".utf8.count))
        XCTAssertEqual(again["dir1/sub0/new.txt"]?.size, 4)
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, harness.backend.requestSummary)
    }

    /// Changes to repacked folders: applied packed, without listing; items keep their numbers,
    /// even across folders; a folder the kernel still holds has the new name's (negative) entry
    /// invalidated.
    func testTheChangeFeedKeepsRepackedFoldersCurrent() throws {
        _ = try mountTree()
        let backend = harness.backend
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        // The kernel keeps dir2/sub3 itself (a shell's working directory), not its children.
        forget(walked, keeping: ["dir2/sub3", "dir2"])
        XCTAssertEqual(materialized, 2, "the root and dir2 (which holds dir2/sub3's node)")
        XCTAssertFalse(table.withState { s in s.nodes[walked["dir2/sub3"]!.inode]?.listing != nil })

        /// The Drive ID of the item at `path`, from the fake (the table holds most of them packed).
        func id(_ path: String) throws -> String {
            var current = backend.rootID
            for part in path.split(separator: "/").map(String.init) {
                current = try XCTUnwrap(backend.allFiles.first { $0.name == part && $0.parents.first == current }?.id, path)
            }
            return current
        }
        let renamed = try id("dir0/sub0/file0.txt")
        let moved = try id("dir1/sub1/file1.txt")
        let trashed = try id("dir3/sub2/file2.txt")
        let intoHeld = try id("dir0/sub1/file2.txt")
        let sub3 = try id("dir2/sub3")
        let notedBefore = harness.notifier.entryNames.count
        backend.rename(renamed, to: "renamed.txt")
        backend.rename(moved, to: "moved.txt")
        backend.moveFile(moved, to: try id("dir3/sub3"))
        backend.trashFile(trashed)
        backend.moveFile(intoHeld, to: try id("dir2"))     // packed → a materialized listing
        backend.addFile("added.txt", in: sub3, content: [1, 2, 3])
        try harness.fs.pollChanges()
        XCTAssertTrue(harness.notifier.entryNames.dropFirst(notedBefore).contains("added.txt"), "\(harness.notifier.entryNames)")

        backend.resetCounters()
        let again = try harness.walk()
        XCTAssertEqual(again["dir0/sub0/renamed.txt"]?.inode, walked["dir0/sub0/file0.txt"]?.inode)
        XCTAssertNil(again["dir0/sub0/file0.txt"])
        XCTAssertEqual(again["dir3/sub3/moved.txt"]?.inode, walked["dir1/sub1/file1.txt"]?.inode, "moved between packed folders")
        XCTAssertNil(again["dir1/sub1/file1.txt"])
        XCTAssertEqual(again["dir2/file2.txt"]?.inode, walked["dir0/sub1/file2.txt"]?.inode, "moved into a materialized folder")
        XCTAssertNil(again["dir0/sub1/file2.txt"])
        XCTAssertNil(again["dir3/sub2/file2.txt"])
        XCTAssertEqual(again["dir2/sub3/added.txt"]?.size, 3)
        XCTAssertEqual(again.count, walked.count)
        let unchanged = walked.filter { again[$0.key] != nil }
        XCTAssertEqual(unchanged.mapValues(\.inode), again.filter { walked[$0.key] != nil }.mapValues(\.inode))
        XCTAssertEqual(backend.requests["files.list"] ?? 0, 0, "the feed alone kept them current: \(backend.requestSummary)")
    }

    /// Each forget looks at a bounded number of child items; what it leaves queued is packed in
    /// batches (the change poller's call between polls).
    func testPackingIsBoundedPerCallAndTheRestIsDrainedInBatches() throws {
        let entries = try mountTree()
        let walked = try harness.walk()
        XCTAssertTrue(harness.fs.waitForPrefetch())
        // Forgotten without packing (as if each forget's budget had been spent), then queued.
        table.withState { s in
            for (_, attributes) in walked { s.nodes[attributes.inode]!.lookups = 0 }
            // Queued top-down, so the last queued (looked at first) are the deepest.
            NodeTable.noteUnneeded(.root, &s)
            for (_, attributes) in walked.sorted(by: { $0.key.count < $1.key.count }) where attributes.kind == .directory {
                NodeTable.noteUnneeded(attributes.inode, &s)
            }
        }
        XCTAssertEqual(table.withState { s in table.packUnneeded(budget: 1, &s) }, 1, "one folder at least, and no more")
        let packedByOneBatch = table.withState { s in table.packUnneeded(budget: 20, &s) }
        XCTAssertGreaterThan(packedByOneBatch, 0)
        XCTAssertLessThanOrEqual(packedByOneBatch, 3, "20 items: at most three folders of 6 files")
        table.packUnneededFolders()
        XCTAssertEqual(materialized, 0)
        XCTAssertEqual(table.packedSummary.items, entries)
    }
}
