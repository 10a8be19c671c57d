import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The namespace (docs/semantics.md, "Writing"; docs/architecture.md, "The write path"): what
/// makes, removes, renames and changes the attributes of items. `create`, `mknod`, `symlink` and
/// `mkdir` make a node under a reserved ID; `unlink`, `rmdir`, `rename` (with an editor's save
/// over a file, `saveOver`) and `setattr` change Drive before they answer, or change only the
/// queued upload of a file not on Drive yet, or are journaled as the queue's jobs (offline, behind
/// a change still queued). The helpers they share with the write-back of content are in
/// `DriveFilesystem+Write.swift`.
extension DriveFilesystem {
    public func create(parent: Inode, name: String, mode: UInt32, flags: Int32, reply: Reply<CreatedFile>) {
        do throws(FilesystemError) { try checkName(name) } catch { return reply.fail(error) }
        guard canWrite else { return reply.fail(.readOnly) }
        onIOThread(reply, "creating", parent) { [self] () throws(FilesystemError) in
            let (node, content) = try makeLocalFile(parent: parent, name: name, permissions: mode & 0o7777, link: nil,
                                                    caller: reply.caller, cancellation: reply.cancellation)
            content.lock.lock()
            content.handles += 1
            content.writers += 1
            content.lock.unlock()
            let opened = registerLocal(node.inode, content, writable: true)
            return CreatedFile(attributes: table.attributes(node), opened: opened)
        }
    }

    /// A new regular file (or a link made here) in `parent`: a reserved ID, an empty local copy,
    /// a node counted as one lookup. Nothing reaches Drive until it is committed.
    private func makeLocalFile(parent: Inode, name: String, permissions: UInt32, link: String?, kind: FileKind = .regular,
                               device: UInt64 = 0, caller: RequestCaller?,
                               cancellation: CancellationFlag?) throws(FilesystemError) -> (Node, LocalContent) {
        let folder = try listedFolder(parent, cancellation: cancellation)
        try requireAddable(folder)
        if try table.listedChild(parent, name) != nil { throw .exists }
        let id = try reserveID()
        let now = nowMillis()
        let kept = link == nil && keepsMode(permissions, defaultBits: 0o644) ? permissions : nil
        // The mode goes in `local` (the upload writes it from there), the rest with the file.
        var properties = newProperties(folder, kind: kind, permissions: nil, device: device, caller: caller)
        if let link {
            properties[AppPropertyKeys.link] = link.utf8.count <= AppPropertyKeys.maximumInlineLinkBytes ? link : ""
        }
        let file = DriveFile(id: id, name: NameMapper.driveName(forShown: name), mimeType: "application/octet-stream", parents: [folder.file.id], size: 0,
                             modifiedTime: now, createdTime: now, appProperties: properties.isEmpty ? nil : properties)
        let content = try LocalContent(newAt: newStagingPath(for: id), blockSize: configuration.blockSize)
        let local = LocalState(isNew: true, size: 0, modifiedMillis: now, permissions: kept)
        let node: Node
        do { node = try table.insertChild(parent: parent, name: name, file: file, local: local) } catch {
            content.discardFile()
            throw error
        }
        locals.withLock { $0[node.inode] = content }
        return (node, content)
    }

    public func makeNode(parent: Inode, name: String, mode: UInt32, device: UInt64, reply: Reply<FileAttributes>) {
        do throws(FilesystemError) { try checkName(name) } catch { return reply.fail(error) }
        guard canWrite else { return reply.fail(.readOnly) }
        // Regular files always; FIFOs, sockets and device nodes are empty files that say what they
        // are, under --posix-metadata only. Directories and links have calls of their own.
        guard let kind = FileKind(modeTypeBits: mode), kind == .regular || kind.isSpecial && configuration.posixMetadata else {
            return reply.fail(.notPermitted)
        }
        onIOThread(reply, "creating", parent) { [self] () throws(FilesystemError) in
            let (node, content) = try makeLocalFile(parent: parent, name: name, permissions: mode & 0o7777, link: nil, kind: kind,
                                                    device: device, caller: reply.caller, cancellation: reply.cancellation)
            try commit(node.inode, content, ready: true, cancellation: reply.cancellation)
            closeLocal(node.inode, content)
            return table.attributes(table.node(node.inode) ?? node)
        }
    }

    public func symbolicLink(parent: Inode, name: String, target: String, reply: Reply<FileAttributes>) {
        do throws(FilesystemError) { try checkName(name) } catch { return reply.fail(error) }
        guard canWrite else { return reply.fail(.readOnly) }
        guard !target.isEmpty, target.utf8.count <= 4095 else { return reply.fail(.invalidArgument) }
        onIOThread(reply, "linking", parent) { [self] () throws(FilesystemError) in
            let (node, content) = try makeLocalFile(parent: parent, name: name, permissions: 0o777, link: target,
                                                    caller: reply.caller, cancellation: reply.cancellation)
            // The target is also the file's content: links too long for a property keep it there.
            content.lock.lock()
            do throws(FilesystemError) {
                try content.write(offset: 0, data: Array(target.utf8))  // a new file: nothing to fetch
                content.lock.unlock()
            } catch {
                content.lock.unlock()
                throw error
            }
            noteLocal(node.inode, size: Int64(target.utf8.count), touch: false)
            try commit(node.inode, content, ready: true, cancellation: reply.cancellation)
            closeLocal(node.inode, content)
            return table.attributes(table.node(node.inode) ?? node)
        }
    }

    public func link(_ inode: Inode, newParent: Inode, newName: String, reply: Reply<FileAttributes>) {
        // Drive has no hard links (a file in two folders is not one: removing it removes both).
        reply.fail(canWrite ? .notPermitted : .readOnly)
    }

