import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The Drive filesystem: `FilesystemOperations` over a `DriveBackend`.
///
/// How it answers (docs/architecture.md, "The filesystem core"):
/// - From memory whenever it can, on the kernel's thread: names and attributes come from the node
///   table, bytes already cached from the block cache's file. Nothing the kernel's threads run
///   waits on Drive.
/// - Otherwise on its own threads (`interactive`, bounded), which list folders, fetch blocks and
///   export documents, then reply. A stalled connection holds one of those threads at most; cached
///   operations go on answering.
/// - Listing a folder prefetches the folders below it in the background (FolderLister), and
///   reading sequentially reads ahead on the `readAhead` threads, in parallel range streams.
/// - The change feed (ChangePoller) keeps listings and attributes current and tells the kernel
///   what to forget.
///
/// - Writes go to a local copy (`LocalContent`) and reach Drive through the upload queue when the
///   file is closed (`DriveFilesystem+Write.swift`); names change in `DriveFilesystem+Names.swift`.
///
/// Lock order, written once (docs/architecture.md, "Lock-order policy", gives the same):
/// `ChangesInFlight` (a rename's Drive requests) → `LocalContent.lock` (one file's; an editor's
/// save takes two, the new file's first) → `UploadQueue.lock` → `handles` → `locals` → one
/// leaf, taken with no other leaf held: `NodeTable.state`, `FolderLister.state`,
/// `BlockCache.condition`, `Invalidator`'s, `ContentReader`'s streams, `UploadQueue.intake` (a
/// close waiting for its group commit's flush holds only its copy's lock; and `DriveSpace`'s, not
/// ranked). Debug builds assert every ranked lock's place (`Support/LockOrder.swift`). No lock is
/// held while calling Drive or replying; a `LocalContent.lock` is held for local work only (its
/// fills download with it released, under per-block claims).
///
/// The rooms, assembled in `init` one line each: `HandleTable` (the open handles),
/// `RequestRunner` (the interactive threads),
/// `ContentReader` (the read path of Drive's content), `LocalCopies` (the local copies and their
/// staging files), `DriveSpace` (statfs and Drive's free space), `UploadLandings` (what the upload
/// queue's endings do to the mount); the write-back of local copies (`+Write`) and the namespace
/// operations (`+Names`) are still this type's extensions.
public final class DriveFilesystem: FilesystemOperations {
    public let configuration: DriveFSConfiguration
    let backend: any DriveBackend
    let table: NodeTable
    let cache: BlockCache
    let lister: FolderLister
    let invalidator: Invalidator
    let poller: ChangePoller
    let shedder: IdleFolderShedder
    /// The table came from a saved index (`start` reads the change feed before serving).
    let restoredIndex: Bool
    /// How long `start` waits for Drive's changes since a saved index before it serves the index as saved.
    static let catchUpSeconds: Double = 15
    let index: IndexStore
    let time: any TimeSource
    /// Held for the life of the filesystem: two mounts must not share a cache directory.
    public let cacheLock: CacheDirectoryLock

    /// The interactive threads: requests that cannot be answered from memory.
    let runner: RequestRunner
    var interactive: WorkPool { runner.pool }
    /// The read path of Drive's content: read-ahead, background fills.
    let reader: ContentReader
    var readAhead: WorkPool { reader.pool }
    let backgroundListing: WorkPool
    let notifications: WorkPool
    /// Commits of closed files (they fsync, so not on the kernel's threads).
    let commits: WorkPool

    let uploads: any UploadQueueing
    /// The local copies of files' content and their staging files.
    let copies: LocalCopies
    var locals: RankedLocked<[Inode: LocalContent]> { copies.locals }
    /// New files removed while their upload may be landing: trashed once it landed.
    let removedHere = Locked<Set<String>>([])
    /// Files on Drive removed here whose removal waits `removalSettle` (not sent yet), by their
    /// folder and Drive name: one made again there in that time takes their place (`saveOverRemoved`).
    let recentRemovals = Locked<[RemovedName: RecentRemoval]>([:])
    /// Whether the ID pool's refill thread runs (from the first create on: a mount that writes
    /// nothing costs no request for IDs). Its reserve (`<cache>/file-ids`) is attached at `init`.
    let idPoolStarted = Locked(false)

