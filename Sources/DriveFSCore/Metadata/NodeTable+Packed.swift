import DriveClient
import DriveSupport

/// The compact half of the index: listings of folders nobody has opened, kept packed
/// (`PackedListing`) under the folder's Drive ID, and turned into nodes ("materialized") the first
/// time anything asks for the folder by inode: a lookup in it, a readdir, a create. Prefetching and
/// a restored index fill it; the change feed keeps it current like a materialized listing.
///
/// Why: a node costs 1-2 KB (its DriveFile's strings, the dictionaries that index it), a packed
/// entry 150-250 bytes. A whole drive listed ahead of the user, or restored at mount, then costs
/// tens of MiB for 200,000 items instead of hundreds, and a remount loads it without decoding it.
///
/// All of this runs under the table's lock (`state`), like the rest of NodeTable.
extension NodeTable {
    /// A page of changes' edits to packed listings: each folder it touches is decoded once, edited,
    /// and packed again at the end of the page (`finish`).
    struct PackedWork {
        var entries: [String: [PackedListing.Entry]] = [:]
        /// Items this page put into a packed folder (not yet in `packedLocation`), by ID.
        var added: [String: String] = [:]
        /// Items this page took out of packed folders.
        var removed: Set<String> = []
        var untrusted: Set<String> = []
        /// Inode numbers of items this page took out of packed folders (kept if they become nodes).
        var savedInodes: [String: UInt64] = [:]
    }

    /// Whether `folder` has a listing held (materialized now if it was packed).
    func hasListing(_ folder: Inode) -> Bool {
        withState { s in
            materialize(folder, &s)
            return s.nodes[folder]?.listing != nil
        }
    }

    /// Folders whose listing is held (materialized or packed) and items known.
    var indexExtent: (folders: Int, items: Int) {
        withState { s in
            (s.packed.count + s.nodes.values.filter { $0.listing != nil }.count, s.nodes.count + s.packedItems)
        }
    }

    /// Items in packed listings and their bytes (for tests and the log).
    var packedSummary: (folders: Int, items: Int, bytes: Int) {
        withState { s in (s.packed.count, s.packedItems, s.packed.values.reduce(0) { $0 + $1.byteCount }) }
    }

    /// Turns `folder`'s packed listing into nodes, if it has one and no materialized listing.
    func materialize(_ folder: Inode, _ s: inout State) {
        guard let node = s.nodes[folder], node.listing == nil, node.kind == .directory,
              let packed = s.packed[node.file.id] else { return }
        let id = node.file.id
        Self.dropPacked(id, &s)
        guard let entries = packed.entries(folderID: id) else {
            // Only a damaged index file can do this (its checksum passed): list the folder again.
            Log.shared.warning("index", "the packed listing of \(id) does not decode; it is listed again")
            return
        }
        packed.releasePages()
        if packed.isMapped { s.mappedOrigins[id] = packed }
        var saved: [String: UInt64] = [:]
        for entry in entries { if let inode = entry.inode { saved[entry.file.id] = inode } }
        s.deferred.merge(setChildren(folder, entries.map(\.file), &s, savedInodes: saved))
        s.nodes[folder]!.listing!.listedAt = packed.listedAt
        s.nodes[folder]!.listing!.trusted = packed.trusted
        for entry in entries {
            guard let size = entry.exportedSize, let inode = s.byID[entry.file.id], s.nodes[inode]?.exportedSize == nil,
                  s.nodes[inode]?.file.version == entry.file.version else { continue }
            s.nodes[inode]!.exportedSize = size
        }
    }

