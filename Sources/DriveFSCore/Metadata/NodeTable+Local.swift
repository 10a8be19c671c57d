import Foundation
import DriveClient
import DriveSupport

/// Changes made here (creates, renames, removals, writes) applied to the table at once, before
/// Drive's listings or change feed show them.
///
/// Each marks the folders and items it touched with a new generation (`changedHere`): a listing
/// or a page of changes read before that is older than the table and does not undo it.
extension NodeTable {
    private static func noteChangeHere(_ s: inout State, folders: [Inode], ids: [String]) {
        s.generation += 1
        for folder in folders { s.changedHere[folder] = s.generation }
        for id in ids { s.itemsChangedHere[id] = s.generation }
    }

    /// Entries were added to or removed from `folders` here: their mtime and ctime move (in memory).
    private static func noteEntriesChanged(_ s: inout State, folders: [Inode], at millis: Int64) {
        for folder in folders where s.nodes[folder] != nil {
            s.nodes[folder]!.entriesChangedMillis = millis
            s.nodes[folder]!.changedMillis = millis
        }
    }

    private var nowMillis: Int64 { Int64((time.now() * 1000).rounded()) }

    /// Forgets marks older than `generation` on items: every page of changes read from now on is
    /// newer. Marks a listing still in flight may need (it started before them) are kept.
    func pruneChangesHere(before generation: UInt64) {
        withState { s in
            let keep = min(generation, s.listingsInFlight.keys.min() ?? generation)
            s.itemsChangedHere = s.itemsChangedHere.filter { $0.value >= keep }
        }
    }

    /// A listing starts: the generation it is read from (for `applyListing`), kept until
    /// `endListing` so that the marks of changes made here meanwhile are not pruned before it is applied.
    func startListing() -> UInt64 {
        withState { s in
            s.listingsInFlight[s.generation, default: 0] += 1
            return s.generation
        }
    }

    /// The listing started at `generation` was applied, or failed.
    func endListing(_ generation: UInt64) {
        withState { s in
            guard let count = s.listingsInFlight[generation] else { return }
            s.listingsInFlight[generation] = count > 1 ? count - 1 : nil
        }
    }

    /// How many marks of new files removed before they landed are kept at most (each a Drive ID):
    /// past it the oldest go, and such a file could show again until its removal lands.
    static let maximumRemovedBeforeLanding = 16_384

    /// `id`, a new file removed here, may be on Drive until its removal lands (its create was on
    /// its way): listings and changes do not show it again (`State.removedBeforeLanding`).
    func noteRemovedBeforeLanding(_ id: String) {
        withState { s in
            s.removedBeforeLandingOrder += 1
            s.removedBeforeLanding[id] = s.removedBeforeLandingOrder
            if s.removedBeforeLanding.count > Self.maximumRemovedBeforeLanding,
               let oldest = s.removedBeforeLanding.min(by: { $0.value < $1.value })?.key {
                s.removedBeforeLanding[oldest] = nil
            }
        }
    }

    /// Nothing of the removed new file `id` reached Drive, or will: its mark goes.
    func forgetRemovedBeforeLanding(_ id: String) {
        withState { s in _ = s.removedBeforeLanding.removeValue(forKey: id) }
    }

    var removedBeforeLandingCount: Int { withState { $0.removedBeforeLanding.count } }

    func node(forID id: String) -> Node? {
        withState { s in s.byID[id].flatMap { s.nodes[$0] } }
    }

    /// Adds `file` (made here) to `parent` under `name`, counted as one lookup. A new folder gets an
    /// empty listing (it is known to be empty). `EEXIST` when the name is taken, `ESTALE` when the
    /// parent is gone, `EIO` when its listing is not held (the caller lists it first).
    func insertChild(parent: Inode, name: String, file: DriveFile, local: LocalState?,
                     countLookup: Bool = true) throws(FilesystemError) -> Node {
        let now = time.now()
        let millis = nowMillis
        return try withState { s -> Result<Node, FilesystemError> in
            materialize(parent, &s)
            guard let folder = s.nodes[parent] else { return .failure(.stale) }
            guard folder.kind == .directory else { return .failure(.notADirectory) }
            guard folder.listing != nil else { return .failure(.ioError) }
            if folder.listing!.children[name] != nil { return .failure(.exists) }
            guard s.byID[file.id] == nil else { return .failure(.exists) }
            let inode = Inode(s.nextInode)
            s.nextInode += 1
            var node = Node(inode: inode, file: file, parent: parent, name: name)
            node.lookups = countLookup ? 1 : 0
            node.local = local
            if file.isFolder {
                node.listing = Listing(children: [:], listedAt: now, trusted: true)
                s.materializedFolders += 1
            }
            s.nodes[inode] = node
            s.byID[file.id] = inode
            if local?.isNew == true { s.localNew.insert(inode) }
            s.nodes[parent]!.listing!.children[name] = inode
            Self.noteChangeHere(&s, folders: [parent], ids: [file.id])
            Self.noteEntriesChanged(&s, folders: [parent], at: millis)
            assert(Self.invariantsHold(s))
            return .success(node)
        }.get()
    }

