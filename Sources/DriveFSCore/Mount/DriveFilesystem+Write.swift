import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The write side (docs/semantics.md, "Writing"; docs/architecture.md, "The write path").
///
/// - File content: writes go to a local copy (`LocalContent`) in `<cache>/staging/`, filled from
///   Drive only where a partial write or a read needs it. The last close of a changed file
///   (`flush` of its only writer, or the `release` after) completes the copy and commits it to
///   the upload queue, which makes it durable (fdatasync of the copy and the journal) before
///   `close` returns; the upload runs in the background. A file opened again while its upload is
///   queued takes the copy back; while it runs, writes go to a fresh copy and are uploaded after.
/// - Names (`DriveFilesystem+Names.swift`): `mkdir`, `rmdir`, `unlink`, `rename`, `chmod` and
///   `utimens` of files on Drive are made on Drive before they answer (one request each). On a file not on Drive yet they change
///   only its queued upload: a file made, renamed, chmodded and removed before its upload started
///   costs no request at all.
/// - Offline (`Reachability`), and behind a change of the item still queued, or into a folder not
///   on Drive yet, they are journaled as the upload queue's jobs instead (`queuesChange`), and
///   answer once the journal holds them: a folder made under a reserved ID, a rename, a time, a
///   mode, a removal; each item's jobs land in order, a folder before what goes into it.
/// - New files carry a reserved ID from the start: the node is keyed by it, the upload creates the
///   file under it (never twice), and the change feed then finds the same node.
extension DriveFilesystem {
    // MARK: Helpers

    var canWrite: Bool { !configuration.readOnly }

    func checkName(_ name: String) throws(FilesystemError) {
        if name.utf8.count > NameMapper.maximumNameBytes { throw .nameTooLong }
        if name.isEmpty || name == "." || name == ".." || name.contains("/") { throw .invalidArgument }
    }

    func nowMillis() -> Int64 { Int64((time.now() * 1000).rounded()) }

    /// Whether `error` is Drive going away while the request was tried (the mount is offline now,
    /// and the last try could not connect): the change is queued as if it had been made offline.
    /// A try before that may have reached Drive (its answer lost); each queued change repeats
    /// harmlessly (a create under the same ID, a rename, a time, a trash set again).
    func wentOffline(_ error: any Error) -> Bool {
        guard backend.reachability?.isOffline == true, let drive = error as? DriveError,
              case .transport(.couldNotConnect) = drive else { return false }
        return true
    }

    /// Whether a failed request may have been carried out all the same
    /// (`DriveError.mayHaveBeenCarriedOut`): Drive is asked before the program is answered.
    func mayHaveLanded(_ error: any Error) -> Bool {
        (error as? DriveError)?.mayHaveBeenCarriedOut ?? false
    }

    /// Whether a change of `node` (into `folder`) is journaled for the upload queue to send
    /// rather than sent now: Drive is unreachable, a change of the item is still queued (what
    /// follows must not overtake it), or the item or the folder was made offline and is not on
    /// Drive yet. Online, with none of these, the change goes to Drive before it answers.
    func queuesChange(_ node: Node?, into folder: Node? = nil) -> Bool {
        if backend.reachability?.isOffline == true { return true }
        if let folder, folder.kind == .directory, folder.local?.isNew == true { return true }
        guard let node else { return false }
        if node.kind == .directory && node.local?.isNew == true { return true }
        return uploads.holdsChanges(of: node.file.id)
    }

    /// An ID for a new item, from the pool (whose refill thread starts with the first create,
    /// after the fork, and then keeps it filled ahead of need: one request per 1,000 items). The
    /// pool keeps its IDs in `<cache>/file-ids` (attached in `init`), so a create after a restart
    /// asks Drive nothing while that lasts, also offline. A claim from it that the cache disk
    /// cannot write answers ENOSPC / EDQUOT (FileIDPool's crash order says why not a fresh
    /// generateIds); other local failures EIO.
    func reserveID() throws(FilesystemError) -> String {
        let start = idPoolStarted.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        do {
            let id = try backend.reserveFileID()
            if start { backend.startIDPool() }
            return id
        } catch let failure as AtomicFile.Failure {
            throw failure.errno == ENOSPC || failure.errno == EDQUOT ? FilesystemError(errno: failure.errno) : .ioError
        } catch { throw FilesystemError.from(error) }
    }

