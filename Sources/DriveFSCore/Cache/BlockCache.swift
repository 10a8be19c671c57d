import DriveClient
import DriveSupport
import Foundation
import Glibc

/// File content on local disk, in fixed-size blocks, per content version (`ContentKey`).
///
/// Contracts:
/// - Bytes of one version are never served for another: every version has its own sparse file,
///   and a block counts as present only once every byte of it was written from a download of that
///   version (pinned to its revision when Drive names one).
/// - Concurrent readers of the same blocks share one download: a block is fetched by one reader
///   while the others wait for it; blocks become present as their bytes arrive, so a reader waits
///   only for what it needs.
/// - Capped at `capacity` bytes of present blocks: past it, the least recently used blocks of
///   content that no handle has open are released (holes punched; files removed when empty).
///   Open content is never evicted, so the cap can be exceeded while open files need more.
///   Neither is content of a kept file (`setKept`: the files pinned offline): the cap counts its
///   blocks, and what is not kept is evicted around them.
/// - With `minimumFree` (`--cache-min-free`), the same eviction also runs, under the cap, until the
///   cache's filesystem has that many bytes free (counting blocks evicted and not yet punched, which
///   are freed at the next index write); open and kept content stay, whatever the shortfall.
/// - Survives remounts: which blocks of which version are present is recorded in one index
///   (`index.json`), written every `flushInterval` seconds and at unmount, always after the data it
///   describes was flushed (fdatasync), and before an evicted block's hole is punched: a crash can
///   lose cached blocks, never make wrong ones (the order, step by step: `flush`). Every version
///   gets a file name of its own (a random suffix), so a file removed and made again can never be
///   mistaken for the old one.
/// - Memory does not grow with file size: downloads stream into the file (pwrite), and reads are
///   answered from the file descriptor.
/// - A version's descriptor stays open while anything holds a pin on it: every open `Handle`, and
///   every claimed run until its download ended. A download writes only through the descriptor its
///   own pin keeps open, so closing a file (its last handle released, the version discarded or
///   replaced, eviction) never lets a fetch in flight write through a number the process has
///   given to another file since; the close happens when the last pin goes.
///
/// Its parts, one job each, all under one lock (`condition`):
/// - the block map of each version (`BlockCache+Entry.swift`: `Entry`, `Handle`), and opening,
///   adopting, releasing and discarding versions (this file);
/// - fetching into it: shared downloads under per-block claims, read-ahead and fills
///   (`BlockCache+Fetch.swift`);
/// - eviction: which blocks go, and their holes until the next index write (`BlockEviction`);
/// - the index on disk: its format (`BlockCacheIndex`), and when it is written with the crash
///   order it keeps, loaded at start, and the thread that writes it (`BlockCache+Index.swift`).
///
/// Lock order: `condition` is a leaf with respect to the rest of the core (never held while
/// calling Drive, the node table or the kernel). `flushLock` (one index write at a time) is taken
/// before it, never while holding it.
public final class BlockCache: Sendable {
    public let directory: URL
    public let capacity: Int64
    public let blockSize: Int
    /// Bytes the cache's filesystem keeps free (`--cache-min-free`; 0: only the cap counts).
    public let minimumFree: Int64

    let condition = RankedCondition(.leaf)
    // GUARDED_BY(condition): everything below, to `flushLock`.
    nonisolated(unsafe) var entries: [ContentKey: Entry] = [:]
    /// Bytes of present blocks, of every version.
    nonisolated(unsafe) var usage: Int64 = 0
    /// The clock of `Entry.lastUse`.
    nonisolated(unsafe) var tick: UInt64 = 0
    private nonisolated(unsafe) var exporting: Set<ContentKey> = []
    nonisolated(unsafe) var counters = Counters()
    nonisolated(unsafe) var eviction: BlockEviction
    /// Something changed since the index was last written.
    nonisolated(unsafe) var indexDirty = false
    /// One index write at a time.
    let flushLock = NSLock()
    let index: BlockCacheIndex
    /// Makes a data file's bytes durable (`flush`'s first step); false when it could not.
    let syncData: @Sendable (String) -> Bool
    /// The thread that writes the index while mounted (`startFlushing`).
    let flusher = Locked<BackgroundLoop?>(nil)
    /// How often the index is written while mounted.
    public static let flushInterval: Double = 30