    /// The child `name` of `parent` from its listing (which must be held), without counting a lookup.
    func listedChild(_ parent: Inode, _ name: String) throws(FilesystemError) -> Node? {
        try withState { s -> Result<Node?, FilesystemError> in
            materialize(parent, &s)
            guard let folder = s.nodes[parent] else { return .failure(.stale) }
            guard folder.kind == .directory else { return .failure(.notADirectory) }
            guard let listing = folder.listing else { return .failure(.ioError) }
            return .success(listing.children[name].flatMap { s.nodes[$0] })
        }.get()
    }

    /// Takes `name` out of `parent`'s listing (a removal, or the target a rename replaced). The node
    /// lives on while the kernel or an open handle holds it.
    @discardableResult
    func detachChild(parent: Inode, name: String) -> Node? {
        let millis = nowMillis
        return withState { s in
            materialize(parent, &s)
            guard let inode = s.nodes[parent]?.listing?.children[name], var node = s.nodes[inode] else { return nil }
            s.nodes[parent]!.listing!.children[name] = nil
            node.parent = nil
            node.unlinked = true
            node.changedMillis = millis
            s.nodes[inode] = node
            s.localNew.remove(inode)
            s.queuedPlaces[node.file.id] = nil
            Self.noteChangeHere(&s, folders: [parent], ids: [node.file.id])
            Self.noteEntriesChanged(&s, folders: [parent], at: millis)
            Self.dropIfUnreferenced(inode, &s)
            assert(Self.invariantsHold(s))
            return node
        }
    }

    /// Moves `name` of `parent` to `newName` of `newParent` (a rename), replacing what was there;
    /// `file` is the item as Drive answered the rename (nil: unchanged but for name and parent);
    /// an answer of an older `version` than the node shows (a landing applied since) gives only
    /// the name and parents. The inode stays the same.
    /// `source`: the node meant, found by its inode when a listing applied since it was looked up
    /// gave it another name in `parent`.
    func moveChild(parent: Inode, name: String, newParent: Inode, newName: String, file: DriveFile?, source: Inode? = nil,
                   changedMillis: Int64? = nil) {
        let millis = changedMillis ?? nowMillis
        withState { s in
            materialize(parent, &s)
            materialize(newParent, &s)
            var name = name
            if let source, s.nodes[parent]?.listing?.children[name] != source, let node = s.nodes[source], node.parent == parent,
               s.nodes[parent]?.listing?.children[node.name] == source {
                name = node.name
            }
            guard let inode = s.nodes[parent]?.listing?.children[name], var node = s.nodes[inode],
                  let parentID = s.nodes[newParent]?.file.id, s.nodes[newParent]?.listing != nil else { return }
            var touchedIDs = [node.file.id]
            if let replaced = s.nodes[newParent]!.listing!.children[newName], replaced != inode, var old = s.nodes[replaced] {
                old.parent = nil
                old.unlinked = true
                old.changedMillis = millis
                s.nodes[replaced] = old
                s.nodes[newParent]!.listing!.children[newName] = nil
                touchedIDs.append(old.file.id)
                Self.dropIfUnreferenced(replaced, &s)
            }
            s.nodes[parent]!.listing!.children[name] = nil
            if let file, let shown = node.file.version, let answered = file.version, answered < shown {
                // Drive answered before a landing the table has applied since (chaos finding 18):
                // only where the item is now is the answer's.
                node.file.name = file.name
                node.file.parents = file.parents
            } else if let file {
                node.file = file
            } else {
                node.file.name = NameMapper.driveName(forShown: newName)
                node.file.parents = [parentID]
            }
            node.parent = newParent
            node.name = newName
            node.unlinked = false
            node.changedMillis = millis
            s.nodes[inode] = node
            s.nodes[newParent]!.listing!.children[newName] = inode
            // Renamed again while a queued change of the last run's places it: this place now
            // (the queue's jobs of the file carry it).
            if s.queuedPlaces[node.file.id] != nil {
                s.queuedPlaces[node.file.id] = QueuedPlace(name: node.file.name, parentID: parentID, file: node.file)
            }
            Self.noteChangeHere(&s, folders: [parent, newParent], ids: touchedIDs)
            Self.noteEntriesChanged(&s, folders: [parent, newParent], at: millis)
            assert(Self.invariantsHold(s))
        }
    }

