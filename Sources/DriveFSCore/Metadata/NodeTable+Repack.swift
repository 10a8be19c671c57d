import CSystem
import DriveClient
import DriveSupport

/// Folders packed again once nothing needs their nodes: a walk (`find`, `du`, a backup
/// run) materializes every folder it passes, at 1-2 KB a node; once the kernel has forgotten those
/// nodes, the folder's listing goes back to a `PackedListing` (100-200 bytes an item) and its
/// children's nodes are dropped, so memory after a walk returns to the packed size.
///
/// The rule: a materialized folder is packed again when
/// - no handle is open on it (opendir) and it is in the tree (the root, or a child of a listed folder);
/// - every child has no local state (`Node.local`: a write not on Drive yet), is not a new file
///   (`localNew`), and is not a folder with a materialized listing of its own (folders go back
///   bottom-up: packing one queues its parent);
/// - every child that is not a folder is not held: its lookup count is 0 (the kernel forgot it:
///   libfuse's lookup/forget counting) and no handle is open on it;
/// - no new file restored from the upload journal waits for this folder's listing to place it.
///
/// Subfolders the kernel still holds (a lookup count above 0, a handle open, or held subfolders
/// of their own) do not keep an idle folder materialized (one shed since its last use,
/// NodeTable+Shedding.swift: no `folderUse`): the kernel keeps folders' entries (the shedder never
/// asks for them), so after a walk every folder with subfolders would stay, and with it the nodes
/// of all its files. (A folder in use is not packed for them: each `ls` would decode it again.)
/// Their nodes are *kept*
/// (`keptChildren`) under the packed listing, which has them too, with their inode numbers: a
/// lookup of a kept folder's name is answered from its node without materializing the parent (the
/// kernel revalidating a shell's working directory's path), the parent's next materialization takes
/// the kept nodes back into its listing, and a kept folder goes once the kernel forgot it and
/// nothing else holds it. So a walked tree goes back to no materialized listing at all and one node
/// per folder the kernel holds, and a shell's working directory keeps its node and its ancestors'.
/// A change that renames, moves or removes a kept folder, or a listing of its parent without it,
/// invalidates its entry and detaches it (NodeTable.applyChanges, `pack`); a listing places it
/// again, with its inode, where Drive has it.
///
/// Inode numbers stay: each child's number goes into its packed entry (`PackedListing.Entry.inode`),
/// and materializing gives it back (`setChildren`'s `savedInodes`), so a later lookup answers the
/// same `st_ino`. Exported sizes go with them. The listing keeps its `listedAt` and `trusted`, so a
/// repacked folder is not listed again from Drive before a materialized one would be.
///
/// Bounds: a folder is queued (`repackQueue`, once) when a child's last lookup is forgotten or its
/// last handle closed; each forget or close then looks at queued folders until `repackBudget`
/// child items were examined (at least one folder), under the table's lock as every table change
/// is. What is left waits for the next forget, or for the change poller, which drains the queue in
/// the same batches, taking and releasing the lock for each (`packUnneededFolders`). Nothing ever
/// sweeps the whole tree.
///
/// A folder whose last local change (`changedHere`) is newer than a listing in flight keeps its
/// packed listing when that listing arrives (`applyListing` checks the folder's inode whether its
/// listing is packed or not); when the folder's own node is gone too, its `touched` generation makes
/// that listing untrusted, listed again when used.
extension NodeTable {
    /// Child items one forget, close or batch looks at, at most (one folder at least).
    static let repackBudget = 4_096

    /// `folder` may no longer need its nodes: queue it (once) if its listing is materialized.
    static func noteUnneeded(_ folder: Inode, _ s: inout State) {
        guard s.nodes[folder]?.listing != nil, s.repackQueued.insert(folder).inserted else { return }
        s.repackQueue.append(folder)
    }

    /// Packs queued folders nothing needs, until `budget` child items were examined. Returns how
    /// many folders it packed. The last queued first: a folder packed queues its parent, which is
    /// then looked at next, so a subtree goes back bottom-up within one batch when it fits.
    @discardableResult
    func packUnneeded(budget: Int, _ s: inout State) -> Int {
        var left = budget
        var packed = 0
        while left > 0, let folder = s.repackQueue.popLast() {
            s.repackQueued.remove(folder)
            guard let node = s.nodes[folder], let listing = node.listing else { continue }
            left -= 1 + listing.children.count
            guard Self.isUnneeded(folder, node, listing, s) else { continue }
            repack(folder, node, listing, &s)
            packed += 1
            if let parent = node.parent { Self.noteUnneeded(parent, &s) }
        }
        if packed > 0 { assert(Self.invariantsHold(s)) }
        return packed
    }

