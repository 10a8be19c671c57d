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
    func render(_ item: DriveItem, only: Set<String>?) -> [String: Any] {
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
        if want("owners"), !inSharedDrive { f["owners"] = [user.json] }
        if want("lastModifyingUser") { f["lastModifyingUser"] = user.json }
        if want("permissions"), !inSharedDrive {
            f["permissions"] = [["kind": "drive#permission", "id": user.permissionId, "type": "user", "role": "owner",
                                 "emailAddress": user.emailAddress, "displayName": user.displayName,
                                 "deleted": false, "pendingOwner": false]]
        }
        if want("linkShareMetadata") { f["linkShareMetadata"] = ["securityUpdateEligible": false, "securityUpdateEnabled": true] }
        if want("capabilities") { f["capabilities"] = capabilities(item) }
        if let p = item.parent { f["parents"] = [p] }
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

    private func capabilities(_ item: DriveItem) -> [String: Bool] {
        let isRoot = item.parent == nil
        let folder = item.isFolder
        return [
            "canAcceptOwnership": false, "canAddChildren": folder, "canAddMyDriveParent": false,
            "canChangeCopyRequiresWriterPermission": !folder, "canChangeSecurityUpdateEnabled": false,
            "canChangeViewersCanCopyContent": !folder, "canComment": true, "canCopy": !folder,
            "canDelete": !isRoot, "canDeleteChildren": folder, "canDownload": true, "canEdit": true,
            "canListChildren": folder, "canModifyContent": true, "canModifyContentRestriction": !folder,
            "canModifyLabels": false, "canMoveChildrenWithinDrive": folder, "canMoveItemIntoTeamDrive": !isRoot,
            "canMoveItemOutOfDrive": !isRoot, "canMoveItemWithinDrive": !isRoot, "canReadLabels": false,
            "canReadRevisions": item.isBlob, "canRemoveChildren": folder, "canRemoveMyDriveParent": !isRoot,
            "canRename": !isRoot, "canShare": true, "canTrash": !isRoot, "canTrashChildren": folder,
            "canUntrash": !isRoot,
        ]
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