    /// An editor's save: the new file `source` (`name` in `parent`, not on Drive) takes the place
    /// and the Drive identity of `replaced` (`newName` in `newParent`): `source`, its inode kept,
    /// gets `file` (the replaced file's Drive item, with its name and folder) and stops being new;
    /// the replaced node leaves its folder, and if the kernel still holds it, it keeps an ID of its
    /// own that names nothing on Drive. False, with nothing changed, when either is not where the
    /// caller saw it.
    func takeOver(parent: Inode, name: String, source: Inode, newParent: Inode, newName: String, replaced: Inode,
                  file: DriveFile) -> Bool {
        let millis = nowMillis
        return withState { s in
            materialize(parent, &s)
            materialize(newParent, &s)
            guard var node = s.nodes[source], node.parent == parent, s.nodes[parent]?.listing?.children[name] == source,
                  var old = s.nodes[replaced], old.parent == newParent, s.nodes[newParent]?.listing?.children[newName] == replaced,
                  old.file.id == file.id, source != replaced else { return false }
            // The replaced node: out of its folder, under an ID of its own.
            s.nodes[newParent]!.listing!.children[newName] = nil
            old.parent = nil
            old.unlinked = true
            old.changedMillis = millis
            s.nodes[replaced] = old
            Self.releaseID(of: replaced, &s)
            Self.dropIfUnreferenced(replaced, &s)
            // The source: the replaced file's identity, at its name. The replaced file as the
            // table has it now (a landing applied since the caller read it stays), under the name
            // and folder given.
            s.nodes[parent]!.listing!.children[name] = nil
            var taken = old.file
            taken.id = file.id
            taken.name = file.name
            taken.parents = file.parents
            node.parent = newParent
            node.name = newName
            s.nodes[source] = node
            Self.takeIdentity(source, as: taken, noting: [parent, newParent], at: millis, &s)
            s.nodes[newParent]!.listing!.children[newName] = source
            assert(Self.invariantsHold(s))
            return true
        }
    }

    /// A new file `inode` (in `parent`, not on Drive) made under the name of a removed file takes
    /// that file's Drive identity (`DriveFilesystem.saveOverRemoved`): it gets `file` (its name and
    /// folder kept) and stops being new; the removed file's node, if the kernel still holds it,
    /// keeps an ID of its own that names nothing on Drive. False, with nothing changed, when the
    /// node is not a new file in `parent`, or the removed file's node is still in a folder.
    func adopt(_ inode: Inode, in parent: Inode, file: DriveFile) -> Bool {
        let millis = nowMillis
        return withState { s in
            guard let node = s.nodes[inode], node.parent == parent, node.local?.isNew == true, node.file.id != file.id
            else { return false }
            if let holder = s.byID[file.id] {
                guard let old = s.nodes[holder], old.parent == nil, holder != inode else { return false }
                Self.releaseID(of: holder, &s)
            }
            var taken = file
            taken.name = node.file.name
            taken.parents = node.file.parents
            Self.takeIdentity(inode, as: taken, noting: [parent], at: millis, &s)
            assert(Self.invariantsHold(s))
            return true
        }
    }

    /// The node `holder` lets go of the Drive ID it shows (another node takes it: `takeOver`,
    /// `adopt`): it keeps an ID of its own that names nothing on Drive, for the kernel that may
    /// still hold it.
    private static func releaseID(of holder: Inode, _ s: inout State) {
        guard var old = s.nodes[holder] else { return }
        s.byID[old.file.id] = nil
        old.file.id = "\(old.file.id)#replaced-\(holder.rawValue)"
        s.byID[old.file.id] = holder
        s.nodes[holder] = old
    }

