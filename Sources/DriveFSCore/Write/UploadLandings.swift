import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The write-back's last room: what the upload queue's endings do to the mount. At start, what
/// the journal held is shown (new files in their folders until they land, files with new content
/// where their uploads put them, files being removed hidden: `restore`); as each job ends, the
/// node shows Drive's new version unless newer content waits, a conflicted copy appears beside
/// it, a new file removed while its create landed goes to the trash, and a failure is logged
/// (`finished`). Runs on the queue's transfer threads; takes a copy's lock (through
/// `LocalCopies.lockHeld`), then the table's, in the order the core's lock-order comment gives.
final class UploadLandings: Sendable {
    private let table: NodeTable
    private let uploads: any UploadQueueing
    private let copies: LocalCopies
    private let cache: BlockCache
    private let invalidator: Invalidator
    private let backend: any DriveBackend
    private let configuration: DriveFSConfiguration
    private let time: any TimeSource
    /// Where a trash after a landing runs (the core's commit threads).
    private let commits: WorkPool
    /// How each file's uploads last ended (`SyncState`).
    private let verdicts: UploadVerdicts
    /// New files removed while their upload may be landing: whoever takes an ID out (a landing
    /// here, or the removal that put it in) trashes the file (`DriveFilesystem.removeFromDrive`).
    private let removedHere: Locked<Set<String>>
    /// Called after each content landing (a landing in a pinned folder is content to keep).
    private let afterLanding: @Sendable () -> Void

    init(table: NodeTable, uploads: any UploadQueueing, copies: LocalCopies, cache: BlockCache, invalidator: Invalidator,
         backend: any DriveBackend, configuration: DriveFSConfiguration, time: any TimeSource, commits: WorkPool,
         verdicts: UploadVerdicts, removedHere: Locked<Set<String>>, afterLanding: @escaping @Sendable () -> Void) {
        self.table = table
        self.uploads = uploads
        self.copies = copies
        self.cache = cache
        self.invalidator = invalidator
        self.backend = backend
        self.configuration = configuration
        self.time = time
        self.commits = commits
        self.verdicts = verdicts
        self.removedHere = removedHere
        self.afterLanding = afterLanding
    }

    private func nowMillis() -> Int64 { Int64((time.now() * 1000).rounded()) }

    /// What the journal held at start: new files shown in their folders until they land, files
    /// with new content where their uploads put them, files being removed hidden.
    func restore() {
        for (request, path) in uploads.recovered where !request.isNew && !path.isEmpty {
            // The node shows the queued content (its size and time), not Drive's older version.
            var info = stat()
            let size = stat(path, &info) == 0 ? Int64(info.st_size) : 0
            let permissions = request.appProperties[AppPropertyKeys.mode].flatMap { UInt32($0, radix: 8) }
            let kept = request.appProperties.filter { AppPropertyKeys.carried.contains($0.key) }
            // Shown where the upload puts it: a rename of the file is in its request (see `restoreLocalUpdate`).
            let modified = request.modifiedTime ?? nowMillis()
            let placed = DriveFile(id: request.fileID, name: request.name, mimeType: request.mimeType ?? "application/octet-stream",
                                   parents: [request.parentID], size: size, modifiedTime: modified,
                                   appProperties: request.appProperties.isEmpty ? nil : request.appProperties)
            table.restoreLocalUpdate(request.fileID, local: LocalState(isNew: false, size: size, modifiedMillis: modified,
                                                                       permissions: permissions, properties: kept),
                                     placedAs: placed)
        }
        for (request, path) in uploads.recovered where request.isNew && path.isEmpty {
            // A folder made offline (its create is queued), shown as it was.
            let now = request.modifiedTime ?? nowMillis()
            let file = DriveFile(id: request.fileID, name: request.name, mimeType: DriveFile.folderMimeType, parents: [request.parentID],
                                 modifiedTime: now, createdTime: now, appProperties: request.appProperties.isEmpty ? nil : request.appProperties)
            table.restoreLocalNew(file, local: LocalState(isNew: true, size: 0, modifiedMillis: now,
                                                          permissions: AppPropertyKeys.permissions(file)))
        }
        for (request, path) in uploads.recovered where request.isNew && !path.isEmpty {
            var info = stat()
            let size = stat(path, &info) == 0 ? Int64(info.st_size) : 0
            let now = nowMillis()
            let file = DriveFile(id: request.fileID, name: request.name, mimeType: "application/octet-stream",
                                 parents: [request.parentID], size: size, modifiedTime: request.modifiedTime ?? now,
                                 createdTime: now, appProperties: request.appProperties.isEmpty ? nil : request.appProperties)
            table.restoreLocalNew(file, local: LocalState(isNew: true, size: size, modifiedMillis: request.modifiedTime ?? now,
                                                          permissions: AppPropertyKeys.permissions(file)))
        }
        for request in uploads.recoveredPlacings { table.restoreQueuedPlace(request.fileID, name: request.name, parentID: request.parentID) }
        for id in uploads.recoveredRemovals { table.restoreRemoval(id) }
        if !uploads.recovered.isEmpty {
            Log.shared.info("write", "\(uploads.recovered.count) upload(s) from the last run are queued again")
        }
    }

