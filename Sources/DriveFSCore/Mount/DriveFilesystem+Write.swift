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
/// - Names: `mkdir`, `rmdir`, `unlink`, `rename`, `chmod` and `utimens` of files on Drive are
///   made on Drive before they answer (one request each). On a file not on Drive yet they change
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

    private var canWrite: Bool { !configuration.readOnly }

    private func checkName(_ name: String) throws(FilesystemError) {
        if name.utf8.count > NameMapper.maximumNameBytes { throw .nameTooLong }
        if name.isEmpty || name == "." || name == ".." || name.contains("/") { throw .invalidArgument }
    }

    private func nowMillis() -> Int64 { Int64((time.now() * 1000).rounded()) }

    /// Whether `error` is Drive going away while the request was tried (the mount is offline now,
    /// and the last try could not connect): the change is queued as if it had been made offline.
    /// A try before that may have reached Drive (its answer lost); each queued change repeats
    /// harmlessly (a create under the same ID, a rename, a time, a trash set again).
    private func wentOffline(_ error: any Error) -> Bool {
        guard backend.reachability?.isOffline == true, let drive = error as? DriveError,
              case .transport(.couldNotConnect) = drive else { return false }
        return true
    }

    /// Whether a failed request may have been carried out all the same: an answer lost after Drive
    /// acted (a reset, a timeout, a server error or rate limit after the tries ran out, an
    /// interrupt). A refusal (permission, not found, a bad request) changed nothing.
    private func mayHaveLanded(_ error: any Error) -> Bool {
        guard let drive = error as? DriveError else { return false }
        switch drive {
        case .server, .rateLimited, .transport, .malformedResponse, .unexpectedStatus, .cancelled: return true
        default: return false
        }
    }

    /// Whether a change of `node` (into `folder`) is journaled for the upload queue to send
    /// rather than sent now: Drive is unreachable, a change of the item is still queued (what
    /// follows must not overtake it), or the item or the folder was made offline and is not on
    /// Drive yet. Online, with none of these, the change goes to Drive before it answers.
    private func queuesChange(_ node: Node?, into folder: Node? = nil) -> Bool {
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
    private func reserveID() throws(FilesystemError) -> String {
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
    private func listedFolder(_ parent: Inode, cancellation: CancellationFlag?) throws(FilesystemError) -> Node {
        guard let node = table.node(parent) else { throw .stale }
        guard node.kind == .directory else { throw .notADirectory }
        if table.freshListing(parent) == nil { try lister.ensureListed(parent, cancellation: cancellation) }
        guard table.hasListing(parent), let listed = table.node(parent) else { throw .ioError }
        return listed
    }

    private func requireEditable(_ node: Node) throws(FilesystemError) {
        guard canWrite else { throw .readOnly }
        if node.file.capabilities?.canEdit == false { throw .accessDenied }
    }

    private func requireAddable(_ folder: Node) throws(FilesystemError) {
        guard canWrite else { throw .readOnly }
        if folder.file.capabilities?.canAddChildren == false { throw .accessDenied }
    }

    /// The appProperties a file's upload carries: its mode when chmod set one, a link's target,
    /// and what `--posix-metadata` keeps (type, device, owner, group, ctime).
    private func appProperties(_ node: Node) -> [String: String] {
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
    private func newProperties(_ folder: Node, kind: FileKind, permissions: UInt32?, device: UInt64,
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
    private func keepsMode(_ permissions: UInt32, defaultBits: UInt32) -> Bool {
        configuration.posixMetadata || permissions != defaultBits & ~configuration.umask
    }

    private func uploadRequest(_ node: Node, _ content: LocalContent) -> UploadRequest {
        UploadRequest(fileID: node.file.id, isNew: node.local?.isNew ?? false, parentID: node.file.parents.first ?? table.rootID,
                      name: node.file.name, mimeType: nil, modifiedTime: node.local?.modifiedMillis ?? node.file.modifiedTime,
                      appProperties: appProperties(node), baseRevision: content.baseRevision, baseMD5: content.baseMD5,
                      displayPath: describe(node.inode))
    }

    /// Records what a write or truncate did to the file's size and time.
    private func noteLocal(_ inode: Inode, size: Int64, touch: Bool = true) {
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

    private func registerLocal(_ inode: Inode, _ content: LocalContent, writable: Bool) -> OpenedFile {
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
    private func commit(_ inode: Inode, _ content: LocalContent, ready: Bool, cancellation: CancellationFlag?,
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
        try commitLocked(inode, content, ready: ready)
    }

    /// Whether `commitLocked` would hand the copy to the queue (lock held).
    private func wantsCommit(_ content: LocalContent, ready: Bool) -> Bool {
        !content.removed && !content.sealed && (content.isDirty || content.hasUnreadyCommit || ready && content.committed != 0)
    }

    /// Hands the copy to the queue as it is (lock held; `commit` fetched what Drive would give).
    private func commitLocked(_ inode: Inode, _ content: LocalContent, ready: Bool) throws(FilesystemError) {
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
        try uploads.commit(request, contentPath: content.path, ready: ready && fits)
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
    private func closeLocal(_ inode: Inode, _ content: LocalContent) {
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
            content.lock.lock()
            defer { content.lock.unlock() }
            if closed(content) { copies.forgetIfDone(inode, content) }
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

    // MARK: Operations

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
            func queueFolder() throws(FilesystemError) -> FileAttributes {
                let now = nowMillis()
                let driveName = NameMapper.driveName(forShown: name)
                let file = DriveFile(id: id, name: driveName, mimeType: DriveFile.folderMimeType, parents: [folder.file.id],
                                     modifiedTime: now, createdTime: now, appProperties: properties.isEmpty ? nil : properties)
                let request = UploadRequest(fileID: id, isNew: true, parentID: folder.file.id, name: driveName, modifiedTime: now,
                                            appProperties: properties, displayPath: describe(parent) + "/" + name)
                try uploads.queueChange(QueuedChange(request: request, places: true, makesFolder: true))
                do throws(FilesystemError) {
                    let node = try table.insertChild(parent: parent, name: name, file: file,
                                                     local: LocalState(isNew: true, size: 0, modifiedMillis: now))
                    return table.attributes(node)
                } catch {
                    _ = try? uploads.cancel(id)
                    throw error
                }
            }
            if queuesChange(nil, into: folder) { return try queueFolder() }
            do {
                made = try backend.createFolder(name: NameMapper.driveName(forShown: name), parent: folder.file.id, modifiedTime: nowMillis(), id: id,
                                                appProperties: properties.isEmpty ? nil : properties)
            } catch {
                // Drive went away while it was tried: queued under the same ID (a create of it
                // that reached Drive after all is found by the queue's).
                if wentOffline(error) { return try queueFolder() }
                guard mayHaveLanded(error) else { throw FilesystemError.from(error) }
                // An answer lost after Drive made it: Drive says (under its reserved ID). Answered
                // as failed, the program made it again under another ID, and the one that landed
                // stayed on Drive after an rmdir (chaos, seed 975288757273). Drive cannot say: the
                // create is queued under the same ID (it lands once).
                switch onDrive(id) {
                case .there(let found): made = found
                case .gone: throw FilesystemError.from(error)
                case .unknown: return try queueFolder()
                }
            }
            let node = try table.insertChild(parent: parent, name: name, file: made, local: nil)
            return table.attributes(node)
        }
    }

    /// Takes `node` off Drive (to the trash, or for good): nothing to do for a file not on Drive
    /// yet, whose queued upload is dropped (or, if it is landing, trashed once it landed).
    private func removeFromDrive(_ node: Node) throws(FilesystemError) {
        let isNew = node.local?.isNew == true
        // The copy's lock across the journal's record: no commit from it slips in between, and a
        // removal the journal cannot keep changes nothing (the call fails, the file stays as it was).
        let content = locals.withLock { $0[node.inode] }
        // Offline (or behind a queued change of it): the removal is the queue's job too.
        let queues = !isNew && queuesChange(node)
        content?.lock.lock()
        if isNew { removedHere.withLock { _ = $0.insert(node.file.id) } }
        let cancelled: Bool
        do {
            cancelled = try uploads.cancel(node.file.id)
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
                let pendingLanding = uploads.contentPath(of: node.file.id) != nil
                if cancelled || !pendingLanding { removedHere.withLock { _ = $0.remove(node.file.id) } }
                // Drive may list the file until its removal lands (the queue's, or the trash that
                // follows its landing): the table does not show it again meanwhile. Nothing was
                // sent when the queue held nothing of it.
                if cancelled || pendingLanding { table.noteRemovedBeforeLanding(node.file.id) }
                return
            }
            guard removedHere.withLock({ $0.remove(node.file.id) != nil }) else { return }
        }
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
            try removeFromDrive(node)
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
        // Offline: journaled as a change of its own, sent once Drive answers.
        func queueChange() throws(FilesystemError) {
            var properties = kept
            if let modeText { properties[AppPropertyKeys.mode] = modeText }
            let request = UploadRequest(fileID: current.file.id, isNew: false, parentID: current.file.parents.first ?? table.rootID,
                                        name: current.file.name, modifiedTime: modified, appProperties: properties,
                                        displayPath: describe(inode))
            try uploads.queueChange(QueuedChange(request: request, places: false))
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
        if !carried && !queued && queuesChange(current) {
            do throws(FilesystemError) { try queueChange() } catch {
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
            try commit(inode, content, ready: only, cancellation: nil)
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
struct SendableFetcher: @unchecked Sendable {
    let value: BlockCache.Fetcher
    init(_ value: @escaping BlockCache.Fetcher) { self.value = value }
}