    public func makeDirectory(parent: Inode, name: String, mode: UInt32, reply: Reply<FileAttributes>) {
        do throws(FilesystemError) { try checkName(name) } catch { return reply.fail(error) }
        guard canWrite else { return reply.fail(.readOnly) }
        onIOThread(reply, "making the folder", parent) { [self] () throws(FilesystemError) in
            let folder = try listedFolder(parent, cancellation: reply.cancellation)
            try requireAddable(folder)
            if try table.listedChild(parent, name) != nil { throw .exists }
            let permissions = mode & 0o7777
            let properties = newProperties(folder, kind: .directory,
                                           permissions: keepsMode(permissions, defaultBits: 0o755) ? permissions : nil, device: 0,
                                           caller: reply.caller)
            let made: DriveFile
            let id = try reserveID()
            // Offline (or in a folder made offline): the folder is a journaled job under its
            // reserved ID, shown now, made on Drive before anything that goes into it.
            // `mayHaveLanded`: a create of it was sent and its outcome is unknown, so an rmdir
            // before the job runs takes off Drive whatever it made (chaos finding 35).
            func queueFolder(mayHaveLanded: Bool, settles: Double = 0) throws(FilesystemError) -> FileAttributes {
                let now = nowMillis()
                let driveName = NameMapper.driveName(forShown: name)
                let file = DriveFile(id: id, name: driveName, mimeType: DriveFile.folderMimeType, parents: [folder.file.id],
                                     modifiedTime: now, createdTime: now, appProperties: properties.isEmpty ? nil : properties)
                let request = UploadRequest(fileID: id, isNew: true, parentID: folder.file.id, name: driveName, modifiedTime: now,
                                            appProperties: properties, displayPath: describe(parent) + "/" + name)
                try uploads.queueChange(QueuedChange(request: request, places: true, makesFolder: true, mayHaveLanded: mayHaveLanded,
                                                     settles: settles))
                do throws(FilesystemError) {
                    let node = try table.insertChild(parent: parent, name: name, file: file,
                                                     local: LocalState(isNew: true, size: 0, modifiedMillis: now))
                    return table.attributes(node)
                } catch {
                    _ = try? uploads.cancel(id)
                    throw error
                }
            }
            // Decision: with `changeSettle` (the mount's upload delay) a folder's create waits as a
            // new file's upload does, so that the time and mode tar x, `cp -a` and `rsync -a`
            // give it after filling it ride along in the create (merged into its journaled job,
            // `queueChange`): one write a folder, not three. Its files wait for it anyway; an
            // fsync of one of them does not wait for the delay (`nextJob`).
            if configuration.changeSettle > 0 || queuesChange(nil, into: folder) {
                return try queueFolder(mayHaveLanded: false, settles: configuration.changeSettle)
            }
            do {
                made = try backend.createFolder(name: NameMapper.driveName(forShown: name), parent: folder.file.id, modifiedTime: nowMillis(), id: id,
                                                appProperties: properties.isEmpty ? nil : properties)
            } catch {
                // Drive went away while it was tried: queued under the same ID (a create of it
                // that reached Drive after all is found by the queue's; an earlier try may have
                // reached it before Drive went away).
                if wentOffline(error) { return try queueFolder(mayHaveLanded: true) }
                guard mayHaveLanded(error) else { throw FilesystemError.from(error) }
                // An answer lost after Drive made it: Drive says (under its reserved ID). Answered
                // as failed, the program made it again under another ID, and the one that landed
                // stayed on Drive after an rmdir (chaos, seed 975288757273). Drive cannot say: the
                // create is queued under the same ID (it lands once).
                switch onDrive(id) {
                case .there(let found): made = found
                case .gone: throw FilesystemError.from(error)
                case .unknown: return try queueFolder(mayHaveLanded: true)
                }
            }
            let node = try table.insertChild(parent: parent, name: name, file: made, local: nil)
            return table.attributes(node)
        }
    }

