import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The local copies of files' content (`LocalContent`), by inode: files being written, open with
/// a copy, or not on Drive yet; and their staging files in `<cache>/staging/`. The write-back's
/// first room: where a copy is found, made, and looked up under its lock.
///
/// Contract: a copy is forgotten from `locals` only under its own lock, and only once the node
/// shows Drive's version of the same bytes (`LocalContent.forgettable`). So an open that finds
/// its copy forgotten by the time it holds the lock looks again, and what it then builds from
/// the node is current: an upload landing while the file is opened again never rolls it back.
/// `locals` comes after `handles` and before the table's state in the lock order (`LockRank`).
final class LocalCopies: Sendable {
    /// Files with a local copy (being written, or uploaded and still open), by inode.
    let locals = RankedLocked<[Inode: LocalContent]>(.locals, [:])
    let stagingDirectory: URL
    private let counter = Locked<UInt64>(0)
    private let table: NodeTable
    private let uploads: any UploadQueueing
    private let cache: BlockCache
    private let configuration: DriveFSConfiguration
    private let reader: ContentReader
    private let describe: InodeNamer

    init(stagingDirectory: URL, table: NodeTable, uploads: any UploadQueueing, cache: BlockCache,
         configuration: DriveFSConfiguration, reader: ContentReader, describe: InodeNamer) {
        self.stagingDirectory = stagingDirectory
        self.table = table
        self.uploads = uploads
        self.cache = cache
        self.configuration = configuration
        self.reader = reader
        self.describe = describe
    }

    /// Forgets `content` (locked by the caller) when nothing needs it any more: its staging file
    /// goes with it unless the queue owns it.
    /// True when the node was left showing the copy (a reader of it was still open when its
    /// upload ended) and shows Drive's file now: the kernel's view of it is to be dropped.
    @discardableResult
    func forgetIfDone(_ inode: Inode, _ content: LocalContent) -> Bool {
        guard content.forgettable else { return false }
        if content.removed { content.releaseSpace() } else { content.discardFile() }
        locals.withLock { l in if l[inode] === content { l[inode] = nil } }
        // Nothing of this copy is to reach Drive (unchanged, or landed): a local state left on the
        // node (a truncate to the size it had, or a copy whose upload landed beside the file or
        // failed while a reader still read it) would freeze its size and time for good.
        guard !content.removed, let node = table.node(inode), node.local != nil, node.local?.isNew != true,
              uploads.contentPath(of: node.file.id) == nil else { return false }
        table.update(inode) { $0.local = nil }
        return true
    }

    /// The copy held for `inode`, locked (the caller unlocks it), or nil when none is held: looked
    /// up again when it was replaced while its lock was awaited (bounded).
    func lockHeld(_ inode: Inode) -> LocalContent? {
        for _ in 0..<1_000 {
            guard let candidate = held(inode) else { return nil }
            candidate.lock.lock()
            if locals.withLock({ $0[inode] === candidate }) { return candidate }
            candidate.lock.unlock()
        }
        return nil
    }

    /// The copy `locals` holds for `inode`, unlocked.
    func held(_ inode: Inode) -> LocalContent? { locals.withLock { $0[inode] } }

    /// A fresh path for a local copy.
    func newStagingPath(for fileID: String) -> String {
        let n = counter.withLock { c -> UInt64 in c += 1; return c }
        let suffix = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        return stagingDirectory.appendingPathComponent("\(fileID).\(n).\(suffix)").path
    }

