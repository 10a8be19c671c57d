import DriveSupport
import Foundation

/// Drive's MIME types that the emulator gives meaning to.
enum DriveMime {
    static let folder = "application/vnd.google-apps.folder"
    static let shortcut = "application/vnd.google-apps.shortcut"
    static let document = "application/vnd.google-apps.document"
    static let spreadsheet = "application/vnd.google-apps.spreadsheet"
    static let presentation = "application/vnd.google-apps.presentation"
    static let drawing = "application/vnd.google-apps.drawing"
    static let workspacePrefix = "application/vnd.google-apps."

    /// Docs Editors (and other Workspace) types: no bytes of their own, exported only.
    static func isWorkspace(_ mime: String) -> Bool {
        mime.hasPrefix(workspacePrefix) && mime != folder && mime != shortcut
    }
}

/// One file, folder or shortcut in My Drive: everything Drive reports about it that is not derived.
///
/// INVARIANT: exactly one parent for every item except the root, which has none.
/// INVARIANT: `contentFile`, `size` and the checksums are set for blobs (and `contentFile` for
/// Workspace files, holding their "document text"); never for folders and shortcuts.
/// INVARIANT: `trashed == explicitlyTrashed || parent.trashed`.
struct DriveItem: Codable, Sendable {
    var id: String
    var name: String
    var mimeType: String
    var parent: String?
    var trashed = false
    var explicitlyTrashed = false
    var createdTime: Int64
    var modifiedTime: Int64
    var viewedByMeTime: Int64?
    /// Monotonic per item: bumped by every change to the item.
    var version: Int64 = 1
    /// Creation order; the last tie-breaker of every listing so that paging is stable.
    var seq: Int64 = 0
    var description: String?
    var starred = false
    var properties: [String: String]?
    var appProperties: [String: String]?
    var folderColorRgb: String?
    var shortcutTargetId: String?
    var shortcutTargetMimeType: String?
    var originalFilename: String?
    var headRevisionId: String?
    var size: Int64?
    var md5: String?
    var sha1: String?
    var sha256: String?
    /// File name of the content under the store's `content/` directory.
    var contentFile: String?

    var isFolder: Bool { mimeType == DriveMime.folder }
    var isShortcut: Bool { mimeType == DriveMime.shortcut }
    var isWorkspace: Bool { DriveMime.isWorkspace(mimeType) }
    /// Has downloadable bytes (`alt=media`).
    var isBlob: Bool { !isFolder && !isShortcut && !isWorkspace }
}

/// Drive's identifier shapes (see drive-behaviours.md §1.7).
enum DriveIDs {
    static let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    /// A new item id: 33 characters, starting with `1`.
    static func newFileID() -> String { "1" + SecureRandom.token(length: 32) }

    /// A new id for an item of `mimeType`: Docs Editors (Workspace) files created natively, imported,
    /// copied or seeded get 44 characters starting with `1`, everything else 33.
    static func newFileID(forMimeType mimeType: String) -> String {
        DriveMime.isWorkspace(mimeType) ? "1" + SecureRandom.token(length: 43) : newFileID()
    }

    /// A My Drive root id: 19 characters, `0A` + 11 random + `Uk9PVA`.
    static func newRootID() -> String {
        let alnum = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let body = SecureRandom.bytes(11).map { alnum[Int($0) % alnum.count] }
        return "0A" + String(body) + "Uk9PVA"
    }

    /// An opaque revision id: 51 characters starting `0B`, like Google's.
    static func newRevisionID() -> String { "0B" + SecureRandom.token(length: 49) }

    static func looksLikeFileID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 160 && s.allSatisfy { alphabet.contains($0) }
    }
}

/// The newest change of one file (Drive keeps one entry per file: a newer change replaces the older).
struct ChangeRecord: Codable, Sendable {
    var fileId: String
    var token: Int64
    var time: Int64
    var removed: Bool
}