    /// Takes `node` off Drive (to the trash, or for good): nothing to do for a file not on Drive
    /// yet, whose queued upload is dropped (or, if it is landing, trashed once it landed).
    /// `mayBeMadeAgain` (an `rm`): a plain file on Drive is removed `removalSettle` seconds later,
    /// by the queue, so that a file made again under its name meanwhile can take its place
    /// (`saveOverRemoved`).
    private func removeFromDrive(_ node: Node, mayBeMadeAgain: Bool = false) throws(FilesystemError) {
        let isNew = node.local?.isNew == true
        // The copy's lock across the journal's record: no commit from it slips in between, and a
        // removal the journal cannot keep changes nothing (the call fails, the file stays as it was).
        let content = locals.withLock { $0[node.inode] }
        // Offline (or behind a queued change of it): the removal is the queue's job too.
        let queues = !isNew && queuesChange(node)
        content?.lock.lock()
        if isNew { removedHere.withLock { _ = $0.insert(node.file.id) } }
        // Its queued content (the last such save, say) dropped: the removal `cancel` queues waits
        // as the rm's own would (below), so that saves made this way in a row keep the file.
        let settles = mayBeMadeAgain && !isNew && !queues && configuration.removalSettle > 0 && mayTakePlace(of: node)
        let cancelled: Bool
        do {
            cancelled = try uploads.cancel(node.file.id, removalSettles: settles ? configuration.removalSettle : 0)
            if queues && !cancelled {
                try uploads.queueRemoval(UploadRequest(fileID: node.file.id, isNew: false, parentID: node.file.parents.first ?? table.rootID,
                                                       name: node.file.name, displayPath: describe(node.inode)))
            }
        } catch {
            if isNew { removedHere.withLock { _ = $0.remove(node.file.id) } }
            content?.lock.unlock()
            throw error
        }
        if let content {
            content.removed = true
            // Nobody has it open: its descriptor goes now, so a removed file's space is free at once.
            copies.forgetIfDone(node.inode, content)
            content.lock.unlock()
        }
        heldForRoom.withLock { _ = $0.remove(node.inode) }
        if isNew {
            // `node` is what the caller looked up, maybe before the file's create landed and the
            // landing was applied (its trashIfRemoved then found nothing to do, and the queue has
            // no job left to cancel): the file is on Drive now and goes to the trash here. Whoever
            // takes its ID out of `removedHere` (this, or a landing applied after the insert) trashes it.
            let landedMeanwhile = table.node(node.inode).map { $0.local?.isNew != true && $0.file.id == node.file.id } ?? false
            guard landedMeanwhile else {
                // No landing can follow to take the mark (the queue removes what it sent, or it
                // sent nothing and holds nothing): dropped, so that the set does not grow with
                // every temporary file made and removed.
                // A folder's create that landed while this ran has no content: the queue says
                // whether its landing is still to be applied (chaos, seed 143116525891: an rmdir in
                // that window left the folder on Drive).
                let pendingLanding = uploads.contentPath(of: node.file.id) != nil || uploads.changeLanding(of: node.file.id)
                if cancelled || !pendingLanding { removedHere.withLock { _ = $0.remove(node.file.id) } }
                // Drive may list the file until its removal lands (the queue's, or the trash that
                // follows its landing): the table does not show it again meanwhile. Nothing was
                // sent when the queue held nothing of it.
                if cancelled || pendingLanding { table.noteRemovedBeforeLanding(node.file.id) }
                return
            }
            guard removedHere.withLock({ $0.remove(node.file.id) != nil }) else { return }
        }
        if cancelled, settles, let parentID = node.file.parents.first { remember(removal: node.file, in: parentID) }
        if queues || cancelled {
            // The removal is the queue's: queued offline (or behind a queued change of the file),
            // or queued by the `cancel` record that dropped the file's jobs, after the one running
            // (if any). Trashed here as well, a trash Drive refused failed the unlink after its
            // queued content was dropped: the file stayed, with the bytes of an older version.
            // Hidden until the removal lands: a listing read before it (once Drive answers again)
            // showed the removed file beside the one renamed over it, two under one name
            // (NamespaceModelCheckTests, chaos finding 27).
            table.noteRemovedBeforeLanding(node.file.id)
            return
        }
        // Made again under a new ID by an upload the node may not show yet: that file goes.
        let driveID = uploads.currentID(of: node.file.id)
        if mayBeMadeAgain, configuration.removalSettle > 0, driveID == node.file.id, let parentID = node.file.parents.first,
           mayTakePlace(of: node) {
            // Decision: an rm of a plain file is journaled and sent a little later (the upload
            // delay), as a new file's upload is: a file made again under the name meanwhile (`rm
            // f; create f; write; close`, as some tools save) becomes its new content instead of a
            // trash plus a create, and keeps its ID (`saveOverRemoved`). Hidden from now on, as
            // any removal the queue holds; a crash sends the removal at the next start.
            try uploads.queueRemoval(UploadRequest(fileID: driveID, isNew: false, parentID: parentID, name: node.file.name,
                                                   displayPath: describe(node.inode)),
                                     settling: configuration.removalSettle)
            table.noteRemovedBeforeLanding(driveID)
            remember(removal: node.file, in: parentID)
            return
        }
        do {
            if configuration.deletePermanently {
                try backend.delete(driveID)
            } else {
                _ = try backend.trash(driveID)
            }
        } catch DriveError.notFound {
            // Gone already (removed elsewhere): what the caller wanted.
        } catch {
            let queue = { () throws(FilesystemError) in
                try self.uploads.queueRemoval(UploadRequest(fileID: node.file.id, isNew: false,
                                                            parentID: node.file.parents.first ?? self.table.rootID,
                                                            name: node.file.name, displayPath: self.describe(node.inode)))
            }
            if wentOffline(error) { return try queue() }
            guard mayHaveLanded(error) else { throw FilesystemError.from(error) }
            // An answer lost after Drive removed it: done (answered as failed, the mount kept the
            // file until the next page of changes took it away: NamespaceModelCheckTests). Still
            // there: the removal failed. Drive cannot say: the removal is queued.
            switch onDrive(driveID) {
            case .there: throw FilesystemError.from(error)
            case .gone: break
            case .unknown: try queue()
            }
        }
    }

    public func removeFile(parent: Inode, name: String, reply: Reply<Void>) {
        guard canWrite else { return reply.fail(.readOnly) }
        onIOThread(reply, "removing", parent) { [self] () throws(FilesystemError) in
            _ = try listedFolder(parent, cancellation: reply.cancellation)
            guard let node = try table.listedChild(parent, name) else { throw .notFound }
            guard node.kind != .directory else { throw .isADirectory }
            if node.file.capabilities?.canTrash == false && node.local?.isNew != true { throw .accessDenied }
            try removeFromDrive(node, mayBeMadeAgain: true)
            table.detachChild(parent: parent, name: name)
        }
    }

    public func removeDirectory(parent: Inode, name: String, reply: Reply<Void>) {
        guard canWrite else { return reply.fail(.readOnly) }
        onIOThread(reply, "removing the folder", parent) { [self] () throws(FilesystemError) in
            _ = try listedFolder(parent, cancellation: reply.cancellation)
            guard let node = try table.listedChild(parent, name) else { throw .notFound }
            guard node.kind == .directory else { throw .notADirectory }
            _ = try listedFolder(node.inode, cancellation: reply.cancellation)
            if let children = table.entries(of: node.inode), !children.isEmpty { throw .notEmpty }
            if node.file.capabilities?.canTrash == false { throw .accessDenied }
            try removeFromDrive(node)
            table.detachChild(parent: parent, name: name)
        }
    }

