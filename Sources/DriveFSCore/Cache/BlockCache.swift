import CSystem
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
///   lose cached blocks, never make wrong ones. Every version gets a file name of its own (a random
///   suffix), so a file removed and made again can never be mistaken for the old one.
/// - Memory does not grow with file size: downloads stream into the file (pwrite), and reads are
///   answered from the file descriptor.
/// - A version's descriptor stays open while anything holds a pin on it: every open `Handle`, and
///   every claimed run until its download ended. A download writes only through the descriptor its
///   own pin keeps open, so closing a file (its last handle released, the version discarded or
///   replaced, eviction) never lets a fetch in flight write through a number the process has
///   given to another file since; the close happens when the last pin goes.
///
/// Lock order: `condition` is a leaf with respect to the rest of the core (never held while
/// calling Drive, the node table or the kernel).
public final class BlockCache: Sendable {
    public let directory: URL
    public let capacity: Int64
    public let blockSize: Int

    private let condition = NSCondition()
    // GUARDED_BY(condition): everything below.
    private nonisolated(unsafe) var entries: [ContentKey: Entry] = [:]
    private nonisolated(unsafe) var usage: Int64 = 0
    private nonisolated(unsafe) var tick: UInt64 = 0
    private nonisolated(unsafe) var exporting: Set<ContentKey> = []
    private nonisolated(unsafe) var counters = Counters()
    /// Drive IDs of files whose content is never evicted (`setKept`).
    private nonisolated(unsafe) var kept: Set<String> = []
    /// Bytes of `pendingHoles`: evicted, still on disk until the next index write.
    private nonisolated(unsafe) var pendingHoleBytes: Int64 = 0
    public let minimumFree: Int64
    /// Bytes free on the cache's filesystem now (nil: not known).
    private let freeSpace: @Sendable () -> Int64?
    /// Blocks evicted since the last index write: their holes are punched only once the index on
    /// disk no longer lists them.
    private nonisolated(unsafe) var pendingHoles: [(entry: Entry, block: Int)] = []
    /// Something changed since the index was last written.
    private nonisolated(unsafe) var indexDirty = false
    /// One index write at a time.
    private let flushLock = NSLock()
    private let flusher = NSCondition()
    private nonisolated(unsafe) var flusherRunning = false  // GUARDED_BY(flusher)
    private nonisolated(unsafe) var flusherStopping = false  // GUARDED_BY(flusher)
    private let flusherDone = DispatchGroup()
    /// How often the index is written while mounted.
    public static let flushInterval: Double = 30
    private var indexPath: String { directory.appendingPathComponent("index.json").path }

    public struct Counters: Sendable, Equatable {
        public var bytesFetched: Int64 = 0
        public var fetches: Int = 0
        public var blocksEvicted: Int = 0
    }

    /// One content version. Reached only under `condition`.
    final class Entry {
        let key: ContentKey
        var size: Int64
        let path: String
        var descriptor: Int32 = -1
        var present: [UInt64]
        var presentCount = 0
        var fetching: Set<Int> = []
        var lastUse: [UInt64]
        /// Open handles plus claimed runs whose download has not ended.
        /// INVARIANT: `descriptor >= 0` while `pins > 0`; it is closed only when the last pin goes.
        var pins = 0
        /// The map on disk is behind `present`.
        var dirty = false
        /// Discarded while pinned: removed at the last release.
        var doomed = false
        /// A background fill of the whole version runs (`beginFill` to `endFill`).
        var filling = false

        init(key: ContentKey, size: Int64, path: String, blockSize: Int) {
            self.key = key
            self.size = size
            self.path = path
            let blocks = Int((max(0, size) + Int64(blockSize) - 1) / Int64(blockSize))
            present = Array(repeating: 0, count: (blocks + 63) / 64)
            lastUse = Array(repeating: 0, count: blocks)
        }

        var blockCount: Int { lastUse.count }
        func isPresent(_ b: Int) -> Bool { present[b >> 6] & (1 << UInt64(b & 63)) != 0 }
        func setPresent(_ b: Int) -> Bool {
            guard !isPresent(b) else { return false }
            present[b >> 6] |= 1 << UInt64(b & 63)
            presentCount += 1
            return true
        }
        func clearPresent(_ b: Int) {
            guard isPresent(b) else { return }
            present[b >> 6] &= ~(1 << UInt64(b & 63))
            presentCount -= 1
        }
    }