    /// The folder `parent` with a listing held (listed now if needed, on this thread).
    func listedFolder(_ parent: Inode, cancellation: CancellationFlag?) throws(FilesystemError) -> Node {
        guard let node = table.node(parent) else { throw .stale }
        guard node.kind == .directory else { throw .notADirectory }
        if table.freshListing(parent) == nil { try lister.ensureListed(parent, cancellation: cancellation) }
        guard table.hasListing(parent), let listed = table.node(parent) else { throw .ioError }
        return listed
    }

    func requireEditable(_ node: Node) throws(FilesystemError) {
        guard canWrite else { throw .readOnly }
        if node.file.capabilities?.canEdit == false { throw .accessDenied }
    }

    func requireAddable(_ folder: Node) throws(FilesystemError) {
        guard canWrite else { throw .readOnly }
        if folder.file.capabilities?.canAddChildren == false { throw .accessDenied }
    }

    /// The appProperties a file's upload carries: its mode when chmod set one, a link's target,
    /// and what `--posix-metadata` keeps (type, device, owner, group, ctime).
    func appProperties(_ node: Node) -> [String: String] {
        var properties: [String: String] = [:]
        if let permissions = node.local?.permissions { properties[AppPropertyKeys.mode] = String(permissions, radix: 8) }
        if let link = node.file.appProperties?[AppPropertyKeys.link] { properties[AppPropertyKeys.link] = link }
        for key in AppPropertyKeys.carried { if let value = node.property(key) { properties[key] = value } }
        if configuration.posixMetadata, let changed = node.changedMillis { properties[AppPropertyKeys.changed] = String(changed) }
        return properties
    }

    /// The drivefs properties a new item starts with: its type and device, its owner (the caller's,
    /// or the group of a set-group-ID folder), its mode unless it is the default that --umask would
    /// show anyway. Owners only under `--posix-metadata`.
    func newProperties(_ folder: Node, kind: FileKind, permissions: UInt32?, device: UInt64,
                               caller: RequestCaller?) -> [String: String] {
        var properties: [String: String] = [:]
        if let type = AppPropertyKeys.typeName(kind) { properties[AppPropertyKeys.type] = type }
        if kind == .characterDevice || kind == .blockDevice { properties[AppPropertyKeys.device] = String(device) }
        if let permissions { properties[AppPropertyKeys.mode] = String(permissions, radix: 8) }
        guard configuration.posixMetadata else { return properties }
        let folderAttributes = table.attributes(folder)
        let inherits = folderAttributes.permissions & 0o2000 != 0
        properties[AppPropertyKeys.owner] = String(caller?.userID ?? configuration.userID)
        properties[AppPropertyKeys.group] = String(inherits ? folderAttributes.groupID : caller?.groupID ?? configuration.groupID)
        return properties
    }

    /// Whether a new item's mode is kept in its properties: always under `--posix-metadata`,
    /// otherwise when it is not what the item would show without one (the default less --umask).
    func keepsMode(_ permissions: UInt32, defaultBits: UInt32) -> Bool {
        configuration.posixMetadata || permissions != defaultBits & ~configuration.umask
    }

    private func uploadRequest(_ node: Node, _ content: LocalContent) -> UploadRequest {
        UploadRequest(fileID: node.file.id, isNew: node.local?.isNew ?? false, parentID: node.file.parents.first ?? table.rootID,
                      name: node.file.name, mimeType: nil, modifiedTime: node.local?.modifiedMillis ?? node.file.modifiedTime,
                      appProperties: appProperties(node), baseRevision: content.baseRevision, baseMD5: content.baseMD5,
                      displayPath: describe(node.inode))
    }

    /// Records what a write or truncate did to the file's size and time.
    func noteLocal(_ inode: Inode, size: Int64, touch: Bool = true) {
        let now = nowMillis()
        table.update(inode) { node in
            var local = node.local ?? LocalState(isNew: false, size: size, modifiedMillis: node.file.modifiedTime ?? now)
            local.size = size
            if touch {
                local.modifiedMillis = now
                node.changedMillis = now
            }
            node.local = local
        }
    }