    public func rename(parent: Inode, name: String, newParent: Inode, newName: String, flags: UInt32, reply: Reply<Void>) {
        guard canWrite else { return reply.fail(.readOnly) }
        let noReplace: UInt32 = 1, exchange: UInt32 = 2
        if flags & exchange != 0 || flags & ~(noReplace | exchange) != 0 { return reply.fail(.invalidArgument) }
        do throws(FilesystemError) { try checkName(newName) } catch { return reply.fail(error) }
        onIOThread(reply, "renaming", parent) { [self] () throws(FilesystemError) in
            _ = try listedFolder(parent, cancellation: reply.cancellation)
            let destination = try listedFolder(newParent, cancellation: reply.cancellation)
            guard let source = try table.listedChild(parent, name) else { throw .notFound }
            if parent == newParent && name == newName { return }
            if source.file.capabilities?.canRename == false && source.local?.isNew != true { throw .accessDenied }
            if source.kind == .directory && table.isAncestor(source.inode, of: newParent) { throw .invalidArgument }
            var replaced: Node?
            if let target = try table.listedChild(newParent, newName) {
                if flags & noReplace != 0 { throw .exists }
                if source.kind == .directory && target.kind != .directory { throw .notADirectory }
                if source.kind != .directory && target.kind == .directory { throw .isADirectory }
                if target.kind == .directory {
                    _ = try listedFolder(target.inode, cancellation: reply.cancellation)
                    if let children = table.entries(of: target.inode), !children.isEmpty { throw .notEmpty }
                }
                if target.inode != source.inode {
                    if target.file.capabilities?.canTrash == false && target.local?.isNew != true { throw .accessDenied }
                    replaced = target
                }
            }
            let parentID = source.file.parents.first
            let newParentID = destination.file.id
            // Drive first, the table after: no page of changes or listing is applied in between.
            table.changesHere.begin()
            defer { table.changesHere.end() }
            if let replaced, try saveOver(source, replaced, parent: parent, name: name, newParent: newParent, newName: newName,
                                          newParentID: newParentID) {
                return
            }
            let driveName = NameMapper.driveName(forShown: newName)
            // A rename over a file takes two steps on Drive; journaled as begun before the first,
            // so that a crash between them is finished by the next start (never both files under
            // the name). A journal that cannot take it fails the rename, nothing changed.
            let replacement = try replaced.map { (replaced: Node) throws(FilesystemError) -> UInt64 in
                let names = UploadRequest(fileID: replaced.file.id, isNew: false, parentID: newParentID, name: replaced.file.name,
                                          displayPath: describe(replaced.inode))
                return try uploads.beginReplacement(of: names, by: source.file.id, name: driveName, parentID: newParentID)
            }
            // Left open when the rename could be neither finished nor undone: the next start finishes it.
            var leaveToRestart = false
            defer { if let replacement, !leaveToRestart { uploads.endReplacement(replacement) } }
            var moved: DriveFile?
            // The renamed item's ctime moves; under --posix-metadata it rides along with the rename's request.
            let changed = nowMillis()
            // The rename failed: the file's queued upload, given the new place first, must not carry
            // it to Drive later (the mount shows the old one).
            func unplace() {
                do throws(FilesystemError) {
                    _ = try uploads.updateMetadata(of: source.file.id) { request in
                        request.name = source.file.name
                        if let parentID { request.parentID = parentID }
                    }
                } catch {
                    Log.shared.error("write", "\(describe(source.inode)): its rename failed, and its queued upload could not be "
                                     + "given its name back (\(error)); it may be renamed on Drive when it lands")
                }
            }
            do throws(FilesystemError) {
                moved = try place(source, name: driveName, parentID: newParentID, from: parentID, changed: changed)
            } catch {
                // The first step failed, but a request whose answer was lost may have landed (a
                // reset after Drive applied it, a server error once the tries ran out, then a
                // refusal of the retry): Drive says whether the source holds the name now. If it
                // does, the rename goes on (over a file, the target must go, or both stay under the
                // name). Answered as failed while Drive had it renamed, the mount showed the old
                // name until the next page of changes brought the new one (NamespaceModelCheckTests).
                // A plain rename's refusal (not EIO) changed nothing: Drive is not asked.
                guard replacement != nil || error.errno == EIO else {
                    unplace()
                    throw error
                }
                switch placedOnDrive(source.file.id, name: driveName, parentID: newParentID) {
                case .placed(let file): moved = file
                case .notPlaced:
                    unplace()
                    throw error
                case .unknown where replacement != nil:
                    // Over a file: the next start decides (its replacement record).
                    leaveToRestart = true
                    throw error
                case .unknown:
                    // A plain rename Drive cannot tell of: queued (it lands, once, when Drive answers).
                    let request = UploadRequest(fileID: source.file.id, isNew: false, parentID: newParentID, name: driveName,
                                                displayPath: describe(source.inode))
                    do throws(FilesystemError) {
                        try uploads.queueChange(QueuedChange(request: request, places: true, leaves: parentID ?? newParentID))
                    } catch let journal {
                        unplace()
                        throw journal
                    }
                }
            }
            if let replaced {
                // POSIX: the target is replaced; on Drive it goes to the trash (or is deleted).
                // Decision: only now, after the source took its name (on Drive, or durably in its
                // queued upload). Drive cannot do both at once, and a crash between the two must
                // never leave the old file gone while the new one is not in place (a target whose
                // upload is queued would be lost outright, a target on Drive trashed with no
                // file under its name). The other way round, a crash in between leaves both
                // under the name, and nothing lost (RenameCrashTests).
                do throws(FilesystemError) {
                    try removeFromDrive(replaced)
                } catch {
                    // The rename fails as a whole: the source goes back where it was.
                    do throws(FilesystemError) {
                        _ = try place(source, name: source.file.name, parentID: parentID ?? newParentID, from: newParentID)
                    } catch let undo {
                        leaveToRestart = true
                        Log.shared.error("write", "\(describe(source.inode)): renaming it over '\(newName)' failed (\(error)), "
                                         + "and putting it back failed too (\(undo)); Drive shows it as '\(newName)' beside the old one "
                                         + "until the next start removes the old one")
                    }
                    throw error
                }
                table.detachChild(parent: newParent, name: newName)
            }
            if var file = moved {
                // Keep only one parent in view: the one it now shows in.
                file.parents = [newParentID]
                moved = file
            }
            table.moveChild(parent: parent, name: name, newParent: newParent, newName: newName, file: moved, source: source.inode,
                            changedMillis: changed)
            // Queued as a change (not sent): shown here until it lands, whatever a listing says meanwhile.
            if moved == nil, source.local?.isNew != true, uploads.holdsChanges(of: source.file.id) {
                table.noteQueuedPlace(source.file.id)
            }
        }
    }