    /// The take of a Drive identity both saves make (an editor's save, `takeOver`; a file made
    /// again under a removed file's name, `adopt`): the new file `inode` drops its own ID (a new
    /// file's, never on Drive), becomes `taken` (the item's Drive metadata under the name and
    /// folder it is to have), stops being new and is indexed by the taken ID; the change is noted
    /// in `folders` under both IDs. The caller let the taken ID's other holder go first
    /// (`releaseID`) and places the node in its folder's listing.
    private static func takeIdentity(_ inode: Inode, as taken: DriveFile, noting folders: [Inode], at millis: Int64,
                                     _ s: inout State) {
        guard var node = s.nodes[inode] else { return }
        let newID = node.file.id
        s.byID[newID] = nil
        node.file = taken
        node.local?.isNew = false
        node.changedMillis = millis
        s.nodes[inode] = node
        s.byID[taken.id] = inode
        s.localNew.remove(inode)
        noteChangeHere(&s, folders: folders, ids: [newID, taken.id])
        noteEntriesChanged(&s, folders: folders, at: millis)
    }

    /// Changes one node in place (its local state, its Drive metadata after an update).
    @discardableResult
    func update(_ inode: Inode, _ change: (inout Node) -> Void) -> Node? {
        withState { s in updateNow(inode, unlessTaken: nil, change, &s) ?? nil }
    }

    /// `update`, for a change that may give the node the Drive ID `id` (an upload's landing that
    /// made the file again under a new ID): nil, with nothing changed, when another node holds
    /// that ID (the change feed showed the new file first, also between a look and this call).
    func update(_ inode: Inode, unlessTaken id: String, _ change: (inout Node) -> Void) -> Node?? {
        withState { s in updateNow(inode, unlessTaken: id, change, &s) }
    }

    /// Under the table's lock: nil when `id` is another node's (nothing changed), else `update`'s answer.
    private func updateNow(_ inode: Inode, unlessTaken newID: String?, _ change: (inout Node) -> Void, _ s: inout State) -> Node?? {
        guard var node = s.nodes[inode] else { return .some(nil) }
        if let newID, newID != node.file.id, let holder = s.byID[newID], holder != inode { return nil }
        let id = node.file.id
        let hadLocal = node.local != nil
        change(&node)
        precondition(node.file.id == id || s.byID[node.file.id] == nil, "an update gave \(inode) the ID of another item")
        if node.file.id != id {
            s.byID[id] = nil
            s.byID[node.file.id] = inode
        }
        s.nodes[inode] = node
        if node.local?.isNew == true && node.parent != nil { s.localNew.insert(inode) } else { s.localNew.remove(inode) }
        // Its upload landed: it no longer keeps its folder materialized (packed later, NodeTable+Repack.swift).
        if node.local == nil, node.lookups == 0, node.openHandles == 0, let parent = node.parent { Self.noteUnneeded(parent, &s) }
        // And its folder is looked at again for shedding (a write pending kept it).
        if hadLocal, node.local == nil, let parent = node.parent { Self.noteUse(parent, at: time.now(), &s) }
        Self.noteChangeHere(&s, folders: node.parent.map { [$0] } ?? [], ids: [id, node.file.id])
        // A folder kept under a packed listing that the kernel forgot while its change was on its way.
        if hadLocal, node.local == nil, node.parent != nil { Self.dropIfUnreferenced(inode, &s) }
        assert(Self.invariantsHold(s))
        return .some(node)
    }

    /// Whether `ancestor` is `inode` or one of the folders above it (a folder cannot move into itself).
    func isAncestor(_ ancestor: Inode, of inode: Inode) -> Bool {
        withState { s in
            var current: Inode? = inode
            var steps = 0
            while let c = current, steps < 10_000 {
                if c == ancestor { return true }
                current = s.nodes[c]?.parent
                steps += 1
            }
            return false
        }
    }
}

