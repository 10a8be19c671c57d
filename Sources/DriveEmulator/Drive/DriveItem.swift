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

/// One file, folder or shortcut in My Drive or in a shared drive: everything Drive reports about it
/// that is not derived.
///
/// INVARIANT: exactly one parent for every item except the roots (My Drive's, each shared
/// drive's, and each other user's own root), which have none.
/// INVARIANT: an item with an `owner` (another user's) is in My Drive's space (`driveId` nil) and its
/// parent, if any, has the same owner (the user's own items may sit in another user's folder, when
/// the user created them there as a writer).
/// INVARIANT: `driveId` is nil in My Drive and the shared drive's id below it; a shared drive's root
/// folder is the item whose `id == driveId` (no parent), as on Google.
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
    /// When the item was trashed itself (set with `explicitlyTrashed`, cleared with it). Google
    /// shows it, with `trashingUser`, only for items in shared drives.
    var trashedTime: Int64?
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
    /// The revisions kept, oldest first; the last is the head (its content is `contentFile`).
    /// Nil for folders and shortcuts, and for items stored before revisions were recorded
    /// (`revisionHistory` then makes up the head alone).
    var revisions: [DriveRevision]?
    /// The shared drive this item is in (nil: My Drive).
    var driveId: String?
    /// On a shared drive's root only: the `requestId` of the drives.create that made it.
    var driveRequestId: String?
    /// The email of the user who owns the item when it is not the emulated user (nil: the user's
    /// own, or a shared-drive item). Such items are visible only while shared with the user.
    var owner: String?
    /// The role another user's item was shared with the emulated user directly (nil: not shared
    /// directly; items below a shared folder inherit the folder's role).
    var sharedRole: DriveRole?
    /// When the item was shared with the user (`sharedWithMeTime`), while `sharedRole` is set.
    var sharedTime: Int64?
    /// The email of the last user to modify the item when not the emulated user.
    var lastModifiedBy: String?
    /// On a shared drive's root only: the user's role in the drive (nil: organizer).
    var memberRole: DriveRole?
    /// On a shared drive's root only: false when the user is not a member (nil: a member).
    var member: Bool?

    var isFolder: Bool { mimeType == DriveMime.folder }
    var isShortcut: Bool { mimeType == DriveMime.shortcut }
    var isWorkspace: Bool { DriveMime.isWorkspace(mimeType) }
    /// Has downloadable bytes (`alt=media`).
    var isBlob: Bool { !isFolder && !isShortcut && !isWorkspace }
    /// The root folder of a shared drive (its id is the drive's id).
    var isSharedDriveRoot: Bool { driveId != nil && driveId == id && parent == nil }
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

    /// A shared drive id: the same shape as a root id (Google's are 19 characters `0A…Uk9PVA` too).
    static func newSharedDriveID() -> String { newRootID() }

    /// An opaque revision id: 51 characters starting `0B`, like Google's.
    static func newRevisionID() -> String { "0B" + SecureRandom.token(length: 49) }

    static func looksLikeFileID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 160 && s.allSatisfy { alphabet.contains($0) }
    }
}

/// One content revision of a file (Drive's `Revision`): what the content was when it was the head.
/// Blobs: `id` is the file's `headRevisionId` at the time and the content stays on disk while the
/// revision is kept. Workspace files: ids count up from `"1"`, and each kept revision keeps the
/// document text it had (what its `exportLinks` export; `alt=media` is refused for them as for the
/// file).
struct DriveRevision: Codable, Sendable, Equatable {
    var id: String
    var modifiedTime: Int64
    var mimeType: String
    var size: Int64?
    var md5: String?
    var originalFilename: String?
    var contentFile: String?
    /// Kept whatever the pruning (`revisions.update` `keepForever`); nil: false.
    var keepForever: Bool?
    /// The email of the user who wrote this revision when not the emulated user.
    var modifiedBy: String?

    var isKeptForever: Bool { keepForever == true }
}