    /// An editor's save (`rsync`, office suites, `sed -i` too): a new file, written and closed
    /// but not on Drive yet, renamed over a file on Drive becomes new content for that file, which
    /// keeps its Drive ID, sharing, comments and revision history: one update when it is uploaded,
    /// instead of a create and a trash (and a save made again before the last one went up
    /// supersedes it: still one update). Nothing is sent now; the queued upload is retargeted in
    /// one journal record. False (the ordinary rename follows) unless both are plain files, the
    /// new file is closed and its upload has not started, and the replaced file is on Drive,
    /// editable and not open. Its own queued uploads are superseded; one on its way stays, and the
    /// save goes after it (the queue's `retarget`).
    func saveOver(_ source: Node, _ replaced: Node, parent: Inode, name: String, newParent: Inode, newName: String,
                  newParentID: String) throws(FilesystemError) -> Bool {
        guard source.kind == .regular, replaced.kind == .regular, source.local?.isNew == true, replaced.local?.isNew != true,
              replaced.openHandles == 0, !replaced.file.isGoogleWorkspaceDocument, replaced.file.capabilities?.canEdit != false,
              replaced.file.appProperties?[AppPropertyKeys.link] == nil, replaced.file.parents.contains(newParentID),
              let content = locals.withLock({ $0[source.inode] }) else { return false }
        let replacedCopy = locals.withLock { $0[replaced.inode] }
        // Lock order: the new file's copy, then the replaced one's (no other path holds two).
        content.lock.lock()
        defer { content.lock.unlock() }
        replacedCopy?.lock.lock()
        defer { replacedCopy?.lock.unlock() }
        guard locals.withLock({ $0[source.inode] === content && $0[replaced.inode] === replacedCopy }), content.handles == 0,
              content.early == nil, !content.removed,
              let current = table.node(source.inode), current.local?.isNew == true, current.file.id == source.file.id,
              // The replaced file as the table has it now: an upload of it may have landed since
              // the rename looked it up (its new revision is what this content goes over).
              let replacedNow = table.node(replaced.inode), replacedNow.file.id == replaced.file.id,
              replacedNow.local?.isNew != true, replacedNow.openHandles == 0
        else { return false }
        if let replacedCopy {
            // A copy kept only until its upload lands: nothing in it that the queue does not hold.
            guard replacedCopy.handles == 0, replacedCopy.writers == 0, !replacedCopy.isDirty, !replacedCopy.hasUnreadyCommit
            else { return false }
        }
        var file = replacedNow.file
        file.name = NameMapper.driveName(forShown: newName)
        file.parents = [newParentID]
        // Written on the version Drive has: the one the replaced file's queued upload (if any)
        // was written on, else the one the mount shows.
        let base: (revision: String?, md5: String?) = uploads.contentPath(of: file.id) != nil
            ? uploads.queuedBase(of: file.id) : (file.headRevisionId, file.md5Checksum)
        let request = UploadRequest(fileID: file.id, isNew: false, parentID: newParentID, name: file.name, mimeType: nil,
                                    modifiedTime: current.local?.modifiedMillis, appProperties: appProperties(current),
                                    baseRevision: base.revision, baseMD5: base.md5, displayPath: describe(replaced.inode))
        guard try uploads.retarget(source.file.id, to: request) else { return false }
        // The base the queue took (over a landing of ours it knew of and the table did not yet).
        let taken = uploads.queuedBase(of: file.id)
        content.rebase(revision: taken.revision, md5: taken.md5)
        if let replacedCopy {
            // Its content was the queue's (superseded now): the copy goes without touching it.
            replacedCopy.removed = true
            locals.withLock { l in if l[replaced.inode] === replacedCopy { l[replaced.inode] = nil } }
        }
        if !table.takeOver(parent: parent, name: name, source: source.inode, newParent: newParent, newName: newName,
                           replaced: replaced.inode, file: file) {
            // Not reachable while the rename holds both folders (the kernel's locks, and no page
            // of changes applied meanwhile); said loudly if it ever is: the queue holds the content.
            Log.shared.error("write", "\(describe(source.inode)): its save over '\(newName)' is queued, but the mount's table "
                             + "changed under the rename; remount to see it")
        }
        Log.shared.debug("write", "\(describe(source.inode)): saved as new content of \(file.id)")
        return true
    }