extension NodeTable {
    /// A new file an earlier run wrote and the journal still holds: shown in its folder (when the
    /// folder is known) until its upload lands. Nothing when the item is known already.
    /// New content of a file on Drive that the journal held at start: its node shows it (size,
    /// time, mode) until the upload ends, made now or when its folder is listed.
    ///
    /// `placed`: the file where its queued upload puts it (the name and folder of its request).
    /// A rename made while the upload was queued is given to the upload first and sent to Drive
    /// after, so a crash in between leaves Drive with the old place and the journal with the new
    /// one, which the upload brings to Drive when it lands. The file is shown there from the start
    /// (as a new file waiting for its folder is), never where Drive still has it: shown there, a
    /// program that looked for the new name found none and made the file again, and Drive ended
    /// with two under the name once the upload landed (chaos finding 21, `RecoveredMoveTests`).
    func restoreLocalUpdate(_ fileID: String, local: LocalState, placedAs placed: DriveFile) {
        withState { s in
            guard let parentID = placed.parents.first else { return }
            var file = placed
            if let inode = s.byID[fileID], let node = s.nodes[inode] {
                let shownIn = node.parent.flatMap { s.nodes[$0]?.file.id }
                if node.file.name == placed.name && shownIn == parentID || inode == .root {
                    if node.local == nil { s.nodes[inode]!.local = local }
                    return
                }
                // Restored where Drive had it: taken out of that folder (nothing refers to it yet
                // at start), and placed below as a file waiting for its folder.
                file = node.file
                file.name = placed.name
                file.parents = [parentID]
                if let parent = node.parent, s.nodes[parent]?.listing?.children[node.name] == inode {
                    s.nodes[parent]!.listing!.children[node.name] = nil
                }
                if let parent = node.parent { Self.unkeep(inode, from: parent, &s) }
                s.nodes[inode]!.parent = nil
                Self.dropIfUnreferenced(inode, &s)
                if s.nodes[inode] != nil {
                    // Still held (a folder's kept child): shown as before, where Drive has it.
                    s.nodes[inode]!.local = s.nodes[inode]!.local ?? local
                    return
                }
            }
            s.recoveredLocal[fileID] = nil
            if let folder = s.recoveredNewFolder[fileID] {
                s.recoveredNew[folder]?[fileID] = nil
                if s.recoveredNew[folder]?.isEmpty == true { s.recoveredNew[folder] = nil }
            }
            s.recoveredNew[parentID, default: [:]][fileID] = (file, local)
            s.recoveredNewFolder[fileID] = parentID
            if let parent = s.byID[parentID], s.nodes[parent]?.kind == .directory, s.nodes[parent]?.listing != nil {
                let files = s.nodes[parent]!.listing!.children.values.compactMap { s.nodes[$0]?.file }
                _ = setChildren(parent, files, &s)
            }
            assert(Self.invariantsHold(s))
        }
    }

    /// The upload of a recovered update (or new file) ended before its node was made: Drive
    /// shows it from now on. `landed`: the file as the upload left it on Drive (for a create that
    /// reached Drive before the crash, with the name and folder it was given since), applied as a
    /// change, so that the table shows it there at once, and a page of changes read before now,
    /// which may show it where its create put it, is older than the table for it and does not move
    /// it back (chaos finding 12).
    func forgetRecoveredUpdate(_ fileID: String, landed: DriveFile? = nil) -> Invalidations {
        /// Whether the table held the file as recovered, and no longer does.
        func forget(_ s: inout State) -> Bool {
            let update = s.recoveredLocal.removeValue(forKey: fileID) != nil
            guard let folderID = s.recoveredNewFolder.removeValue(forKey: fileID) else { return update }
            s.recoveredNew[folderID]?[fileID] = nil
            if s.recoveredNew[folderID]?.isEmpty == true { s.recoveredNew[folderID] = nil }
            return true
        }
        guard let landed, landed.id == fileID else {
            withState { s in _ = forget(&s) }
            return Invalidations()
        }
        // The recovered state is forgotten when the landing is applied, in one step: forgotten
        // before, while the landing waited for a rename in flight, the file showed the older entry
        // of a listing (the restored index's) meanwhile (chaos finding 34).
        let readFrom = withState { s -> UInt64? in
            s.recoveredLocal[fileID] != nil || s.recoveredNewFolder[fileID] != nil ? s.generation : nil
        }
        guard let readFrom else { return Invalidations() }
        return changesHere.whenSettled {
            withState { s in
                _ = forget(&s)
                // Skipped when a change made here since (a rename of the node made meanwhile) is newer.
                let out = applyChanges([DriveChange(fileId: fileID, removed: false, time: nil, file: landed)], readFrom: readFrom, &s)
                let folder = s.byID[fileID].flatMap { s.nodes[$0]?.parent }
                Self.noteChangeHere(&s, folders: folder.map { [$0] } ?? [], ids: [fileID])
                return out
            }
        }
    }