extension DriveItem {
    /// Revisions kept per file that are not kept forever, the head included: an older one past
    /// this is purged (its content deleted, the revision gone from revisions.list, revisions.get a
    /// 404), as Google purges revisions that are not kept forever. Revisions kept forever are never
    /// purged and do not count.
    static let keptRevisions = 10
    /// Revisions of one file that may be kept forever (Google's "Manage revisions" guide: up to 200).
    static let maxKeptForever = 200

    /// The kept revisions, oldest first (the head last); empty for folders and shortcuts.
    var revisionHistory: [DriveRevision] {
        if let revisions, !revisions.isEmpty { return revisions }
        guard !isFolder, !isShortcut else { return [] }
        return [headRevision(id: headRevisionId ?? "1")]
    }

    private func headRevision(id: String) -> DriveRevision {
        DriveRevision(id: id, modifiedTime: modifiedTime, mimeType: mimeType, size: isBlob ? size : nil, md5: isBlob ? md5 : nil,
                      originalFilename: isBlob ? originalFilename : nil, contentFile: contentFile, modifiedBy: lastModifiedBy)
    }

    /// Takes the size and checksums of new content, under a new head revision ID (a blob's; the
    /// caller sets `contentFile` and appends the revision).
    mutating func takeContent(_ summary: ContentSummary) {
        size = summary.size
        md5 = summary.md5
        sha1 = summary.sha1
        sha256 = summary.sha256
        headRevisionId = DriveIDs.newRevisionID()
    }

    /// Records the content the item now has (`contentFile`, size, checksums, `headRevisionId`) as
    /// its new head revision after `previous` (the history before the change). Returns the content
    /// files that no kept revision refers to any more, for the caller to release after the commit.
    mutating func appendHeadRevision(after previous: [DriveRevision]) -> [String] {
        var history = previous
        var released: [String] = []
        let id = isBlob ? (headRevisionId ?? DriveIDs.newRevisionID()) : String((history.last.flatMap { Int($0.id) } ?? 0) + 1)
        history.append(headRevision(id: id))
        released += DriveItem.prune(&history, keeping: contentFile)
        revisions = history
        return released
    }

    /// Purges the oldest revisions that are not kept forever while more than `keptRevisions` of
    /// them (the head included) remain; the head (last) is never purged. Returns their content
    /// files other than `head`.
    static func prune(_ history: inout [DriveRevision], keeping head: String?) -> [String] {
        var released: [String] = []
        var purgeable = history.filter { !$0.isKeptForever }.count
        if let last = history.last, last.isKeptForever { purgeable += 1 }
        var i = 0
        while purgeable > keptRevisions, i < history.count - 1 {
            if history[i].isKeptForever { i += 1; continue }
            if let c = history.remove(at: i).contentFile, c != head { released.append(c) }
            purgeable -= 1
        }
        return released
    }

    /// Every content file this item keeps on disk (the head's and the kept revisions').
    var allContentFiles: [String] {
        var files = Set((revisions ?? []).compactMap(\.contentFile))
        if let contentFile { files.insert(contentFile) }
        return Array(files)
    }
}

/// The newest change of one file (Drive keeps one entry per file: a newer change replaces the older).
struct ChangeRecord: Codable, Sendable {
    var fileId: String
    var token: Int64
    var time: Int64
    var removed: Bool
    /// The shared drive the file was in when it changed (nil: My Drive).
    var driveId: String?
    /// A change of a shared drive itself (`changeType: drive`: the user joined or left it, or its
    /// role changed); `fileId` is then the drive's id. nil: a file's change.
    var isDrive: Bool?

    /// Where the record lives in the change table: a file's id, or `drive:` + a drive's id (a drive
    /// and its root folder share an id but have a change each).
    var key: String { ChangeRecord.key(fileId, drive: isDrive == true) }

    static func key(_ id: String, drive: Bool) -> String { drive ? "drive:" + id : id }
}
