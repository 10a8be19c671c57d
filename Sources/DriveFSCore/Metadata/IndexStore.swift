import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The metadata index on disk (`<cache dir>/index.bin`): every listed folder's children, packed as
/// the node table packs them (`PackedListing`), and the change feed's position they are current
/// at, so a remount lists at once and only reads the changes since.
///
/// Contracts:
/// - A saved index is always consistent with its `changeToken` (it is written by the change poller
///   between polls, or at unmount after the last one): replaying the feed from that token brings it
///   up to date, because each change carries the item's whole current state.
/// - Loading decodes no item: the listings go into the table packed, and each is turned into nodes
///   when first used. A drive of a million items is back at mount in the time it takes to read the
///   file (about 200 bytes an item).
/// - An index from another root, another format or other export settings is ignored, and so is a
///   damaged one (a 64-bit checksum over the whole file, `Checksum64`): the folders are listed again.
/// - Only what the change feed can correct is kept: trusted listings reachable from the root, and
///   no file made here that is not on Drive yet (the upload journal brings those back).
///
/// File layout (little-endian, varints as `ByteWriter` writes them): the magic line, the format,
/// the root's ID, the settings' fingerprint, the change token, the next free inode number, the
/// item count, the folder count; per folder its ID,
/// item count, subfolder IDs, the items' ID hashes (8 bytes each), the packed bytes' length and the
/// bytes; then the `Checksum64` of everything before it (8 bytes).
public final class IndexStore: Sendable {
    let path: String

    static let format: UInt64 = 3
    static let fileName = "index.bin"
    private static let magic = Array("drivefs index\n".utf8)

    struct Restored: Sendable {
        var state: NodeTable.State
        var changeToken: String
        var folders: Int
        var items: Int
    }

    init(path: String) { self.path = path }

    static func fingerprint(_ configuration: DriveFSConfiguration) -> String {
        "exports=" + configuration.exportFormats.preference.joined(separator: ",")
    }

    /// The root and change token the index in `cacheDirectory` was saved for, read from its header
    /// alone (for a mount that cannot reach Drive at start: it mounts that root from the index;
    /// `load` then checks the whole file). Nil when there is no index of this format there.
    public static func savedRoot(cacheDirectory: URL) -> (rootID: String, changeToken: String)? {
        let fd = open(cacheDirectory.appendingPathComponent(fileName).path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4096)
        let n = (try? head.withUnsafeMutableBytes { try SystemCall.readFully(fd, into: $0, at: 0) }) ?? 0
        guard n > magic.count, Array(head[0..<magic.count]) == magic else { return nil }
        var r = ByteReader(Array(head[0..<n]), from: magic.count)
        guard let format = r.varint(), format == Self.format, let rootID = r.string(), r.string() != nil,
              let token = r.string() else { return nil }
        return (rootID, token)
    }

    /// The index saved for `root`, as a table state whose root has no listing yet but the root's
    /// packed one (and every other), or nil when there is none to use.
    func load(root: DriveFile, configuration: DriveFSConfiguration, now: Double) -> Restored? {
        guard let bytes = Self.readWhole(path) else { return nil }
        guard bytes.count > Self.magic.count + 8, Array(bytes[0..<Self.magic.count]) == Self.magic else {
            Log.shared.warning("index", "ignoring \(path): not a drivefs index")
            return nil
        }
        var trailer = ByteReader(bytes, from: bytes.count - 8)
        guard let low = trailer.uint32(), let high = trailer.uint32(),
              UInt64(high) << 32 | UInt64(low) == bytes.withUnsafeBytes({ Checksum64.of(UnsafeRawBufferPointer(rebasing: $0[0..<bytes.count - 8])) })
        else {
            Log.shared.warning("index", "ignoring the damaged index \(path) (checksum)")
            return nil
        }
        var r = ByteReader(bytes, from: Self.magic.count, to: bytes.count - 8)
        guard let format = r.varint(), format == Self.format, let rootID = r.string(), let fingerprint = r.string(),
              let token = r.string(), let nextInode = r.varint(), let itemCount = r.count(), let folderCount = r.count() else {
            Log.shared.info("index", "ignoring the index \(path): made by another version of drivefs")
            return nil
        }
        guard rootID == root.id, fingerprint == Self.fingerprint(configuration) else {
            Log.shared.info("index", "ignoring the index \(path): made for another root or other settings")
            return nil
        }
        var state = NodeTable.State()
        state.nodes[.root] = Node(inode: .root, file: root, parent: nil, name: "/")
        state.byID[root.id] = .root
        state.nextInode = max(state.nextInode, nextInode)
        state.packed.reserveCapacity(folderCount)
        state.packedLocation.reserveCapacity(itemCount)
        for _ in 0..<folderCount {
            guard let id = r.string(), let count = r.count(), let subfolderCount = r.count(max: count) else { return damaged() }
            var subfolders: [String] = []
            subfolders.reserveCapacity(subfolderCount)
            for _ in 0..<subfolderCount {
                guard let sub = r.string() else { return damaged() }
                subfolders.append(sub)
            }
            var hashes: [UInt64] = []
            hashes.reserveCapacity(count)
            for _ in 0..<count {
                guard let low = r.uint32(), let high = r.uint32() else { return damaged() }
                hashes.append(UInt64(high) << 32 | UInt64(low))
            }
            guard let length = r.count(), let packed = r.raw(length), state.packed[id] == nil else { return damaged() }
            // Restored listings count from now: the change feed from the saved token catches them up.
            NodeTable.storePacked(id, PackedListing(bytes: packed, count: count, listedAt: now, trusted: true,
                                                    subfolders: subfolders, idHashes: hashes), &state)
            state.unconfirmed.insert(id)
        }
        guard r.atEnd else { return damaged() }
        return Restored(state: state, changeToken: token, folders: folderCount, items: state.packedItems)
    }