    let handles = HandleTable()
    /// Drive's space: `statfs` and the free space a close checks against.
    let space: DriveSpace
    /// Files whose last close answered ENOSPC (their growth does not fit in Drive's free space):
    /// journaled but not ready, kept until a truncate, a removal or a later close that fits.
    let heldForRoom = Locked<Set<Inode>>([])
    /// What is kept offline (`DriveFilesystem+Pins.swift`), and how uploads last ended (`SyncState`).
    let pins: PinKeeper
    let verdicts = UploadVerdicts()
    /// What the upload queue's endings do to the mount (`Write/UploadLandings.swift`).
    let landings: UploadLandings

    public var entryTimeout: Double { configuration.kernelCacheTimeout }
    /// Attributes are answered from memory, so the kernel may ask often: a lost notification can
    /// then leave a stale size for a second at most.
    public var attributeTimeout: Double { min(1, configuration.kernelCacheTimeout) }
    public var negativeEntryTimeout: Double { configuration.kernelCacheTimeout }

    /// - Parameters:
    ///   - root: the folder mounted (My Drive's root, from files.get("root")).
    ///   - startPageToken: the change feed's position taken before anything was listed, so no
    ///     change between the first listing and the first poll is missed.
    ///   - uploads: the upload queue (nil: an `UploadQueue` over `backend` in `<cache>/uploads`).
    public init(backend: any DriveBackend, root: DriveFile, startPageToken: String, configuration: DriveFSConfiguration,
                time: any TimeSource = SystemTimeSource(), uploads: (any UploadQueueing)? = nil) throws(FilesystemError) {
        self.configuration = configuration
        self.backend = backend
        self.time = time
        let cacheDirectory = configuration.cacheDirectory
        cacheLock = try CacheDirectoryLock(directory: cacheDirectory)
        let pinSet = PinSet(path: cacheDirectory.appendingPathComponent(PinSet.fileName).path)
        cache = try BlockCache(directory: cacheDirectory.appendingPathComponent("blocks"), capacity: configuration.cacheSize,
                               blockSize: configuration.blockSize, kept: pinSet.kept, minimumFree: configuration.cacheMinimumFree,
                               freeSpace: configuration.cacheFreeSpace)
        index = IndexStore(path: cacheDirectory.appendingPathComponent(IndexStore.fileName).path)
        backgroundListing = WorkPool(name: "drivefs-prefetch", threads: configuration.backgroundListingThreads)
        notifications = WorkPool(name: "drivefs-notify", threads: 1)
        commits = WorkPool(name: "drivefs-commit", threads: 2)
        let stagingDirectory = cacheDirectory.appendingPathComponent("staging")
        do {
            try FileManager.default.createDirectory(at: stagingDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if let uploads {
                self.uploads = uploads
            } else {
                self.uploads = try UploadQueue(directory: cacheDirectory.appendingPathComponent("uploads").path, backend: backend,
                                               transfers: configuration.transfers,
                                               deletePermanently: configuration.deletePermanently, time: time,
                                               newFileSettle: configuration.newFileSettle)
            }
        } catch {
            Log.shared.error("write", "cannot prepare the upload journal in \(cacheDirectory.path): \(error)")
            throw FilesystemError.from(error)
        }
        invalidator = Invalidator(cache: cache, queue: notifications)
        var token = startPageToken
        let offline: @Sendable () -> Bool = { [backend] in backend.reachability?.isOffline ?? false }
        if let restored = index.load(root: root, configuration: configuration, now: time.now()) {
            restoredIndex = true
            table = NodeTable(restoring: restored.state, configuration: configuration, time: time, offline: offline)
            token = restored.changeToken
            Log.shared.info("index", "restored \(restored.items) items in \(restored.folders) folders from \(index.path)")
        } else {
            restoredIndex = false
            table = NodeTable(root: root, configuration: configuration, time: time, offline: offline)
        }
        lister = FolderLister(backend: backend, table: table, invalidator: invalidator, configuration: configuration,
                              background: backgroundListing, time: time)
        poller = ChangePoller(backend: backend, table: table, invalidator: invalidator, index: index, token: token,
                              interval: configuration.pollInterval)
        // The rooms, one line each: the request threads, the read path of Drive's content, the local copies, Drive's space.
        runner = RequestRunner(pool: WorkPool(name: "drivefs-io", threads: configuration.interactiveThreads), backend: backend,
                               configuration: configuration, time: time,
                               describe: InodeNamer(backend: backend, table: table, lister: lister))
        reader = ContentReader(cache: cache, backend: backend, configuration: configuration, time: time,
                               pool: WorkPool(name: "drivefs-readahead", threads: configuration.readAheadStreams),
                               describe: { [runner] in runner.describe($0) },
                               onIOThread: { [runner] reply, inode, body in runner.answer(reply, "reading", inode, body) })
        copies = LocalCopies(stagingDirectory: stagingDirectory, table: table, uploads: self.uploads, cache: cache,
                             configuration: configuration, reader: reader, describe: runner.describe)
        space = DriveSpace(backend: backend, time: time, configuration: configuration, itemCount: { [table] in table.count })
        pins = PinKeeper(set: pinSet, table: table, lister: lister, cache: cache, configuration: configuration, time: time)
        landings = UploadLandings(table: table, uploads: self.uploads, copies: copies, cache: cache, invalidator: invalidator,
                                  backend: backend, configuration: configuration, time: time, commits: commits,
                                  verdicts: verdicts, removedHere: removedHere, afterLanding: { [pins] in pins.requestSweep() })
        shedder = IdleFolderShedder(table: table, invalidator: invalidator, idleFor: configuration.releaseIdleAfter)
        // A built index is saved at once: a daemon killed later does not list the drive again.
        lister.whenIndexBuilt { [poller] in poller.saveIndex() }
        // The IDs for new items, kept across restarts: this drive's only (`root.id`).
        if !configuration.readOnly {
            backend.attachIDReserve(FileIDReserveFile(path: cacheDirectory.appendingPathComponent(FileIDReserveFile.fileName).path,
                                                      owner: root.id))
        }
        UnfinishedUploads.write(0, cacheDirectory: cacheDirectory.path)
        // Removals a restart cut short within their wait (an `rm` of a plain file): remembered
        // again, so that a file made again under the name before it ends still takes its place
        // (`saveOverRemoved`); the file as the restored index holds it (`start` asks Drive for the others).
        if configuration.removalSettle > 0 {
            for (request, seconds) in self.uploads.recoveredWaitingRemovals {
                if let file = table.knownFile(request.fileID) { rememberRecovered(removal: request, file: file, for: seconds) }
            }
        }
        landings.restore()
        copies.sweepStaging(keeping: Set(self.uploads.recovered.map(\.contentPath)))
    }

    /// Runs `body` with the local copy of `inode`'s content locked (`LocalCopies.withLocalContent`).
    func withLocalContent<T>(_ inode: Inode, create: Bool,
                             _ body: (LocalContent) throws(FilesystemError) -> T) throws(FilesystemError) -> T? {
        try copies.withLocalContent(inode, create: create, body)
    }

    /// A fresh path for a local copy.
    func newStagingPath(for fileID: String) -> String { copies.newStagingPath(for: fileID) }

    // MARK: Lifecycle

    public func start(notifier: any KernelNotifier) {
        invalidator.attach(notifier)
        for pool in [interactive, readAhead, backgroundListing, notifications, commits] { pool.start() }
        // Renames over a file cut short by the last run's end are decided before anything is
        // served: the file that goes is never shown under the name a program may write.
        if !configuration.readOnly {
            let context = RequestContext(priority: .interactive, deadline: time.now() + Self.catchUpSeconds)
            for id in uploads.decideCutRenames(context) { table.restoreRemoval(id) }
            // Waiting removals of files the restored index did not hold: Drive's metadata (one
            // files.get each, bounded like the catch-up); one Drive does not answer in time just goes.
            if configuration.removalSettle > 0 {
                let remembered = recentRemovals.withLock { Set($0.values.map(\.file.id)) }
                for (request, seconds) in uploads.recoveredWaitingRemovals where !remembered.contains(request.fileID) {
                    guard time.now() < context.deadline ?? .infinity,
                          let file = try? context.scope({ try backend.getFile(request.fileID) }), !file.trashed else { continue }
                    rememberRecovered(removal: request, file: file, for: seconds)
                }
            }
            // Renames and moves made offline in the last run, of items neither the restored index
            // nor the table knows yet: Drive's metadata (one files.get each, bounded like the
            // catch-up), so that the folder the change moves them into shows them from the first
            // listing (before, the item was in no folder until its old one was listed: chaos
            // finding 27). One Drive does not answer in time is placed when a listing shows it.
            for request in uploads.recoveredPlacings where !table.knowsItem(request.fileID) {
                guard time.now() < context.deadline ?? .infinity,
                      let file = try? context.scope({ try backend.getFile(uploads.currentID(of: request.fileID)) }) else { continue }
                table.restoreQueuedPlace(request.fileID, name: request.name, parentID: request.parentID, known: file)
            }
        }
        uploads.start { [weak landings] outcome in landings?.finished(outcome) }
        // Over a saved index, Drive's changes since it was saved are read before anything is served
        // (chaos finding 11: a file changed just before a crash was read as the index had it).
        let caughtUp = restoredIndex && poller.catchUp(within: Self.catchUpSeconds)
        poller.start(pollFirst: !caughtUp)
        shedder.start()
        if configuration.indexWholeDrive { lister.indexWholeDrive() }
        poller.whenPolled { [weak self, pins] in
            pins.requestSweep()
            guard let fs = self else { return }
            fs.commits.submit { [weak fs] in
                fs?.commitFailedCloses()
                fs?.decideLeftRenames()
            }
        }
        pins.start(fill: { [weak self] key, size in self?.fillPinned(key, size: size) },
                   export: { [weak self] key in self?.exportPinned(key) },
                   describe: { [weak self] inode in self?.describe(inode) ?? "\(inode)" })
        cache.startFlushing(interval: BlockCache.flushInterval)
    }

    /// `action` runs with the shared drives named by `changeType: drive` changes in this drive's
    /// feed (My Drive's, read with `DriveAPI.feedSeesDriveChanges`): the account layout's hook.
    public func whenSharedDrivesChange(_ action: @escaping @Sendable ([String]) -> Void) { poller.whenDrivesChange(action) }

    /// Renames over a file whose first step's outcome was unknown (its answer lost, and Drive
    /// could not be asked: `leaveToRestart`), or cut by the last run's end and not decided at start
    /// (Drive did not answer then): decided once Drive answers again (after a read of the change
    /// feed), as the start decides them, so the replaced file does not stay on Drive beside the
    /// one that took its name until the next start (chaos finding 30). Only while no rename is in
    /// flight (none starts meanwhile): a replacement record of one that is would look the same.
    func decideLeftRenames() {
        guard !configuration.readOnly else { return }
        _ = table.changesHere.ifSettled(within: 5) {
            let context = RequestContext(priority: .background, deadline: time.now() + Self.catchUpSeconds)
            for id in uploads.decideCutRenames(context) { table.restoreRemoval(id) }
        }
    }

    public func stop() {
        // Unmounted (fusermount -u, drivefs unmount, a signal): what was closed goes to Drive first;
        // what cannot go in time stays in the journal for the next mount.
        let drained = drainAtUnmount()
        // Files held for room on Drive (their close answered ENOSPC) are journaled, not sent:
        // they are left too, and `drivefs unmount` says so.
        let left = uploads.status.queued + uploads.status.running.count + heldForRoom.withLock { $0.count }
        if !drained {
            Log.shared.warning("write", "unmounting with uploads left (\(left)): they stay in the journal and the next mount sends them")
        }
        UnfinishedUploads.write(drained && left == 0 ? 0 : max(1, left), cacheDirectory: configuration.cacheDirectory.path)
        poller.stop()
        pins.stop()
        shedder.stop()
        for pool in [interactive, readAhead, backgroundListing] { pool.stop() }
        // Closed files still being committed reach the journal before the queue stops.
        commits.stop()
        uploads.stop()
        backend.stopIDPool()
        notifications.stop()
        cache.stopFlushing()
        cache.flush()
        poller.saveIndex()
        cacheLock.release()
    }

    /// The unmount's drain: until the queue is idle, `drainTimeout` passed, or the mount has been
    /// offline for `offlineDrainGrace` seconds of it in a row (Drive unreachable: nothing would go).
    private func drainAtUnmount() -> Bool {
        let deadline = time.now() + configuration.drainTimeout
        // What a close could not journal then (a full disk) goes now, or it would wait for the next mount.
        commitFailedCloses()
        var offlineFrom: Double?
        // Bounded in count too (each round waits up to a second of the queue's clock), should the
        // mount's clock stand still (a test's).
        for _ in 0..<(Int(min(configuration.drainTimeout, 1e7).rounded(.up)) + 2) {
            let left = deadline - time.now()
            let drained = drainUploads(timeout: max(0, min(left, 1))) { status in
                Log.shared.info("write", "unmounting: uploads \(status.progressSummary)")
            }
            if drained { return true }
            if left <= 1 { return false }
            guard backend.reachability?.isOffline == true else {
                offlineFrom = nil
                continue
            }
            let now = time.now()
            let since = offlineFrom ?? now
            offlineFrom = since
            if now - since >= configuration.offlineDrainGrace {
                Log.shared.warning("write", "unmounting offline: Google Drive cannot be reached, so the uploads left "
                                   + "(\(uploads.status.progressSummary)) wait in the journal for the next mount")
                return false
            }
        }
        return false
    }

    /// Test seam: the process died (`kill -9`) after its upload queue was abandoned at a commit
    /// point (`UploadQueue.setCrashHook`, `crashNow`). Its threads end (the work in flight runs
    /// out; a dead queue and a dead backend make it do nothing more), and nothing a clean stop
    /// writes is written: no drain, no index, no block-cache flush, no unfinished-uploads count.
    /// The cache directory's lock is let go, as the kernel lets a dead process's lock go.
    func abandonAsCrashed() {
        poller.stop()
        pins.stop()
        shedder.stop()
        for pool in [interactive, readAhead, backgroundListing, commits, notifications] { pool.stop() }
        uploads.stop()
        cache.stopFlushing()
        cacheLock.release()
    }

    /// Where `inode` shows in the mount (`/Projects/plan.txt`), for log lines.
    func describe(_ inode: Inode) -> String { runner.describe(inode) }

    func logFailure(_ what: String, _ inode: Inode, _ error: Error, _ mapped: FilesystemError) {
        runner.logFailure(what, inode, error, mapped)
    }

    /// Runs `body` on an interactive thread, with the request's cancellation and deadline.
    func onIOThread<T: Sendable>(_ reply: Reply<T>, _ what: String = "request", _ inode: Inode = .root,
                                 _ body: @escaping @Sendable () throws(FilesystemError) -> T) {
        runner.answer(reply, what, inode, body)
    }

    /// As `onIOThread`, handing the result to `then` (`RequestRunner.run`).
    func runOnIOThread<T: Sendable>(_ cancellation: CancellationFlag?, _ what: String, _ inode: Inode,
                                    _ body: @escaping @Sendable () throws(FilesystemError) -> T,
                                    then: @escaping @Sendable (Result<T, FilesystemError>) -> Void) {
        runner.run(cancellation, what, inode, body, then: then)
    }

    // MARK: Names

    public func lookup(parent: Inode, name: String, reply: Reply<FileAttributes>) {
        if name.utf8.count > NameMapper.maximumNameBytes { return reply.fail(.nameTooLong) }
        if let answer = quickLookup(parent, name) { return reply.complete(answer) }
        onIOThread(reply, "listing", parent) { [self] () throws(FilesystemError) in
            try lister.ensureListed(parent, cancellation: reply.cancellation)
            guard let answer = quickLookup(parent, name) else { throw .ioError }
            return try answer.get()
        }
    }

    /// The answer from the table alone, or nil when the folder must be listed first.
    private func quickLookup(_ parent: Inode, _ name: String) -> Result<FileAttributes, FilesystemError>? {
        if name == "." || name == ".." {
            guard let node = table.node(parent) else { return .failure(.notFound) }
            guard node.kind == .directory else { return .failure(.notADirectory) }
            let target = name == "." ? parent : (node.parent ?? .root)
            guard let counted = table.countLookup(target) else { return .failure(.notFound) }
            return .success(table.attributes(counted))
        }
        switch table.child(of: parent, named: name, countLookup: true) {
        case .found(let node): return .success(table.attributes(node))
        case .missing: return .failure(.notFound)
        case .notAFolder: return .failure(.notADirectory)
        case .unknownParent: return .failure(FilesystemError(errno: ESTALE))
        case .needsListing: return nil
        }
    }

    public func forget(_ inode: Inode, count: UInt64) { table.forget(inode, count: count) }
    public func forgetAll() { table.forgetAll() }

    public func attributes(of inode: Inode, reply: Reply<FileAttributes>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        reply.succeed(table.attributes(node))
    }

    // MARK: Directories

    public func openDirectory(_ inode: Inode, reply: Reply<UInt64>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        guard node.kind == .directory else { return reply.fail(.notADirectory) }
        let handle = handles.addDirectory(inode)
        // Counted in the table: a folder whose handle is open keeps its nodes (its snapshot names them).
        table.openHandle(inode)
        reply.succeed(handle)
    }

    public func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer,
                              reply: Reply<Void>) {
        guard offset >= 0 else { return reply.fail(.invalidArgument) }
        guard let open = handles.directory(handle, of: inode) else { return reply.fail(.badHandle) }
        if offset > 0, let snapshot = open.snapshot {
            return reply.answer { () throws(FilesystemError) in emit(snapshot, after: offset, plus: plus, into: buffer) }
        }
        // From the start: a fresh snapshot of the listing (rewinddir sees changes).
        if table.freshListing(inode) != nil {
            return reply.answer { () throws(FilesystemError) in
                emit(try takeSnapshot(inode, handle: handle), after: offset, plus: plus, into: buffer)
            }
        }
        onIOThread(reply, "listing", inode) { [self] () throws(FilesystemError) in
            try lister.ensureListed(inode, cancellation: reply.cancellation)
            emit(try takeSnapshot(inode, handle: handle), after: offset, plus: plus, into: buffer)
        }
    }

