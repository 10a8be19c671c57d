import DriveClient
import DriveSupport
import Foundation
import Glibc

/// One file's content as written here: a staging file in `<cache>/staging/` that holds Drive's
/// bytes only where they were needed, copied block by block from the block cache (a partial
/// write's edge blocks, reads, and everything at commit), and what was written.
///
/// Contract: `lock` guards the state and is held only for local work (a copy of one block, a
/// write, a truncate, a commit's journal record): never across a request to Drive. A fill claims
/// the blocks it fetches (`fetching`), downloads them with the lock released, and copies each in
/// under the lock only if it is still not present; others wait for a claimed block (off the
/// kernel's threads) instead of fetching it twice. So a read of bytes the copy holds, a write, a
/// flush that has nothing to fetch, or a release answers while another range is downloaded.
///
/// Invariants (under `lock`):
/// - A block below `remoteLimit` that is not `present` holds no written byte: a write that only
///   partly covers such a block waits until it is fetched (`writeNeedsNoFetch`); one that covers
///   it whole marks it present, and a fetch landing after that leaves it as written.
/// - Bytes at or past `remoteLimit` never come from Drive (they were written, or are zeros of a
///   truncate that grew the file). `present` only grows and `remoteLimit` only shrinks: a range
///   that needs no fetch keeps needing none.
/// - Once `sealed` (committed ready), the queue owns the file: a write first takes it back
///   (`reclaim`) or moves to a copy.
final class LocalContent: @unchecked Sendable {  // @unchecked: every mutable field only with `lock` held
    // @unchecked: every mutable field is guarded by `lock`.
    /// The state's lock, and the condition a fill's end is broadcast on (its place in the lock
    /// order is checked in debug builds).
    let lock = RankedCondition(.localContent)
    private(set) var path: String
    private(set) var descriptor: Int32
    /// Descriptors of files this content moved away from: closed when it dies, so a read reply in
    /// flight never sees its descriptor number reused.
    private var retired: [Int32] = []
    private(set) var size: Int64
    private var remoteLimit: Int64
    private var present: [UInt64]
    /// Blocks a fill downloads now (its claim): nobody else fetches them meanwhile.
    private var fetching = Set<Int>()
    let blockSize: Int
    /// Drive's version this copy started from (nil: a new file, or content the queue held).
    let remote: BlockCache.Handle?
    private let ensureRemote: (@Sendable (BlockCache.Handle, Int64, Int, CancellationFlag?) throws(FilesystemError) -> Void)?
    private let release: (@Sendable (BlockCache.Handle) -> Void)?
    /// Drive's version this content was written over (its conflict check): the version it was
    /// copied from, then each landing of its own uploads (`noteUploadEnded`).
    private(set) var baseRevision: String?
    private(set) var baseMD5: String?
    /// Content files of this copy's uploads still to land (committed ready from it, or the
    /// queue's file it was opened from): a landing of one of them is a landing of this content's
    /// line, and moves its base.
    private var ownUploads: Set<String> = []
    /// Bumped by every change; `committed` is the generation last handed to the queue.
    private(set) var generation: UInt64
    private(set) var committed: UInt64 = 0
    private(set) var sealed: Bool
    /// Open handles on it, and how many of them write.
    var handles = 0
    var writers = 0
    /// The file was removed while open: it is never committed again.
    var removed = false
    /// Drive's version, as the node shows it, is this content byte for byte (its last upload
    /// landed and nothing was written since): the copy may be forgotten once its last handle closes.
    var landed = false
    /// The content file of the queued upload whose landing makes Drive's version this content:
    /// set while the content is clean and that upload is still to land (committed ready, or a copy
    /// taken of it while it ran); nil otherwise.
    private(set) var awaiting: String?
    /// Every write so far began where the file ended (a new file written from its first byte).
    private(set) var appendOnly: Bool
    /// The upload that began while this file was written (`EarlyUpload`): told of every change.
    var early: EarlyUpload?
    /// An early upload was asked for already (given or refused): not asked again.
    var earlyAsked = false

    /// An empty new file.
    init(newAt path: String, blockSize: Int) throws(FilesystemError) {
        self.path = path
        descriptor = try Self.openFile(path, create: true)
        size = 0
        remoteLimit = 0
        present = []
        self.blockSize = blockSize
        remote = nil
        ensureRemote = nil
        release = nil
        baseRevision = nil
        baseMD5 = nil
        generation = 1  // a new file must reach Drive even if nothing is written
        sealed = false
        appendOnly = true
    }