    /// Drains the queue in batches of `repackBudget`, taking the table's lock for each (the change
    /// poller calls it between polls, so what forgets left queued does not wait for the next forget).
    ///
    /// Then, when at least `trimAfterNodes` nodes were dropped since it last did, it shrinks the
    /// table's dictionaries (`shrinkIndexes`) and hands the allocator's free pages back to the
    /// system (`malloc_trim`): glibc keeps freed small blocks in
    /// its arenas, so without it the daemon's RSS would stay at its peak after a walk was packed
    /// again. Never on the kernel's threads (it walks the heap: milliseconds for hundreds of MiB).
    @discardableResult
    func packUnneededFolders() -> Int {
        var total = 0
        while true {
            let (packed, more) = withState { s in (packUnneeded(budget: Self.repackBudget, &s), !s.repackQueue.isEmpty) }
            total += packed
            if !more { break }
        }
        let trim = withState { s in
            guard s.droppedSinceTrim >= Self.trimAfterNodes else { return false }
            s.droppedSinceTrim = 0
            Self.shrinkIndexes(&s)
            return true
        }
        if trim { _ = csystem_malloc_trim() }
        return total
    }

    static let trimAfterNodes = 10_000

    /// A Swift dictionary keeps its capacity when its entries go, and `nodes` holds each `Node`
    /// (a few hundred bytes with its `DriveFile`) inline: after a walk of 200,000 items was packed
    /// again, its buckets alone would keep over 100 MiB. So the node and ID dictionaries are copied
    /// into ones of their size when they use under a quarter of their capacity: work in proportion
    /// to the nodes left (few, after a walk went back), done only after `trimAfterNodes` were dropped.
    static func shrinkIndexes(_ s: inout State) {
        if s.nodes.capacity > 4 * s.nodes.count + 1_024 {
            var nodes = [Inode: Node](minimumCapacity: s.nodes.count)
            for (inode, node) in s.nodes { nodes[inode] = node }
            s.nodes = nodes
        }
        if s.byID.capacity > 4 * s.byID.count + 1_024 {
            var byID = [String: Inode](minimumCapacity: s.byID.count)
            for (id, inode) in s.byID { byID[id] = inode }
            s.byID = byID
        }
    }

    /// Whether nothing needs the nodes of `folder`'s children (the rule above).
    static func isUnneeded(_ folder: Inode, _ node: Node, _ listing: Listing, _ s: State) -> Bool {
        guard node.kind == .directory, node.openHandles == 0, node.parent != nil || folder == .root else { return false }
        // Shed since its last use (NodeTable+Shedding.swift): idle, so its held subfolders may be kept.
        let shed = s.folderUse[folder] == nil
        for child in listing.children.values {
            guard let c = s.nodes[child], c.parent == folder, c.local == nil, c.listing == nil, !s.localNew.contains(child),
                  !isHeld(child, c, s) || c.kind == .directory && shed else { return false }
        }
        for inode in s.localNew where s.nodes[inode]?.parent == folder { return false }
        return true
    }

    /// Whether the kernel or a handle holds `inode` (or, for a folder, a kept child of its own).
    static func isHeld(_ inode: Inode, _ node: Node, _ s: State) -> Bool {
        node.lookups > 0 || node.openHandles > 0 || s.keptChildren[inode] != nil
    }