    private func takeSnapshot(_ inode: Inode, handle: UInt64) throws(FilesystemError) -> [DirectoryEntry] {
        guard let node = table.node(inode), let children = table.entries(of: inode) else { throw .ioError }
        var entries = [DirectoryEntry(name: ".", inode: inode, kind: .directory, nextOffset: 1),
                       DirectoryEntry(name: "..", inode: node.parent ?? .root, kind: .directory, nextOffset: 2)]
        for (index, child) in children.enumerated() {
            entries.append(DirectoryEntry(name: child.name, inode: child.inode, kind: child.kind, nextOffset: Int64(index + 3)))
        }
        handles.setSnapshot(entries, of: handle)
        // A user listed this folder: list what is below it before they get there.
        lister.prefetch(below: inode)
        return entries
    }

    /// Adds entries after `offset` until the buffer is full. With `plus`, an entry counts as one
    /// lookup if and only if the buffer took it; an entry gone from the table since the snapshot
    /// is skipped.
    private func emit(_ snapshot: [DirectoryEntry], after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer) {
        for entry in snapshot.dropFirst(Int(min(offset, Int64(snapshot.count)))) {
            if !plus || DirectoryEntryPlus.isDotOrDotDot(entry.name) {
                guard buffer.add(entry, attributes: nil) else { return }
                continue
            }
            // Counted first (atomically with finding it), given back if the buffer is full: the
            // kernel never holds an entry that was not counted.
            guard let node = table.countLookup(entry.inode) else { continue }
            guard buffer.add(entry, attributes: table.attributes(node)) else {
                table.forget(entry.inode, count: 1)
                return
            }
        }
    }

