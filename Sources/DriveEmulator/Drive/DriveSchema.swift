// Generated from drive-v3-discovery.json (rev 20261106): the field names a `fields` selection may name.
// Objects whose schema the emulator does not model are `.open` (any sub-selection is accepted).

/// The shape of a response, for validating `fields` selections.
indirect enum FieldSchema: Sendable {
    case leaf
    case open
    case object([String: FieldSchema])
}

enum DriveSchema {
    static let user: [String: FieldSchema] = ["displayName": .leaf, "emailAddress": .leaf, "kind": .leaf, "me": .leaf, "permissionId": .leaf, "photoLink": .leaf]
    static let file: [String: FieldSchema] = [
        "appProperties": .open,
        "capabilities": .object(["canAcceptOwnership": .leaf, "canAccessViaGenAi": .leaf, "canAddChildren": .leaf, "canAddFolderFromAnotherDrive": .leaf, "canAddMyDriveParent": .leaf, "canChangeCopyRequiresWriterPermission": .leaf, "canChangeItemDownloadRestriction": .leaf, "canChangeSecurityUpdateEnabled": .leaf, "canChangeViewersCanCopyContent": .leaf, "canComment": .leaf, "canCopy": .leaf, "canDelete": .leaf, "canDeleteChildren": .leaf, "canDisableInheritedPermissions": .leaf, "canDownload": .leaf, "canEdit": .leaf, "canEnableInheritedPermissions": .leaf, "canListChildren": .leaf, "canModifyContent": .leaf, "canModifyContentRestriction": .leaf, "canModifyEditorContentRestriction": .leaf, "canModifyLabels": .leaf, "canModifyOwnerContentRestriction": .leaf, "canMoveChildrenOutOfDrive": .leaf, "canMoveChildrenOutOfTeamDrive": .leaf, "canMoveChildrenWithinDrive": .leaf, "canMoveChildrenWithinTeamDrive": .leaf, "canMoveItemIntoTeamDrive": .leaf, "canMoveItemOutOfDrive": .leaf, "canMoveItemOutOfTeamDrive": .leaf, "canMoveItemWithinDrive": .leaf, "canMoveItemWithinTeamDrive": .leaf, "canMoveTeamDriveItem": .leaf, "canReadDrive": .leaf, "canReadLabels": .leaf, "canReadRevisions": .leaf, "canReadTeamDrive": .leaf, "canRemoveChildren": .leaf, "canRemoveContentRestriction": .leaf, "canRemoveMyDriveParent": .leaf, "canRename": .leaf, "canShare": .leaf, "canStartApproval": .leaf, "canTrash": .leaf, "canTrashChildren": .leaf, "canUntrash": .leaf]),
        "clientEncryptionDetails": .open,
        "contentHints": .object(["indexableText": .leaf, "thumbnail": .object(["image": .leaf, "mimeType": .leaf])]),
        "contentRestrictions": .open,
        "copyRequiresWriterPermission": .leaf,
        "createdTime": .leaf,
        "description": .leaf,
        "downloadRestrictions": .open,
        "driveId": .leaf,
        "explicitlyTrashed": .leaf,
        "exportLinks": .open,
        "fileExtension": .leaf,
        "folderColorRgb": .leaf,
        "fullFileExtension": .leaf,
        "hasAugmentedPermissions": .leaf,
        "hasThumbnail": .leaf,
        "headRevisionId": .leaf,
        "iconLink": .leaf,
        "id": .leaf,
        "imageMediaMetadata": .object(["aperture": .leaf, "cameraMake": .leaf, "cameraModel": .leaf, "colorSpace": .leaf, "exposureBias": .leaf, "exposureMode": .leaf, "exposureTime": .leaf, "flashUsed": .leaf, "focalLength": .leaf, "height": .leaf, "isoSpeed": .leaf, "lens": .leaf, "location": .object(["altitude": .leaf, "latitude": .leaf, "longitude": .leaf]), "maxApertureValue": .leaf, "meteringMode": .leaf, "rotation": .leaf, "sensor": .leaf, "subjectDistance": .leaf, "time": .leaf, "whiteBalance": .leaf, "width": .leaf]),
        "inheritedPermissionsDisabled": .leaf,
        "isAppAuthorized": .leaf,
        "kind": .leaf,
        "labelInfo": .object(["labels": .open]),
        "lastModifyingUser": .object(user),
        "linkShareMetadata": .object(["securityUpdateEligible": .leaf, "securityUpdateEnabled": .leaf]),
        "md5Checksum": .leaf,
        "mimeType": .leaf,
        "modifiedByMe": .leaf,
        "modifiedByMeTime": .leaf,
        "modifiedTime": .leaf,
        "name": .leaf,
        "originalFilename": .leaf,
        "ownedByMe": .leaf,
        "owners": .object(user),
        "parents": .leaf,
        "permissionIds": .leaf,
        "permissions": .open,
        "properties": .open,
        "quotaBytesUsed": .leaf,
        "resourceKey": .leaf,
        "sha1Checksum": .leaf,
        "sha256Checksum": .leaf,
        "shared": .leaf,
        "sharedWithMeTime": .leaf,
        "sharingUser": .object(user),
        "shortcutDetails": .object(["targetId": .leaf, "targetMimeType": .leaf, "targetResourceKey": .leaf]),
        "size": .leaf,
        "spaces": .leaf,
        "starred": .leaf,
        "teamDriveId": .leaf,
        "thumbnailLink": .leaf,
        "thumbnailVersion": .leaf,
        "trashed": .leaf,
        "trashedTime": .leaf,
        "trashingUser": .object(user),
        "version": .leaf,
        "videoMediaMetadata": .object(["durationMillis": .leaf, "height": .leaf, "width": .leaf]),
        "viewedByMe": .leaf,
        "viewedByMeTime": .leaf,
        "viewersCanCopyContent": .leaf,
        "webContentLink": .leaf,
        "webViewLink": .leaf,
        "writersCanShare": .leaf
    ]
    static let fileList: [String: FieldSchema] = [
        "files": .object(file),
        "incompleteSearch": .leaf,
        "kind": .leaf,
        "nextPageToken": .leaf
    ]
    static let about: [String: FieldSchema] = [
        "appInstalled": .leaf,
        "canCreateDrives": .leaf,
        "canCreateTeamDrives": .leaf,
        "driveThemes": .object(["backgroundImageLink": .leaf, "colorRgb": .leaf, "id": .leaf]),
        "exportFormats": .open,
        "folderColorPalette": .leaf,
        "importFormats": .open,
        "kind": .leaf,
        "maxImportSizes": .open,
        "maxUploadSize": .leaf,
        "storageQuota": .object(["limit": .leaf, "usage": .leaf, "usageInDrive": .leaf, "usageInDriveTrash": .leaf]),
        "teamDriveThemes": .object(["backgroundImageLink": .leaf, "colorRgb": .leaf, "id": .leaf]),
        "user": .object(user)
    ]
    static let change: [String: FieldSchema] = [
        "changeType": .leaf,
        "drive": .open,
        "driveId": .leaf,
        "file": .object(file),
        "fileId": .leaf,
        "kind": .leaf,
        "removed": .leaf,
        "teamDrive": .open,
        "teamDriveId": .leaf,
        "time": .leaf,
        "type": .leaf
    ]
    static let changeList: [String: FieldSchema] = [
        "changes": .object(change),
        "kind": .leaf,
        "newStartPageToken": .leaf,
        "nextPageToken": .leaf
    ]
    static let startPageToken: [String: FieldSchema] = [
        "kind": .leaf,
        "startPageToken": .leaf
    ]
    static let revision: [String: FieldSchema] = [
        "exportLinks": .open,
        "id": .leaf,
        "keepForever": .leaf,
        "kind": .leaf,
        "lastModifyingUser": .object(user),
        "md5Checksum": .leaf,
        "mimeType": .leaf,
        "modifiedTime": .leaf,
        "originalFilename": .leaf,
        "publishAuto": .leaf,
        "published": .leaf,
        "publishedLink": .leaf,
        "publishedOutsideDomain": .leaf,
        "size": .leaf
    ]
    static let revisionList: [String: FieldSchema] = [
        "kind": .leaf,
        "nextPageToken": .leaf,
        "revisions": .object(revision)
    ]
    static let generatedIds: [String: FieldSchema] = [
        "ids": .leaf,
        "kind": .leaf,
        "space": .leaf
    ]
    static let drive: [String: FieldSchema] = [
        "backgroundImageFile": .object(["id": .leaf, "width": .leaf, "xCoordinate": .leaf, "yCoordinate": .leaf]),
        "backgroundImageLink": .leaf,
        "capabilities": .object(["canAddChildren": .leaf, "canChangeCopyRequiresWriterPermissionRestriction": .leaf, "canChangeDomainUsersOnlyRestriction": .leaf, "canChangeDownloadRestriction": .leaf, "canChangeDriveBackground": .leaf, "canChangeDriveMembersOnlyRestriction": .leaf, "canChangeSharingFoldersRequiresOrganizerPermissionRestriction": .leaf, "canComment": .leaf, "canCopy": .leaf, "canDeleteChildren": .leaf, "canDeleteDrive": .leaf, "canDownload": .leaf, "canEdit": .leaf, "canListChildren": .leaf, "canManageMembers": .leaf, "canReadRevisions": .leaf, "canRename": .leaf, "canRenameDrive": .leaf, "canResetDriveRestrictions": .leaf, "canShare": .leaf, "canTrashChildren": .leaf]),
        "colorRgb": .leaf,
        "createdTime": .leaf,
        "hidden": .leaf,
        "id": .leaf,
        "kind": .leaf,
        "name": .leaf,
        "orgUnitId": .leaf,
        "restrictions": .open,
        "themeId": .leaf
    ]
    static let driveList: [String: FieldSchema] = [
        "drives": .object(drive),
        "kind": .leaf,
        "nextPageToken": .leaf
    ]
}