    /// An open reference to one content version: keeps it from eviction and its descriptor open.
    /// `descriptor` is valid until the handle is released, and only until then.
    public final class Handle: Sendable {
        public let key: ContentKey
        public let descriptor: Int32
        public let size: Int64
        let entry: UncheckedEntry

        init(entry: Entry) {
            self.key = entry.key
            self.descriptor = entry.descriptor
            self.size = entry.size
            self.entry = UncheckedEntry(entry)
        }
    }

    /// @unchecked: the entry is only touched under the cache's `condition`.
    struct UncheckedEntry: @unchecked Sendable {
        let value: Entry
        init(_ value: Entry) { self.value = value }
    }

    /// - Parameter kept: the files kept offline as the last run left them (`setKept`): the index
    ///   is loaded without evicting them even when the cap shrank.
    /// - Parameter minimumFree: bytes the cache's filesystem keeps free (0: only the cap counts);
    ///   `freeSpace` says how many are free now (default: statvfs(2) of `directory`).
    public init(directory: URL, capacity: Int64, blockSize: Int, kept: Set<String> = [], minimumFree: Int64 = 0,
                freeSpace: (@Sendable () -> Int64?)? = nil) throws(FilesystemError) {
        self.kept = kept
        self.minimumFree = max(0, minimumFree)
        let path = directory.path
        self.freeSpace = freeSpace ?? {
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return nil }
            return Int64(info.f_bavail) * Int64(info.f_frsize)
        }
        self.directory = directory
        self.capacity = max(Int64(blockSize), capacity)
        self.blockSize = blockSize
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
        guard kept != fileIDs else { return }
        kept = fileIDs
        evictIfNeeded()
    }

    /// Bytes of content of kept files held now (they count against the cap like any other).
    public var keptBytes: Int64 {
        condition.lock()
        defer { condition.unlock() }
        var total: Int64 = 0
        for entry in entries.values where kept.contains(entry.key.fileID) && !entry.doomed {
            for b in 0..<entry.blockCount where entry.isPresent(b) { total += blockBytes(entry, b) }
        }
        return total
    }

    /// Bytes of version `key` held now (0 when it is not cached, or cached at another size).
    public func presentBytes(_ key: ContentKey, size: Int64) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = entries[key], !entry.doomed, entry.size == size else { return 0 }
        if entry.presentCount == entry.blockCount { return size }
        var total: Int64 = 0
        for b in 0..<entry.blockCount where entry.isPresent(b) { total += blockBytes(entry, b) }
        return total
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
        while exporting.contains(key) {
            if cancellation?.isCancelled == true { condition.unlock(); throw FilesystemError(errno: EINTR) }
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
        }
        if let entry = entries[key], !entry.doomed, entry.presentCount == entry.blockCount {
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
        for b in 0..<entry.blockCount where entry.setPresent(b) { usage += blockBytes(entry, b) }
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
            if existing.pins > 0 || existing.presentCount == existing.blockCount { return }
            remove(existing)
        }
        let entry = Entry(key: key, size: size, path: newPath(for: key), blockSize: blockSize)
        if link(path, entry.path) != 0 {
            let fd = Glibc.open(entry.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            defer { close(fd) }
            do throws(FilesystemError) {
                if ftruncate(fd, off_t(size)) != 0 { throw .ioError }
                try FileRanges.copy(from: descriptor, to: fd, offset: 0, length: size)
            } catch {
                unlink(entry.path)
                return
            }
        }
        entries[key] = entry
        for b in 0..<entry.blockCount where entry.setPresent(b) { usage += blockBytes(entry, b) }
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

    /// Writes the index if anything changed: the data of every changed version is flushed first,
    /// then the index replaced atomically, then the holes of blocks evicted before it punched.
    /// Called every `flushInterval` by the filesystem and at unmount.
    public func flush() {
        flushLock.lock()
        defer { flushLock.unlock() }
        condition.lock()
        guard indexDirty else { condition.unlock(); return }
        var toSync: [String] = []
        var records: [IndexRecord] = []
        for entry in entries.values where !entry.doomed && entry.presentCount > 0 {
            if entry.dirty { toSync.append(entry.path) }
            entry.dirty = false
            records.append(IndexRecord(fileID: entry.key.fileID, version: entry.key.version, revision: entry.key.revision,
                                       exportMimeType: entry.key.exportMimeType, size: entry.size,
                                       file: (entry.path as NSString).lastPathComponent, present: entry.present))
        }
        let holes = pendingHoles
        pendingHoles = []
        pendingHoleBytes = 0
        indexDirty = false
        condition.unlock()

        for path in toSync {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { _ = fdatasync(fd); close(fd) }
        }
        do {
            let data = try JSONEncoder().encode(IndexFile(blockSize: blockSize, entries: records))
            try AtomicFile.write(Array(data), to: indexPath, mode: 0o600)
        } catch {
            Log.shared.warning("cache", "cannot save the block cache index \(indexPath): \(error)")
            condition.lock()
            indexDirty = true
            pendingHoles = holes + pendingHoles
            pendingHoleBytes = pendingHoles.reduce(0) { $0 + blockBytes($1.entry, $1.block) }
            for entry in entries.values { entry.dirty = true }
            condition.unlock()
            return
        }
        condition.lock()
        defer { condition.unlock() }
        for hole in holes where entries[hole.entry.key] === hole.entry {
            let entry = hole.entry
            // Fetched again since it was evicted (or being fetched): its bytes are live now.
            guard !entry.isPresent(hole.block), !entry.fetching.contains(hole.block) else { continue }
            let opened = entry.descriptor < 0
            let fd = opened ? Glibc.open(entry.path, O_RDWR | O_CLOEXEC) : entry.descriptor
            guard fd >= 0 else { continue }
            _ = csystem_punch_hole(fd, off_t(Int64(hole.block) * Int64(blockSize)), off_t(blockBytes(entry, hole.block)))
            if opened { close(fd) }
        }
    }

    /// Writes the index every `interval` seconds on a thread of its own until `stopFlushing`.
    public func startFlushing(interval: Double) {
        flusher.lock()
        guard !flusherRunning else { flusher.unlock(); return }
        flusherRunning = true
        flusherStopping = false
        flusher.unlock()
        flusherDone.enter()
        let thread = Thread { [self] in
            defer { flusherDone.leave() }
            while true {
                flusher.lock()
                let deadline = Date().addingTimeInterval(interval)
                while !flusherStopping && Date() < deadline { _ = flusher.wait(until: deadline) }
                let stop = flusherStopping
                flusher.unlock()
                if stop { return }
                flush()
            }
        }
        thread.name = "drivefs-cache-flush"
        thread.start()
    }

    /// Ends the flushing thread (the caller flushes once more itself).
    public func stopFlushing() {
        flusher.lock()
        let running = flusherRunning
        flusherStopping = true
        flusherRunning = false
        flusher.broadcast()
        flusher.unlock()
        if running { _ = flusherDone.wait(timeout: .now() + 30) }
    }

    private struct IndexFile: Codable {
        var format = 1
        var blockSize: Int
        var entries: [IndexRecord]
    }

    private struct IndexRecord: Codable {
        var fileID: String
        var version: String
        var revision: String?
        var exportMimeType: String?
        var size: Int64
        var file: String
        var present: [UInt64]
    }

    // MARK: Reading

    /// True when `[offset, offset + length)` is all present (and marks it used).
    public func isPresent(_ handle: Handle, offset: Int64, length: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard let range = blocks(entry, offset, Int64(length)) else { return true }
        tick += 1
        for b in range {
            guard entry.isPresent(b) else { return false }
            entry.lastUse[b] = tick
        }
        return true
    }

    /// The first block in `[offset, offset + length)` that is neither present nor being fetched,
    /// claimed for the caller with the run of such blocks after it (at most `maxBytes`), or nil.
    /// Used by read-ahead, which fetches only what nobody fetches yet. A run returned must be passed
    /// to `download` (it holds a pin on the version until then); nil once every handle of the
    /// version was released.
    func claim(_ handle: Handle, offset: Int64, length: Int64, maxBytes: Int64) -> ClosedRange<Int>? {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard let range = blocks(entry, offset, length) else { return nil }
        return claimRun(entry, in: range, maxBlocks: max(1, Int(maxBytes / Int64(blockSize))))
    }

    /// The first block of `range` that is neither present nor fetched, and the run of such blocks
    /// after it (at most `maxBlocks`, and up to `through` when that is past the range), claimed.
    /// The claim pins the version (its descriptor stays open) until `download` of the run ends;
    /// nothing is claimed on a version nobody holds (its descriptor is closed, or about to be).
    private func claimRun(_ entry: Entry, in range: ClosedRange<Int>, maxBlocks: Int, through: Int? = nil) -> ClosedRange<Int>? {
        guard entry.pins > 0, entry.descriptor >= 0 else { return nil }
        guard let start = range.first(where: { !entry.isPresent($0) && !entry.fetching.contains($0) }) else { return nil }
        let last = min(entry.blockCount - 1, max(range.upperBound, through ?? range.upperBound))
        var end = start
        while end + 1 <= last, end - start + 1 < maxBlocks, !entry.isPresent(end + 1),
              !entry.fetching.contains(end + 1) {
            end += 1
        }
        for b in start...end { entry.fetching.insert(b) }
        entry.pins += 1
        return start...end
    }

    /// Marks the start of a background fill of the version (one at a time per version): false
    /// when one runs already, the version is complete, or nobody holds it.
    func beginFill(_ handle: Handle) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard entry.pins > 0, !entry.filling, entry.presentCount < entry.blockCount else { return false }
        entry.filling = true
        return true
    }

    func endFill(_ handle: Handle) {
        condition.lock()
        handle.entry.value.filling = false
        condition.unlock()
    }

    /// Makes `[offset, offset + length)` present: fetches what nobody fetches (with `fetch`, on
    /// this thread), waits for what others fetch. Throws the caller's own fetch failure, EINTR
    /// when `cancellation` fires while it waits, or EBADF when every handle of the version was
    /// released (a late call through a released handle fetches nothing).
    /// `extend`: how many bytes past the range a download this call starts may run on (a
    /// sequential reader's next reads), where nobody fetches them yet.
    public func ensure(_ handle: Handle, offset: Int64, length: Int, extend: Int64 = 0, cancellation: CancellationFlag?,
                       fetch: Fetcher) throws(FilesystemError) {
        let entry = handle.entry.value
        let through = Int(min(entry.size - 1, offset + Int64(length) + max(0, extend) - 1) / Int64(blockSize))
        while true {
            condition.lock()
            guard let range = blocks(entry, offset, Int64(length)) else { condition.unlock(); return }
            guard entry.pins > 0 else { condition.unlock(); throw .badHandle }
            tick += 1
            var missing = false
            for b in range {
                entry.lastUse[b] = tick
                if !entry.isPresent(b) { missing = true }
            }
            guard missing else { condition.unlock(); return }
            if let run = claimRun(entry, in: range, maxBlocks: Int.max, through: through) {
                condition.unlock()
                try download(handle, blocks: run, fetch: fetch)
                continue
            }
            if cancellation?.isCancelled == true { condition.unlock(); throw FilesystemError(errno: EINTR) }
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
            condition.unlock()
        }
    }

    /// Downloads `[offset, offset + length)` of a content version into `sink`; returns the count.
    public typealias Fetcher = (_ offset: Int64, _ length: Int64, _ sink: ResponseSink) throws -> Int64

    /// Fetches the claimed blocks `run` (they are marked as being fetched by the caller, and the
    /// claim pinned the version), marking each present as its last byte arrives. Unclaims what did
    /// not arrive and lets go of the claim's pin, whatever happens. Writes go through the
    /// descriptor the pin keeps open, never through one a handle saw: the handle may be released
    /// (and its number reused by the process) while the download runs.
    func download(_ handle: Handle, blocks run: ClosedRange<Int>, fetch: Fetcher) throws(FilesystemError) {
        let entry = handle.entry.value
        let start = Int64(run.lowerBound) * Int64(blockSize)
        let length = min(entry.size, Int64(run.upperBound + 1) * Int64(blockSize)) - start
        condition.lock()
        assert(entry.pins > 0 && entry.descriptor >= 0 && run.allSatisfy { entry.fetching.contains($0) },
               "download of a run that was not claimed")
        let fd = entry.descriptor
        condition.unlock()
        let progress = Locked<(written: Int64, marked: Int, writeError: Int32)>((0, run.lowerBound, 0))
        let blockSize = Int64(self.blockSize)
        let size = entry.size
        let shared = handle.entry
        let sink = ResponseSink.callback { [self] chunk in
            let entry = shared.value
            var (written, failed) = progress.withLock { ($0.written, $0.writeError) }
            guard failed == 0 else { return false }
            let room = Int(length - written)
            let count = min(chunk.count, room)
            do throws(SystemCallError) {
                try SystemCall.writeAll(fd, UnsafeRawBufferPointer(rebasing: chunk[0..<count]), at: start + written)
            } catch {
                failed = error.errno
                progress.withLock { $0.writeError = failed }
                return false
            }
            written += Int64(count)
            let complete = Int((start + written) / blockSize) - 1
            let last = start + written == min(size, start + length) ? run.upperBound : min(run.upperBound, complete)
            let from = progress.withLock { p -> Int in
                p.written = written
                defer { p.marked = max(p.marked, last + 1) }
                return p.marked
            }
            if last >= from { self.markPresent(entry, from...last) }
            return count == chunk.count
        }
        var failure: FilesystemError?
        do {
            let received = try fetch(start, length, sink)
            if received < length && progress.withLock({ $0.written }) < length {
                Log.shared.warning("cache", "\(entry.key): asked for \(length) bytes at \(start), got \(received): "
                                   + "the file is shorter than listed (it changed?)")
                failure = .ioError
            }
        } catch let error as DriveError where error == .cancelled && progress.withLock({ $0.written }) >= length {
            // The sink stopped a server that sent more than was asked: what was asked arrived.
        } catch {
            let code = progress.withLock { $0.writeError }
            if code != 0 {
                Log.shared.error("cache", "cannot write to the cache file of \(entry.key): \(String(cString: strerror(code)))")
                failure = FilesystemError(local: code)
            } else {
                failure = FilesystemError.from(error)
            }
        }
        condition.lock()
        for b in run { entry.fetching.remove(b) }
        counters.fetches += 1
        counters.bytesFetched += progress.withLock { $0.written }
        condition.broadcast()
        // The claim's pin: the last one closes the descriptor (or removes a discarded version).
        unpin(entry)
        condition.unlock()
        if let failure { throw failure }
    }

    private func markPresent(_ entry: Entry, _ range: ClosedRange<Int>) {
        condition.lock()
        defer { condition.unlock() }
        for b in range {
            entry.fetching.remove(b)
            if entry.setPresent(b) { usage += blockBytes(entry, b) }
        }
        entry.dirty = true
        indexDirty = true
        condition.broadcast()
        evictIfNeeded()
    }

    // MARK: Internals (under `condition`)

    private func blocks(_ entry: Entry, _ offset: Int64, _ length: Int64) -> ClosedRange<Int>? {
        let end = min(entry.size, offset + max(0, length))
        guard offset < end, offset >= 0 else { return nil }
        return Int(offset / Int64(blockSize))...Int((end - 1) / Int64(blockSize))
    }

    private func blockBytes(_ entry: Entry, _ b: Int) -> Int64 {
        min(Int64(blockSize), entry.size - Int64(b) * Int64(blockSize))
    }

    /// A fresh file name for a version: its key's hash and a random suffix.
    private func newPath(for key: ContentKey) -> String {
        let digest = Digest.hex(.sha256, of: Array("\(key.fileID)\0\(key.version)\0\(key.exportMimeType ?? "")".utf8))
        var random = SystemRandomNumberGenerator()
        let suffix = String(format: "%016llx", random.next() as UInt64)
        return directory.appendingPathComponent(String(digest.prefix(32)) + "-" + suffix).path
    }

    private func openDescriptor(_ entry: Entry) throws(FilesystemError) {
        guard entry.descriptor < 0 else { return }
        let fd = Glibc.open(entry.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            Log.shared.error("cache", "cannot open the cache file \(entry.path): \(String(cString: strerror(code)))")
            throw FilesystemError(local: code)
        }
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size != entry.size, ftruncate(fd, off_t(entry.size)) != 0 {
            let code = errno
            close(fd)
            Log.shared.error("cache", "cannot size the cache file \(entry.path): \(String(cString: strerror(code)))")
            throw FilesystemError(local: code)
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
    private func unpin(_ entry: Entry) {
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
        for b in 0..<entry.blockCount where entry.isPresent(b) { usage -= blockBytes(entry, b) }
        closeDescriptor(entry)
        // Safe before the index is rewritten: a listed file that is missing is skipped at load, and
        // no later version reuses this name.
        unlink(entry.path)
        if entries[entry.key] === entry { entries[entry.key] = nil }
        indexDirty = true
    }

    /// Room for `bytes` more on the cache's filesystem without going below `minimumFree`
    /// (`--cache-min-free`; a writer's local copy grows by that much): cached content that may go
    /// is evicted first, as for the floor itself (least recently used; never open or kept
    /// content). False when even then the filesystem would keep less than the floor: the writer
    /// gets ENOSPC. True without a floor, or when the free space cannot be read. Blocks evicted
    /// and not yet punched count as free (they are, at the next index write).
    public func makeRoom(for bytes: Int64) -> Bool {
        guard minimumFree > 0, bytes > 0 else { return true }
        condition.lock()
        defer { condition.unlock() }
        guard let free = freeSpace() else { return true }
        if free + pendingHoleBytes - bytes >= minimumFree { return true }
        evictIfNeeded(making: bytes)
        return free + pendingHoleBytes - bytes >= minimumFree
    }

    /// Least recently used blocks of unpinned content go first, down to 90% of the cap, and further
    /// while the filesystem has less than `minimumFree` free; content of kept files is never a
    /// candidate.
    private func evictIfNeeded(making extra: Int64 = 0) {
        var shortfall: Int64 = 0
        if minimumFree > 0, let free = freeSpace() { shortfall = max(0, minimumFree + extra - free - pendingHoleBytes) }
        guard usage > capacity || shortfall > 0 else { return }
        var candidates: [(tick: UInt64, entry: Entry, block: Int)] = []
        for entry in entries.values where entry.pins == 0 && !kept.contains(entry.key.fileID) {
            for b in 0..<entry.blockCount where entry.isPresent(b) && !entry.fetching.contains(b) {
                candidates.append((entry.lastUse[b], entry, b))
            }
        }
        candidates.sort { $0.tick < $1.tick }
        let target = usage > capacity ? min(capacity / 10 * 9, usage - shortfall) : usage - shortfall
        var touched: [ObjectIdentifier: Entry] = [:]
        for candidate in candidates {
            guard usage > target else { break }
            let entry = candidate.entry
            // The hole is punched after the next index write (see `flush`).
            pendingHoles.append((entry, candidate.block))
            entry.clearPresent(candidate.block)
            usage -= blockBytes(entry, candidate.block)
            pendingHoleBytes += blockBytes(entry, candidate.block)
            counters.blocksEvicted += 1
            entry.dirty = true
            touched[ObjectIdentifier(entry)] = entry
        }
        indexDirty = true
        for entry in touched.values where entry.presentCount == 0 { remove(entry) }
    }

    // MARK: The index on disk

    /// Rebuilds the table from the index of an earlier mount; files the index does not list go.
    private func loadIndex() {
        var keep: Set<String> = ["index.json"]
        var loaded: [Entry] = []
        if let data = FileManager.default.contents(atPath: indexPath),
           let index = try? JSONDecoder().decode(IndexFile.self, from: data), index.blockSize == blockSize {
            for record in index.entries {
                let key = ContentKey(fileID: record.fileID, version: record.version, revision: record.revision,
                                     exportMimeType: record.exportMimeType)
                let path = directory.appendingPathComponent(record.file).path
                let entry = Entry(key: key, size: record.size, path: path, blockSize: blockSize)
                var st = stat()
                guard !record.file.contains("/"), record.present.count == entry.present.count,
                      stat(path, &st) == 0, st.st_size == record.size else { continue }
                entry.present = record.present
                entry.presentCount = (0..<entry.blockCount).filter { entry.isPresent($0) }.count
                loaded.append(entry)
                keep.insert(record.file)
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where !keep.contains(name) {
            unlink(directory.appendingPathComponent(name).path)
        }
        condition.lock()
        defer { condition.unlock() }
        for entry in loaded {
            tick += 1
            for b in 0..<entry.blockCount where entry.isPresent(b) {
                entry.lastUse[b] = tick
                usage += blockBytes(entry, b)
            }
            entries[entry.key] = entry
        }
        evictIfNeeded()
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) -> String? {
        do throws(SystemCallError) { try SystemCall.writeAll(fd, bytes, at: offset) } catch { return error.reason }
        return nil
    }
}