    public func releaseDirectory(_ inode: Inode, handle: UInt64) {
        guard let open = handles.removeDirectory(handle) else { return }
        table.closeHandle(open.inode)
    }

    // MARK: Files

    public func open(_ inode: Inode, flags: Int32, reply: Reply<OpenedFile>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        switch node.kind {
        case .directory: return reply.fail(.isADirectory)
        case .symbolicLink: return reply.fail(FilesystemError(errno: ELOOP))
        // The kernel opens FIFOs and device nodes itself; a socket cannot be opened.
        case .fifo, .socket, .characterDevice, .blockDevice: return reply.fail(FilesystemError(errno: ENXIO))
        case .regular: break
        }
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
            guard !configuration.readOnly else { return reply.fail(.readOnly) }
            return reply.answer { () throws(FilesystemError) in try openForWriting(node, flags: flags) }
        }
        do throws(FilesystemError) {
            if let opened = try openLocalForReading(node) { return reply.succeed(opened) }
        } catch {
            return reply.fail(error)
        }
        // No local copy (any more): the node as it is now. A copy forgotten while this open waited
        // for its lock was let go by a landing, which updated the node first; the node looked up
        // before that still shows the file before its upload (a new file: size 0, no content on Drive).
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        guard let key = ContentKey(node.file, exportFormats: configuration.exportFormats) else {
            Log.shared.warning("fs", "'\(node.name)' (\(node.file.mimeType)) cannot be downloaded or exported by Drive")
            return reply.fail(FilesystemError(errno: EOPNOTSUPP))
        }
        if node.file.capabilities?.canDownload == false {
            return reply.fail(FilesystemError(errno: EACCES))
        }
        if key.exportMimeType == nil {
            do throws(FilesystemError) {
                let content = try cache.open(key, size: max(0, node.file.size ?? 0))
                let caching = table.noteOpen(inode, version: key.version, size: content.size)
                reply.succeed(register(inode, content, directIO: caching.directIO, keepCache: caching.keepCache))
            } catch {
                reply.fail(error)
            }
            return
        }
        // A Workspace file: exported whole on open (Drive exports have no ranges and no size in
        // advance); the kernel then reads it without trusting the size it was shown before.
        onIOThread(reply, "exporting", inode) { [self] () throws(FilesystemError) in
            let content = try cache.openExport(key, cancellation: reply.cancellation) {
                try backend.export(key.fileID, mimeType: key.exportMimeType!)
            }
            if table.node(inode)?.exportedSize != content.size {
                table.setExportedSize(inode, content.size)
                // The kernel was shown the size before the export: let it ask again.
                invalidator.apply(Invalidations(inodes: [inode]))
            }
            return register(inode, content, directIO: true)
        }
    }

    private func register(_ inode: Inode, _ content: BlockCache.Handle, directIO: Bool, keepCache: Bool = true) -> OpenedFile {
        table.openHandle(inode)
        let handle = handles.add(HandleTable.OpenFile(inode: inode, content: content))
        reader.opened(handle)
        // The change feed invalidates the inode when a new version comes; `noteOpen` makes sure
        // of it at the next open even if that notification was lost.
        return OpenedFile(handle: handle, keepCache: keepCache, directIO: directIO)
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int, reply: Reply<ReadData>) {
        guard offset >= 0, size >= 0 else { return reply.fail(.invalidArgument) }
        guard let open = handles.file(handle, of: inode) else { return reply.fail(.badHandle) }
        if let local = localForReading(inode, handle: open) {
            return readLocal(inode, local, offset: offset, size: size, reply: reply)
        }
        guard let content = open.content else { return reply.fail(.badHandle) }
        reader.read(inode, handle: handle, content: content, offset: offset, size: size, reply: reply)
    }

    /// Downloads of one content version (`ContentReader.fetcher`).
    func fetcher(for key: ContentKey) -> BlockCache.Fetcher { reader.fetcher(for: key) }

    /// A background fill of `content` (`ContentReader.continueFill`); `then` runs once it ended.
    func continueFill(_ content: BlockCache.Handle, running: Locked<Int>, then: (@Sendable () -> Void)?) {
        reader.continueFill(content, running: running, then: then)
    }

    public func release(_ inode: Inode, handle: UInt64) {
        guard let file = handles.removeFile(handle) else { return }
        if let content = file.content {
            reader.released(handle)
            cache.release(content)
        }
        releaseLocal(inode, file)
        table.closeHandle(inode)
    }

    // MARK: Links

    public func readLink(_ inode: Inode, reply: Reply<String>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        if let kept = node.file.appProperties?[AppPropertyKeys.link], !node.file.isShortcut {
            // A link made here: its target in the property, or (too long for one) its content.
            if !kept.isEmpty { return reply.succeed(kept) }
            return onIOThread(reply, "reading the link", inode) { [self] () throws(FilesystemError) in
                let bytes = try linkContent(node, cancellation: reply.cancellation)
                guard let target = String(validating: bytes, as: UTF8.self), !target.isEmpty else { throw .ioError }
                return target
            }
        }
        guard node.kind == .symbolicLink, let target = node.file.shortcutDetails?.targetId else { return reply.fail(.invalidArgument) }
        onIOThread(reply, "resolving the shortcut", inode) { [self] () throws(FilesystemError) in
            try ShortcutResolver(backend: backend, table: table, lister: lister).relativeTarget(of: node, targetID: target,
                                                                                                 cancellation: reply.cancellation)
        }
    }

    // MARK: Statistics

    public func statistics(reply: Reply<FilesystemStatistics>) {
        if let recent = space.recentStatistics { return reply.succeed(recent) }
        onIOThread(reply) { [space] () throws(FilesystemError) in try space.fetchStatistics() }
    }

    /// Drive's free space as the mount knows it (`DriveSpace.freeSpace`).
    func freeSpaceOnDrive(ask: Bool = true) -> Int64? { space.freeSpace(ask: ask) }

    // MARK: Introspection (tests)

    public var cachedBytes: Int64 { cache.bytesUsed }
    public var cacheCounters: BlockCache.Counters { cache.counterValues }
    public func lookupCount(of inode: Inode) -> UInt64 { table.node(inode)?.lookups ?? 0 }
    public var knownItems: Int { table.count }
    /// Polls of the change feed done by the poller since start (the first one runs at start).
    public var completedPolls: Int { poller.completedPolls }
    /// Sheds the folders idle for `idleFor` seconds now, as the shedder's thread does every few
    /// seconds (tests), and waits until the kernel was told. Returns the folders shed.
    @discardableResult
    public func shedIdleFolders(idleFor: Double) -> Int {
        let (invalidations, folders) = table.shedIdleFolders(idleFor: idleFor)
        invalidator.apply(invalidations)
        _ = notifications.waitUntilIdle(timeout: 60)
        table.packUnneededFolders()
        return folders
    }
    /// Reads the change feed now (tests; the poller does it every `pollInterval`).
    public func pollChanges() throws { try poller.pollOnce() }
    /// Waits until no prefetch is queued or running (tests), at most `timeout` seconds.
    public func waitForPrefetch(timeout: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            // The pool idle, not only its queue: a group being listed finishes its tickets before it
            // queues the folders below (`pending` alone let a test count the folders in between).
            if lister.queuedCount == 0 && backgroundListing.isIdle && lister.inFlightCount == 0 { return true }
            usleep(10_000)
        }
        return false
    }
}