    func registerLocal(_ inode: Inode, _ content: LocalContent, writable: Bool) -> OpenedFile {
        table.openHandle(inode)
        let handle = handles.add(HandleTable.OpenFile(inode: inode, content: nil, local: content, writable: writable))
        // Local content changes under the kernel's feet only through this mount: no stale pages
        // to keep, but none to trust from an earlier version either.
        return OpenedFile(handle: handle, keepCache: false, directIO: false)
    }

    /// Opens `node` for writing (`open` with write access or O_TRUNC); the caller replies.
    func openForWriting(_ node: Node, flags: Int32) throws(FilesystemError) -> OpenedFile {
        try requireEditable(node)
        guard node.kind == .regular else { throw node.kind == .directory ? .isADirectory : FilesystemError(errno: ELOOP) }
        if node.file.isGoogleWorkspaceDocument {
            Log.shared.warning("write", "'\(node.name)' is a Google \(node.file.mimeType) file: it can only be edited in Drive")
            throw .accessDenied
        }
        let opened = try withLocalContent(node.inode, create: true) { content throws(FilesystemError) -> OpenedFile in
            try content.makeWritable(reclaim: { uploads.reclaim(node.file.id)?.contentPath },
                                     newPath: { newStagingPath(for: node.file.id) })
            if flags & O_TRUNC != 0 && content.size != 0 {
                try content.truncate(to: 0)
                noteLocal(node.inode, size: 0)
            }
            content.handles += 1
            content.writers += 1
            return registerLocal(node.inode, content, writable: true)
        }
        guard let opened else { throw .ioError }
        return opened
    }

    /// A read-only open of a file that has a local copy (being written, or not uploaded yet): nil
    /// when Drive's content is current.
    func openLocalForReading(_ node: Node) throws(FilesystemError) -> OpenedFile? {
        try withLocalContent(node.inode, create: false) { content in
            content.handles += 1
            return registerLocal(node.inode, content, writable: false)
        }
    }

    /// The local copy `inode`'s reads come from, if any (handles opened before a writer came read it too).
    func localForReading(_ inode: Inode, handle: HandleTable.OpenFile) -> LocalContent? {
        handle.local ?? locals.withLock { $0[inode] }
    }

    /// A read of a local copy: answered on the caller's thread when the copy holds the bytes
    /// (another range may be downloading meanwhile), else fetched on an I/O thread.
    func readLocal(_ inode: Inode, _ content: LocalContent, offset: Int64, size: Int, reply: Reply<ReadData>) {
        content.lock.lock()
        let answer = content.readPresent(offset: offset, length: size)
        content.lock.unlock()
        if let answer { return reply.succeed(answer) }
        onIOThread(reply, "reading", inode) { () throws(FilesystemError) in
            try content.read(offset: offset, length: size, cancellation: reply.cancellation)
        }
    }

    /// The content of a link made here whose target did not fit in its property (at most 4 KiB).
    func linkContent(_ node: Node, cancellation: CancellationFlag?) throws(FilesystemError) -> [UInt8] {
        if let content = try withLocalContent(node.inode, create: false, { $0 }) {
            return Self.bytes(try content.read(offset: 0, length: 4096, cancellation: cancellation))
        }
        guard let key = ContentKey(node.file, exportFormats: configuration.exportFormats) else { throw .ioError }
        let handle = try cache.open(key, size: max(0, node.file.size ?? 0))
        defer { cache.release(handle) }
        let length = Int(min(4096, handle.size))
        try cache.ensure(handle, offset: 0, length: length, cancellation: cancellation, fetch: fetcher(for: key))
        return Self.bytes(.file(descriptor: handle.descriptor, offset: 0, length: length))
    }

    static func bytes(_ data: ReadData) -> [UInt8] {
        switch data {
        case .bytes(let b): return b
        case .file(let fd, let offset, let length):
            var buffer = [UInt8](repeating: 0, count: length)
            // What the file holds of the range (shorter at its end); nothing when the read fails.
            let n = buffer.withUnsafeMutableBytes { (try? SystemCall.readFully(fd, into: $0, at: offset)) ?? 0 }
            return Array(buffer.prefix(n))
        }
    }