    /// A change made offline landed (the queue's `change` job): Drive's file as it left it is
    /// applied as a change, so that the table shows it there (after a restart the table showed
    /// the item as it was before the change). Skipped when a change made here since is newer.
    func applyLanded(_ file: DriveFile) -> Invalidations {
        let readFrom = withState { $0.generation }
        return changesHere.whenSettled {
            withState { s in
                let out = applyChanges([DriveChange(fileId: file.id, removed: false, time: nil, file: file)], readFrom: readFrom, &s)
                let folder = s.byID[file.id].flatMap { s.nodes[$0]?.parent }
                Self.noteChangeHere(&s, folders: folder.map { [$0] } ?? [], ids: [file.id])
                return out
            }
        }
    }

    /// A file whose removal the journal held at start (an `rm` of the last run, or the file a
    /// rename over it replaced, finished by this start): hidden from the start, wherever the
    /// restored index or Drive still shows it, as a file removed in this run is until its removal
    /// lands (`noteRemovedBeforeLanding`).
    func restoreRemoval(_ fileID: String) {
        withState { s in
            guard s.byID[fileID] != .root else { return }
            // Kept for the kernel, which hears of them once it is attached.
            s.deferred.merge(applyChanges([DriveChange(fileId: fileID, removed: true, time: nil, file: nil)], readFrom: .max, &s))
        }
        // After the change above, which would end the mark (it ends when Drive shows the removal).
        noteRemovedBeforeLanding(fileID)
    }

    /// A rename or move of the file on Drive `fileID` that the journal held at start as a queued
    /// change (made offline, then a crash): shown where it puts the file (`name`, a Drive name, in
    /// `parentID`) from the start, until it lands or fails (`forgetQueuedPlace`): not where Drive
    /// and the restored index still have it, or a program looking for the new name would make the
    /// file again (chaos finding 21's kind).
    /// Drive's item `fileID` as the table holds it (a node, or an entry of a packed listing), if it does.
    func knownFile(_ fileID: String) -> DriveFile? {
        withState { s in
            if let inode = s.byID[fileID], let node = s.nodes[inode] { return node.file }
            if let folder = s.packedLocation[PackedListing.hash(fileID)],
               let entry = s.packed[folder]?.entries(folderID: folder)?.first(where: { $0.file.id == fileID }) {
                return entry.file
            }
            return nil
        }
    }

    func restoreQueuedPlace(_ fileID: String, name: String, parentID: String, known fetched: DriveFile? = nil) {
        withState { s in
            guard s.byID[fileID] != .root else { return }
            s.queuedPlaces[fileID] = QueuedPlace(name: name, parentID: parentID, file: nil)
            // Drive's item as the restored index holds it (or as Drive answered: `fetched`), moved
            // there as a change would move it. Not held: placed when a listing or a change shows it.
            var known = fetched
            if known == nil, let inode = s.byID[fileID], let node = s.nodes[inode] {
                known = node.file
            } else if known == nil, let folder = s.packedLocation[PackedListing.hash(fileID)],
                      let entry = s.packed[folder]?.entries(folderID: folder)?.first(where: { $0.file.id == fileID }) {
                known = entry.file
            }
            guard var file = known else { return }
            file.name = name
            file.parents = [parentID]
            s.queuedPlaces[fileID]!.file = file
            s.deferred.merge(applyChanges([DriveChange(fileId: fileID, removed: false, time: nil, file: file)], readFrom: .max, &s))
            assert(Self.invariantsHold(s))
        }
    }

    /// A rename or move of `fileID` made here was queued as a change (Drive away, or another change
    /// of it still queued): the file is kept where the table shows it now until the change lands
    /// (`forgetQueuedPlace`), as after a restart (`restoreQueuedPlace`). Without it, a listing of
    /// either folder read from Drive before the change landed took the file back to where Drive
    /// still had it: the name was free, and a program writing it made a second file (chaos
    /// finding 27, NamespaceModelCheckTests).
    func noteQueuedPlace(_ fileID: String) {
        withState { s in
            guard let inode = s.byID[fileID], inode != .root, let node = s.nodes[inode], let parent = node.parent,
                  let parentID = s.nodes[parent]?.file.id else { return }
            var file = node.file
            file.parents = [parentID]
            s.queuedPlaces[fileID] = QueuedPlace(name: file.name, parentID: parentID, file: file)
        }
    }