    public struct Counters: Sendable, Equatable {
        public var bytesFetched: Int64 = 0
        public var fetches: Int = 0
        public var blocksEvicted: Int = 0
    }

    /// - Parameter kept: the files kept offline as the last run left them (`setKept`): the index
    ///   is loaded without evicting them even when the cap shrank.
    /// - Parameter minimumFree: bytes the cache's filesystem keeps free (0: only the cap counts);
    ///   `freeSpace` says how many are free now (default: statvfs(2) of `directory`).
    /// - Parameter syncData: test seam for `flush`'s first step (default: fdatasync(2) of the file).
    public init(directory: URL, capacity: Int64, blockSize: Int, kept: Set<String> = [], minimumFree: Int64 = 0,
                freeSpace: (@Sendable () -> Int64?)? = nil,
                syncData: (@Sendable (String) -> Bool)? = nil) throws(FilesystemError) {
        self.syncData = syncData ?? { path in
            guard let fd = try? SystemCall.open(path, O_RDONLY | O_CLOEXEC) else { return false }
            defer { close(fd) }
            return (try? SystemCall.fdatasync(fd)) != nil
        }
        self.directory = directory
        self.capacity = max(Int64(blockSize), capacity)
        self.blockSize = blockSize
        self.minimumFree = max(0, minimumFree)
        eviction = BlockEviction(capacity: self.capacity, minimumFree: minimumFree, kept: kept, directory: directory,
                                 freeSpace: freeSpace)
        index = BlockCacheIndex(directory: directory)
        try CacheDirectoryLock.createDirectory(directory)
        loadIndex()
    }

    public var counterValues: Counters { condition.lock(); defer { condition.unlock() }; return counters }
    public var bytesUsed: Int64 { condition.lock(); defer { condition.unlock() }; return usage }
    public var entryCount: Int { condition.lock(); defer { condition.unlock() }; return entries.count }

    /// Makes the content of the files `fileIDs` (every version cached) exempt from eviction, in
    /// place of the set given before: the files kept offline. Their blocks still count against
    /// the cap; content no longer kept is evicted again, least recently used first.
    public func setKept(_ fileIDs: Set<String>) {
        condition.lock()
        defer { condition.unlock() }
        guard eviction.kept != fileIDs else { return }
        eviction.kept = fileIDs
        evictIfNeeded()
    }

    /// Bytes of content of kept files held now (they count against the cap like any other).
    public var keptBytes: Int64 {
        condition.lock()
        defer { condition.unlock() }
        var total: Int64 = 0
        for entry in entries.values where eviction.kept.contains(entry.key.fileID) && !entry.doomed {
            total += entry.presentBytes
        }
        return total
    }