    // MARK: Commit

    /// Completes the copy and hands it to the queue (`ready`: for upload now). Durable when it
    /// returns. `when` (under the copy's lock): whether the commit is still wanted once the copy
    /// was completed (a writer may have opened it meanwhile).
    ///
    /// Drive's missing bytes are fetched first with the copy's lock released (`fetchForCommit`):
    /// reads, writes and releases of the file go on meanwhile. The commit itself (the journal's
    /// record) is made under the lock, of the copy as it is then.
    func commit(_ inode: Inode, _ content: LocalContent, ready: Bool, settles: Bool = false, cancellation: CancellationFlag?,
                        when wanted: (LocalContent) -> Bool = { _ in true }) throws(FilesystemError) {
        content.lock.lock()
        let fetch = wanted(content) && wantsCommit(content, ready: ready)
        let grows = fetch && ready && table.node(inode).map { growthOnDrive($0, content) > 0 } == true
        content.lock.unlock()
        if fetch { try content.fetchForCommit(cancellation: cancellation) }
        // Drive's free space, asked now if it is stale: the check under the lock uses what is known.
        if grows { _ = freeSpaceOnDrive() }
        content.lock.lock()
        defer { content.lock.unlock() }
        guard wanted(content) else { return }
        try commitLocked(inode, content, ready: ready, settles: settles)
    }

    /// Whether `commitLocked` would hand the copy to the queue (lock held).
    private func wantsCommit(_ content: LocalContent, ready: Bool) -> Bool {
        !content.removed && !content.sealed && (content.isDirty || content.hasUnreadyCommit || ready && content.committed != 0)
    }

    /// Hands the copy to the queue as it is (lock held; `commit` fetched what Drive would give).
    private func commitLocked(_ inode: Inode, _ content: LocalContent, ready: Bool, settles: Bool = false) throws(FilesystemError) {
        guard wantsCommit(content, ready: ready) else { return }
        guard let node = table.node(inode) else { return }
        // Decision: what close(2) accepted is journaled whatever the network does. Drive's bytes
        // the copy never needed are fetched before (`commit`) when Drive gives them; when it does
        // not (it is away, or failing), the copy is committed as it is with those spans listed,
        // and the upload fills them from the revision it was based on before it sends anything. A
        // crash after the commit finds the spans in the journal (UploadQueue's fill step).
        // The upload sends the staging file up to its length: nothing past the copy's size.
        try content.trimToSize()
        let missing = content.missingSpans
        var request = uploadRequest(node, content)
        if !missing.isEmpty {
            request.missing = missing
            let bytes = missing.reduce(Int64(0)) { $0 + $1.length }
            Log.shared.warning("write", "\(describe(inode)): Drive could not give \(bytes) byte(s) of its version now; what was "
                               + "written is kept, and those bytes are fetched before the upload")
        }
        // Drive must have room for what the file grows by (Drive's free space as the mount knows
        // it, refreshed at most once a `quotaRefreshInterval`). When it has not, the content is
        // journaled all the same, but not ready: nothing accepted is lost (also across a crash),
        // nothing is sent to fail, and the close answers ENOSPC. A truncate, a removal, or a
        // close or fsync once there is room, lets it go (docs/semantics.md, "Writing").
        let fits = !ready || fitsOnDrive(node, content)
        let generation = content.generation
        try uploads.commit(request, contentPath: content.path, ready: ready && fits, settles: settles)
        content.markCommitted(generation, ready: ready && fits)
        if fits {
            if ready { heldForRoom.withLock { _ = $0.remove(inode) } }
            return
        }
        heldForRoom.withLock { _ = $0.insert(inode) }
        throw .noSpace
    }

    /// How many bytes the copy is larger than what Drive holds of the file.
    private func growthOnDrive(_ node: Node, _ content: LocalContent) -> Int64 {
        content.size - (node.local?.isNew == true ? 0 : max(0, node.file.size ?? 0))
    }

