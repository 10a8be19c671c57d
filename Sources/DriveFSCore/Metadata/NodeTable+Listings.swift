import DriveClient
import DriveSupport
import Foundation

/// The table's listings: which folders need one, and how a folder's listing (one page set of
/// Drive's children) is applied over what the table holds (docs/architecture.md, "Listings").
extension NodeTable {
    // MARK: Listings

    /// The children to show for a listing: the ordered (shown name, inode) pairs.
    func entries(of folder: Inode) -> [(name: String, inode: Inode, kind: FileKind)]? {
        let now = time.now()
        return withState { s in
            materialize(folder, &s)
            Self.noteUse(folder, at: now, &s)
            guard let listing = s.nodes[folder]?.listing else { return nil }
            return listing.children
                .sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
                .compactMap { name, inode in s.nodes[inode].map { (name, inode, $0.kind) } }
        }
    }

    /// Subfolders of the folder `folderID` (materialized or packed) whose own listing is not fresh:
    /// what prefetching lists next, by Drive ID.
    func subfoldersNeedingListing(of folderID: String) -> [String] {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        return withState { s in
            let candidates: [String]
            if let inode = s.byID[folderID], let listing = s.nodes[inode]?.listing {
                candidates = listing.children.values.compactMap { child in
                    guard let node = s.nodes[child], node.kind == .directory else { return nil }
                    return node.file.id
                }
            } else if let packed = s.packed[folderID] {
                candidates = packed.subfolders
            } else {
                return []
            }
            return candidates.filter { !Self.isFresh($0, now: now, ttl: ttl, s) }.sorted()
        }
    }

    /// Every folder under `rootID` (itself included) without a fresh listing, found by walking down
    /// the fresh ones: what the whole-drive index lists first.
    func foldersNeedingListing(under rootID: String) -> [String] {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        return withState { s in
            var out: [String] = []
            var queue = [rootID]
            var seen = Set(queue)
            var head = 0
            while head < queue.count {
                let id = queue[head]
                head += 1
                guard Self.isFresh(id, now: now, ttl: ttl, s) else {
                    out.append(id)
                    continue
                }
                let below: [String]
                if let inode = s.byID[id], let listing = s.nodes[inode]?.listing {
                    below = listing.children.values.compactMap { s.nodes[$0].flatMap { $0.kind == .directory ? $0.file.id : nil } }
                } else {
                    below = s.packed[id]?.subfolders ?? []
                }
                for sub in below where seen.insert(sub).inserted { queue.append(sub) }
            }
            return out
        }
    }

    /// Whether the folder `id` has a trusted listing, materialized or packed, within the TTL.
    static func isFresh(_ id: String, now: Double, ttl: Double, _ s: State) -> Bool {
        if let inode = s.byID[id], let listing = s.nodes[inode]?.listing {
            return listing.trusted && now - listing.listedAt < ttl
        }
        if let packed = s.packed[id] { return packed.trusted && now - packed.listedAt < ttl }
        return false
    }

    /// Replaces the listing of the folder `folderID` with `files` (all its children, every page),
    /// listed from `generation` on. A folder whose listing is materialized is updated in place:
    /// children keep their inodes (matched by Drive ID), names are recomputed for the whole folder,
    /// and what moved, vanished or changed content is returned for the kernel. Any other folder's
    /// listing is kept packed until something asks for it.
    func applyListing(_ folderID: String, files: [DriveFile], startedAt generation: UInt64) -> Invalidations {
        changesHere.whenSettled { applyListingNow(folderID, files: files, startedAt: generation) }
    }

