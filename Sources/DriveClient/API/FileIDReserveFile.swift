import DriveSupport
import Foundation
import Glibc

/// A `FileIDReserve` in one small text file (the core's is `<cache dir>/file-ids`, beside the
/// upload journal and the index), replaced whole by `AtomicFile.write` (a temporary file,
/// fsync, rename, fsync of the directory) on every `save`.
///
/// Format (UTF-8 lines):
///
///     drivefs file IDs 1
///     owner <owner>
///     space drive
///     count <n>
///     <id>                 (n lines; the pool claims from the end)
///     sha256 <hex>         (of every byte before this line)
///
/// Contracts:
/// - The IDs belong to one drive, named by `owner` (the core gives the mounted root's ID, as the
///   index does: My Drive's root names the account, a shared drive's ID the drive). A file of
///   another owner, another format, a wrong count or checksum, an ID outside Drive's alphabet
///   (`[A-Za-z0-9_-]`), or one that cannot be read is ignored (logged) and `load` answers
///   nothing; the next `save` replaces it. Never fatal.
/// - `space drive`: IDs are generated for Drive's `drive` space (files.generateIds `space=drive`,
///   which is also the space of shared drives: the API knows only `drive` and `appDataFolder`,
///   and takes no drive ID there). A file of another space is ignored like a foreign one.
/// - Generated IDs do not expire as far as is known (drive-behaviours §1.7 and the discovery
///   document say nothing of a lifetime; the emulator keeps issued IDs until used): an ID kept
///   here for months is still good. Should Drive refuse one (400), the create fails as it would
///   with a bad ID from generateIds; it is never retried under another ID behind the user's back.
/// - A `save` that throws (ENOSPC, EIO) leaves the previous file whole (`AtomicFile`); the error
///   is the `AtomicFile.Failure` with the system's errno.
public final class FileIDReserveFile: FileIDReserve {
    public let path: String
    public let owner: String
    static let header = "drivefs file IDs 1"
    static let space = "drive"
    /// The file's name in the core's cache directory.
    public static let fileName = "file-ids"

    public init(path: String, owner: String) {
        self.path = path
        self.owner = owner
    }

    public var location: String { path }

    public func load() -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) == 0 {
                Log.shared.warning("ids", "ignoring the file ID reserve \(path): it cannot be read; it is replaced by the next refill")
            }
            return []
        }
        switch Self.decode(Array(data), owner: owner) {
        case .success(let ids):
            return ids
        case .failure(let problem):
            Log.shared.warning("ids", "ignoring the file ID reserve \(path) (\(problem.reason)); its IDs are not used, "
                               + "and the next refill replaces it")
            return []
        }
    }

    public func save(_ ids: [String]) throws {
        try AtomicFile.write(Self.encode(ids, owner: owner), to: path, mode: 0o600, durable: true)
    }

    struct Unusable: Error { let reason: String }

    static func encode(_ ids: [String], owner: String) -> [UInt8] {
        var text = "\(header)\nowner \(owner)\nspace \(space)\ncount \(ids.count)\n"
        text.reserveCapacity(text.utf8.count + ids.count * 34 + 72)
        for id in ids { text += id + "\n" }
        let body = Array(text.utf8)
        return body + Array("sha256 \(Digest.hex(.sha256, of: body))\n".utf8)
    }

    static func decode(_ bytes: [UInt8], owner: String) -> Result<[String], Unusable> {
        // The checksum line is the last one: `sha256 ` and 64 hex digits, then a newline.
        let trailer = 7 + 64 + 1
        guard bytes.count > trailer, bytes.last == UInt8(ascii: "\n") else { return .failure(Unusable(reason: "cut short")) }
        let body = Array(bytes[0..<(bytes.count - trailer)])
        guard let line = String(bytes: bytes[(bytes.count - trailer)...], encoding: .utf8),
              line == "sha256 \(Digest.hex(.sha256, of: body))\n" else {
            return .failure(Unusable(reason: "checksum"))
        }
        guard let text = String(bytes: body, encoding: .utf8) else { return .failure(Unusable(reason: "not UTF-8")) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.last == "" else { return .failure(Unusable(reason: "cut short")) }
        lines.removeLast()
        guard lines.count >= 4, lines[0] == header else { return .failure(Unusable(reason: "not a drivefs file ID reserve of this format")) }
        guard lines[1] == "owner \(owner)" else {
            return .failure(Unusable(reason: "made for another drive (\(lines[1].dropFirst(6))), not \(owner)"))
        }
        guard lines[2] == "space \(space)" else { return .failure(Unusable(reason: "IDs of another space (\(lines[2]))")) }
        guard lines[3].hasPrefix("count "), let count = Int(lines[3].dropFirst(6)), count == lines.count - 4 else {
            return .failure(Unusable(reason: "the count does not match"))
        }
        let ids = lines[4...].map(String.init)
        guard ids.allSatisfy(Self.isDriveID) else { return .failure(Unusable(reason: "not a Drive file ID")) }
        return .success(ids)
    }

    /// Drive's ID alphabet (drive-behaviours §1.7).
    static func isDriveID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 128 && id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F
        }
    }
}
