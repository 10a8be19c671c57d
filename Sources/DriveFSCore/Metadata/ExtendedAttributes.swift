import DriveClient
import DriveSupport
import Glibc

/// The read-only extended attributes of a Drive item (`getfattr -d FILE`), all in the `user.`
/// namespace so that unprivileged users see them.
///
/// Contracts (docs/semantics.md, "Extended attributes"):
/// - The values come from the node table (what the last listing or change said): reading them
///   never calls Drive.
/// - An attribute is listed if and only if it has a value; a `user.` name that is not listed
///   answers `ENODATA`, like any Linux filesystem. Other namespaces (`security.`, `system.` with
///   POSIX ACLs, `trusted.`) are not supported: `EOPNOTSUPP`, as a filesystem without them answers.
///   This matters for speed: `ls -l` asks every file for its ACL and SELinux label, and coreutils
///   stops asking a device that answered "not supported" (two FUSE round trips a file otherwise,
///   which made a warm `ls -lR` of 5,000 files five times slower).
/// - They cannot be written or removed (but `user.drivefs.pinned`): `EPERM` (the kernel answers `EROFS` first on the
///   read-only mount; `EPERM` is what a caller that reaches the filesystem gets).
/// - Values are UTF-8 text without a terminating NUL, as `setfattr` would have stored them.
public enum ExtendedAttributes {
    public static let id = "user.drive.id"
    public static let md5 = "user.drive.md5"
    public static let mimeType = "user.drive.mime_type"
    public static let webViewLink = "user.drive.web_view_link"
    public static let modifiedBy = "user.drive.modified_by"
    public static let shortcutTargetID = "user.drive.shortcut_target_id"
    /// The file's revisions on Drive, read from Drive when asked by name (one revisions.list, on
    /// an interactive thread; not listed, so `getfattr -d` costs no request): a line each, oldest
    /// first, `revisionLines`' format.
    public static let revisions = "user.drive.revisions"
    /// The largest value Linux passes (XATTR_SIZE_MAX).
    public static let maximumValueBytes = 65_536

    /// Every name drivefs can show, in the order `listxattr` gives them.
    public static let allNames = [id, md5, mimeType, webViewLink, modifiedBy, shortcutTargetID]

    /// drivefs's own, not Drive's (docs/semantics.md, "Offline"), listed after Drive's:
    /// whether the item is kept offline (`1`/`0`; the one attribute that can be written: `setfattr
    /// -v 1` pins, `-v 0` or `-x` unpins; listed when `1`), the file's `SyncState` (read-only,
    /// always listed) and, for a failed upload, why (read-only, listed when there is one).
    public static let pinned = "user.drivefs.pinned"
    public static let state = "user.drivefs.state"
    public static let error = "user.drivefs.error"
    /// Set to `[FILE_ID ]REVISION_ID`: the file's content becomes that revision (write-only, never
    /// listed; `drivefs revisions --restore`).
    public static let restore = "user.drivefs.restore"
    /// The trash (docs/semantics.md, "The trash"), for `drivefs trash`: on a folder, read from
    /// Drive when asked by name (never listed), the items trashed themselves that were in it or
    /// below it (on the mount's root: every one), `trashLines`' format.
    public static let trash = "user.drive.trash"
    /// Set on the mount's root to a Drive file ID: that item leaves the trash (write-only).
    public static let untrash = "user.drivefs.untrash"
    /// Set on the mount's root to `all`, or to the count of trashed items the user agreed to
    /// delete (refused with `EAGAIN` when the trash holds another count now): Drive's trash is
    /// emptied for good (write-only).
    public static let emptyTrash = "user.drivefs.empty_trash"

    /// The attributes `file` has, in `allNames` order.
    public static func values(of file: DriveFile) -> [(name: String, value: String)] {
        var out: [(String, String)] = [(id, file.id)]
        // Only files with bytes have a checksum (not folders, shortcuts or Workspace documents).
        if let md5 = file.md5Checksum, !md5.isEmpty { out.append((self.md5, md5)) }
        out.append((mimeType, file.mimeType))
        if let link = file.webViewLink, !link.isEmpty { out.append((webViewLink, link)) }
        // The e-mail address identifies the user; the name is what Drive has when it has no address.
        if let user = file.lastModifyingUser, let who = [user.emailAddress, user.displayName].compactMap({ $0 }).first(where: { !$0.isEmpty }) {
            out.append((modifiedBy, who))
        }
        if let target = file.shortcutDetails?.targetId, !target.isEmpty { out.append((shortcutTargetID, target)) }
        return out
    }

    /// The value of `name` for `file`, or `ENODATA` (`EOPNOTSUPP` outside the `user.` namespace).
    public static func value(_ name: String, of file: DriveFile) throws(FilesystemError) -> [UInt8] {
        guard name.hasPrefix("user.") else { throw FilesystemError(errno: EOPNOTSUPP) }
        guard let value = values(of: file).first(where: { $0.name == name })?.value else { throw .noAttribute }
        return Array(value.utf8)
    }