    /// Whether the file's growth over what Drive holds of it fits in Drive's free space (an
    /// unlimited account, or a quota not known, always fits).
    /// The copy's lock is held: Drive's free space is the one known (`commit` asked Drive before).
    private func fitsOnDrive(_ node: Node, _ content: LocalContent) -> Bool {
        let growth = growthOnDrive(node, content)
        guard growth > 0, let free = freeSpaceOnDrive(ask: false), growth > free else { return true }
        Log.shared.warning("write", "\(describe(node.inode)) needs \(growth) more byte(s) on Drive, which has \(free) free: "
                           + "it is kept here, not uploaded (its close answered ENOSPC); truncate or remove it, "
                           + "or make room on Drive and close or fsync it again")
        return false
    }

    /// The last handle of a local copy closed: commit what is left, and forget the copy when the
    /// node shows the same bytes (`LocalContent.forgettable`). A copy whose upload is still to land
    /// stays: until the node shows Drive's new version, opens and reads must come here.
    func closeLocal(_ inode: Inode, _ content: LocalContent) {
        commits.submit { [self] in
            let closed = { (content: LocalContent) in content.handles == 0 && content.writers == 0 }
            do throws(FilesystemError) {
                try commit(inode, content, ready: true, cancellation: nil,
                           when: { closed($0) && ($0.isDirty || $0.hasUnreadyCommit) })
            } catch where error.errno == ENOSPC && heldForRoom.withLock({ $0.contains(inode) }) {
                // No room on Drive: journaled and kept (fitsOnDrive logged why).
            } catch {
                Log.shared.error("write", "\(describe(inode)): the last close could not keep what was written (\(error)); "
                                 + "the local copy stays at \(content.path)")
            }
            // Made again under the name of a file removed here, whose removal waits: its new content.
            saveOverRemoved(inode, content)
            // The last close: what a flush committed need not settle any longer (it waited in
            // case writes through another descriptor followed).
            if let fileID = table.node(inode)?.file.id { uploads.endSettle(of: fileID) }
            content.lock.lock()
            defer { content.lock.unlock() }
            if closed(content), copies.forgetIfDone(inode, content) { invalidator.apply(Invalidations(inodes: [inode])) }
        }
    }

    /// Commits again, ready, every copy that no handle holds and whose last commit failed (a full
    /// cache disk, a journal that could not be written: "the last close could not keep what was
    /// written"). Its queued upload may have been taken back by the open (`reclaim`), and a queue
    /// drains only ready jobs: left so, it would reach Drive only at the next mount (chaos finding
    /// 20). Called after each read of the change feed and before the drain at unmount; a copy held
    /// for room on Drive (`heldForRoom`) waits for its own way out.
    func commitFailedCloses() {
        let held = heldForRoom.withLock { $0 }
        for (inode, content) in locals.withLock({ $0 }) where !held.contains(inode) {
            let closed = { (content: LocalContent) in
                content.handles == 0 && content.writers == 0 && !content.removed && (content.isDirty || content.hasUnreadyCommit)
            }
            content.lock.lock()
            let left = closed(content)
            content.lock.unlock()
            guard left else { continue }
            do throws(FilesystemError) {
                try commit(inode, content, ready: true, cancellation: nil, when: closed)
                Log.shared.info("write", "\(describe(inode)): what its last close could not keep is journaled now")
            } catch {
                Log.shared.warning("write", "\(describe(inode)): what its last close could not keep still cannot be journaled (\(error)); "
                                   + "the local copy stays at \(content.path)")
            }
            content.lock.lock()
            if content.handles == 0 && content.writers == 0 { copies.forgetIfDone(inode, content) }
            content.lock.unlock()
        }
    }

    func releaseLocal(_ inode: Inode, _ file: HandleTable.OpenFile) {
        guard let content = file.local else { return }
        content.lock.lock()
        content.handles -= 1
        if file.writable { content.writers -= 1 }
        let last = content.handles == 0
        // The last handle of a removed file: its space is free before this returns.
        if last && content.removed { content.releaseSpace() }
        content.lock.unlock()
        if last { closeLocal(inode, content) }
    }

