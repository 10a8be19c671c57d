import DriveSupport
import Foundation

/// The block cache's index file (`index.json` in its directory): which blocks of which content
/// version are present, as of its last write. This type is the format and nothing else; when the
/// index is written, and what must be on disk before and after, is `BlockCache.flush`'s.
struct BlockCacheIndex {
    static let fileName = "index.json"
    let path: String

    init(directory: URL) {
        path = directory.appendingPathComponent(Self.fileName).path
    }

    /// One version as the index lists it.
    struct Record: Codable {
        var fileID: String
        var version: String
        var revision: String?
        var exportMimeType: String?
        var size: Int64
        /// The version's file, a name in the cache's directory.
        var file: String
        /// The block map: bit `b % 64` of word `b / 64` set when block `b` is present.
        var present: [UInt64]
    }

    private struct File: Codable {
        var format = 1
        var blockSize: Int
        var entries: [Record]
    }

    /// The records of the last write; nil when there is none, it cannot be read, or it was written
    /// with another block size.
    func read(blockSize: Int) -> [Record]? {
        guard let data = FileManager.default.contents(atPath: path),
              let index = try? JSONDecoder().decode(File.self, from: data), index.blockSize == blockSize else { return nil }
        return index.entries
    }

    /// Replaces the index atomically (`AtomicFile`: the old one stays whole until the new one is).
    func write(_ records: [Record], blockSize: Int) throws {
        let data = try JSONEncoder().encode(File(blockSize: blockSize, entries: records))
        try AtomicFile.write(Array(data), to: path, mode: 0o600)
    }
}
