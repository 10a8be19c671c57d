import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Synthetic drives written as real index files, to measure what restoring a large index costs
/// (`drivefs debug index-restore`, scripts/bench.sh) at sizes the emulator cannot seed in a
/// benchmark's time, and to test the index at those sizes.
///
/// Contracts:
/// - Written and read through the real code: the listings are packed by `PackedListing` into a
///   `NodeTable`'s packed part (as prefetching leaves them), saved by `IndexStore.save` and loaded by
///   `IndexStore.load`, as a mount saves and restores its index. Nothing here encodes bytes itself.
/// - Deterministic: the same `items` and `folders` give the same file, byte for byte.
/// - The shape: `items` items in all, `folders` of them folders (1 ≤ folders ≤ items): ⌈√folders⌉
///   folders in the root, the others spread evenly under those, and the `items - folders` files spread
///   evenly over all the folders (the root holds folders only). Every item is shaped like Google's
///   answer to drivefs's field mask: a 33-character ID, a name, the parent, the modified and
///   created times, the capabilities, a web link naming the item, and the last modifier (one of a few
///   users, at random); files add a size, an md5, a version and a 51-character head revision ID.
///   There are no Google Docs (their export links are not modelled) and no shortcuts.
/// - For measurement and tests only: no mount uses it.
public enum SyntheticIndex {
    /// A synthetic drive's index written to `path`.
    public struct Written: Sendable {
        public var path: String
        public var fileBytes: Int
        public var items: Int
        public var folders: Int
        /// Folders in the root.
        public var topFolders: Int
        /// The time to build the listings and save them (not a figure of any mount).
        public var writeSeconds: Double
    }

    /// What restoring a written index costs, each step timed on a monotonic clock.
    public struct Restore: Sendable {
        /// `IndexStore.load`: reading the file, checking its checksum, and putting each listing into a
        /// table state packed (no item decoded).
        public var loadSeconds: Double
        /// The table after the load: nodes (only the root) and items held packed.
        public var nodesAfterLoad: Int
        public var packedItemsAfterLoad: Int
        public var foldersLoaded: Int
        /// The root's listing materialized and read in order (what `ls` of the mount's root costs the table).
        public var rootListingSeconds: Double
        public var rootEntries: Int
        /// Then the root's first folder materialized and read the same way.
        public var firstFolderSeconds: Double
        public var firstFolderEntries: Int
        /// From the start of the load until the first folder's entries were in hand.
        public var totalSeconds: Double
        /// The walk through the table, when asked for (`restore(walk: true)`).
        public var walk: Walk?
    }

    /// A walk through the restored table as `find` of a mount makes one, without a kernel: every
    /// folder once, breadth first from the root; in each, its entries read (`entries(of:)`, which
    /// materializes it) and every one looked up with its lookup counted, as readdirplus does; then
    /// the files' lookups forgotten, as the kernel forgets the entries the shedder asks it to drop
    /// (it keeps the folders'). Once every folder was visited, the table is left as an idle mount
    /// leaves it: idle folders shed (`shedIdleFolders`, idle for 0 s) and packed
    /// (`packUnneededFolders`, which hands freed memory back). The folders' lookups stay held, as
    /// the kernel's do.
    public struct Walk: Sendable {
        public var seconds: Double
        public var foldersVisited: Int
        public var itemsVisited: Int
        /// The most folders materialized at once during the walk.
        public var peakMaterialized: Int
        /// Shedding and packing once the walk ended.
        public var packSeconds: Double
        public var nodesAfter: Int
        public var materializedAfter: Int
        public var packedItemsAfter: Int
    }

    static let rootID = "0AsyntheticRootFolder0Uk9PVA"
    /// The index's change token (any: nothing replays the feed here).
    static let changeToken = "1000"

    static var root: DriveFile {
        DriveFile(id: rootID, name: "My Drive", mimeType: DriveFile.folderMimeType, modifiedTime: 1_600_000_000_000)
    }

    static func configuration(directory: String) -> DriveFSConfiguration {
        DriveFSConfiguration(userID: getuid(), groupID: getgid(), cacheDirectory: URL(fileURLWithPath: directory))
    }

    static func topFolderCount(_ folders: Int) -> Int {
        var top = Int(Double(folders).squareRoot())
        if top * top < folders { top += 1 }
        return max(1, min(top, folders))
    }