    private func applyListingNow(_ folderID: String, files: [DriveFile], startedAt generation: UInt64) -> Invalidations {
        let now = time.now()
        return withState { s in
            var out = s.deferred
            s.deferred = Invalidations()
            // Removed here, on Drive until the removal lands: not shown again.
            var files = s.removedBeforeLanding.isEmpty ? files : files.filter { s.removedBeforeLanding[$0.id] == nil }
            var trusted = (s.touched[folderID] ?? 0) <= generation
            // Items changed here since the listing started (an upload that landed, a rename): the
            // listing shows them as they were before. A node's state is newer and replaces it (or
            // the item left the folder since); an item with no node (a recovered upload that landed
            // before anything asked for it) has no newer state here, so the listing is not trusted
            // and is listed again before it is used: applied as read, the file took the revision
            // before its edit, and the next append built on it wrote the older bytes over the edit
            // (chaos finding 28).
            if !s.itemsChangedHere.isEmpty {
                files = files.compactMap { file in
                    guard let changed = s.itemsChangedHere[file.id], changed > generation else { return file }
                    guard let inode = s.byID[file.id], let node = s.nodes[inode], let parent = node.parent else {
                        trusted = false
                        return file
                    }
                    return s.nodes[parent]?.file.id == folderID ? node.file : nil
                }
            }
            // Started before a change made here: it may not show it (a folder made, a file moved
            // in); the listing held already does (materialized, or packed again since), and the
            // change feed brings what else changed.
            if let folder = s.byID[folderID], let changed = s.changedHere[folder], changed > generation {
                if s.nodes[folder]?.listing != nil || s.packed[folderID] != nil {
                    Log.shared.debug("listing", "\(folderID): \(files.count) item(s) listed from generation \(generation), "
                                     + "not applied (changed here at \(changed))")
                    return out
                }
                // Nothing held to keep instead: applied, but listed again before it is used (it
                // may lack a file whose create landed since: the names model checker's seed
                // 943844102437 found a recovered new file missing from the root).
                trusted = false
            }
            // Read from Drive now: as current as the change feed would have made the restored one.
            s.unconfirmed.remove(folderID)
            Log.shared.debug("listing", "\(folderID): \(files.count) item(s) listed from generation \(generation), applied"
                             + (trusted ? "" : " untrusted (a change came in since)")
                             + (s.byID[folderID].flatMap { s.nodes[$0]?.listing } != nil ? "" : " (the folder had no listing)"))
            if let folder = s.byID[folderID], let node = s.nodes[folder], node.kind == .directory, node.listing != nil {
                out.merge(setChildren(folder, files, &s))
                s.nodes[folder]!.listing!.listedAt = now
                s.nodes[folder]!.listing!.trusted = trusted
            } else {
                out.merge(pack(folderID, files.map { PackedListing.Entry(file: $0) }, listedAt: now, trusted: trusted, &s))
            }
            assert(Self.invariantsHold(s))
            return out
        }
    }