    /// Whether a file made again under `node`'s name may take its place once it is removed: a
    /// plain file on Drive that may be edited (`saveOverRemoved`).
    private func mayTakePlace(of node: Node) -> Bool {
        node.kind == .regular && node.local?.isNew != true && !node.file.isGoogleWorkspaceDocument
            && node.file.capabilities?.canEdit != false && node.file.appProperties?[AppPropertyKeys.link] == nil
    }

    /// The removal of `file` from `parentID` waits (`removalSettle`, or the `seconds` a restart
    /// left of it): remembered by its name there.
    func remember(removal file: DriveFile, in parentID: String, for seconds: Double? = nil) {
        let now = ProcessInfo.processInfo.systemUptime
        recentRemovals.withLock { r in
            if r.count >= 256 { r = r.filter { $0.value.until > now } }
            r[RemovedName(parentID: parentID, name: file.name)] = RecentRemoval(file: file, until: now + (seconds ?? configuration.removalSettle))
        }
    }

    /// A removal whose wait a restart cut short (`recoveredWaitingRemovals`), as the last run
    /// remembered it: `file` (Drive's, its revision the base of a save over it) under the
    /// request's name and folder.
    func rememberRecovered(removal request: UploadRequest, file known: DriveFile, for seconds: Double) {
        var file = known
        file.name = request.name
        file.parents = [request.parentID]
        remember(removal: file, in: request.parentID, for: seconds)
    }

    /// A file on Drive removed here (`rm f`) and made again under its name in its folder before
    /// its removal was sent (`removalSettle`), as some tools save (`rm f; create f; write; close`):
    /// once the new file's last handle closed, its content becomes new content of the removed
    /// file, which keeps its Drive ID, sharing and revision history: the new file's queued create
    /// and the removed file's queued removal become one update, in one journal record
    /// (`takeRemovedPlace`: a crash sees both, or the update alone), and the node takes the
    /// removed file's identity. Nothing when no such removal waits, or its removal was sent or
    /// is on its way, or the new file is open, written since its commit, or already uploading.
    func saveOverRemoved(_ inode: Inode, _ content: LocalContent) {
        guard configuration.removalSettle > 0, let node = table.node(inode), node.kind == .regular, node.local?.isNew == true,
              let parentID = node.file.parents.first else { return }
        let key = RemovedName(parentID: parentID, name: node.file.name)
        guard let removed = recentRemovals.withLock({ $0[key] }) else { return }
        content.lock.lock()
        defer { content.lock.unlock() }
        guard locals.withLock({ $0[inode] === content }), content.handles == 0, content.writers == 0, content.early == nil,
              !content.removed, !content.isDirty, !content.hasUnreadyCommit, content.committed != 0,
              let current = table.node(inode), current.local?.isNew == true, current.file.id == node.file.id,
              current.file.parents.first == parentID, current.file.name == node.file.name, let parent = current.parent,
              table.node(forID: removed.file.id).map({ $0.parent == nil }) ?? true
        else { return }
        var file = removed.file
        file.name = current.file.name
        file.parents = [parentID]
        let request = UploadRequest(fileID: file.id, isNew: false, parentID: parentID, name: file.name, mimeType: nil,
                                    modifiedTime: current.local?.modifiedMillis, appProperties: appProperties(current),
                                    baseRevision: file.headRevisionId, baseMD5: file.md5Checksum, displayPath: describe(inode))
        do throws(FilesystemError) {
            guard try uploads.takeRemovedPlace(current.file.id, of: request) else { return }
        } catch {
            // Nothing changed: the removal and the create go as they are.
            Log.shared.warning("write", "\(describe(inode)): could not make it new content of the file removed under its name "
                               + "(\(error)); that file goes to the trash and this one is created")
            return
        }
        recentRemovals.withLock { r in if r[key]?.file.id == file.id { r[key] = nil } }
        let taken = uploads.queuedBase(of: file.id)
        content.rebase(revision: taken.revision, md5: taken.md5)
        table.forgetRemovedBeforeLanding(file.id)
        if !table.adopt(inode, in: parent, file: file) {
            // Not reachable while the copy's lock holds the file's commits and the table showed it
            // here just now; said loudly if it ever is: the queue holds the content.
            Log.shared.error("write", "\(describe(inode)): it is queued as new content of \(file.id), removed under its name, "
                             + "but the mount's table changed meanwhile; remount to see it")
        }
        Log.shared.debug("write", "\(describe(inode)): made again under a removed file's name: new content of \(file.id)")
    }

    enum Placed {
        case placed(DriveFile), notPlaced, unknown
    }

    /// Whether Drive shows the file `id` as `name` in `parentID` (not trashed).
    private func placedOnDrive(_ id: String, name: String, parentID: String) -> Placed {
        switch onDrive(id) {
        case .there(let file): return file.name == name && file.parents.contains(parentID) ? .placed(file) : .notPlaced
        case .gone: return .notPlaced
        case .unknown: return .unknown
        }
    }

    enum OnDrive {
        case there(DriveFile), gone, unknown
    }

    /// What Drive holds of `id` now (one files.get): the item, or gone (deleted or trashed), or
    /// unknown when Drive does not answer. Asked after a request whose answer may have been lost
    /// (`mayHaveLanded`), to tell whether it was carried out.
    private func onDrive(_ id: String) -> OnDrive {
        do {
            let file = try backend.getFile(id)
            return file.trashed ? .gone : .there(file)
        } catch DriveError.notFound {
            return .gone
        } catch {
            return .unknown
        }
    }