    /// A copy of Drive's version `remote`, filled lazily.
    init(copying remote: BlockCache.Handle, at path: String, blockSize: Int, baseRevision: String?, baseMD5: String?,
         ensure: @escaping @Sendable (BlockCache.Handle, Int64, Int, CancellationFlag?) throws(FilesystemError) -> Void,
         release: @escaping @Sendable (BlockCache.Handle) -> Void) throws(FilesystemError) {
        self.path = path
        descriptor = try Self.openFile(path, create: true)
        size = remote.size
        remoteLimit = remote.size
        self.blockSize = blockSize
        present = [UInt64](repeating: 0, count: Int((remote.size + Int64(blockSize) - 1) / Int64(blockSize) + 63) / 64)
        self.remote = remote
        ensureRemote = ensure
        self.release = release
        self.baseRevision = baseRevision
        self.baseMD5 = baseMD5
        generation = 0
        sealed = false
        appendOnly = false
        do throws(SystemCallError) {
            try SystemCall.truncate(descriptor, to: size)
        } catch {
            close(descriptor)
            unlink(path)
            release(remote)
            throw FilesystemError(local: error)
        }
    }

    /// Content the upload queue holds (complete, owned by the queue).
    init(queuedAt path: String, blockSize: Int, baseRevision: String?, baseMD5: String?) throws(FilesystemError) {
        self.path = path
        descriptor = try Self.openFile(path, create: false)
        size = (try? SystemCall.size(descriptor)) ?? 0
        remoteLimit = 0
        present = []
        self.blockSize = blockSize
        remote = nil
        ensureRemote = nil
        release = nil
        self.baseRevision = baseRevision
        self.baseMD5 = baseMD5
        generation = 0
        sealed = true
        appendOnly = false
        awaiting = path
        ownUploads = [path]
    }

    deinit {
        close(descriptor)
        for fd in retired { close(fd) }
        if let remote { release?(remote) }
    }

    var isDirty: Bool { generation != committed }

    /// Whether the mount may forget this copy now (its last handle closed): it was removed, or the
    /// node's Drive version holds the same bytes (never changed here, or changed and landed), so
    /// the next open rebuilds it from Drive's version. A copy whose bytes are not on Drive yet is
    /// kept: the queue's content files are not the file's content once a landing races a reopen.
    var forgettable: Bool {
        guard handles == 0 && writers == 0 else { return false }
        if removed { return true }
        guard !isDirty && !hasUnreadyCommit else { return false }
        return landed || (awaiting == nil && !sealed)
    }
    /// The journal holds a record of this file that is not ready: the last writer must commit it.
    var hasUnreadyCommit: Bool { !sealed && committed != 0 }