    /// Keeps `entries` as the packed listing of `folderID` (replacing any). An item shown in another
    /// folder until now moves here: out of that folder's listing, packed or materialized.
    func pack(_ folderID: String, _ incoming: [PackedListing.Entry], listedAt: Double, trusted: Bool,
              _ s: inout State) -> Invalidations {
        var out = Invalidations()
        // A folder known nowhere (removed while it was listed) is not kept: nothing could reach it.
        guard s.byID[folderID] != nil || s.packedLocation[PackedListing.hash(folderID)] != nil || s.packed[folderID] != nil
        else { return out }
        // As in `setChildren`: a file whose upload or queued change puts it elsewhere is shown
        // there, not here (Drive lists it where it was until that lands); one put here is.
        var entries = incoming.compactMap { entry -> PackedListing.Entry? in
            guard let placed = Self.placedIn(folderID, entry.file, &s) else { return nil }
            var kept = entry
            kept.file = placed
            return kept
        }
        entries += Self.queuedArrivals(in: folderID, listed: Set(incoming.map(\.file.id)), s).map { PackedListing.Entry(file: $0) }
        if let old = s.packed[folderID] {
            // Saved inode numbers survive a relisting, and so do exported sizes of unchanged documents.
            if let previous = old.entries(folderID: folderID) {
                var kept: [String: PackedListing.Entry] = [:]
                for e in previous where e.inode != nil || e.exportedSize != nil { kept[e.file.id] = e }
                if !kept.isEmpty {
                    for i in entries.indices {
                        guard let e = kept[entries[i].file.id] else { continue }
                        entries[i].inode = entries[i].inode ?? e.inode
                        if e.file.version == entries[i].file.version { entries[i].exportedSize = entries[i].exportedSize ?? e.exportedSize }
                    }
                }
            }
            Self.dropPacked(folderID, &s)
        }
        for i in entries.indices where entries[i].inode == nil {
            // An item shown elsewhere as a node keeps its number when it becomes a node here.
            if let inode = s.byID[entries[i].file.id], inode != .root { entries[i].inode = inode.rawValue }
        }
        for entry in entries {
            let id = entry.file.id
            if let other = s.packedLocation[PackedListing.hash(id)], other != folderID {
                Self.removeFromPacked(id, folder: other, &s)
            }
            if let inode = s.byID[id], let node = s.nodes[inode], let parent = node.parent, s.nodes[parent]?.file.id != folderID {
                if s.nodes[parent]?.listing?.children[node.name] == inode {
                    s.nodes[parent]!.listing!.children[node.name] = nil
                    out.entries.append((parent, node.name))
                }
                if s.keptChildren[parent]?.contains(inode) == true {
                    Self.unkeep(inode, from: parent, &s)
                    out.entries.append((parent, node.name))
                }
                s.nodes[inode]!.parent = nil
                Self.dropIfUnreferenced(inode, &s)
            }
        }
        // Folders kept as nodes under this packed listing (NodeTable+Repack.swift) that it no longer
        // shows, or shows under another name: their entries go, and they leave it (a listing places
        // them again where Drive has them).
        if let folder = s.byID[folderID], let kept = s.keptChildren[folder] {
            let names = NameMapper.shownNames(entries.map { entry in
                NameMapper.Child(id: entry.file.id, name: entry.file.name, createdTime: entry.file.createdTime,
                                 exportExtension: entry.file.isGoogleWorkspaceDocument
                                     ? configuration.exportFormats.choice(for: entry.file.mimeType)?.fileExtension : nil)
            })
            let shown = Dictionary(entries.map { ($0.file.id, $0.file) }, uniquingKeysWith: { a, _ in a })
            for inode in kept {
                guard let node = s.nodes[inode] else { continue }
                if let file = shown[node.file.id], names[file.id] == node.name {
                    if node.file.modifiedTime != file.modifiedTime { out.inodes.append(inode) }
                    s.nodes[inode]!.file = file
                    continue
                }
                Self.unkeep(inode, from: folder, &s)
                s.nodes[inode]!.parent = nil
                out.entries.append((folder, node.name))
                out.inodes.append(inode)
                Self.dropIfUnreferenced(inode, &s)
            }
        }
        Self.storePacked(folderID, PackedListing(folderID: folderID, entries: entries, listedAt: listedAt, trusted: trusted), &s)
        return out
    }

    /// Stores `listing` for `folderID` (which holds none), with its items' locations.
    static func storePacked(_ folderID: String, _ listing: PackedListing, _ s: inout State) {
        for h in listing.idHashes { s.packedLocation[h] = folderID }
        s.packed[folderID] = listing
        s.packedItems += listing.count
        s.packedBytes += listing.byteCount
    }

    /// Forgets the packed listing of `folderID` and its items' locations.
    static func dropPacked(_ folderID: String, _ s: inout State) {
        guard let old = s.packed.removeValue(forKey: folderID) else { return }
        for h in old.idHashes where s.packedLocation[h] == folderID { s.packedLocation[h] = nil }
        s.packedItems -= old.count
        s.packedBytes -= old.byteCount
    }