    /// Gives `source` the Drive name `name` in the folder `parentID` (from `oldParentID`): in its queued upload (journaled), and on Drive unless it is a new
    /// file not there yet (its upload carries the name and folder). The file as Drive now has it,
    /// or nil when no request was made.
    private func place(_ source: Node, name: String, parentID: String, from oldParentID: String?, changed: Int64? = nil) throws(FilesystemError) -> DriveFile? {
        let ctime = configuration.posixMetadata ? changed.map { [AppPropertyKeys.changed: String($0)] } : nil
        let queued = try uploads.updateMetadata(of: source.file.id) { request in
            request.name = name
            request.parentID = parentID
            if let ctime { request.appProperties.merge(ctime) { $1 } }
        }
        // No job of the file, and its copy never committed: its create has not gone, and will
        // carry the name. Unless it has gone: landed on Drive, in the window before the mount
        // hears of it (the queue still holds that landing), the file open again with a new copy.
        let unsent = locals.withLock { $0[source.inode] }.map { c -> Bool in
            c.lock.lock(); defer { c.lock.unlock() }
            return !c.sealed && c.committed == 0
        } ?? false
        let landing = !queued && uploads.contentPath(of: source.file.id) != nil
        if source.local?.isNew == true && (queued || unsent && !landing) {
            Log.shared.debug("write", "\(describe(source.inode)): renamed to '\(name)' in \(parentID), carried by its create")
            return nil
        }
        // Offline: a queued upload of the file carries the rename (it lands after it); otherwise
        // the rename is a job of its own, in order with the file's others.
        func queueRename() throws(FilesystemError) -> DriveFile? {
            if queued { return nil }
            let request = UploadRequest(fileID: source.file.id, isNew: false, parentID: parentID, name: name,
                                        appProperties: ctime ?? [:], displayPath: describe(source.inode))
            try uploads.queueChange(QueuedChange(request: request, places: true, leaves: oldParentID ?? parentID))
            return nil
        }
        if queuesChange(source, into: table.inode(forID: parentID).flatMap { table.node($0) }) { return try queueRename() }
        // Made again under a new ID by an upload the node may not show yet: the rename goes there,
        // and the node keeps its ID (the table indexes it so) until that landing is applied.
        let driveID = uploads.currentID(of: source.file.id)
        do {
            var file: DriveFile
            if oldParentID == parentID || oldParentID == nil {
                file = try backend.updateMetadata(driveID, name: name, mimeType: nil, modifiedTime: nil, appProperties: ctime)
            } else {
                // The name always goes with the move (free in the same request): the table's name
                // is not proof of Drive's.
                file = try backend.move(driveID, addParent: parentID, removeParent: oldParentID, newName: name, appProperties: ctime)
            }
            file.id = source.file.id
            Log.shared.debug("write", "\(describe(source.inode)): renamed on Drive (\(driveID)) to '\(file.name)' in \(file.parents)"
                             + (queued ? ", and in its queued upload" : ""))
            return file
        } catch {
            if wentOffline(error) { return try queueRename() }
            throw FilesystemError.from(error)
        }
    }

    public func setAttributes(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64?, reply: Reply<FileAttributes>) {
        guard let node = table.node(inode) else { return reply.fail(.stale) }
        let asksAnything = changes != AttributeChanges()
        var asked = changes
        if asked.userID == UInt32.max { asked.userID = nil }
        if asked.groupID == UInt32.max { asked.groupID = nil }
        if !configuration.posixMetadata {
            // Ownership stays the mounting user's: chown to them is accepted (cp -p, tar, rsync do it).
            if let uid = asked.userID, uid != configuration.userID { return reply.fail(.notPermitted) }
            if let gid = asked.groupID, gid != configuration.groupID { return reply.fail(.notPermitted) }
            asked.userID = nil
            asked.groupID = nil
        }
        let changes = asked
        // Under --posix-metadata the kernel has checked that the caller may chown (the mount has
        // `default_permissions`, and shows the owners kept): what is asked is kept.
        let changesSomething = changes.size != nil || changes.permissions != nil || changes.modified != nil
            || changes.userID != nil || changes.groupID != nil
        guard changesSomething else {
            // chown to the owner it has, an atime alone: nothing for Drive, but its ctime moves.
            if canWrite && asksAnything {
                let now = nowMillis()
                table.update(inode) { $0.changedMillis = now }
            }
            return reply.succeed(table.attributes(table.node(inode) ?? node))
        }
        guard canWrite else { return reply.fail(.readOnly) }
        // Drive holds no file this large (5 TB): refused at once, before anything changes.
        if let size = changes.size, size > configuration.maximumFileSize { return reply.fail(.fileTooLarge) }
        onIOThread(reply, "changing", inode) { [self] () throws(FilesystemError) in
            try setAttributesNow(node, changes, handle: handle, cancellation: reply.cancellation)
            guard let current = table.node(inode) else { throw .stale }
            return table.attributes(current)
        }
    }