    /// At start nothing is open: a staging file the journal does not name (`referenced`) is a
    /// copy that was open (never closed, so nothing was promised of it) or half made when the last
    /// run ended. Removed, or the cache disk fills with them over crashes.
    func sweepStaging(keeping referenced: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: stagingDirectory.path) else { return }
        var removed = 0
        var bytes: Int64 = 0
        for name in names {
            let path = stagingDirectory.appendingPathComponent(name).path
            guard !referenced.contains(path) else { continue }
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            if unlink(path) == 0 {
                removed += 1
                bytes += Int64(info.st_size)
            }
        }
        if removed > 0 {
            Log.shared.info("write", "removed \(removed) staging file(s) of \(bytes) bytes left by the last run (files open when it ended, "
                            + "never closed: nothing of them was promised)")
        }
    }

    /// Runs `body` with the local copy of `inode`'s content locked: the one `locals` holds (being
    /// written, open, or not yet on Drive), else the queue's (a closed file not uploaded yet, after
    /// a restart), else, with `create`, a new lazy copy of Drive's version as the node shows it now.
    /// nil when there is none and `create` is false.
    /// (The contract on forgetting: the type's.)
    func withLocalContent<T>(_ inode: Inode, create: Bool,
                             _ body: (LocalContent) throws(FilesystemError) -> T) throws(FilesystemError) -> T? {
        for _ in 0..<1_000 {
            guard let node = table.node(inode) else { throw .stale }
            let content: LocalContent
            switch try localContent(node, create: create) {
            case .none: return nil
            case .again: continue
            case .found(let found): content = found
            }
            content.lock.lock()
            guard locals.withLock({ $0[inode] === content }) else {
                content.lock.unlock()
                continue
            }
            defer { content.lock.unlock() }
            return try body(content)
        }
        Log.shared.error("write", "\(describe(inode)): its local copy kept changing under an open")
        throw .ioError
    }

    private enum FoundContent {
        case found(LocalContent)
        case none
        /// What was found went away meanwhile: look again.
        case again
    }

    /// The local copy of `node`'s content, unlocked (see `withLocalContent`, the only caller).
    private func localContent(_ node: Node, create: Bool) throws(FilesystemError) -> FoundContent {
        if let held = locals.withLock({ $0[node.inode] }) { return .found(held) }
        var made: LocalContent?
        if let queued = uploads.contentPath(of: node.file.id) {
            guard uploads.isWhole(node.file.id) else {
                // Neither Drive's old version nor the queue's partial file is the content: it can
                // be read once the upload filled in what Drive could not give at its close.
                Log.shared.once(.warning, "write", "\(describe(node.inode)) cannot be opened until Drive gives the rest of "
                                + "the content it had when it was last closed (it is queued for upload)")
                throw .ioError
            }
            do throws(FilesystemError) {
                // Written on what the queued content was written on: a colleague's change on
                // Drive since is a conflict for this copy too.
                let base = uploads.queuedBase(of: node.file.id)
                made = try LocalContent(queuedAt: queued, blockSize: configuration.blockSize, baseRevision: base.revision,
                                        baseMD5: base.md5)
            } catch {
                // The queue ended that job meanwhile (landed, or replaced by a newer one): its file
                // is gone. A local failure reads EIO whatever its cause, so the file's absence is
                // what tells (taken for EIO, an open racing a landing failed: chaos finding 25).
                if !LocalFiles.exists(queued) { return .again }
                throw error
            }
        } else if create {
            // The node was read before the queue was asked: an upload of the file that landed in
            // between updated it (before the queue let its content go). Decided on that older
            // node, a new file whose upload had just landed was opened empty, and its next close
            // sent those zeros over what landed (NamespaceModelCheckTests, chaos finding 25).
            guard let now = table.node(node.inode), now.local == node.local, now.file == node.file else { return .again }
            if node.local?.isNew == true {
                // A new file whose content nobody holds (an earlier run's upload failed for good).
                Log.shared.warning("write", "\(describe(node.inode)): a new file whose content nothing holds any more (its "
                                   + "upload failed for good, its content kept in the uploads' failed folder); opened empty")
                made = try LocalContent(newAt: newStagingPath(for: node.file.id), blockSize: configuration.blockSize)
            } else {
                guard let key = ContentKey(node.file, exportFormats: configuration.exportFormats), key.exportMimeType == nil else {
                    throw .accessDenied
                }
                let remote = try cache.open(key, size: max(0, node.file.size ?? 0))
                let fetch = SendableFetcher(reader.fetcher(for: key))
                let cache = self.cache
                do throws(FilesystemError) {
                    made = try LocalContent(copying: remote, at: newStagingPath(for: node.file.id), blockSize: configuration.blockSize,
                                            baseRevision: node.file.headRevisionId, baseMD5: node.file.md5Checksum,
                                            ensure: { handle, offset, length, cancellation throws(FilesystemError) in
                                                try cache.ensure(handle, offset: offset, length: length, cancellation: cancellation,
                                                                 fetch: fetch.value)
                                            },
                                            release: { cache.release($0) })
                } catch {
                    cache.release(remote)
                    throw error
                }
            }
        }
        guard let made else { return .none }
        // Two opens racing: the first one's copy wins.
        let winner = locals.withLock { l -> LocalContent in
            if let other = l[node.inode] { return other }
            l[node.inode] = made
            return made
        }
        if winner !== made { made.discardFile() }
        return .found(winner)
    }
}