    private static func openFile(_ path: String, create: Bool) throws(FilesystemError) -> Int32 {
        do throws(SystemCallError) {
            return try SystemCall.open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), mode: 0o600)
        } catch {
            // A queue's content file gone (its job landed meanwhile) is looked for again by the caller.
            if create || error.errno != ENOENT { Log.shared.warning("write", "cannot open the local copy \(path): \(error.reason)") }
            throw FilesystemError(local: error)
        }
    }

    // MARK: Blocks (lock held)

    private func isPresent(_ b: Int) -> Bool { b >> 6 < present.count && present[b >> 6] & (1 << UInt64(b & 63)) != 0 }
    private func setPresent(_ b: Int) { if b >> 6 < present.count { present[b >> 6] |= 1 << UInt64(b & 63) } }

    /// The last block that still has bytes from Drive, or -1.
    private var lastRemoteBlock: Int { remoteLimit > 0 ? Int((remoteLimit - 1) / Int64(blockSize)) : -1 }

    /// Whether `[offset, offset + length)` needs no fetch.
    func needsNoFetch(offset: Int64, length: Int64) -> Bool {
        guard length > 0, offset < remoteLimit else { return true }
        let first = Int(offset / Int64(blockSize)), last = min(lastRemoteBlock, Int((offset + length - 1) / Int64(blockSize)))
        guard first <= last else { return true }
        return (first...last).allSatisfy(isPresent)
    }

    /// The blocks a write of `[offset, offset + length)` must have from Drive first: its edge
    /// blocks that it covers only in part and that are not here yet.
    private func edgesToFetch(offset: Int64, length: Int64) -> [Int] {
        guard length > 0 else { return [] }
        let end = offset + length
        let B = Int64(blockSize)
        let first = Int(offset / B), last = Int((end - 1) / B)
        return Set([first, last]).sorted().filter { b in
            guard b <= lastRemoteBlock, !isPresent(b) else { return false }
            return !(Int64(b) * B >= offset && min(Int64(b + 1) * B, remoteLimit) <= end)
        }
    }

    /// Whether a write of `[offset, offset + length)` may go ahead now (lock held): none of Drive's
    /// bytes it leaves standing is still to be fetched.
    func writeNeedsNoFetch(offset: Int64, length: Int64) -> Bool { edgesToFetch(offset: offset, length: length).isEmpty }

    // MARK: Fills (the lock NOT held)

    /// A fill's failure: Drive's (the fetch), or the local copy's.
    private struct FillFailure: Error {
        let error: FilesystemError
        let fromDrive: Bool
    }

    /// Makes Drive's bytes of the blocks in `first...last` present: fetches the missing ones nobody
    /// fetches (claimed, with the lock released), waits for those others fetch. Called without the
    /// lock; takes it only to claim, to copy one fetched block in, and to wait.
    private func fill(_ first: Int, _ last: Int, cancellation: CancellationFlag?) throws(FillFailure) {
        guard let remote, let ensureRemote else { return }
        var wokenByCancel = false
        lock.lock()
        while true {
            let hi = min(last, lastRemoteBlock)
            var claim: ClosedRange<Int>?
            var othersFetch = false
            var b = max(0, first)
            while b <= hi && claim == nil {
                if isPresent(b) { b += 1; continue }
                if fetching.contains(b) { othersFetch = true; b += 1; continue }
                var e = b
                while e + 1 <= hi && !isPresent(e + 1) && !fetching.contains(e + 1) { e += 1 }
                claim = b...e
            }
            if let run = claim {
                for x in run { fetching.insert(x) }
                let start = Int64(run.lowerBound) * Int64(blockSize)
                let end = min(Int64(run.upperBound + 1) * Int64(blockSize), remoteLimit)
                lock.unlock()
                LockOrder.assertNoneHeld("a local copy's fetch from Drive")
                var failure: FillFailure?
                do throws(FilesystemError) {
                    try ensureRemote(remote, start, Int(end - start), cancellation)
                } catch { failure = FillFailure(error: error, fromDrive: true) }
                lock.lock()
                if failure == nil {
                    for x in run {
                        do throws(FilesystemError) { try land(x, from: remote.descriptor) } catch {
                            failure = FillFailure(error: error, fromDrive: false)
                            break
                        }
                    }
                }
                for x in run { fetching.remove(x) }
                lock.broadcast()
                if let failure {
                    lock.unlock()
                    throw failure
                }
                continue
            }
            guard othersFetch else { break }
            if cancellation?.isCancelled == true {
                lock.unlock()
                throw FillFailure(error: FilesystemError(errno: EINTR), fromDrive: false)
            }
            // Woken when the other fill lands its blocks or gives up (it broadcasts), or when the
            // caller's request is cancelled (registered once).
            if !wokenByCancel, let cancellation {
                cancellation.wakes(lock)
                wokenByCancel = true
            }
            lock.wait()
        }
        lock.unlock()
    }

    /// Copies Drive's bytes of block `b` (fetched into the cache's `source`) into the staging
    /// file, unless it is here already: written whole since the fetch began, or past what is left
    /// of Drive's bytes. Lock held: a write of the block comes wholly before or after.
    private func land(_ b: Int, from source: Int32) throws(FilesystemError) {
        guard !isPresent(b), b <= lastRemoteBlock else { return }
        let start = Int64(b) * Int64(blockSize)
        let end = min(Int64(b + 1) * Int64(blockSize), remoteLimit)
        try FileRanges.copy(from: source, to: descriptor, offset: start, length: end - start)
        setPresent(b)
    }

    /// Fetches what `[offset, offset + length)` misses of Drive's bytes (the lock NOT held).
    func fetch(offset: Int64, length: Int64, cancellation: CancellationFlag?) throws(FilesystemError) {
        guard length > 0 else { return }
        do throws(FillFailure) {
            try fill(Int(offset / Int64(blockSize)), Int((offset + length - 1) / Int64(blockSize)), cancellation: cancellation)
        } catch { throw error.error }
    }

    /// Fetches the edge blocks a write of `[offset, offset + length)` needs first (the lock NOT held).
    func fetchForWrite(offset: Int64, length: Int64, cancellation: CancellationFlag?) throws(FilesystemError) {
        lock.lock()
        let edges = edgesToFetch(offset: offset, length: length)
        lock.unlock()
        for b in edges {
            do throws(FillFailure) { try fill(b, b, cancellation: cancellation) } catch { throw error.error }
        }
    }

    /// Fetches everything still missing, so that a commit holds the whole content (the lock NOT
    /// held). When Drive cannot give it now (it is unreachable, or answers errors), what is missing
    /// stays missing and is listed at the commit (`missingSpans`, `UploadRequest.missing`): what
    /// was written never waits on Drive to be kept. A local failure (the disk) or a cancellation
    /// still throws.
    func fetchForCommit(cancellation: CancellationFlag?) throws(FilesystemError) {
        do throws(FillFailure) { try fill(0, Int.max, cancellation: cancellation) } catch {
            if !error.fromDrive || cancellation?.isCancelled == true { throw error.error }
        }
    }

    // MARK: Operations (the caller holds `lock`)

    /// `[offset, offset + length)` as a reply from the staging file when it needs no fetch; nil
    /// when some of Drive's bytes are still to be fetched (`read` fetches them).
    func readPresent(offset: Int64, length: Int) -> ReadData? {
        let count = Int(max(0, min(Int64(length), size - offset)))
        guard count > 0 else { return .bytes([]) }
        guard needsNoFetch(offset: offset, length: Int64(count)) else { return nil }
        return .file(descriptor: descriptor, offset: offset, length: count)
    }

    /// `[offset, offset + length)` as a reply, fetched first where needed (the lock NOT held).
    func read(offset: Int64, length: Int, cancellation: CancellationFlag?) throws(FilesystemError) -> ReadData {
        for _ in 0..<1_000 {
            lock.lock()
            let answer = readPresent(offset: offset, length: length)
            lock.unlock()
            if let answer { return answer }
            try fetch(offset: offset, length: Int64(length), cancellation: cancellation)
        }
        throw .ioError
    }

    /// Writes `data` at `offset` (lock held); the caller made sure first that nothing it needs
    /// from Drive is missing (`writeNeedsNoFetch`, `fetchForWrite`).
    func write(offset: Int64, data: [UInt8]) throws(FilesystemError) {
        precondition(!sealed, "a write to content the queue owns")
        guard !data.isEmpty else { return }
        let end = offset + Int64(data.count)
        let B = Int64(blockSize)
        let first = Int(offset / B), last = Int((end - 1) / B)
        guard writeNeedsNoFetch(offset: offset, length: Int64(data.count)) else {
            Log.shared.error("write", "\(path): a write reached a block whose Drive bytes were not fetched")
            throw .ioError
        }
        do throws(FilesystemError) {
            try FileRanges.writeAll(descriptor, data, count: data.count, at: offset)
        } catch {
            // Failed partway (a full disk, EIO): the bytes it wrote past the end go again, since
            // the upload sends the staging file up to its length (chaos finding 19); what it
            // changed below the end counts as a change (POSIX leaves a failed write's range
            // unspecified), so that it is committed as it now is.
            if end > size { try? trimToSize() }
            if offset < size { generation += 1 }
            throw error
        }
        for b in first...last where Int64(b) * B >= offset && min(Int64(b + 1) * B, remoteLimit) <= end { setPresent(b) }
        if offset != size { appendOnly = false }
        size = max(size, end)
        generation += 1
        early?.noteWrite(offset: offset, end: end)
    }

    /// Whether an early upload may begin now: a new file written from its start by one writer,
    /// never handed to the queue, holding at least `threshold` bytes.
    func wantsEarlyUpload(threshold: Int64) -> Bool {
        threshold > 0 && !earlyAsked && early == nil && appendOnly && remote == nil && committed == 0 && !sealed && !removed
            && writers == 1 && size >= threshold
    }

    /// Cuts the staging file back to `size` if it is longer (bytes of a write that failed
    /// partway); a commit does it too and fails when it cannot (lock held).
    func trimToSize() throws(FilesystemError) {
        do throws(SystemCallError) {
            guard try SystemCall.size(descriptor) > size else { return }
            try SystemCall.truncate(descriptor, to: size)
        } catch {
            Log.shared.error("write", "\(path): cannot cut the staging file back to \(size) bytes: \(error)")
            throw FilesystemError(local: error)
        }
    }

    func truncate(to length: Int64) throws(FilesystemError) {
        precondition(!sealed, "a truncate of content the queue owns")
        guard length != size else { return }
        do throws(SystemCallError) { try SystemCall.truncate(descriptor, to: length) } catch { throw FilesystemError(local: error) }
        remoteLimit = min(remoteLimit, length)
        if length < size { appendOnly = false }
        size = length
        generation += 1
        early?.noteTruncate(to: length)
    }

    /// The spans below `remoteLimit` whose Drive bytes are not here.
    var missingSpans: [ByteSpan] {
        var spans: [ByteSpan] = []
        var b = 0
        while b <= lastRemoteBlock {
            if isPresent(b) { b += 1; continue }
            var e = b
            while e + 1 <= lastRemoteBlock && !isPresent(e + 1) { e += 1 }
            let start = Int64(b) * Int64(blockSize)
            spans.append(ByteSpan(offset: start, length: min(Int64(e + 1) * Int64(blockSize), remoteLimit) - start))
            b = e + 1
        }
        return spans
    }

    func markCommitted(_ generation: UInt64, ready: Bool) {
        committed = generation
        landed = false
        if ready { sealed = true }
        awaiting = ready ? path : nil
        ownUploads.insert(path)
    }

    /// Whether this copy holds bytes Drive is not to get from the upload of `contentPath`: written
    /// since, committed but not ready, or waiting for another upload.
    func isNewer(than contentPath: String) -> Bool {
        isDirty || hasUnreadyCommit || awaiting.map { $0 != contentPath } ?? false
    }

    /// The upload of `contentPath` ended (landed as Drive's new version, or failed for good, or
    /// went to a conflicted copy): from now on the node shows Drive's version, and this copy,
    /// when it was waiting for that upload and nothing was written since, is let go like a landed
    /// one. True when it was.
    /// The copy now carries new content for another, existing file (an editor's save renamed a
    /// new file over it): it is written on that file's Drive version.
    func rebase(revision: String?, md5: String?) {
        baseRevision = revision
        baseMD5 = md5
    }

    func noteUploadEnded(_ contentPath: String, landedAs drive: DriveFile?) -> Bool {
        if ownUploads.remove(contentPath) != nil, let drive {
            // Written over our own landing: that is what Drive holds when this copy commits next.
            baseRevision = drive.headRevisionId
            baseMD5 = drive.md5Checksum
        }
        guard !isNewer(than: contentPath), awaiting == contentPath else { return false }
        awaiting = nil
        landed = true
        return true
    }

    /// Makes the content writable again after the queue took it: `reclaim` gives the same file
    /// back when its upload has not started; otherwise the content moves to a copy at `newPath`.
    func makeWritable(reclaim: () -> String?, newPath: () -> String) throws(FilesystemError) {
        guard sealed else { return }
        if let reclaimed = reclaim() {
            if reclaimed != path {
                let fd = try Self.openFile(reclaimed, create: false)
                retired.append(descriptor)
                descriptor = fd
                path = reclaimed
                early?.abandon("its content moved to another file")
                early = nil
            }
            ownUploads.remove(reclaimed)  // that job waits for this copy's next commit now
            sealed = false
            committed = generation &- 1  // the journal keeps it as not ready: it must be committed again
            awaiting = nil
            landed = false
            return
        }
        let copyPath = newPath()
        let fd = try Self.openFile(copyPath, create: true)
        do throws(FilesystemError) {
            do throws(SystemCallError) { try SystemCall.truncate(fd, to: size) } catch { throw FilesystemError(local: error) }
            try FileRanges.copy(from: descriptor, to: fd, offset: 0, length: size)
        } catch {
            close(fd)
            unlink(copyPath)
            throw error
        }
        retired.append(descriptor)
        descriptor = fd
        path = copyPath
        // The queue's job of the old file may still finish its early upload; this copy has none.
        early = nil
        appendOnly = false
        sealed = false
        committed = 0
        generation = 0  // the queue has this content already: clean until written
        // `awaiting` stays: the upload of the file this copy was taken from brings Drive to this
        // content (nil when that upload landed already, `landed` then says so).
    }

    /// Removes the staging file when nobody but this object knows it (never committed, or removed).
    func discardFile() {
        if !sealed { unlink(path) }
    }

    /// A removed file nobody has open: its space is given back now (truncated, not only
    /// unlinked: a descriptor may outlive this call). Content the queue owns is the queue's to remove.
    func releaseSpace() {
        early?.abandon("the file was removed")
        early = nil
        guard !sealed else { return }
        _ = try? SystemCall.truncate(descriptor, to: 0)
        unlink(path)
        size = 0
        remoteLimit = 0
    }
}