    /// The file's bytes, read straight into one array (no intermediate `Data`: an index of a
    /// million items is over 100 MB, and every copy of it counts at mount).
    private static func readWhole(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0, info.st_size < Int64(Int32.max) * 4 else { return nil }
        let size = Int(info.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            let done = (try? SystemCall.readFully(fd, into: UnsafeMutableRawBufferPointer(buffer))) ?? 0
            failed = done != size
            count = failed ? 0 : done
        }
        return failed ? nil : bytes
    }

    private func damaged() -> Restored? {
        Log.shared.warning("index", "ignoring the damaged index \(path)")
        return nil
    }

    func save(_ table: NodeTable, changeToken: String) {
        let (snapshot, nextInode) = table.indexSnapshot()
        var w = ByteWriter(capacity: snapshot.reduce(64) { $0 + $1.listing.bytes.count + $1.listing.count * 8 + 64 })
        w.raw(Self.magic)
        w.varint(Self.format)
        w.string(table.rootID)
        w.string(Self.fingerprint(table.configuration))
        w.string(changeToken)
        w.varint(nextInode)
        w.varint(UInt64(snapshot.reduce(0) { $0 + $1.listing.count }))
        w.varint(UInt64(snapshot.count))
        for (id, listing) in snapshot {
            w.string(id)
            w.varint(UInt64(listing.count))
            w.varint(UInt64(listing.subfolders.count))
            for sub in listing.subfolders { w.string(sub) }
            for h in listing.idHashes {
                w.uint32(UInt32(truncatingIfNeeded: h))
                w.uint32(UInt32(truncatingIfNeeded: h >> 32))
            }
            w.varint(UInt64(listing.bytes.count))
            w.raw(listing.bytes)
        }
        let checksum = w.bytes.withUnsafeBytes { Checksum64.of($0) }
        w.uint32(UInt32(truncatingIfNeeded: checksum))
        w.uint32(UInt32(truncatingIfNeeded: checksum >> 32))
        do {
            try AtomicFile.write(w.bytes, to: path, mode: 0o600)
            // The JSON index of drivefs 0.1's first releases, replaced by this one.
            unlink((path as NSString).deletingLastPathComponent + "/index.json")
        } catch {
            Log.shared.warning("index", "cannot save the index \(path): \(error)")
        }
    }
}

extension NodeTable {
    /// What the index keeps, packed: every trusted listing reachable from the root (a walk down
    /// materialized listings and packed ones' subfolders), without files not on Drive yet.
    /// Materialized listings are copied under the lock and packed outside it.
    func indexSnapshot() -> (folders: [(id: String, listing: PackedListing)], nextInode: UInt64) {
        enum Held { case packed(PackedListing), nodes([PackedListing.Entry]) }
        let (held, nextInode): ([(String, Held)], UInt64) = withState { s in
            var out: [(String, Held)] = []
            var queue = [s.nodes[.root]!.file.id]
            var seen = Set(queue)
            var head = 0
            while head < queue.count {
                let id = queue[head]
                head += 1
                var next: [String] = []
                if let inode = s.byID[id], let listing = s.nodes[inode]?.listing {
                    var entries: [PackedListing.Entry] = []
                    entries.reserveCapacity(listing.children.count)
                    for child in listing.children.values {
                        guard let node = s.nodes[child], node.local?.isNew != true else { continue }
                        entries.append(PackedListing.Entry(file: node.file, exportedSize: node.exportedSize, inode: node.inode.rawValue))
                        if node.kind == .directory && node.file.isFolder { next.append(node.file.id) }
                    }
                    if listing.trusted { out.append((id, .nodes(entries))) }
                } else if let packed = s.packed[id] {
                    next = packed.subfolders
                    if packed.trusted { out.append((id, .packed(packed))) }
                }
                for sub in next where seen.insert(sub).inserted { queue.append(sub) }
            }
            return (out, s.nextInode)
        }
        let listedAt = time.now()
        return (held.map { id, held in
            switch held {
            case .packed(let listing): return (id, listing)
            case .nodes(let entries): return (id, PackedListing(folderID: id, entries: entries, listedAt: listedAt, trusted: true))
            }
        }, nextInode)
    }
}
