import Foundation
import Glibc

/// The block cache's eviction: which blocks go when it holds more than `capacity` bytes or its
/// filesystem has less than `minimumFree` free, and the holes of the blocks evicted, which wait on
/// disk for the next index write (`BlockCache.flush`: a hole is punched only once the index no
/// longer lists its block).
///
/// Contracts:
/// - Least recently used blocks go first, down to 90% of the cap, and further while the
///   filesystem has less than `minimumFree` free (counting evicted blocks not punched yet).
/// - Only blocks of content nothing holds (no pin) are candidates, never one being fetched, never
///   one of a kept file (`kept`: the files pinned offline).
///
/// A value kept under the cache's `condition`, like the entries it reads.
struct BlockEviction {
    let capacity: Int64
    let minimumFree: Int64
    /// Bytes free on the cache's filesystem now (nil: not known).
    let freeSpace: @Sendable () -> Int64?
    /// Drive IDs of files whose content is never evicted (`BlockCache.setKept`).
    var kept: Set<String>
    /// Blocks evicted since the last index write: their holes are punched only once the index on
    /// disk no longer lists them.
    private(set) var pendingHoles: [(entry: BlockCache.Entry, block: Int)] = []
    /// Bytes of `pendingHoles`: evicted, still on disk until the next index write.
    private(set) var pendingHoleBytes: Int64 = 0

    /// `freeSpace` nil: statvfs(2) of `directory`.
    init(capacity: Int64, minimumFree: Int64, kept: Set<String>, directory: URL, freeSpace: (@Sendable () -> Int64?)?) {
        self.capacity = capacity
        self.minimumFree = max(0, minimumFree)
        self.kept = kept
        let path = directory.path
        self.freeSpace = freeSpace ?? {
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return nil }
            return Int64(info.f_bavail) * Int64(info.f_frsize)
        }
    }

    /// The blocks to evict now, of `entries` holding `usage` bytes, least recently used first; each
    /// is recorded as a pending hole. Nil when nothing is due (under the cap, and enough free);
    /// empty when eviction is due and nothing may go. `extra`: bytes a writer is about to add,
    /// which the floor must leave room for too.
    mutating func victims(in entries: some Sequence<BlockCache.Entry>, usage: Int64,
                          making extra: Int64 = 0) -> [(entry: BlockCache.Entry, block: Int)]? {
        var shortfall: Int64 = 0
        if minimumFree > 0, let free = freeSpace() { shortfall = max(0, minimumFree + extra - free - pendingHoleBytes) }
        guard usage > capacity || shortfall > 0 else { return nil }
        var candidates: [(tick: UInt64, entry: BlockCache.Entry, block: Int)] = []
        for entry in entries where entry.pins == 0 && !kept.contains(entry.key.fileID) {
            for b in 0..<entry.blockCount where entry.isPresent(b) && !entry.fetching.contains(b) {
                candidates.append((entry.lastUse[b], entry, b))
            }
        }
        candidates.sort { $0.tick < $1.tick }
        let target = usage > capacity ? min(capacity / 10 * 9, usage - shortfall) : usage - shortfall
        var left = usage
        var chosen: [(entry: BlockCache.Entry, block: Int)] = []
        for candidate in candidates {
            guard left > target else { break }
            let bytes = candidate.entry.blockBytes(candidate.block)
            chosen.append((candidate.entry, candidate.block))
            pendingHoles.append((candidate.entry, candidate.block))
            pendingHoleBytes += bytes
            left -= bytes
        }
        return chosen
    }

    /// The pending holes, handed to an index write (which punches them once the index is on disk).
    mutating func takeHoles() -> [(entry: BlockCache.Entry, block: Int)] {
        defer {
            pendingHoles = []
            pendingHoleBytes = 0
        }
        return pendingHoles
    }

    /// Holes an index write took and could not punch (the index was not written): pending again,
    /// before those evicted since.
    mutating func putBack(_ holes: [(entry: BlockCache.Entry, block: Int)]) {
        pendingHoles = holes + pendingHoles
        pendingHoleBytes = pendingHoles.reduce(0) { $0 + $1.entry.blockBytes($1.block) }
    }
}
