@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import XCTest

/// A page of the change feed applied to folders the table holds as nodes: each folder it touches is
/// rebuilt once per page, not once per change (a burst of 1,000 changes in a folder of 100,000 items
/// was 10⁸ steps under the table's lock, while every lookup waited), and what the page leaves is what
/// its changes applied one at a time leave.
final class ChangeBurstTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    /// 500 changes in a materialized folder of 2,000 files cost one rebuild of it. The work is
    /// counted (children handed to `setChildren`), never timed: one change at a time it was 500
    /// rebuilds of 2,000 children each.
    func testABurstOfChangesInABigOpenFolderRebuildsItOnce() throws {
        harness = try CoreHarness { $0.indexWholeDrive = false }
        let big = harness.backend.addFolder("big")
        var ids: [String] = []
        for i in 0..<2_000 { ids.append(harness.backend.addFile("f\(i).txt", in: big, content: [UInt8(i % 251)])) }
        try harness.mount()
        let folder = try harness.resolve("big").inode
        XCTAssertEqual(try harness.listPlus(folder).filter { $0.entry.name != "." && $0.entry.name != ".." }.count, 2_000)

        for i in 0..<200 { harness.backend.rename(ids[i], to: "renamed\(i).txt") }
        for i in 200..<400 { harness.backend.replaceContent(ids[i], with: [1, 2, 3, UInt8(i % 251)]) }
        for i in 400..<450 { harness.backend.trashFile(ids[i]) }
        for i in 0..<50 { _ = harness.backend.addFile("new\(i).txt", in: big, content: [9]) }
        harness.backend.resetCounters()
        let before = harness.fs.table.childrenRebuilt
        try harness.fs.pollChanges()
        let work = harness.fs.table.childrenRebuilt - before
        XCTAssertLessThanOrEqual(work, 2_000 + 500, "500 changes rebuilt \(work) children: more than one pass over the folder")

        XCTAssertEqual(try harness.resolve("big/renamed7.txt").size, 1)
        XCTAssertThrowsError(try harness.resolve("big/f7.txt")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
        XCTAssertEqual(try harness.resolve("big/f300.txt").size, 4)
        XCTAssertThrowsError(try harness.resolve("big/f420.txt")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
        XCTAssertEqual(try harness.resolve("big/new49.txt").size, 1)
        XCTAssertEqual(try harness.listPlus(folder).filter { $0.entry.name != "." && $0.entry.name != ".." }.count, 2_000)
        XCTAssertEqual(harness.backend.requests["files.list"] ?? 0, 0, "the feed alone kept the folder current")
    }

    /// Random pages of changes (renames onto names in use, moves between folders held as nodes,
    /// packed and unknown, folders moved, content changed, trashed, removed, made, and the same item
    /// changed several times in one page, with the states it passed through) leave the same table
    /// when applied as one page as when applied one change a page: the same tree of names, items
    /// and listings' trust, and the same files for every node the kernel holds.
    func testAPageLeavesWhatItsChangesOneAtATimeLeave() throws {
        let seeds: [UInt64] = [1, 2, 3, UInt64.random(in: 4..<UInt64.max)]
        for seed in seeds {
            try checkEquivalence(seed: seed)
        }
    }

    private func checkEquivalence(seed: UInt64) throws {
        harness?.remove()
        harness = try CoreHarness { $0.indexWholeDrive = false }
        let backend = harness.backend
        var generator = SplitMix64(seed: seed)
        func pick(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }

        // Three levels of folders with files; some duplicate names from the start.
        var folders: [String] = []
        var files: [String] = []
        for a in 0..<4 {
            let top = backend.addFolder("d\(a)")
            folders.append(top)
            for b in 0..<3 {
                let sub = backend.addFolder("s\(b)", in: top)
                folders.append(sub)
                for f in 0..<6 { files.append(backend.addFile("n\(f % 4).txt", in: sub, content: [UInt8(f)])) }
            }
            for f in 0..<8 { files.append(backend.addFile("t\(f % 5)", in: top, content: [UInt8(f), 1])) }
        }
        try harness.mount()
        // Held as nodes: the root, d0 and d1 with all their subfolders, d2 itself only; d3 is
        // packed once the root's listing goes ahead of it (or unknown). Every name looked up once
        // (the kernel holds those nodes).
        for path in ["d0", "d1"] { _ = try harness.walk(try harness.resolve(path).inode, prefix: path + "/") }
        _ = try harness.listPlus(try harness.resolve("d2").inode)
        let snapshot = harness.fs.table.withState { $0 }
        let configuration = harness.fs.table.configuration
        let whole = NodeTable(restoring: snapshot, configuration: configuration, time: harness.time)
        let single = NodeTable(restoring: snapshot, configuration: configuration, time: harness.time)
        let unknownFolder = "unknownFolderID"

        func isUnder(_ id: String, _ ancestor: String) -> Bool {
            var current: String? = id
            for _ in 0..<20 {
                guard let c = current else { return false }
                if c == ancestor { return true }
                current = backend.file(c)?.parents.first
            }
            return false
        }

        for page in 0..<4 {
            var changes: [DriveChange] = []
            var recent: [String] = []
            for _ in 0..<60 {
                let live = (folders + files).filter { backend.file($0).map { !$0.trashed } ?? false }
                let id = !recent.isEmpty && pick(3) == 0 ? recent[pick(recent.count)] : live[pick(live.count)]
                guard let current = backend.file(id), !current.trashed else { continue }
                switch pick(10) {
                case 0, 1:
                    backend.rename(id, to: current.isFolder ? "s\(pick(4))" : "n\(pick(5)).txt")
                case 2, 3:
                    let targets = folders.filter { !isUnder($0, id) && backend.file($0).map { !$0.trashed } ?? false }
                    guard let to = targets.isEmpty ? nil : targets[pick(targets.count)] else { continue }
                    backend.moveFile(id, to: to)
                case 4:
                    guard !current.isFolder else { continue }
                    backend.replaceContent(id, with: Array(repeating: UInt8(pick(200)), count: 1 + pick(9)))
                case 5:
                    backend.trashFile(id)
                case 6:
                    let parent = folders[pick(folders.count)]
                    let made = pick(4) == 0 ? backend.addFolder("s\(pick(4))", in: parent)
                                            : backend.addFile("n\(pick(5)).txt", in: parent, content: [7])
                    if backend.file(made)!.isFolder { folders.append(made) } else { files.append(made) }
                    changes.append(DriveChange(fileId: made, removed: false, time: nil, file: backend.file(made)))
                    recent.append(made)
                    continue
                case 7:
                    // Removed for good: the feed says so without a file.
                    backend.trashFile(id)
                    changes.append(DriveChange(fileId: id, removed: true, time: nil, file: nil))
                    continue
                case 8:
                    // Out of view: into a folder nobody lists.
                    backend.update(id) { $0.parents = [unknownFolder] }
                default:
                    backend.update(id) { $0.modifiedTime = ($0.modifiedTime ?? 0) + 1_000 }
                }
                changes.append(DriveChange(fileId: id, removed: false, time: nil, file: backend.file(id)))
                recent.append(id)
            }
            _ = whole.apply(changes)
            for change in changes { _ = single.apply([change]) }
            let a = view(whole), b = view(single)
            if a != b {
                let onlyA = a.tree.subtracting(b.tree).sorted(), onlyB = b.tree.subtracting(a.tree).sorted()
                XCTFail("seed \(seed), page \(page): one page and one change at a time differ.\n"
                        + "page: \(onlyA.prefix(8))\none at a time: \(onlyB.prefix(8))\n"
                        + "held nodes: page \(a.held.filter { b.held[$0.key] != $0.value }.prefix(4)), "
                        + "one at a time \(b.held.filter { a.held[$0.key] != $0.value }.prefix(4))")
                return
            }
        }
    }

    private struct View: Equatable {
        /// path, ID, size, modified time, revision, and for folders whether their listing is trusted.
        var tree: Set<String>
        /// The files of the nodes the kernel holds (looked up), by inode.
        var held: [Inode: String]
    }

    private func view(_ table: NodeTable) -> View {
        table.withState { s in
            var tree = Set<String>()
            func describe(_ file: DriveFile) -> String {
                "\(file.id) \(file.size ?? -1) \(file.modifiedTime ?? -1) \(file.headRevisionId ?? "-") \(file.parents)"
            }
            func walk(_ inode: Inode, _ path: String, depth: Int) {
                guard depth < 20, let node = s.nodes[inode] else { return }
                if let listing = node.listing {
                    tree.insert("\(path)/ materialized trusted=\(listing.trusted)")
                    for (name, child) in listing.children {
                        guard let c = s.nodes[child] else { continue }
                        tree.insert("\(path)/\(name) \(describe(c.file))")
                        walk(child, "\(path)/\(name)", depth: depth + 1)
                    }
                } else if let packed = s.packed[node.file.id], let entries = packed.entries(folderID: node.file.id) {
                    tree.insert("\(path)/ packed trusted=\(packed.trusted)")
                    for entry in entries { tree.insert("\(path)/{\(entry.file.name)} \(describe(entry.file))") }
                }
            }
            walk(.root, "", depth: 0)
            var held: [Inode: String] = [:]
            // A detached node's name is nobody's: only its file counts.
            for (inode, node) in s.nodes where node.lookups > 0 {
                held[inode] = describe(node.file) + (node.parent == nil ? " detached" : " \(node.name)")
            }
            return View(tree: tree, held: held)
        }
    }
}