    public func write(_ inode: Inode, handle: UInt64, offset: Int64, data originalData: [UInt8], reply: Reply<Int>) {
        guard offset >= 0 else { return reply.fail(.invalidArgument) }
        // Past Drive's largest file (5 TB): nothing at or past it is written (EFBIG); a write
        // across it writes what fits, a short count, as the kernel does for its own limit.
        let room = configuration.maximumFileSize - offset
        guard room > 0 || originalData.isEmpty else { return reply.fail(.fileTooLarge) }
        let data = Int64(originalData.count) > room ? Array(originalData.prefix(Int(max(0, room)))) : originalData
        guard let file = handles.file(handle, of: inode) else { return reply.fail(.badHandle) }
        guard file.writable, let content = file.local else { return reply.fail(.badHandle) }
        guard let node = table.node(inode) else { return reply.fail(.stale) }
        // --cache-min-free is a floor for writers too: a write that grows the file takes that
        // much of the cache's disk, so cached content that may go makes room first, and when
        // only pinned and unsent content is left the write gets ENOSPC instead of filling the
        // disk (nothing of it written; what was accepted before stays).
        if configuration.cacheMinimumFree > 0 {
            content.lock.lock()
            let growth = offset + Int64(data.count) - content.size
            content.lock.unlock()
            if growth > 0 && !cache.makeRoom(for: growth) {
                Log.shared.once(.warning, "write", "the cache disk would keep less than --cache-min-free "
                                + "(\(configuration.cacheMinimumFree) bytes) free: writes that need more space get ENOSPC "
                                + "until pinned or unsent files make room")
                return reply.fail(.noSpace)
            }
        }
        // Drive's bytes the write leaves standing in its edge blocks are fetched first, with the
        // copy's lock released; the write itself is made under the lock.
        let work = { @Sendable [self] (cancellation: CancellationFlag?) throws(FilesystemError) -> Int in
            for _ in 0..<1_000 {
                try content.fetchForWrite(offset: offset, length: Int64(data.count), cancellation: cancellation)
                content.lock.lock()
                defer { content.lock.unlock() }
                guard content.writeNeedsNoFetch(offset: offset, length: Int64(data.count)) else { continue }
                try content.makeWritable(reclaim: { uploads.reclaim(node.file.id)?.contentPath },
                                         newPath: { newStagingPath(for: node.file.id) })
                try content.write(offset: offset, data: data)
                noteLocal(inode, size: content.size)
                if content.wantsEarlyUpload(threshold: configuration.earlyUploadThreshold), node.local?.isNew == true,
                   let now = table.node(inode) {
                    content.earlyAsked = true
                    content.early = uploads.beginEarlyUpload(uploadRequest(now, content), contentPath: content.path,
                                                             size: content.size)
                }
                return data.count
            }
            throw .ioError
        }
        content.lock.lock()
        let quick = !content.sealed && content.needsNoFetch(offset: offset, length: 1)
            && content.needsNoFetch(offset: offset + Int64(max(0, data.count - 1)), length: 1)
        content.lock.unlock()
        if quick { return reply.answer { () throws(FilesystemError) in try work(nil) } }
        onIOThread(reply, "writing", inode) { () throws(FilesystemError) in try work(reply.cancellation) }
    }

    public func flush(_ inode: Inode, handle: UInt64, reply: Reply<Void>) {
        guard let file = handles.file(handle, of: inode) else { return reply.fail(.badHandle) }
        guard file.writable, let content = file.local else { return reply.succeed() }
        content.lock.lock()
        let needed = !content.removed && !content.sealed && (content.isDirty || content.hasUnreadyCommit)
        content.lock.unlock()
        guard needed || configuration.syncClose else { return reply.succeed() }
        let fileID = table.node(inode)?.file.id
        // What close(2) accepted is durable when it returns: the copy and its journal record.
        runOnIOThread(reply.cancellation, "saving", inode, { [self] () throws(FilesystemError) in
            content.lock.lock()
            let only = content.writers <= 1
            content.lock.unlock()
            // Maybe not the last close (a shell's `>` writes through a duplicate of the descriptor it
            // closes first): the upload settles until the release, so it is not sent twice.
            try commit(inode, content, ready: only, settles: true, cancellation: nil)
        }, then: { [self] result in
            // With --sync-close, close answers once the file is on Drive (see `synchronize`).
            guard case .success = result, configuration.syncClose, let fileID else { return reply.complete(result) }
            answerWhenUploaded(reply, fileID, "saving", inode)
        })
    }