    /// Whether the table knows the item `fileID`: a node, or an entry of a packed listing.
    func knowsItem(_ fileID: String) -> Bool {
        withState { s in s.byID[fileID] != nil || s.packedLocation[PackedListing.hash(fileID)] != nil }
    }

    /// The queued change that placed `fileID` (`restoreQueuedPlace`) ended, landed or failed:
    /// Drive shows the file from now on.
    func forgetQueuedPlace(_ fileID: String) {
        withState { s in _ = s.queuedPlaces.removeValue(forKey: fileID) }
    }

    func restoreLocalNew(_ file: DriveFile, local: LocalState) {
        withState { s in
            guard s.byID[file.id] == nil, let parentID = file.parents.first else { return }
            guard let parent = s.byID[parentID], s.nodes[parent]?.kind == .directory else {
                // Its folder is not a node yet (packed in the index, or never seen): shown when
                // the folder is first listed (`setChildren`).
                s.recoveredNew[parentID, default: [:]][file.id] = (file, local)
                s.recoveredNewFolder[file.id] = parentID
                return
            }
            let inode = Inode(s.nextInode)
            s.nextInode += 1
            // Placed by name when the folder's listing is next set (names computed with its siblings').
            var node = Node(inode: inode, file: file, parent: parent, name: file.name)
            node.local = local
            if file.isFolder {
                // A folder made offline (its create queued): what was made in it here (restored
                // after it) is its listing, served offline; stale at once, so that online it is
                // listed from Drive at its first use (what landed in it meanwhile shows too).
                node.listing = Listing(children: [:], listedAt: 0, trusted: true)
                s.materializedFolders += 1
            }
            s.nodes[inode] = node
            s.byID[file.id] = inode
            s.localNew.insert(inode)
            if s.nodes[parent]?.listing != nil {
                let files = s.nodes[parent]!.listing!.children.values.compactMap { s.nodes[$0]?.file }
                _ = setChildren(parent, files, &s)
            }
            assert(Self.invariantsHold(s))
        }
    }
}

/// Operations made here that change Drive first and the table after: a rename sends its request
/// (and the trash of the file it replaces), then moves the node. In between, Drive shows what the
/// table does not yet, and a page of changes or a listing applied then would show the half-done
/// state: the renamed file beside the one it replaces, both under one name, so one of them under
/// a duplicate's suffix (`notes (1AbCdEfG).txt`), and the operation's own update of the table
/// would then miss its node. Pages and listings are applied only while no such operation is in
/// flight (each is short: a request or two; the wait is bounded, a hung request does not stop the
/// change feed for good). Applied after it, a page or listing read before its end is older than
/// the table for what it touched (`changedHere`) and does not undo it.
/// Lock order: this condition, then the table's state.
final class ChangesInFlight: @unchecked Sendable {  // @unchecked: its counts only with `condition` held
    // @unchecked: `inFlight` is only touched under `condition`.
    private let condition = RankedCondition(.changesInFlight)
    private var inFlight = 0
    private var waiting = 0
    static let longestWait: TimeInterval = 60

    /// Pages or listings waiting for operations to end (tests).
    var waitingToApply: Int { condition.lock(); defer { condition.unlock() }; return waiting }

    /// An operation starts (waits while a page or listing is being applied).
    func begin() {
        condition.lock()
        inFlight += 1
        condition.unlock()
    }

    func end() {
        condition.lock()
        inFlight -= 1
        if inFlight == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// `body` once no operation is in flight, with none starting until it returns; nil (and `body`
    /// not run) when one is still in flight after `seconds`.
    func ifSettled<R>(within seconds: TimeInterval, _ body: () -> R) -> R? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: seconds)
        while inFlight > 0 && condition.wait(until: deadline) {}
        return inFlight == 0 ? body() : nil
    }

    /// `body` once no operation is in flight (or after the longest wait), with none starting until it returns.
    func whenSettled<R>(_ body: () -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Self.longestWait)
        waiting += 1
        while inFlight > 0 && condition.wait(until: deadline) {}
        waiting -= 1
        return body()
    }
}
