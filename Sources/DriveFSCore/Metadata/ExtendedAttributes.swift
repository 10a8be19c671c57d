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
    /// bytes, its md5, `forever` when Drive keeps it forever (else `auto`), and who made it (`-`
    /// for what Drive does not say). When the lines pass the largest value Linux passes, the
    /// oldest are left out.
    public static func revisionLines(_ revisions: [DriveRevision]) -> String {
        func field(_ text: String?) -> String {
            guard let text, !text.isEmpty else { return "-" }
            return String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        }
        var lines = revisions.map { r in
            [field(r.id), field(r.modifiedTime.map { RFC3339.format(millis: $0) }), field(r.size.map(String.init)),
             field(r.md5Checksum), r.keepForever ? "forever" : "auto",
             field(r.lastModifyingUser?.emailAddress ?? r.lastModifyingUser?.displayName)].joined(separator: "\t") + "\n"
        }
        var total = lines.reduce(0) { $0 + $1.utf8.count }
        while total > maximumValueBytes, !lines.isEmpty { total -= lines.removeFirst().utf8.count }
        return lines.joined()
    }
}