    /// Drive-like IDs: "1" and 32 characters of Drive's alphabet, from the item's number.
    static func driveID(_ kind: UInt64, _ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var g = SplitMix64(seed: kind << 40 ^ UInt64(n))
        var bytes: [UInt8] = [UInt8(ascii: "1")]
        bytes.reserveCapacity(33)
        while bytes.count < 33 {
            var word = g.next()
            for _ in 0..<10 where bytes.count < 33 {
                bytes.append(alphabet[Int(word & 63)])
                word >>= 6
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func folderID(_ k: Int) -> String { driveID(1, k) }

    private static let users: [DriveFile.User] = [
        DriveFile.User(displayName: "Ada Lovelace", emailAddress: "ada.lovelace@example.com"),
        DriveFile.User(displayName: "Charles Babbage", emailAddress: "charles.babbage@example.com"),
        DriveFile.User(displayName: "Grace Hopper", emailAddress: "grace.hopper@example.com"),
        DriveFile.User(displayName: "Alan Turing", emailAddress: "alan.turing@example.com"),
    ]
    private static let kinds: [(prefix: String, suffix: String, mime: String)] = [
        ("IMG_", ".jpg", "image/jpeg"), ("Scan ", ".pdf", "application/pdf"), ("notes-", ".txt", "text/plain"),
        ("Screenshot from ", ".png", "image/png"), ("backup_", ".zip", "application/zip"),
        ("Quarterly report draft ", ".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ]
    private static let capabilities = DriveFile.Capabilities(canEdit: true, canDownload: true, canAddChildren: false,
                                                             canListChildren: false, canRename: true, canTrash: true,
                                                             canDelete: true)
    private static let folderCapabilities = DriveFile.Capabilities(canEdit: true, canDownload: true, canAddChildren: true,
                                                                   canListChildren: true, canRename: true, canTrash: true,
                                                                   canDelete: true)

    static func folder(_ k: Int, parent: String) -> DriveFile {
        var g = SplitMix64(seed: 0xF01D ^ UInt64(k))
        let id = folderID(k)
        let time = 1_500_000_000_000 + Int64(g.next() % 200_000_000_000)
        return DriveFile(id: id, name: "Folder \(k) " + ["Photos", "Projects", "Archive", "Invoices", "Shared"][k % 5],
                         mimeType: DriveFile.folderMimeType, parents: [parent], modifiedTime: time, createdTime: time - 86_400_000,
                         capabilities: folderCapabilities, webViewLink: "https://drive.google.com/drive/folders/\(id)",
                         lastModifyingUser: users[Int(g.next() % UInt64(users.count))])
    }

    static func file(_ j: Int, parent: String) -> DriveFile {
        var g = SplitMix64(seed: 0xF11E ^ UInt64(j))
        let id = driveID(2, j)
        let kind = kinds[Int(g.next() % UInt64(kinds.count))]
        let modified = 1_500_000_000_000 + Int64(g.next() % 250_000_000_000)
        let revision = "0B" + String(driveID(3, j).dropFirst()) + String(driveID(4, j).dropFirst(16))
        return DriveFile(id: id, name: "\(kind.prefix)\(20_000_000 + j)\(kind.suffix)", mimeType: kind.mime, parents: [parent],
                         size: Int64(g.next() % 20_000_000), md5Checksum: String(format: "%016llx%016llx", g.next(), g.next()),
                         modifiedTime: modified, createdTime: modified - Int64(g.next() % 1_000_000_000),
                         version: Int64(1 + g.next() % 40), headRevisionId: revision, capabilities: capabilities,
                         webViewLink: "https://drive.google.com/file/d/\(id)/view?usp=drivesdk",
                         lastModifyingUser: users[Int(g.next() % UInt64(users.count))])
    }

    /// A table holding the synthetic drive packed: the root as its only node, every folder's listing
    /// packed (as the whole-drive index leaves a drive nobody has opened yet).
    static func table(items: Int, folders: Int, configuration: DriveFSConfiguration, time: any TimeSource) -> NodeTable {
        precondition(folders >= 1 && items >= folders, "SyntheticIndex: 1 <= folders <= items")
        let table = NodeTable(root: root, configuration: configuration, time: time)
        let top = topFolderCount(folders)
        let files = items - folders
        let listedAt = time.now()
        table.withState { s in
            NodeTable.storePacked(rootID, PackedListing(
                folderID: rootID, entries: (0..<top).map { PackedListing.Entry(file: folder($0, parent: rootID)) },
                listedAt: listedAt, trusted: true), &s)
            for k in 0..<folders {
                let id = folderID(k)
                var entries: [PackedListing.Entry] = []
                // Subfolders of a top folder: k' ≥ top with (k' - top) % top == k.
                if k < top {
                    for sub in stride(from: top + k, to: folders, by: top) {
                        entries.append(PackedListing.Entry(file: folder(sub, parent: id)))
                    }
                }
                // Files: j with j % folders == k.
                for j in stride(from: k, to: files, by: folders) {
                    entries.append(PackedListing.Entry(file: file(j, parent: id)))
                }
                NodeTable.storePacked(id, PackedListing(folderID: id, entries: entries, listedAt: listedAt, trusted: true), &s)
            }
        }
        return table
    }

    /// Writes the synthetic drive's index as `<directory>/index.bin` (IndexStore.save).
    public static func write(items: Int, folders: Int, directory: String) -> Written {
        let start = monotonicSeconds()
        let configuration = configuration(directory: directory)
        let path = (directory as NSString).appendingPathComponent(IndexStore.fileName)
        do {
            let table = table(items: items, folders: folders, configuration: configuration, time: SystemTimeSource())
            IndexStore(path: path).save(table, changeToken: changeToken)
        }
        var info = stat()
        let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
        return Written(path: path, fileBytes: size, items: items, folders: folders, topFolders: topFolderCount(folders),
                       writeSeconds: monotonicSeconds() - start)
    }

    /// Loads the index `write` left in `directory` as a mount does (IndexStore.load), then lists the
    /// root and its first folder through the table; nil when the index does not load. `whileHeld`
    /// runs after that, while the restored table is still alive (to read what it holds resident).
    public static func restore(directory: String, walk: Bool = false, whileHeld: () -> Void = {},
                               afterWalk: () -> Void = {}) -> Restore? {
        let configuration = configuration(directory: directory)
        let path = (directory as NSString).appendingPathComponent(IndexStore.fileName)
        let time = SystemTimeSource()
        let start = monotonicSeconds()
        // As DriveFilesystem does, the loaded state is let go once the table holds it: kept alive, it
        // would make the table's first edit copy every dictionary (copy on write: a million-entry
        // `packedLocation` copied by the first listing).
        let table: NodeTable
        let foldersLoaded: Int
        do {
            guard let restored = IndexStore(path: path).load(root: root, configuration: configuration, now: time.now()) else { return nil }
            foldersLoaded = restored.folders
            table = NodeTable(restoring: restored.state, configuration: configuration, time: time)
        }
        let loaded = monotonicSeconds()
        let (nodes, packedItems) = table.withState { ($0.nodes.count, $0.packedItems) }
        guard let rootEntries = table.entries(of: .root) else { return nil }
        let rootListed = monotonicSeconds()
        guard let first = rootEntries.first(where: { $0.kind == .directory }),
              let firstEntries = table.entries(of: first.inode) else { return nil }
        let firstListed = monotonicSeconds()
        withExtendedLifetime(table) { whileHeld() }
        var walked: Walk?
        if walk {
            // As a mount walks it once the change feed caught the restored index up (until then
            // a restored folder is listed on Drive again before it is used).
            table.confirmRestoredListings()
            walked = walkAll(table)
            withExtendedLifetime(table) { afterWalk() }
        }
        return Restore(loadSeconds: loaded - start, nodesAfterLoad: nodes, packedItemsAfterLoad: packedItems,
                       foldersLoaded: foldersLoaded, rootListingSeconds: rootListed - loaded, rootEntries: rootEntries.count,
                       firstFolderSeconds: firstListed - rootListed, firstFolderEntries: firstEntries.count,
                       totalSeconds: firstListed - start, walk: walked)
    }

    /// The walk of `Walk`'s contract.
    static func walkAll(_ table: NodeTable) -> Walk {
        let start = monotonicSeconds()
        var queue: [Inode] = [.root]
        var head = 0
        var items = 0
        var peak = 0
        while head < queue.count {
            let folder = queue[head]
            head += 1
            guard let entries = table.entries(of: folder) else { continue }
            var files: [Inode] = []
            for entry in entries {
                guard case .found(let node) = table.child(of: folder, named: entry.name, countLookup: true) else { continue }
                items += 1
                if node.kind == .directory { queue.append(node.inode) } else { files.append(node.inode) }
            }
            peak = max(peak, table.withState { $0.materializedFolders })
            for file in files { table.forget(file, count: 1) }
        }
        let walked = monotonicSeconds()
        while table.shedIdleFolders(idleFor: 0).folders > 0 {}
        table.packUnneededFolders()
        let (nodes, materialized, packedItems) = table.withState { ($0.nodes.count, $0.materializedFolders, $0.packedItems) }
        return Walk(seconds: walked - start, foldersVisited: head, itemsVisited: items, peakMaterialized: peak,
                    packSeconds: monotonicSeconds() - walked, nodesAfter: nodes, materializedAfter: materialized,
                    packedItemsAfter: packedItems)
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
