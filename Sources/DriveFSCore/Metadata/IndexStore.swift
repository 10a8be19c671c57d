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
/// - Loading decodes no item: the file is mapped, the listings go into the table packed as ranges
///   of the mapping, and each is turned into nodes when first used. A drive of a million items is
///   back at mount in the time it takes to read the file once (about 220 bytes an item), and its
///   pages are page cache, not the daemon's resident memory (`load`).
/// - Saving writes the file in pieces, never whole in memory (`save`).
/// - An index from another root, another format or other export settings is ignored, and so is a
///   damaged one (a 64-bit checksum over the whole file, `Checksum64`): the folders are listed again.
/// - Only what the change feed can correct is kept: trusted listings reachable from the root, and
///   no file made here that is not on Drive yet (the upload journal brings those back). A file
///   made here whose creation the feed has already shown is kept (as the feed showed it): the
///   saved position is past that change, and once its upload's end is journaled nothing else
///   would bring it back (chaos finding 36: a restart showed the name free, a second file was made).
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
        guard let fd = try? SystemCall.open(cacheDirectory.appendingPathComponent(fileName).path, O_RDONLY | O_CLOEXEC) else { return nil }
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
    ///
    /// The file is mapped (`MappedFile`), not read: each listing's bytes stay a range of the
    /// mapping. Its checksum is verified a piece at a time, each piece's pages dropped from the
    /// resident set once hashed, and the headers' pages once parsed, so the load's peak is the
    /// table's own structures (the ID hashes, `packedLocation`), not the file: its pages are page
    /// cache, read again only for the folders that are materialized.
    func load(root: DriveFile, configuration: DriveFSConfiguration, now: Double) -> Restored? {
        guard let file = MappedFile(path: path) else { return nil }
        let bytes = file.bytes
        guard bytes.count > Self.magic.count + 8, zip(bytes[0..<Self.magic.count], Self.magic).allSatisfy({ $0 == $1 }) else {
            Log.shared.warning("index", "ignoring \(path): not a drivefs index")
            return nil
        }
        guard Self.checksumHolds(file) else {
            Log.shared.warning("index", "ignoring the damaged index \(path) (checksum)")
            return nil
        }
        var r = MappedReader(bytes, from: Self.magic.count, to: bytes.count - 8)
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
        var released = 0
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
                guard let h = r.uint64() else { return damaged() }
                hashes.append(h)
            }
            guard let length = r.count(), let range = r.skip(length), state.packed[id] == nil else { return damaged() }
            // Restored listings count from now: the change feed from the saved token catches them up.
            NodeTable.storePacked(id, PackedListing(mapped: file, range: range, count: count, listedAt: now, trusted: true,
                                                    subfolders: subfolders, idHashes: hashes), &state)
            state.unconfirmed.insert(id)
            if r.offset - released >= Self.releaseStep {
                file.release(released..<r.offset)
                released = r.offset
            }
        }
        guard r.atEnd else { return damaged() }
        file.release(released..<bytes.count)
        return Restored(state: state, changeToken: token, folders: folderCount, items: state.packedItems)
    }

    /// Bytes of the mapping hashed or parsed between two releases of their pages.
    static let releaseStep = 8 << 20

    /// Whether the trailer's checksum is that of everything before it, hashed `releaseStep` bytes
    /// at a time, each piece's pages released after it.
    private static func checksumHolds(_ file: MappedFile) -> Bool {
        let bytes = file.bytes
        let body = bytes.count - 8
        var running = Checksum64.Running(count: body)
        var at = 0
        while body - at >= 8 {
            let end = min(body / 8 * 8, at + releaseStep)
            running.add(UnsafeRawBufferPointer(rebasing: bytes[at..<end]))
            file.release(at..<end)
            at = end
        }
        let stored = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: body, as: UInt64.self))
        return running.finish(UnsafeRawBufferPointer(rebasing: bytes[at..<body])) == stored
    }

    private func damaged() -> Restored? {
        Log.shared.warning("index", "ignoring the damaged index \(path)")
        return nil
    }

    /// Writes the index in pieces of about `releaseStep` bytes: the packed listings are written
    /// where they are (a restored one from the mapping), never copied into one buffer of the whole
    /// file. The checksum, which is seeded with the body's length, runs over the pieces as they go:
    /// a first pass over the folders' headers gives that length.
    func save(_ table: NodeTable, changeToken: String) {
        let (snapshot, nextInode) = table.indexSnapshot()
        var header = ByteWriter()
        header.raw(Self.magic)
        header.varint(Self.format)
        header.string(table.rootID)
        header.string(Self.fingerprint(table.configuration))
        header.string(changeToken)
        header.varint(nextInode)
        header.varint(UInt64(snapshot.reduce(0) { $0 + $1.listing.count }))
        header.varint(UInt64(snapshot.count))
        // A listing with inode numbers beside its bytes is encoded anew with them, once for its
        // length and once for its write: one folder at a time, never the whole file.
        let body = snapshot.reduce(header.bytes.count) { total, folder in
            let saved = Self.savedForm(folder.id, folder.listing)
            return total + Self.folderHead(folder.id, saved).count + saved.byteCount
        }
        do {
            try AtomicFile.write(to: path, mode: 0o600) { emit in
                var checksum = Checksum64.Running(count: body)
                var pending = header.bytes
                pending.reserveCapacity(Self.releaseStep + 64)
                // Hands on the whole words of `pending`, keeping the rest (under 8 bytes) for the next piece.
                func flush() throws {
                    let whole = pending.count / 8 * 8
                    try pending.withUnsafeBytes { all in
                        let words = UnsafeRawBufferPointer(rebasing: all[0..<whole])
                        checksum.add(words)
                        try emit(words)
                    }
                    pending.removeFirst(whole)
                }
                for (id, held) in snapshot {
                    let listing = Self.savedForm(id, held)
                    pending += Self.folderHead(id, listing)
                    listing.withBytes { pending.append(contentsOf: $0) }
                    if pending.count >= Self.releaseStep { try flush() }
                }
                try flush()
                var trailer = ByteWriter()
                let sum = pending.withUnsafeBytes { checksum.finish($0) }
                trailer.raw(pending)
                trailer.uint32(UInt32(truncatingIfNeeded: sum))
                trailer.uint32(UInt32(truncatingIfNeeded: sum >> 32))
                try trailer.bytes.withUnsafeBytes { try emit($0) }
            }
            // The JSON index of drivefs 0.1's first releases, replaced by this one.
            unlink((path as NSString).deletingLastPathComponent + "/index.json")
        } catch {
            Log.shared.warning("index", "cannot save the index \(path): \(error)")
        }
    }

    /// `listing` as the file keeps it: its inode numbers kept beside its bytes (`inodeOverrides`)
    /// encoded into them.
    private static func savedForm(_ id: String, _ listing: PackedListing) -> PackedListing {
        guard listing.inodeOverrides != nil, let entries = listing.entries(folderID: id) else { return listing }
        return PackedListing(folderID: id, entries: entries, listedAt: listing.listedAt, trusted: listing.trusted)
    }

    /// A folder's record up to its packed bytes: its ID, item count, subfolders, ID hashes and
    /// the bytes' length.
    private static func folderHead(_ id: String, _ listing: PackedListing) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + listing.idHashes.count * 8)
        w.string(id)
        w.varint(UInt64(listing.count))
        w.varint(UInt64(listing.subfolders.count))
        for sub in listing.subfolders { w.string(sub) }
        for h in listing.idHashes {
            w.uint32(UInt32(truncatingIfNeeded: h))
            w.uint32(UInt32(truncatingIfNeeded: h >> 32))
        }
        w.varint(UInt64(listing.byteCount))
        return w.bytes
    }
}

extension NodeTable {
    /// What the index keeps, packed: every trusted listing reachable from the root (a walk down
    /// materialized listings and packed ones' subfolders), without files not on Drive yet, but
    /// with those the change feed has shown on Drive while their landing was not applied yet
    /// (`LocalState.shownByFeed`, still what the node shows).
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
                        guard let node = s.nodes[child], node.local?.isNew != true || node.local?.shownByFeed == node.file else { continue }
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
