import DriveSupport
import Foundation

/// The signed-in user of the emulated account.
struct DriveUser: Sendable {
    var displayName = "Drive Emulator User"
    var emailAddress = "user@drivefs-emulator.test"
    var permissionId = "13058876669334088843"

    var json: [String: Any] {
        ["kind": "drive#user", "displayName": displayName, "emailAddress": emailAddress, "me": true,
         "permissionId": permissionId, "photoLink": "https://lh3.googleusercontent.com/a/default-user=s64"]
    }
}

/// Renders items as Drive v3 `File` resources (every populated field; `fields` trims them later).
/// int64 values are strings, timestamps have three fraction digits and `Z`, absent values are omitted.
struct FileResource {
    var user: DriveUser
    var rootId: String
    /// Where exportLinks point: this emulator's own export endpoint, so clients can follow them.
    var baseURL: String

    static let defaultFields = try! FieldSelection.parse("kind,id,name,mimeType,resourceKey")

    func render(_ item: DriveItem) -> [String: Any] { render(item, only: nil) }

    /// Renders `item`; with `only`, the members outside that set may be left out (the caller's
    /// `fields` selection trims them anyway). Listings ask for a few members of many items: the
    /// nested objects (owners, permissions, capabilities) are most of the cost of a full render.
    /// `access` is what the user may do with the item (`MetadataState.access`); `.own` renders the
    /// user's own item, as every item was before other users existed.
    func render(_ item: DriveItem, only: Set<String>?, access: ItemAccess = .own) -> [String: Any] {
        let want: (String) -> Bool = { only?.contains($0) ?? true }
        var f: [String: Any] = [
            "kind": "drive#file", "id": item.id, "name": item.name, "mimeType": item.mimeType,
            "starred": item.starred, "trashed": item.trashed, "explicitlyTrashed": item.explicitlyTrashed,
            "spaces": ["drive"], "version": String(item.version),
            "createdTime": RFC3339.format(millis: item.createdTime), "modifiedTime": RFC3339.format(millis: item.modifiedTime),
            "modifiedByMeTime": RFC3339.format(millis: item.modifiedTime), "modifiedByMe": true,
            "viewedByMe": item.viewedByMeTime != nil,
            "hasThumbnail": false, "thumbnailVersion": "0",
            "shared": false, "ownedByMe": true,
            "viewersCanCopyContent": true, "copyRequiresWriterPermission": false, "writersCanShare": true,
            "permissionIds": [user.permissionId],
            "isAppAuthorized": false, "inheritedPermissionsDisabled": false,
            "iconLink": "https://drive-thirdparty.googleusercontent.com/16/type/\(item.mimeType)",
        ]
        // Shared-drive items belong to the drive: no owners, not owned by the user, and Google does
        // not populate `permissions` for them.
        let inSharedDrive = item.driveId != nil
        if let d = item.driveId { f["driveId"] = d; f["teamDriveId"] = d; f["ownedByMe"] = false }
        // Google: "Only populated for items in shared drives"; here only on the item trashed
        // itself (what its children carry is not documented).
        if inSharedDrive, item.explicitlyTrashed, let t = item.trashedTime {
            f["trashedTime"] = RFC3339.format(millis: t)
            if want("trashingUser") { f["trashingUser"] = user.json }
        }
        let owner = access.owner.map(OtherUser.init(email:))
        if want("owners"), !inSharedDrive { f["owners"] = [owner?.json ?? user.json] }
        if let by = item.lastModifiedBy {
            if want("lastModifyingUser") { f["lastModifyingUser"] = OtherUser(email: by).json }
            f["modifiedByMe"] = false
            f["modifiedByMeTime"] = nil
        } else if want("lastModifyingUser") { f["lastModifyingUser"] = user.json }
        if let owner {
            // Another user's item: shared with the user (directly, or through a folder above it).
            f["ownedByMe"] = false
            f["shared"] = true
            if let t = access.sharedTime {
                f["sharedWithMeTime"] = RFC3339.format(millis: t)
                if want("sharingUser") { f["sharingUser"] = owner.json }
            }
            var ids = [owner.permissionId]
            if access.canEdit { ids.append(user.permissionId) }
            f["permissionIds"] = ids
        }
        if want("permissions"), !inSharedDrive {
            let me: [String: Any] = ["kind": "drive#permission", "id": user.permissionId, "type": "user",
                                     "role": owner == nil ? "owner" : access.role.rawValue,
                                     "emailAddress": user.emailAddress, "displayName": user.displayName,
                                     "deleted": false, "pendingOwner": false]
            if let owner {
                // Google lists permissions only to those who may share the item (writers).
                if access.canEdit {
                    f["permissions"] = [["kind": "drive#permission", "id": owner.permissionId, "type": "user", "role": "owner",
                                         "emailAddress": owner.email, "displayName": owner.displayName,
                                         "deleted": false, "pendingOwner": false], me]
                }
            } else {
                f["permissions"] = [me]
            }
        }
        if want("linkShareMetadata") { f["linkShareMetadata"] = ["securityUpdateEligible": false, "securityUpdateEnabled": true] }
        if want("capabilities") { f["capabilities"] = FileResource.capabilities(item, access) }
        if let p = item.parent, access.parentVisible { f["parents"] = [p] }
        if let v = item.viewedByMeTime { f["viewedByMeTime"] = RFC3339.format(millis: v) }
        if let d = item.description { f["description"] = d }
        if let p = item.properties { f["properties"] = p }
        if let p = item.appProperties { f["appProperties"] = p }
        if item.isFolder {
            f["webViewLink"] = "https://drive.google.com/drive/folders/\(item.id)"
            f["folderColorRgb"] = item.folderColorRgb ?? "#8f8f8f"
            f["quotaBytesUsed"] = "0"
        } else if item.isShortcut {
            var details: [String: Any] = [:]
            if let t = item.shortcutTargetId { details["targetId"] = t }
            if let t = item.shortcutTargetMimeType { details["targetMimeType"] = t }
            f["shortcutDetails"] = details
            f["webViewLink"] = "https://drive.google.com/file/d/\(item.id)/view?usp=drivesdk"
            f["quotaBytesUsed"] = "0"
        } else if item.isWorkspace {
            f["webViewLink"] = workspaceViewLink(item)
            f["quotaBytesUsed"] = "0"
            let links = Dictionary(uniqueKeysWithValues: (ExportFormats.targets[item.mimeType] ?? []).map { mime in
                (mime, "\(baseURL)/drive/v3/files/\(item.id)/export?mimeType=\(FileResource.queryEscape(mime))")
            })
            if !links.isEmpty, want("exportLinks") { f["exportLinks"] = links }
        } else {
            f["webViewLink"] = "https://drive.google.com/file/d/\(item.id)/view?usp=drivesdk"
            f["webContentLink"] = "https://drive.google.com/uc?id=\(item.id)&export=download"
            if let s = item.size { f["size"] = String(s); f["quotaBytesUsed"] = String(s) }
            if let v = item.md5 { f["md5Checksum"] = v }
            if let v = item.sha1 { f["sha1Checksum"] = v }
            if let v = item.sha256 { f["sha256Checksum"] = v }
            if let v = item.headRevisionId { f["headRevisionId"] = v }
            f["originalFilename"] = item.originalFilename ?? item.name
            let ext = FileResource.extensions(of: item.name)
            f["fileExtension"] = ext.last
            f["fullFileExtension"] = ext.full
        }
        return f
    }

    private func workspaceViewLink(_ item: DriveItem) -> String {
        switch item.mimeType {
        case DriveMime.document: return "https://docs.google.com/document/d/\(item.id)/edit?usp=drivesdk"
        case DriveMime.spreadsheet: return "https://docs.google.com/spreadsheets/d/\(item.id)/edit?usp=drivesdk"
        case DriveMime.presentation: return "https://docs.google.com/presentation/d/\(item.id)/edit?usp=drivesdk"
        case DriveMime.drawing: return "https://docs.google.com/drawings/d/\(item.id)/edit?usp=drivesdk"
        default: return "https://drive.google.com/file/d/\(item.id)/view?usp=drivesdk"
        }
    }

    /// `archive.tar.gz` → (last: "gz", full: "tar.gz"); no dot → empty strings (as Drive).
    static func extensions(of name: String) -> (last: String, full: String) {
        guard let dot = name.firstIndex(of: "."), dot != name.startIndex else { return ("", "") }
        let full = String(name[name.index(after: dot)...])
        let last = name.split(separator: ".", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        return (last, full)
    }

    static func queryEscape(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }
}