    /// An upload ended: the node shows Drive's new version (unless newer content waits), a
    /// conflicted copy appears beside it, a failure is logged.
    func finished(_ outcome: UploadOutcome) {
        if outcome.contentPath.isEmpty { return changeLanded(outcome) }
        verdicts.note(outcome)
        // A landing in a pinned folder is content to keep (and the cache adopts it below).
        defer { afterLanding() }
        let id = outcome.request.fileID
        if (uploads.contentPath(of: id) ?? outcome.contentPath) == outcome.contentPath {
            let landed = outcome.error == nil && !outcome.wasConflict ? outcome.file : nil
            invalidator.apply(table.forgetRecoveredUpdate(id, landed: landed))
        }
        guard let inode = table.inode(forID: id) else { return trashIfRemoved(outcome) }
        // The copy held for the file, locked across the whole decision and the node's update: an
        // open or a write of the file waits for it, so it sees either the node before this
        // landing with its copy, or the node after it (with the copy, when it is newer).
        let held = copies.lockHeld(inode)
        defer {
            if let held {
                if copies.forgetIfDone(inode, held) { invalidator.apply(Invalidations(inodes: [inode])) }
                held.lock.unlock()
            }
        }
        // Newer content than this upload's: a copy written since (reclaimed, or made while the
        // upload ran), or a later job of the queue. The node then stays local.
        let pendingNewer = (uploads.contentPath(of: id) ?? outcome.contentPath) != outcome.contentPath
        let heldCopy = held.map { $0.isNewer(than: outcome.contentPath) } ?? false
        // A reader of the copy still open: the file keeps showing the copy (its bytes at its size)
        // until the reader closes (`forgetIfDone` then shows Drive's file), when the node would
        // show other bytes than the copy's (an upload that failed, or landed beside the file).
        let copyRead = (held?.handles ?? 0) > 0
        let ownLanding = outcome.error == nil && !outcome.wasConflict ? outcome.file : nil
        if let held, held.noteUploadEnded(outcome.contentPath, landedAs: ownLanding), outcome.error == nil, !outcome.wasConflict,
           let landed = outcome.file, landed.size == held.size, held.sealed, held.path == outcome.contentPath, held.handles == 0,
           let key = ContentKey(landed, exportFormats: configuration.exportFormats) {
            // What was just uploaded is Drive's new version, byte for byte: reading it back costs
            // no download. Only a copy nobody reads: the cache may evict (punch) what it adopted.
            cache.adopt(key, size: held.size, path: held.path, descriptor: held.descriptor)
        }
        if let error = outcome.error {
            Log.shared.error("write", "uploading \(outcome.request.displayPath) failed for good: \(error)"
                             + (outcome.preservedAt.map { "; its content is kept at \($0)" } ?? ""))
            guard !pendingNewer && !heldCopy, let node = table.node(inode) else { return }
            if node.local?.isNew == true, let parent = node.parent {
                // Never reached Drive: it cannot be shown as if it had.
                table.detachChild(parent: parent, name: node.name)
            } else if !copyRead {
                table.update(inode) { $0.local = nil }
                invalidator.apply(Invalidations(inodes: [inode]))
            }
            return
        }
        guard let landed = outcome.file else { return }
        if outcome.wasConflict {
            Log.shared.warning("write", "\(outcome.request.displayPath) changed on Drive since it was opened here: "
                               + "what was written here is uploaded beside it as '\(landed.name)'")
            if let node = table.node(inode), let parent = node.parent {
                _ = try? table.insertChild(parent: parent, name: landed.name, file: landed, local: nil, countLookup: false)
            }
            if !pendingNewer && !heldCopy && !copyRead {
                table.update(inode) { $0.local = nil }
                invalidator.apply(Invalidations(inodes: [inode]))
            }
            return
        }
        // Made again under a new ID (it was gone from Drive), and the change feed showed that file
        // first (also while this ran: one look under the table's lock): it is the file now; the
        // old node goes. (Looked at apart from the update, a feed's page in between made the
        // update give the node another item's ID, a precondition: NamespaceModelCheckTests.)
        func replacedByTheFeed() {
            if let node = table.node(inode), let parent = node.parent { table.detachChild(parent: parent, name: node.name) }
            table.update(inode) { $0.local = nil }
        }
        if landed.id != id, let other = table.inode(forID: landed.id), other != inode { return replacedByTheFeed() }
        let applied = table.update(inode, unlessTaken: landed.id) { node in
            let name = node.file.name
            let parents = node.file.parents
            node.file = landed
            node.file.name = name
            if !parents.isEmpty { node.file.parents = parents }
            // What was changed here is at least as new as what this upload carried (a chmod or
            // touch made on Drive while it ran, or sent after it): it stays what the file shows.
            if let local = node.local {
                node.file.modifiedTime = local.modifiedMillis
                var kept = local.properties
                if let permissions = local.permissions { kept[AppPropertyKeys.mode] = String(permissions, radix: 8) }
                if !kept.isEmpty { node.file.appProperties = (node.file.appProperties ?? [:]).merging(kept) { _, new in new } }
            }
            if !pendingNewer && !heldCopy { node.local = nil }
            // On Drive now, whatever waits to follow: never again "not on Drive yet", or a removal
            // or a rename over it would send nothing and leave it there (chaos finding 14).
            node.local?.isNew = false
        }
        if applied == nil { return replacedByTheFeed() }
        trashIfRemoved(outcome)
    }