    /// Sets the children of `folder` to `files` (creating its listing if needed), with every
    /// kernel invalidation the difference implies.
    /// `savedInodes`: the numbers a restored index gave new children (kept when free).
    func setChildren(_ folder: Inode, _ incoming: [DriveFile], _ s: inout State,
                     savedInodes: [String: UInt64] = [:]) -> Invalidations {
        var out = Invalidations()
        s.childrenRebuilt += incoming.count
        // What Drive shows of a file whose upload is still on its way is where the upload started
        // from: the name and folder given here since are what the queue brings to Drive.
        let folderID = s.nodes[folder]?.file.id
        var files = incoming.compactMap { Self.placedIn(folderID, $0, &s) }
        // Files made here and not on Drive yet stay: Drive cannot list them.
        let incomingIDs = Set(incoming.map(\.id))
        for inode in s.localNew {
            if let node = s.nodes[inode], node.local?.isNew == true, node.parent == folder, !incomingIDs.contains(node.file.id) {
                files.append(node.file)
            }
        }
        // And files a queued change of the last run moves here, while Drive lists them elsewhere.
        if let folderID { files += Self.queuedArrivals(in: folderID, listed: incomingIDs, s) }
        // And files on Drive shown here whose upload has not landed: a rename or move given to it
        // (while Drive was away, or cut by a crash and recovered) is what the queue brings to Drive,
        // which lists them where they were until then. Dropped, the name was free, and a program
        // made the file a second time (chaos finding 30).
        if let children = s.nodes[folder]!.listing?.children {
            let placed = Set(files.map(\.id))
            for inode in children.values {
                guard let node = s.nodes[inode], node.local != nil, node.local?.isNew != true, node.parent == folder,
                      !placed.contains(node.file.id), s.removedBeforeLanding[node.file.id] == nil else { continue }
                files.append(node.file)
            }
        }
        // So do those the journal held at start, waiting for this folder to be a node.
        var recovered: [String: LocalState] = [:]
        if let folderID, let pending = s.recoveredNew.removeValue(forKey: folderID) {
            for (id, entry) in pending {
                s.recoveredNewFolder[id] = nil
                guard s.byID[id] == nil else { continue }
                // On Drive already (its create landed before the crash, under the name and folder
                // it started with: `withPendingPlace` put it here): its node is made local all the
                // same, so that it keeps this place until the upload lands.
                if !incomingIDs.contains(id) { files.append(entry.file) }
                recovered[id] = entry.local
            }
        }
        // A folder never listed has nothing in the kernel's name cache to correct (drivefs answers
        // names, even "no such name", only from listings).
        let hadListing = s.nodes[folder]!.listing != nil
        // A packed folder's kept children are where the kernel saw them: they are its old entries.
        var old = s.nodes[folder]!.listing?.children ?? [:]
        if !hadListing, let kept = s.keptChildren.removeValue(forKey: folder) {
            for inode in kept { if let node = s.nodes[inode] { old[node.name] = inode } }
        }
        let names = NameMapper.shownNames(files.map { file in
            NameMapper.Child(id: file.id, name: file.name, createdTime: file.createdTime,
                             exportExtension: file.isGoogleWorkspaceDocument
                                 ? configuration.exportFormats.choice(for: file.mimeType)?.fileExtension : nil)
        })
        var children: [String: Inode] = [:]
        for file in files {
            guard let name = names[file.id], children[name] == nil else { continue }
            let inode: Inode
            if let existing = s.byID[file.id], var node = s.nodes[existing] {
                inode = existing
                if let oldParent = node.parent, oldParent != folder || node.name != name {
                    out.entries.append((oldParent, node.name))
                    if oldParent != folder, s.nodes[oldParent]?.listing?.children[node.name] == existing {
                        s.nodes[oldParent]!.listing!.children[node.name] = nil
                    }
                    if oldParent != folder { Self.unkeep(existing, from: oldParent, &s) }
                }
                if ContentKey(node.file, exportFormats: configuration.exportFormats)
                    != ContentKey(file, exportFormats: configuration.exportFormats) {
                    out.inodes.append(existing)
                    if let key = ContentKey(node.file, exportFormats: configuration.exportFormats) { out.staleContent.append(key) }
                    node.exportedSize = nil
                } else if node.file.modifiedTime != file.modifiedTime || node.file.size != file.size {
                    out.inodes.append(existing)
                }
                node.file = file
                node.parent = folder
                node.unlinked = false
                node.name = name
                s.nodes[existing] = node
            } else {
                if let saved = savedInodes[file.id], saved > Inode.root.rawValue, saved < s.nextInode,
                   s.nodes[Inode(saved)] == nil {
                    inode = Inode(saved)
                } else {
                    inode = Inode(s.nextInode)
                    s.nextInode += 1
                }
                var node = Node(inode: inode, file: file, parent: folder, name: name)
                node.local = s.recoveredLocal.removeValue(forKey: file.id) ?? recovered[file.id]
                s.nodes[inode] = node
                s.byID[file.id] = inode
                if node.local?.isNew == true { s.localNew.insert(inode) }
            }
            children[name] = inode
            if hadListing && old[name] != inode { out.entries.append((folder, name)) }
        }
        for (name, inode) in old where children[name] != inode {
            out.entries.append((folder, name))
            guard var node = s.nodes[inode], node.parent == folder, !children.values.contains(inode) else { continue }
            // Gone from this folder (deleted, trashed, or moved somewhere not listed).
            node.parent = nil
            s.nodes[inode] = node
            out.inodes.append(inode)
            if let key = ContentKey(node.file, exportFormats: configuration.exportFormats) { out.staleContent.append(key) }
            Self.dropIfUnreferenced(inode, &s)
        }
        if s.nodes[folder]!.listing == nil {
            let now = time.now()
            s.nodes[folder]!.listing = Listing(children: children, listedAt: now, trusted: true)
            s.materializedFolders += 1
            Self.noteUse(folder, at: now, &s)
        } else {
            s.nodes[folder]!.listing!.children = children
        }
        return out
    }

