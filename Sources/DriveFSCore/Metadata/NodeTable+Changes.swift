import DriveClient
import DriveSupport
import Foundation

/// The table's change feed: a page of Drive's changes applied over the nodes and listings, with
/// what the kernel must forget (docs/architecture.md, "The change feed").
extension NodeTable {
    // MARK: Changes

    /// Applies one page of the change feed: each change is the item's current state (or its
    /// removal). Folders whose listing is held are updated in place (names recomputed), so they
    /// stay as current as a fresh listing; items under folders not listed are dropped from view.
    func apply(_ changes: [DriveChange], readFrom: UInt64 = .max) -> Invalidations {
        changesHere.whenSettled { applyNow(changes, readFrom: readFrom) }
    }

    private func applyNow(_ changes: [DriveChange], readFrom: UInt64) -> Invalidations {
        withState { s in applyChanges(changes, readFrom: readFrom, &s) }
    }

    /// `apply`'s work, under the table's lock (and `changesHere` settled).
    func applyChanges(_ changes: [DriveChange], readFrom: UInt64, _ s: inout State) -> Invalidations {
        var out = s.deferred
        s.deferred = Invalidations()
        s.generation += 1
        let generation = s.generation
        // Packed listings this page changes, decoded once and packed again at its end; likewise
        // the materialized listings it changes, gathered once and rebuilt once at its end.
        var work = PackedWork()
        var moved = MaterializedWork()
        var detached: [Inode] = []
        // Files made here and not landed yet that this page shows on Drive (`LocalState.shownByFeed`).
        var shownNew: [Inode] = []
        for change in changes {
            // Read before a change made here to the same item: older than what the table shows
            // (the next poll brings the item's state after that change).
            if let changed = s.itemsChangedHere[change.fileId], changed > readFrom { continue }
            var visible = change.file.flatMap { $0.trashed ? nil : Self.withPendingPlace($0, &s) }
            if s.removedBeforeLanding[change.fileId] != nil {
                // Removed here: hidden while Drive still shows it; its removal seen, the mark ends.
                if visible == nil { s.removedBeforeLanding[change.fileId] = nil } else { visible = nil }
            }
            let oldInode = s.byID[change.fileId]
            if let oldInode, visible != nil, s.nodes[oldInode]?.local?.isNew == true { shownNew.append(oldInode) }
            let oldParent = moved.parent(of: change.fileId, inTable: oldInode.flatMap { s.nodes[$0]?.parent })
            let newParent = visible?.parents.first.flatMap { s.byID[$0] }
            var affected: [Inode] = []
            if let oldParent { affected.append(oldParent) }
            if let newParent, newParent != oldParent { affected.append(newParent) }
            if let oldInode, oldInode == .root, let visible {
                s.nodes[.root]!.file = visible
                continue
            }
            let newParentIsPacked = applyToPacked(change, visible: visible, generation: generation, &work, &s)
            // A folder kept under a packed listing (NodeTable+Repack.swift) that was renamed, moved or
            // removed: its entry goes, and a listing places it again (same inode) where Drive has it.
            if let oldInode, let node = s.nodes[oldInode], let kept = node.parent, s.keptChildren[kept]?.contains(oldInode) == true,
               visible?.parents.first != s.nodes[kept]?.file.id || visible?.name != node.file.name {
                Self.unkeep(oldInode, from: kept, &s)
                s.nodes[oldInode]!.parent = nil
                out.entries.append((kept, node.name))
                out.inodes.append(oldInode)
                detached.append(oldInode)
            }
            if newParentIsPacked, let visible, let newParent, s.nodes[newParent]?.listing == nil {
                // A folder packed again after the kernel saw it may have a negative entry for the name.
                out.entries.append((newParent, soleShownName(visible)))
            }
            for folder in affected {
                if let id = s.nodes[folder]?.file.id { s.touched[id] = generation }
                guard s.nodes[folder]?.listing != nil else { continue }
                moved.gather(folder, s)
                moved.place(change.fileId, visible, in: folder == newParent ? folder : nil, leaving: folder)
            }
            if let oldInode, let visible { moved.latest[oldInode] = visible }
            // A folder that moved out of view or was removed: its own listing can no longer be
            // kept current by its parent's, so it is listed again when used.
            if let oldInode, visible == nil || newParent == nil, s.nodes[oldInode]?.listing != nil {
                s.nodes[oldInode]!.listing!.trusted = false
            }
            if visible == nil || (newParent == nil && !newParentIsPacked) {
                distrustPacked(change.fileId, &work, &s)
            }
        }
        // In the order the page first touched them, as the changes would have one at a time. A
        // folder that an earlier rebuild let go (removed, nobody holding it) has nothing to show.
        for folder in moved.order where s.nodes[folder]?.listing != nil {
            out.merge(setChildren(folder, Array(moved.files[folder]!.values), &s, savedInodes: work.savedInodes))
        }
        // An item no listing held as a node shows (moved out of view, or into a folder not
        // materialized) may still be held by the kernel: its node shows the item's last state
        // all the same. (Nodes in a rebuilt folder have it already.)
        for (inode, visible) in moved.latest {
            guard var node = s.nodes[inode], node.file != visible else { continue }
            if ContentKey(node.file, exportFormats: configuration.exportFormats)
                != ContentKey(visible, exportFormats: configuration.exportFormats) {
                out.inodes.append(inode)
                node.exportedSize = nil
            }
            node.file = visible
            s.nodes[inode] = node
        }
        // As the page left them: what the saved index may keep of them (its position is past their creation).
        for inode in shownNew where s.nodes[inode]?.local?.isNew == true { s.nodes[inode]!.local!.shownByFeed = s.nodes[inode]!.file }
        for inode in detached { Self.dropIfUnreferenced(inode, &s) }
        finish(&work, &s)
        assert(Self.invariantsHold(s))
        return out
    }