    /// A change made offline ended (`UploadQueueing.queueChange`): once nothing more of the item
    /// waits, the node shows Drive's file as the change left it (also after a restart, when the
    /// table showed the name from before the change). Dropped (the item was gone from Drive) or
    /// failed for good (logged by the queue): the change feed says what Drive holds.
    private func changeLanded(_ outcome: UploadOutcome) {
        let id = outcome.request.fileID
        // A folder made here and removed while its create landed: it goes where removals go, as a
        // new file's landing does (`trashIfRemoved`), whatever the table shows of it now.
        if outcome.error == nil, outcome.file != nil, outcome.request.isNew, removedHere.withLock({ $0.contains(id) }) {
            table.forgetQueuedPlace(id)
            return trashIfRemoved(outcome)
        }
        // A rename of the last run's, shown where it put the file until now: Drive's word from here
        // on (applied below when it landed).
        if !uploads.holdsChanges(of: id) { table.forgetQueuedPlace(id) }
        // A folder made offline by the last run, waiting in the table for its folder to be listed
        // (no node yet): made on Drive now, it is Drive's from here on. Kept as made here and not
        // on Drive yet, it became a node with that mark once listed, and an `rmdir` of it sent
        // nothing: it stayed on Drive (chaos finding 29).
        if !uploads.holdsChanges(of: id), uploads.contentPath(of: id) == nil {
            invalidator.apply(table.forgetRecoveredUpdate(id, landed: outcome.error == nil ? outcome.file : nil))
        }
        guard let inode = table.inode(forID: id) else { return }
        let settled = !uploads.holdsChanges(of: id) && uploads.contentPath(of: id) == nil && copies.held(inode) == nil
        guard outcome.error == nil, let landed = outcome.file else {
            if settled { table.update(inode) { node in if node.local?.isNew != true { node.local = nil } } }
            invalidator.apply(Invalidations(inodes: [inode]))
            return
        }
        guard settled else {
            // The change may have landed on the file's new ID (made again by an upload): a node the
            // change feed made for that ID meanwhile is the file, this one is left as it is (an
            // update giving it that ID was a precondition: NamespaceModelCheckTests, fixed seed 20261207).
            _ = table.update(inode, unlessTaken: landed.id) { node in
                let name = node.file.name
                let parents = node.file.parents
                node.file = landed
                node.file.name = name
                node.file.parents = parents
                node.local?.isNew = false
            }
            invalidator.apply(Invalidations(inodes: [inode]))
            return
        }
        table.update(inode) { $0.local = nil }
        invalidator.apply(table.applyLanded(landed))
        invalidator.apply(Invalidations(inodes: [inode]))
    }

    /// A new file removed while its upload was landing: it goes where removals go.
    private func trashIfRemoved(_ outcome: UploadOutcome) {
        guard let file = outcome.file else { return }
        let removed = removedHere.withLock { $0.remove(outcome.request.fileID) != nil }
        guard removed else { return }
        commits.submit { [self] in
            do {
                if configuration.deletePermanently { try backend.delete(file.id) } else { _ = try backend.trash(file.id) }
            } catch DriveError.notFound {
                // Gone already.
            } catch {
                // Not left on Drive (it showed again with the next listing, a file the user removed:
                // NamespaceModelCheckTests): the removal is the queue's, journaled and tried again
                // until Drive takes it, the file hidden meanwhile.
                table.noteRemovedBeforeLanding(file.id)
                let request = UploadRequest(fileID: file.id, isNew: false, parentID: file.parents.first ?? table.rootID, name: file.name,
                                            displayPath: outcome.request.displayPath)
                do throws(FilesystemError) {
                    try uploads.queueRemoval(request)
                    Log.shared.info("write", "\(outcome.request.displayPath) was removed while it uploaded, and removing it from "
                                    + "Drive failed (\(error)); the removal is queued")
                } catch let journal {
                    Log.shared.error("write", "\(outcome.request.displayPath) was removed while it uploaded, but removing it from "
                                     + "Drive failed (\(error)) and the removal could not be queued (\(journal)); it stays on Drive")
                }
            }
        }
    }
}