    /// `file` as Drive shows it, with the name and folder given here when its upload (or a
    /// metadata change carried by it) has not landed yet: the queue gives Drive those once it
    /// lands, and until then Drive may show the name the upload started with.
    ///
    /// A new file the journal held at start whose folder is not a node yet (`recoveredNew`) is
    /// placed where the journal has it: its create may have reached Drive before the crash under
    /// the name and folder it started with, and a rename made here since is in the job's request
    /// (chaos finding 12: shown under the old name, the new one answered ENOENT, and Drive ended
    /// with the file under a name renamed away after the queue sent the journaled one).
    ///
    /// A file whose rename or move the journal held at start as a queued change (`queuedPlaces`)
    /// is placed where that change puts it, likewise.
    static func withPendingPlace(_ file: DriveFile, _ s: inout State) -> DriveFile {
        var placed = file
        let node = s.byID[file.id].flatMap { s.nodes[$0] }
        if let node, node.local != nil {
            placed.name = node.file.name
            if let parent = node.parent, let parentID = s.nodes[parent]?.file.id { placed.parents = [parentID] }
        } else if let queued = s.queuedPlaces[file.id] {
            placed.name = queued.name
            placed.parents = [queued.parentID]
            s.queuedPlaces[file.id]!.file = placed
        } else if node != nil {
            return file
        } else if let folderID = s.recoveredNewFolder[file.id], let pending = s.recoveredNew[folderID]?[file.id] {
            placed.name = pending.file.name
            placed.parents = [folderID]
            // Drive's metadata from now on (the journal's request had only name, folder and time),
            // for the folder's listing to show when Drive lists the file elsewhere.
            s.recoveredNew[folderID]![file.id]!.file = placed
        }
        return placed
    }

    /// `file` as a listing of `folderID` shows it (`withPendingPlace`), or nil when its upload or a
    /// queued change puts it in another folder (it is shown there, not here).
    static func placedIn(_ folderID: String?, _ file: DriveFile, _ s: inout State) -> DriveFile? {
        let placed = withPendingPlace(file, &s)
        guard placed.parents.first == nil || placed.parents.first == folderID || placed.parents == file.parents else {
            // Shown in the folder its queued change or upload puts it in. That folder's listing,
            // made before the item's Drive metadata was known here (a restart before any listing
            // showed it), lacks it: listed again when next used, it shows it (`queuedArrivals`).
            // Without this the file was in no folder until then (NamespaceModelCheckTests, chaos
            // finding 27: renamed offline, then `kill -9`).
            if let target = placed.parents.first, let inode = s.byID[target], s.nodes[inode]?.listing != nil,
               s.byID[file.id].flatMap({ s.nodes[$0]?.parent }) != inode {
                s.nodes[inode]!.listing!.trusted = false
            } else if let target = placed.parents.first, s.packed[target] != nil {
                s.packed[target]!.trusted = false
            }
            return nil
        }
        return placed
    }

    /// Files a queued change of the last run moves into `folderID` (`queuedPlaces`) that its
    /// listing from Drive (`listed`, by ID) does not hold yet: a listing of the folder shows them.
    static func queuedArrivals(in folderID: String, listed: Set<String>, _ s: State) -> [DriveFile] {
        s.queuedPlaces.compactMap { id, queued in queued.parentID == folderID && !listed.contains(id) ? queued.file : nil }
    }

    /// The change feed was read to its end: the restored index is as current as a listing.
    func confirmRestoredListings() {
        withState { s in if !s.unconfirmed.isEmpty { s.unconfirmed = [] } }
    }

    /// Every listing is listed again when next used (the change feed lost its position).
    func distrustAllListings() {
        withState { s in
            for inode in Array(s.nodes.keys) where s.nodes[inode]?.listing != nil {
                s.nodes[inode]!.listing!.trusted = false
            }
            for id in Array(s.packed.keys) { s.packed[id]!.trusted = false }
        }
    }
}