    /// Bytes of version `key` held now (0 when it is not cached, or cached at another size).
    public func presentBytes(_ key: ContentKey, size: Int64) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = entries[key], !entry.doomed, entry.size == size else { return 0 }
        if entry.isComplete { return size }
        return entry.presentBytes
    }

    /// The size of version `key` when the cache holds all of it (an export is kept whole or not at
    /// all), nil otherwise.
    public func completeSize(_ key: ContentKey) -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = entries[key], !entry.doomed, entry.isComplete else { return nil }
        return entry.size
    }

    // MARK: Opening and closing

    /// Pins `key` (a blob of `size` bytes), creating its sparse file if needed.
    public func open(_ key: ContentKey, size: Int64) throws(FilesystemError) -> Handle {
        condition.lock()
        defer { condition.unlock() }
        let entry: Entry
        if let existing = entries[key], !existing.doomed, existing.size == size {
            entry = existing
        } else {
            if let existing = entries[key] { retire(existing) }
            entry = Entry(key: key, size: size, path: newPath(for: key), blockSize: blockSize)
            entries[key] = entry
        }
        try openDescriptor(entry)
        entry.pins += 1
        return Handle(entry: entry)
    }

    /// Pins an exported file, producing it with `export` (once, however many callers ask at the
    /// same time) if it is not cached yet.
    public func openExport(_ key: ContentKey, cancellation: CancellationFlag?,
                           export: () throws -> [UInt8]) throws(FilesystemError) -> Handle {
        condition.lock()
        if exporting.contains(key) { cancellation?.wakes(condition) }
        while exporting.contains(key) {
            if cancellation?.isCancelled == true { condition.unlock(); throw FilesystemError(errno: EINTR) }
            condition.wait()
        }
        if let entry = entries[key], !entry.doomed, entry.isComplete {
            defer { condition.unlock() }
            try openDescriptor(entry)
            entry.pins += 1
            return Handle(entry: entry)
        }
        exporting.insert(key)
        condition.unlock()
        defer {
            condition.lock()
            exporting.remove(key)
            condition.broadcast()
            condition.unlock()
        }
        let bytes: [UInt8]
        do {
            bytes = try export()
        } catch {
            throw FilesystemError.from(error)
        }
        condition.lock()
        defer { condition.unlock() }
        if let old = entries[key] { retire(old) }
        let entry = Entry(key: key, size: Int64(bytes.count), path: newPath(for: key), blockSize: blockSize)
        entries[key] = entry
        try openDescriptor(entry)
        if let problem = Self.writeAll(entry.descriptor, bytes, at: 0) {
            remove(entry)
            Log.shared.error("cache", "cannot write an export of \(key.fileID) to the cache: \(problem)")
            throw .ioError
        }
        usage += entry.setAllPresent()
        counters.bytesFetched += Int64(bytes.count)
        counters.fetches += 1
        entry.dirty = true
        indexDirty = true
        entry.pins += 1
        evictIfNeeded()
        return Handle(entry: entry)
    }

    /// Takes complete content of version `key` (`size` bytes, at `path`, open as `descriptor`) as
    /// its cached copy: a file just uploaded, so that reading it back downloads nothing. The file
    /// is hard-linked into the cache when it can be (no byte copied; its owner may delete its own
    /// name), else copied from the descriptor. Nothing happens when the version is cached or open
    /// already, or when the copy fails (the cache simply does not have it).
    public func adopt(_ key: ContentKey, size: Int64, path: String, descriptor: Int32) {
        condition.lock()
        defer { condition.unlock() }
        if let existing = entries[key] {
            if existing.pins > 0 || existing.isComplete { return }
            remove(existing)
        }
        let entry = Entry(key: key, size: size, path: newPath(for: key), blockSize: blockSize)
        if link(path, entry.path) != 0 {
            guard let fd = try? SystemCall.open(entry.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600) else { return }
            defer { close(fd) }
            do {
                try SystemCall.truncate(fd, to: size)
                try FileRanges.copy(from: descriptor, to: fd, offset: 0, length: size)
            } catch {
                unlink(entry.path)
                return
            }
        }
        entries[key] = entry
        usage += entry.setAllPresent()
        entry.dirty = true
        indexDirty = true
        evictIfNeeded()
    }

    /// Unpins; the last release of a version closes its file (its blocks are recorded by the next
    /// index write, off the caller's path: closing a file never waits for the disk).
    /// A download still running on the version keeps it open until it ends (`download`).
    public func release(_ handle: Handle) {
        condition.lock()
        defer { condition.unlock() }
        unpin(handle.entry.value)
    }

    /// Forgets a version that no file has any more (its blocks can never be served again).
    public func discard(_ key: ContentKey) {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = entries[key] else { return }
        retire(entry)
    }

    // MARK: Internals (under `condition`)

    /// A fresh file name for a version: its key's hash and a random suffix.
    private func newPath(for key: ContentKey) -> String {
        let digest = Digest.hex(.sha256, of: Array("\(key.fileID)\0\(key.version)\0\(key.exportMimeType ?? "")".utf8))
        var random = SystemRandomNumberGenerator()
        let suffix = String(format: "%016llx", random.next() as UInt64)
        return directory.appendingPathComponent(String(digest.prefix(32)) + "-" + suffix).path
    }

    private func openDescriptor(_ entry: Entry) throws(FilesystemError) {
        guard entry.descriptor < 0 else { return }
        let fd: Int32
        do throws(SystemCallError) {
            fd = try SystemCall.open(entry.path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        } catch {
            Log.shared.error("cache", "cannot open the cache file \(entry.path): \(error.reason)")
            throw FilesystemError(local: error)
        }
        if let current = try? SystemCall.size(fd), current != entry.size {
            do throws(SystemCallError) {
                try SystemCall.truncate(fd, to: entry.size)
            } catch {
                close(fd)
                Log.shared.error("cache", "cannot size the cache file \(entry.path): \(error.reason)")
                throw FilesystemError(local: error)
            }
        }
        entry.descriptor = fd
    }

    private func closeDescriptor(_ entry: Entry) {
        guard entry.descriptor >= 0 else { return }
        close(entry.descriptor)
        entry.descriptor = -1
    }

    /// Lets go of one pin (a handle or a claimed run); the last one closes the descriptor, and
    /// removes a version discarded meanwhile.
    func unpin(_ entry: Entry) {
        assert(entry.pins > 0, "release of an unpinned cache entry")
        entry.pins -= 1
        guard entry.pins == 0 else { return }
        if entry.doomed {
            remove(entry)
            return
        }
        closeDescriptor(entry)
        evictIfNeeded()
    }

    /// Takes a version out of the table: at once when nothing holds it, else at its last unpin
    /// (its descriptor stays open for the handles and downloads that hold it).
    private func retire(_ entry: Entry) {
        guard entry.pins > 0 else { return remove(entry) }
        entry.doomed = true
        if entries[entry.key] === entry { entries[entry.key] = nil }
    }

    private func remove(_ entry: Entry) {
        usage -= entry.presentBytes
        closeDescriptor(entry)
        // Safe before the index is rewritten: a listed file that is missing is skipped at load, and
        // no later version reuses this name.
        unlink(entry.path)
        if entries[entry.key] === entry { entries[entry.key] = nil }
        indexDirty = true
    }

    /// Room for `bytes` more on the cache's filesystem without going below `minimumFree`
    /// (`--cache-min-free`; a writer's local copy grows by that much): cached content that may go
    /// is evicted first, as for the floor itself (see `BlockEviction`). False when even then the
    /// filesystem would keep less than the floor: the writer gets ENOSPC. True without a floor, or
    /// when the free space cannot be read. Blocks evicted and not yet punched count as free (they
    /// are, at the next index write).
    public func makeRoom(for bytes: Int64) -> Bool {
        guard eviction.minimumFree > 0, bytes > 0 else { return true }
        condition.lock()
        defer { condition.unlock() }
        guard let free = eviction.freeSpace() else { return true }
        if free + eviction.pendingHoleBytes - bytes >= eviction.minimumFree { return true }
        evictIfNeeded(making: bytes)
        return free + eviction.pendingHoleBytes - bytes >= eviction.minimumFree
    }

    /// Evicts what `eviction` chooses (see `BlockEviction`), with room for `extra` more bytes
    /// above the floor; a version left with no block goes.
    func evictIfNeeded(making extra: Int64 = 0) {
        guard let victims = eviction.victims(in: entries.values, usage: usage, making: extra) else { return }
        var touched: [ObjectIdentifier: Entry] = [:]
        for (entry, block) in victims {
            // The hole is punched after the next index write (see `flush`).
            entry.clearPresent(block)
            usage -= entry.blockBytes(block)
            counters.blocksEvicted += 1
            entry.dirty = true
            touched[ObjectIdentifier(entry)] = entry
        }
        indexDirty = true
        for entry in touched.values where entry.presentCount == 0 { remove(entry) }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) -> String? {
        do throws(SystemCallError) { try SystemCall.writeAll(fd, bytes, at: offset) } catch { return error.reason }
        return nil
    }
}
