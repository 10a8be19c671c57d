import Foundation

/// A seed tree as the tests write it, with what the mount should show for it.
///
/// Paths are local (seed) paths, `/`-separated below the seed root; `shownPath` applies the seed's
/// `%2F` convention and the mount's `/` → `∕` (U+2215) mapping. Duplicates (`~dupN`) and Workspace
/// files (`.gdoc`, …) are not described here: the tests that use them look them up through Drive.
struct SeedTree {
    /// A fixed modification time for every seeded file (2026-01-02T03:04:05Z).
    static let modificationTime = Date(timeIntervalSince1970: 1_767_323_045)

    var files: [(path: String, size: Int)] = []
    var folders: [String] = []

    /// The shown path of a seed path.
    static func shownPath(_ local: String) -> String {
        local.split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "%2F", with: "\u{2215}").replacingOccurrences(of: "%25", with: "%")
        }.joined(separator: "/")
    }

    mutating func folder(_ path: String, in seed: URL) throws {
        try FileManager.default.createDirectory(at: seed.appendingPathComponent(path), withIntermediateDirectories: true)
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += (prefix.isEmpty ? "" : "/") + part
            if !folders.contains(prefix) { folders.append(prefix) }
        }
    }

    mutating func file(_ path: String, in seed: URL, size: Int, seed value: UInt64) throws {
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty { try folder(parent, in: seed) }
        let url = seed.appendingPathComponent(path)
        try TestContent.writeFile(url, size: size, seed: value)
        try FileManager.default.setAttributes([.modificationDate: Self.modificationTime], ofItemAtPath: url.path)
        files.append((path, size))
    }

    mutating func file(_ path: String, in seed: URL, text: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty { try folder(parent, in: seed) }
        let url = seed.appendingPathComponent(path)
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Self.modificationTime], ofItemAtPath: url.path)
        files.append((path, text.utf8.count))
    }

    /// Folders nested `depth` deep: `breadth` folders at the first level, `sub` subfolders in each,
    /// and `filesPerLeaf` small files in every leaf (`ROOT/f03/s17/file-05.txt`; `root` may be empty:
    /// the seed's root). Returns the count of entries below `root` (folders and files).
    @discardableResult
    mutating func wideTree(_ root: String, in seed: URL, breadth: Int, sub: Int, filesPerLeaf: Int) throws -> Int {
        var entries = 0
        for f in 0..<breadth {
            entries += 1
            for s in 0..<sub {
                let leaf = (root.isEmpty ? "" : root + "/") + String(format: "f%02d/s%02d", f, s)
                try folder(leaf, in: seed)
                entries += 1
                for i in 0..<filesPerLeaf {
                    try file(String(format: "%@/file-%02d.txt", leaf, i), in: seed, text: "\(leaf) file \(i)\n")
                    entries += 1
                }
            }
        }
        return entries
    }
}
