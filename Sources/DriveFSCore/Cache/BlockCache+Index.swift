import CSystem
import DriveSupport
import Foundation
import Glibc

/// The block map on disk: the index (`BlockCacheIndex`) written with its crash order (`flush`),
/// loaded at start (`loadIndex`), and the thread that writes it while mounted (`startFlushing`).
extension BlockCache {
    /// Writes the index if anything changed, in this order, which is the cache's crash contract (a
    /// crash can lose cached blocks, never make wrong ones):
    /// 1. the data of every changed version is flushed (fdatasync), so that every block the new
    ///    index lists present is on disk;
    /// 2. then the index is replaced atomically;
    /// 3. then the holes of blocks evicted before it are punched: the index on disk no longer
    ///    lists them (a block fetched again meanwhile keeps its bytes). When the index cannot be
    ///    written, nothing is punched: the holes wait for the next write, and every version counts
    ///    as changed again.
    /// One write at a time (`flushLock`). Called every `flushInterval` by the filesystem and at unmount.
    public func flush() {
        flushLock.lock()
        defer { flushLock.unlock() }
        condition.lock()
        guard indexDirty else { condition.unlock(); return }
        var toSync: [String] = []
        var records: [BlockCacheIndex.Record] = []
        for entry in entries.values where !entry.doomed && entry.presentCount > 0 {
            if entry.dirty { toSync.append(entry.path) }
            entry.dirty = false
            records.append(BlockCacheIndex.Record(fileID: entry.key.fileID, version: entry.key.version,
                                                  revision: entry.key.revision, exportMimeType: entry.key.exportMimeType,
                                                  size: entry.size, file: (entry.path as NSString).lastPathComponent,
                                                  present: entry.present))
        }
        let holes = eviction.takeHoles()
        indexDirty = false
        condition.unlock()

        // 1. The data. A file whose bytes could not be made durable (an I/O error, no descriptor
        // left) is left out of this index: listed, its blocks could read back as zeros after a
        // crash. It is tried again at the next flush; meanwhile a restart fetches it again.
        let unsynced = Set(toSync.filter { !syncData($0) })
        if !unsynced.isEmpty {
            let names = Set(unsynced.map { ($0 as NSString).lastPathComponent })
            records.removeAll { names.contains($0.file) }
            Log.shared.warning("cache", "cannot make \(unsynced.count) cached file(s) durable (\(unsynced.sorted().first ?? "")): "
                               + "left out of the block cache index until they are")
            condition.lock()
            indexDirty = true
            for entry in entries.values where unsynced.contains(entry.path) { entry.dirty = true }
            condition.unlock()
        }
        // 2. The index.
        do {
            try index.write(records, blockSize: blockSize)
        } catch {
            Log.shared.warning("cache", "cannot save the block cache index \(index.path): \(error)")
            condition.lock()
            indexDirty = true
            eviction.putBack(holes)
            for entry in entries.values { entry.dirty = true }
            condition.unlock()
            return
        }
        // 3. The holes.
        condition.lock()
        defer { condition.unlock() }
        for hole in holes where entries[hole.entry.key] === hole.entry {
            let entry = hole.entry
            // Fetched again since it was evicted (or being fetched): its bytes are live now.
            guard !entry.isPresent(hole.block), !entry.fetching.contains(hole.block) else { continue }
            let opened = entry.descriptor < 0
            guard let fd = opened ? try? SystemCall.open(entry.path, O_RDWR | O_CLOEXEC) : entry.descriptor else { continue }
            _ = try? SystemCall.retrying("fallocate") {
                csystem_punch_hole(fd, off_t(Int64(hole.block) * Int64(blockSize)), off_t(entry.blockBytes(hole.block)))
            }
            if opened { close(fd) }
        }
    }

    /// Writes the index every `interval` seconds on a thread of its own until `stopFlushing`.
    public func startFlushing(interval: Double) {
        let loop = flusher.withLock { current -> BackgroundLoop? in
            guard current == nil else { return nil }
            current = BackgroundLoop(name: "drivefs-cache-flush", interval: interval)
            return current
        }
        loop?.start { [weak self] in self?.flush() }
    }

    /// Ends the flushing thread (the caller flushes once more itself).
    public func stopFlushing() {
        let loop = flusher.withLock { current -> BackgroundLoop? in
            defer { current = nil }
            return current
        }
        loop?.stop()
    }

    /// Rebuilds the table from the index of an earlier mount; files the index does not list go.
    func loadIndex() {
        var keep: Set<String> = [BlockCacheIndex.fileName]
        var loaded: [Entry] = []
        for record in index.read(blockSize: blockSize) ?? [] {
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
                usage += entry.blockBytes(b)
            }
            entries[entry.key] = entry
        }
        evictIfNeeded()
    }
}