    /// Turns `folder`'s materialized listing back into a packed one and drops its children's nodes,
    /// but for the subfolders still held (kept: the rule above).
    func repack(_ folder: Inode, _ node: Node, _ listing: Listing, _ s: inout State) {
        let id = node.file.id
        var entries: [PackedListing.Entry] = []
        entries.reserveCapacity(listing.children.count)
        var kept = Set<Inode>()
        // In name order, as `ls` shows them: the packed bytes are then the same for the same folder.
        for (_, child) in listing.children.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }) {
            guard let c = s.nodes[child] else { continue }
            entries.append(PackedListing.Entry(file: c.file, exportedSize: c.exportedSize, inode: child.rawValue))
            if Self.isHeld(child, c, s) {
                kept.insert(child)
                continue
            }
            s.nodes[child] = nil
            s.droppedSinceTrim += 1
            if s.byID[c.file.id] == child { s.byID[c.file.id] = nil }
        }
        if !kept.isEmpty { s.keptChildren[folder] = kept }
        s.nodes[folder]!.listing = nil
        s.materializedFolders -= 1
        s.folderUse[folder] = nil
        if let changed = s.changedHere[folder], changed > (s.touched[id] ?? 0) { s.touched[id] = changed }
        Self.dropPacked(id, &s)
        let origin = s.mappedOrigins.removeValue(forKey: id)
        let packed = origin.flatMap { Self.unchanged($0, id, entries) } ?? PackedListing(folderID: id, entries: entries,
                                                                                         listedAt: 0, trusted: true)
        var stored = packed
        stored.listedAt = listing.listedAt
        stored.trusted = listing.trusted
        Self.storePacked(id, stored, &s)
    }

    /// `origin` (the mapped listing `id` was materialized from), with the inode numbers of
    /// `entries` that its own entries lack, when it holds exactly `entries` otherwise; else nil.
    /// Its bytes then stay in the mapping: after a walk of a restored index, the packed index is
    /// still page cache, not heap (docs/benchmarks.md, "Memory across a walk").
    static func unchanged(_ origin: PackedListing, _ id: String, _ entries: [PackedListing.Entry]) -> PackedListing? {
        guard origin.count == entries.count, let old = origin.entries(folderID: id) else { return nil }
        origin.releasePages()
        var byID: [String: PackedListing.Entry] = [:]
        byID.reserveCapacity(entries.count)
        for entry in entries { byID[entry.file.id] = entry }
        var overrides: [UInt64] = []
        overrides.reserveCapacity(old.count)
        var needed = false
        for e in old {
            guard let n = byID[e.file.id], n.file == e.file, n.exportedSize == e.exportedSize,
                  e.inode == nil || e.inode == n.inode else { return nil }
            overrides.append(n.inode ?? 0)
            if e.inode == nil && n.inode != nil { needed = true }
        }
        var kept = origin
        if needed { kept.inodeOverrides = overrides }
        return kept
    }

    /// `inode` leaves the kept children of `folder` (it was one).
    static func unkeep(_ inode: Inode, from folder: Inode, _ s: inout State) {
        guard s.keptChildren[folder]?.remove(inode) != nil else { return }
        if s.keptChildren[folder]!.isEmpty { s.keptChildren[folder] = nil }
    }

    /// Drops `node` if it is a kept child of `parent` that nothing holds any more (the caller checked
    /// its lookups, handles and kept children): its packed entry has it. The parent may have waited
    /// for it (a detached folder with kept children is not dropped before them).
    static func dropIfKept(_ inode: Inode, _ node: Node, under parent: Inode, _ s: inout State) {
        guard s.keptChildren[parent]?.contains(inode) == true, node.listing == nil, node.local == nil,
              !s.localNew.contains(inode) else { return }
        unkeep(inode, from: parent, &s)
        s.nodes[inode] = nil
        s.droppedSinceTrim += 1
        s.folderUse[inode] = nil
        if s.byID[node.file.id] == inode { s.byID[node.file.id] = nil }
        if s.keptChildren[parent] == nil { dropIfUnreferenced(parent, &s) }
    }

    /// The kept child `name` of the packed folder `parent`, when the packed listing may answer for it
    /// (fresh and trusted, or Drive unreachable): a lookup the kernel repeats for a folder it holds.
    static func keptChild(of parent: Inode, named name: String, now: Double, ttl: Double, offline: Bool, _ s: State) -> Inode? {
        guard let kept = s.keptChildren[parent], let folder = s.nodes[parent], folder.listing == nil,
              let packed = s.packed[folder.file.id], offline || (packed.trusted && now - packed.listedAt < ttl),
              offline || !s.unconfirmed.contains(folder.file.id) else { return nil }
        return kept.first { s.nodes[$0]?.name == name }
    }

    /// The name `file` shows under when no sibling shares it (for the kernel's negative entries).
    func soleShownName(_ file: DriveFile) -> String {
        NameMapper.singleName(NameMapper.Child(
            id: file.id, name: file.name, createdTime: file.createdTime,
            exportExtension: file.isGoogleWorkspaceDocument ? configuration.exportFormats.choice(for: file.mimeType)?.fileExtension : nil))
    }

    /// What `drivefs status` shows of the index: items known, folders held and how, nodes, and an
    /// estimate of the memory they take (`MountStatus.Index`).
    var indexStatus: MountStatus.Index {
        withState { s in
            MountStatus.Index(packedFolders: s.packed.count, packedItems: s.packedItems, packedBytes: s.packedBytes,
                              materializedFolders: s.materializedFolders, nodes: s.nodes.count)
        }
    }
}