    /// Takes `id` out of the packed listing of `folder`.
    static func removeFromPacked(_ id: String, folder: String, _ s: inout State) {
        guard let old = s.packed[folder], let entries = old.entries(folderID: folder) else { return }
        let kept = entries.filter { $0.file.id != id }
        guard kept.count != entries.count else { return }
        dropPacked(folder, &s)
        storePacked(folder, PackedListing(folderID: folder, entries: kept, listedAt: old.listedAt, trusted: old.trusted), &s)
    }

    // MARK: Changes

    /// The packed folder that holds `id` as of this page, decoding it into `work`.
    private func packedFolder(of id: String, _ work: inout PackedWork, _ s: State) -> String? {
        if let folder = work.added[id] { return folder }
        let h = PackedListing.hash(id)
        guard let folder = s.packedLocation[h] else { return nil }
        if load(folder, &work, s), work.entries[folder]!.contains(where: { $0.file.id == id }) { return folder }
        if work.removed.contains(id) { return nil }
        // Another ID with the same hash: look in every folder that holds the hash.
        for (other, listing) in s.packed where other != folder && listing.idHashes.contains(h) {
            if load(other, &work, s), work.entries[other]!.contains(where: { $0.file.id == id }) { return other }
        }
        return nil
    }

    /// Decodes the packed listing of `folder` into `work` (once); false when there is none.
    private func load(_ folder: String, _ work: inout PackedWork, _ s: State) -> Bool {
        if work.entries[folder] != nil { return true }
        guard let listing = s.packed[folder] else { return false }
        guard let entries = listing.entries(folderID: folder) else {
            work.untrusted.insert(folder)
            return false
        }
        work.entries[folder] = entries
        return true
    }

    /// Applies one change to the packed listings: out of the folder that held the item, into the
    /// one it is in now when that folder is packed. Returns whether it is (so the item is in view).
    func applyToPacked(_ change: DriveChange, visible: DriveFile?, generation: UInt64, _ work: inout PackedWork,
                       _ s: inout State) -> Bool {
        let id = change.fileId
        var previous: PackedListing.Entry?
        if let from = packedFolder(of: id, &work, s) {
            s.touched[from] = generation
            if let i = work.entries[from]!.firstIndex(where: { $0.file.id == id }) { previous = work.entries[from]!.remove(at: i) }
            if let inode = previous?.inode { work.savedInodes[id] = inode }
            work.added[id] = nil
            work.removed.insert(id)
        }
        guard let visible, let to = visible.parents.first else { return false }
        // A folder with a materialized listing is the node table's business (NodeTable.apply).
        if let inode = s.byID[to], s.nodes[inode]?.listing != nil { return false }
        // Touched even with no listing held: a listing of it in flight, read before this change,
        // lacks the item or shows its older state, and is applied untrusted (listed again when
        // used). Applied as read, a new file whose recovered create landed while the crawl listed
        // its folder was missing from it (chaos finding 26's file).
        s.touched[to] = generation
        guard load(to, &work, s) else { return false }
        // An item that was a node keeps its number too (the node goes when its old folder lets it go).
        var entry = PackedListing.Entry(file: visible, inode: previous?.inode ?? s.byID[id]?.rawValue)
        if let previous, previous.file.version == visible.version,
           ContentKey(previous.file, exportFormats: configuration.exportFormats)
            == ContentKey(visible, exportFormats: configuration.exportFormats) {
            entry.exportedSize = previous.exportedSize
        }
        work.entries[to]!.append(entry)
        work.added[id] = to
        work.removed.remove(id)
        return true
    }

    /// A folder removed, or moved out of view: its own packed listing can no longer be kept current
    /// through its parent, so it is listed again when used.
    func distrustPacked(_ folderID: String, _ work: inout PackedWork, _ s: inout State) {
        if s.packed[folderID] != nil { work.untrusted.insert(folderID) }
    }

    /// Packs again every folder the page edited.
    func finish(_ work: inout PackedWork, _ s: inout State) {
        for (folder, entries) in work.entries {
            guard let old = s.packed[folder] else { continue }
            Self.dropPacked(folder, &s)
            Self.storePacked(folder, PackedListing(folderID: folder, entries: entries, listedAt: old.listedAt,
                                                   trusted: old.trusted && !work.untrusted.contains(folder)), &s)
        }
        for folder in work.untrusted where s.packed[folder] != nil { s.packed[folder]!.trusted = false }
    }
}