    private func setAttributesNow(_ node: Node, _ changes: AttributeChanges, handle: UInt64?,
                                  cancellation: CancellationFlag?) throws(FilesystemError) {
        let inode = node.inode
        if let size = changes.size {
            guard size >= 0 else { throw .invalidArgument }
            guard node.kind == .regular else { throw node.kind == .directory ? .isADirectory : .invalidArgument }
            try requireEditable(node)
            let viaHandle = handle.flatMap { handles.file($0) }.flatMap { $0.writable ? $0.local : nil }
            let truncate = { [self] (content: LocalContent) throws(FilesystemError) -> Bool in
                try content.makeWritable(reclaim: { uploads.reclaim(node.file.id)?.contentPath },
                                         newPath: { newStagingPath(for: node.file.id) })
                // A truncate to the size the file has changes nothing (no time either).
                let changes = content.size != size
                try content.truncate(to: size)
                if changes { noteLocal(inode, size: size) }
                // truncate(2) without an open file: it is a whole change of its own (committed
                // once the copy's lock is let go: completing it may fetch from Drive).
                return viaHandle == nil && content.writers == 0
            }
            if let viaHandle {
                viaHandle.lock.lock()
                defer { viaHandle.lock.unlock() }
                _ = try truncate(viaHandle)
            } else {
                var committed: LocalContent?
                let done = try withLocalContent(inode, create: true) { content throws(FilesystemError) -> Bool in
                    if try truncate(content) { committed = content }
                    return true
                }
                guard done != nil else { throw .ioError }
                if let committed {
                    try commit(inode, committed, ready: true, cancellation: cancellation, when: { $0.writers == 0 })
                    closeLocal(inode, committed)
                }
            }
        }
        guard changes.permissions != nil || changes.modified != nil || changes.userID != nil || changes.groupID != nil else { return }
        let permissions = changes.permissions
        let changed = nowMillis()
        let modified: Int64? = changes.modified.map { time in
            switch time {
            case .now: return changed
            case .millis(let m): return m
            }
        }
        // What --posix-metadata keeps of the change besides the mode (owner, group, ctime).
        var kept: [String: String] = [:]
        if let uid = changes.userID { kept[AppPropertyKeys.owner] = String(uid) }
        if let gid = changes.groupID { kept[AppPropertyKeys.group] = String(gid) }
        if configuration.posixMetadata { kept[AppPropertyKeys.changed] = String(changed) }
        guard let current = table.node(inode) else { throw .stale }
        if current.file.capabilities?.canEdit == false && current.local?.isNew != true { throw .accessDenied }
        // Content still to go (written and not committed yet, or queued): the upload carries the
        // change. Decided under the copy's lock, so a close's commit cannot slip between the
        // decision and the node's update and upload without it. A copy with nothing to commit
        // (`touch` and `chmod` through a handle that wrote nothing) carries nothing: the change
        // goes to Drive now, or it would never get there.
        let held = locals.withLock { $0[inode] }
        held?.lock.lock()
        let carried = held.map { !$0.removed && ($0.isDirty || $0.hasUnreadyCommit) } ?? false
        let modeText = permissions.map { String($0, radix: 8) }
        let keptNow = kept
        let queued = try uploads.updateMetadata(of: current.file.id) { request in
            if let modeText { request.appProperties[AppPropertyKeys.mode] = modeText }
            if let modified { request.modifiedTime = modified }
            request.appProperties.merge(keptNow) { $1 }
        }
        // Offline: journaled as a change of its own, sent once Drive answers. With `changeSettle`
        // (and nothing queued to carry it): journaled, sent after that wait, so that the chmod
        // that follows a utime (tar x, `cp -a`) is merged into the same files.update.
        func queueChange(settles: Double = 0) throws(FilesystemError) {
            var properties = kept
            if let modeText { properties[AppPropertyKeys.mode] = modeText }
            let request = UploadRequest(fileID: current.file.id, isNew: false, parentID: current.file.parents.first ?? table.rootID,
                                        name: current.file.name, modifiedTime: modified, appProperties: properties,
                                        displayPath: describe(inode))
            try uploads.queueChange(QueuedChange(request: request, places: false, settles: settles))
        }
        // The change shown by the node's local state until what carries it lands.
        func showLocally() {
            table.update(inode) { node in
                var local = node.local ?? LocalState(isNew: false, size: node.file.size ?? 0,
                                                     modifiedMillis: node.file.modifiedTime ?? 0)
                if let permissions { local.permissions = permissions }
                if let modified { local.modifiedMillis = modified }
                local.properties.merge(kept) { $1 }
                node.local = local
                node.changedMillis = changed
                // A time set here is the time shown, until an entry changes again (rsync -a sets
                // a folder's time after filling it).
                if modified != nil { node.entriesChangedMillis = nil }
            }
        }
        var queuedNow = false
        if !carried && !queued && (configuration.changeSettle > 0 || queuesChange(current)) {
            do throws(FilesystemError) { try queueChange(settles: configuration.changeSettle) } catch {
                held?.lock.unlock()
                throw error
            }
            queuedNow = true
        }
        if carried || queued || queuedNow {
            showLocally()
            held?.lock.unlock()
            return
        }
        held?.lock.unlock()
        var properties = kept
        if let modeText { properties[AppPropertyKeys.mode] = modeText }
        let updated: DriveFile
        do {
            updated = try backend.updateMetadata(uploads.currentID(of: current.file.id), name: nil, mimeType: nil, modifiedTime: modified,
                                                 appProperties: properties.isEmpty ? nil : properties)
        } catch {
            guard wentOffline(error) else { throw FilesystemError.from(error) }
            try queueChange()
            showLocally()
            return
        }
        table.update(inode) { node in
            let parents = node.file.parents
            let name = node.file.name
            // Sent to the file made again under a new ID, which the node does not show yet: the
            // node keeps its ID (the table indexes it so) until that upload's landing is applied.
            let id = node.file.id
            node.file = updated
            node.file.id = id
            node.file.parents = parents
            node.file.name = name
            // A local state still shown (an upload landing) must not hide the change.
            if let permissions { node.local?.permissions = permissions }
            if let modified { node.local?.modifiedMillis = modified }
            node.local?.properties.merge(kept) { $1 }
            node.changedMillis = changed
            if modified != nil { node.entriesChangedMillis = nil }
        }
    }
}

/// A folder's Drive ID and a Drive name in it: where a removed file was (`recentRemovals`).
struct RemovedName: Hashable, Sendable {
    let parentID: String
    let name: String
}

/// A file on Drive removed here whose removal waits (`DriveFilesystem.recentRemovals`): the file
/// as the table had it, and the uptime its removal goes at.
struct RecentRemoval: Sendable {
    let file: DriveFile
    let until: Double
}