    /// A page of changes' edits to materialized listings: each folder the page touches is gathered
    /// once (its children's files by Drive ID), edited by every change, and rebuilt once at the end
    /// of the page (`setChildren`, which recomputes the folder's names). So a page costs the size of
    /// the folders it touches plus its changes, not their product: 1,000 changes in a folder of
    /// 100,000 items rebuild it once, not 1,000 times under the table's lock.
    struct MaterializedWork {
        var files: [Inode: [String: DriveFile]] = [:]
        /// The gathered folders, first touched first.
        var order: [Inode] = []
        /// Where this page has put each item it moved: the gathered folder that holds it now, or
        /// nil for none of them (removed, or gone to a folder not materialized). Items not here are
        /// where the table shows them.
        var holder: [String: Inode?] = [:]
        /// The last state the page gave each item that was a node when its change was read.
        var latest: [Inode: DriveFile] = [:]

        /// The folder holding `id` as of this page: where the page put it, else where the table has it.
        func parent(of id: String, inTable: Inode?) -> Inode? {
            switch holder[id] {
            case .some(let held): return held
            case .none: return inTable
            }
        }

        /// Gathers `folder`'s children (once a page), leaving out those this page moved elsewhere.
        mutating func gather(_ folder: Inode, _ s: State) {
            guard files[folder] == nil, let listing = s.nodes[folder]?.listing else { return }
            var children: [String: DriveFile] = [:]
            children.reserveCapacity(listing.children.count)
            for inode in listing.children.values {
                guard let file = s.nodes[inode]?.file else { continue }
                if let held = holder[file.id], held != folder { continue }
                children[file.id] = file
            }
            files[folder] = children
            order.append(folder)
        }

        /// `id` leaves the gathered `leaving` and, when `into` is given (a gathered folder), is
        /// there as `file`.
        mutating func place(_ id: String, _ file: DriveFile?, in into: Inode?, leaving: Inode) {
            if into != leaving { files[leaving]?[id] = nil }
            if let into, let file {
                files[into]?[id] = file
                holder[id] = into
            } else if parent(of: id, inTable: leaving) == leaving {
                holder[id] = .some(nil)
            }
        }
    }
}