    public func synchronize(_ inode: Inode, handle: UInt64, dataOnly: Bool, reply: Reply<Void>) {
        guard let node = table.node(inode) else { return reply.fail(.stale) }
        let file = handles.file(handle)
        let fileID = node.file.id
        runOnIOThread(reply.cancellation, "syncing", inode, { [self] () throws(FilesystemError) in
            if let content = file?.local ?? locals.withLock({ $0[inode] }) {
                try commit(inode, content, ready: true, cancellation: reply.cancellation)
            }
        }, then: { [self] result in
            guard case .success = result else { return reply.complete(result) }
            // A new file whose upload waits its settle time answers once it is kept here (the
            // commit's fdatasyncs): editors fsync the temporary file of a save before they rename
            // it over the original, and sent now it would be a new file on Drive and the original
            // trashed (three writes a save, the ID lost) instead of one update of the original.
            // It goes to Drive after its settle time, as a closed file does (docs/semantics.md).
            if !configuration.syncClose, uploads.awaitsRename(of: fileID) {
                Log.shared.debug("write", "\(describe(inode)): fsync answered once kept here; a new file, it goes to Drive after its upload delay")
                return reply.succeed()
            }
            // fsync answers once the file is on Drive (or with its upload's failure).
            answerWhenUploaded(reply, fileID, "syncing", inode)
        })
    }

    /// Answers `reply` once the file's uploads landed, from the upload queue's side: no thread
    /// waits meanwhile, so any number of fsyncs leave the interactive threads to lookups, creates
    /// and mkdir. The queue sends the file's upload first; a failure for good, an answer of Drive's
    /// no retry mends until the user acts (ENOSPC, EDQUOT, EACCES: the upload stays queued) or an
    /// interrupt (EINTR) answers it at once.
    ///
    /// Offline (`Reachability`), the answer is the commit's: the content and its record are durable
    /// here, and Drive gets them when it answers again. Waiting for Drive would hold every editor's
    /// save (vim fsyncs each) until the network is back; the log says once what is not on Drive yet.
    func answerWhenUploaded(_ reply: Reply<Void>, _ fileID: String, _ what: String, _ inode: Inode) {
        if backend.reachability?.isOffline == true {
            Log.shared.once(.info, "write", "offline: \(what) answered once the files were kept here; they go to Drive when it answers again")
            return reply.succeed()
        }
        uploads.whenUploaded(fileID, cancellation: reply.cancellation) { [self] result in
            if case .failure(let error) = result, error.errno != EINTR { logFailure(what, inode, error, error) }
            reply.complete(result)
        }
    }

    public func synchronizeDirectory(_ inode: Inode, handle: UInt64, reply: Reply<Void>) {
        // Names are made on Drive before they answer (or kept in the journal with their file).
        reply.succeed()
    }

    // MARK: Introspection (tests, status)

    public var uploadStatus: UploadQueueStatus { uploads.status }

    /// Waits until no upload is queued or running (`drivefs unmount`), reporting progress.
    public func drainUploads(timeout: Double, progress: @Sendable (UploadQueueStatus) -> Void = { _ in }) -> Bool {
        let deadline = time.now() + timeout
        // Closed files still being committed first: their uploads are not queued yet.
        guard commits.waitUntilIdle(timeout: timeout) else { return false }
        return uploads.drain(timeout: max(0, deadline - time.now()), progress: progress)
    }
}

/// A block fetcher carried into a `@Sendable` closure: it captures only the backend (Sendable) and
/// a content key.
/// @unchecked Sendable: the closure captures only Sendable values (see above) but is not typed @Sendable
struct SendableFetcher: @unchecked Sendable {
    let value: BlockCache.Fetcher
    init(_ value: @escaping BlockCache.Fetcher) { self.value = value }
}
