import Foundation

extension BlockCache {
    /// One content version: its file, its block map (which blocks are present, which are being
    /// fetched, when each was last used) and what holds it. Reached only under the cache's
    /// `condition`.
    final class Entry {
        let key: ContentKey
        var size: Int64
        let path: String
        let blockSize: Int
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
            self.blockSize = blockSize
            let blocks = Int((max(0, size) + Int64(blockSize) - 1) / Int64(blockSize))
            present = Array(repeating: 0, count: (blocks + 63) / 64)
            lastUse = Array(repeating: 0, count: blocks)
        }

        var blockCount: Int { lastUse.count }
        var isComplete: Bool { presentCount == blockCount }
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

        /// The blocks `[offset, offset + length)` touches (nil: none, the range is empty or past the end).
        func blocks(_ offset: Int64, _ length: Int64) -> ClosedRange<Int>? {
            let end = min(size, offset + max(0, length))
            guard offset < end, offset >= 0 else { return nil }
            return Int(offset / Int64(blockSize))...Int((end - 1) / Int64(blockSize))
        }

        /// Bytes of block `b` (the last one may be short).
        func blockBytes(_ b: Int) -> Int64 {
            min(Int64(blockSize), size - Int64(b) * Int64(blockSize))
        }

        /// Bytes of the blocks present.
        var presentBytes: Int64 {
            var total: Int64 = 0
            for b in 0..<blockCount where isPresent(b) { total += blockBytes(b) }
            return total
        }

        /// Marks every block present (the whole content was written); returns the bytes that were not.
        func setAllPresent() -> Int64 {
            var added: Int64 = 0
            for b in 0..<blockCount where setPresent(b) { added += blockBytes(b) }
            return added
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
}