    /// Revisions as `user.drive.revisions` shows them: a line each, oldest first, six fields
    /// separated by tabs: the revision's ID, its time (RFC 3339, UTC, milliseconds), its size in
    /// bytes, its md5, `forever` when Drive keeps it forever (else `auto`; `-` for a Google Docs
    /// file, `keepsForever` false: Drive has no such choice for them), and who made it (`-` for
    /// what Drive does not say: a Doc's revisions have neither size nor md5). When the lines pass
    /// the largest value Linux passes, the oldest are left out.
    public static func revisionLines(_ revisions: [DriveRevision], keepsForever: Bool = true) -> String {
        func field(_ text: String?) -> String {
            guard let text, !text.isEmpty else { return "-" }
            return String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        }
        var lines = revisions.map { r in
            [field(r.id), field(r.modifiedTime.map { RFC3339.format(millis: $0) }), field(r.size.map(String.init)),
             field(r.md5Checksum), !keepsForever ? "-" : r.keepForever ? "forever" : "auto",
             field(r.lastModifyingUser?.emailAddress ?? r.lastModifyingUser?.displayName)].joined(separator: "\t") + "\n"
        }
        var total = lines.reduce(0) { $0 + $1.utf8.count }
        while total > maximumValueBytes, !lines.isEmpty { total -= lines.removeFirst().utf8.count }
        return lines.joined()
    }

    /// Where a trashed item was, as `user.drive.trash` says it.
    public enum TrashedFolder: String, Sendable {
        /// Its folder is on the mount (the path is where it comes back).
        case present = "folder"
        /// Its folder is in the trash too (the path is where that folder was).
        case trashed
        /// Its folder is not on the mount and not in the trash (gone, or not known here yet):
        /// the path is the item's name alone.
        case unknown
    }

    /// One line of `user.drive.trash`.
    public struct TrashLine: Sendable, Equatable {
        public var id: String
        public var trashedTime: Int64?
        public var size: Int64?
        public var mimeType: String
        public var folder: TrashedFolder
        /// The shown names from the mount's root down to the item, its own last.
        public var path: [String]

        public init(id: String, trashedTime: Int64?, size: Int64?, mimeType: String, folder: TrashedFolder, path: [String]) {
            self.id = id
            self.trashedTime = trashedTime
            self.size = size
            self.mimeType = mimeType
            self.folder = folder
            self.path = path
        }
    }

    /// The marker of the last line when items were left out: `+<TAB>COUNT`.
    public static let trashOmittedMarker = "+"

    /// Trashed items as `user.drive.trash` shows them: a line each, six fields separated by tabs:
    /// the Drive ID, when it was trashed (RFC 3339; `-` where Drive does not say: outside shared
    /// drives), its size in bytes (`-` for folders and Google Docs), its MIME type, where its
    /// folder is (`TrashedFolder`), and its path from the mount's root (shown names joined by `/`;
    /// a tab or a line break in a name is shown as a space). When the lines pass the largest value
    /// Linux passes, the last are left out and a last line `+<TAB>COUNT` says how many.
    public static func trashLines(_ items: [TrashLine]) -> String {
        func field(_ text: String?) -> String {
            guard let text, !text.isEmpty else { return "-" }
            return String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        }
        var out = ""
        var bytes = 0
        for (i, item) in items.enumerated() {
            let line = [field(item.id), field(item.trashedTime.map { RFC3339.format(millis: $0) }), field(item.size.map(String.init)),
                        field(item.mimeType), item.folder.rawValue, item.path.map { field($0) }.joined(separator: "/")]
                .joined(separator: "\t") + "\n"
            // Room kept for the marker line (at most "+\t" and ten digits).
            let left = items.count - i
            if bytes + line.utf8.count + (left > 1 ? 16 : 0) > maximumValueBytes {
                out += "\(trashOmittedMarker)\t\(left)\n"
                return out
            }
            out += line
            bytes += line.utf8.count
        }
        return out
    }

    /// `trashLines` read back: the items, and how many were left out.
    public static func parseTrashLines(_ text: String) -> (items: [TrashLine], omitted: Int) {
        var items: [TrashLine] = []
        var omitted = 0
        for line in text.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if f.count == 2, f[0] == trashOmittedMarker { omitted = Int(f[1]) ?? 0; continue }
            guard f.count >= 6, let folder = TrashedFolder(rawValue: f[4]) else { continue }
            items.append(TrashLine(id: f[0], trashedTime: RFC3339.parseMillis(f[1]), size: Int64(f[2]), mimeType: f[3], folder: folder,
                                   path: f[5].split(separator: "/", omittingEmptySubsequences: false).map(String.init)))
        }
        return (items, omitted)
    }
}
