import DriveSupport
import Foundation

/// A role the emulated user holds on an item or in a shared drive, weakest first (Drive's
/// `Permission.role` values; `owner` for the user's own items).
enum DriveRole: String, Codable, Sendable, Comparable, CaseIterable {
    case reader, commenter, writer, fileOrganizer, organizer, owner

    private var rank: Int { DriveRole.allCases.firstIndex(of: self)! }
    static func < (a: DriveRole, b: DriveRole) -> Bool { a.rank < b.rank }

    /// The roles an item of another user may be shared with (Drive's file roles below owner).
    static let fileRoles: [DriveRole] = [.reader, .commenter, .writer]
    /// The roles of a shared drive member.
    static let memberRoles: [DriveRole] = [.reader, .commenter, .writer, .fileOrganizer, .organizer]
}

/// What the emulated user may do with one item, derived from who owns it, the roles it (or a
/// folder above it) was shared with, and the user's role in its shared drive.
struct ItemAccess: Equatable, Sendable {
    var role: DriveRole
    /// The owner when another user (nil: the user, or a shared-drive item).
    var owner: String?
    /// Shared with the user directly (`sharedWithMe`), since then.
    var sharedTime: Int64?
    /// Whether the user can see the item's parent (`parents` is left out otherwise, as Google
    /// shows only the parents a user can see).
    var parentVisible = true
    var inSharedDrive = false

    /// The user's own item in My Drive (every item, before sharing existed).
    static let own = ItemAccess(role: .owner)

    var canEdit: Bool { role >= .writer }
    var canComment: Bool { role >= .commenter }
    /// Trash and untrash: the owner in My Drive; a file organizer or organizer in a shared drive.
    var canTrash: Bool { inSharedDrive ? role >= .fileOrganizer : role == .owner }
    /// Permanent deletion: the owner; an organizer in a shared drive (files.delete's description).
    var canDelete: Bool { inSharedDrive ? role >= .organizer : role == .owner }
    /// Moves: the owner; a file organizer or organizer in a shared drive; a writer of another
    /// user's item (the emulator's reading of "editors can move").
    var canMove: Bool { inSharedDrive ? role >= .fileOrganizer : role >= .writer }
    var isSharedWithMe: Bool { owner != nil && sharedTime != nil }
}

/// Another user of the emulated domain, as Drive renders a user that is not the caller.
struct OtherUser {
    var email: String

    var displayName: String {
        let local = email.split(separator: "@").first.map(String.init) ?? email
        return local.prefix(1).uppercased() + local.dropFirst()
    }

    /// A stable 20-digit permission id derived from the email (Google's are opaque digit strings).
    var permissionId: String {
        let digest = Digest.hex(.sha256, of: Array(email.lowercased().utf8))
        let digits = digest.compactMap { c -> Character? in
            guard let v = c.hexDigitValue else { return nil }
            return Character(String(v % 10))
        }
        return "1" + String(digits.prefix(19))
    }

    var json: [String: Any] {
        ["kind": "drive#user", "displayName": displayName, "emailAddress": email, "me": false,
         "permissionId": permissionId, "photoLink": "https://lh3.googleusercontent.com/a/default-user=s64"]
    }
}

extension MetadataState {
    /// The user's access to `item`; nil when the user cannot see it at all (a 404 for every method,
    /// as for an unknown id). O(1) for the user's own items; O(depth) for other users' items.
    func access(_ item: DriveItem) -> ItemAccess? {
        if let d = item.driveId {
            guard let root = data.items[d], root.member != false else { return nil }
            var a = ItemAccess(role: root.memberRole ?? .organizer)
            a.inSharedDrive = true
            return a
        }
        guard let owner = item.owner else {
            var a = ItemAccess.own
            if let p = item.parent, let parent = data.items[p], parent.owner != nil { a.parentVisible = sharedRole(above: parent) != nil }
            return a
        }
        var role = item.sharedRole
        var above: DriveRole?
        if let p = item.parent, let parent = data.items[p] { above = sharedRole(above: parent) }
        if let r = above { role = max(role ?? r, r) }
        guard let role else { return nil }
        return ItemAccess(role: role, owner: owner, sharedTime: item.sharedRole != nil ? item.sharedTime : nil,
                          parentVisible: above != nil)
    }

    /// The strongest role shared with the user on `item` or a folder above it (other users' items).
    private func sharedRole(above item: DriveItem) -> DriveRole? {
        var best: DriveRole?
        var next: DriveItem? = item
        var steps = 0
        while let current = next, current.owner != nil, steps < 10_000 {
            if let r = current.sharedRole { best = max(best ?? r, r) }
            next = current.parent.flatMap { data.items[$0] }
            steps += 1
        }
        return best
    }

    /// Whether the user can see `item`.
    func isVisible(_ item: DriveItem) -> Bool {
        if item.driveId == nil, item.owner == nil { return true }
        return access(item) != nil
    }

    /// Whether the user may create items in (or move items into) `folder`.
    func canAddChildren(_ folder: DriveItem) -> Bool {
        guard folder.isFolder, let a = access(folder) else { return false }
        return a.canEdit
    }

    /// The ids of other users' items below `id` that the user sees (for the change feed when a
    /// folder is shared or unshared): `id`'s subtree, other users' items only.
    func foreignSubtree(_ id: String) -> [String] {
        ([id] + descendants(of: id)).filter { data.items[$0]?.owner != nil }
    }
}

extension FileResource {
    /// The `capabilities` of an item the user holds `access` to. With `.own` (or an organizer's
    /// access to a shared-drive item) they are exactly what the single-user emulator always said.
    static func capabilities(_ item: DriveItem, _ access: ItemAccess) -> [String: Bool] {
        let isRoot = item.parent == nil
        let folder = item.isFolder
        let edit = access.canEdit
        let full = access.role >= .organizer
        let move = access.canMove && !isRoot
        return [
            "canAcceptOwnership": false, "canAddChildren": folder && edit, "canAddMyDriveParent": false,
            "canChangeCopyRequiresWriterPermission": !folder && edit, "canChangeSecurityUpdateEnabled": false,
            "canChangeViewersCanCopyContent": !folder && edit, "canComment": access.canComment, "canCopy": !folder,
            "canDelete": !isRoot && access.canDelete, "canDeleteChildren": folder && (full || access.role == .owner),
            "canDownload": true, "canEdit": edit,
            "canListChildren": folder, "canModifyContent": edit, "canModifyContentRestriction": !folder && edit,
            "canModifyLabels": false, "canMoveChildrenWithinDrive": folder && access.canMove,
            "canMoveItemIntoTeamDrive": !isRoot && (access.role == .owner || full),
            "canMoveItemOutOfDrive": !isRoot && (access.role == .owner || full), "canMoveItemWithinDrive": move,
            "canReadLabels": false, "canReadRevisions": item.isBlob && edit, "canRemoveChildren": folder && edit,
            "canRemoveMyDriveParent": !isRoot && (access.role == .owner || full),
            "canRename": !isRoot && edit, "canShare": edit, "canTrash": !isRoot && access.canTrash,
            "canTrashChildren": folder && (access.inSharedDrive ? access.role >= .fileOrganizer : access.role == .owner),
            "canUntrash": !isRoot && access.canTrash,
        ]
    }
}
