import DriveSupport
import Foundation

/// A Drive file or folder, with the fields the filesystem needs.
/// Decoded from Drive's JSON: int64s arrive as strings (`size`, `version`), times as RFC 3339 and
/// are kept as integer milliseconds since the epoch.
public struct DriveFile: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var mimeType: String
    public var parents: [String]
    /// Absent for folders, shortcuts and (sometimes) Google Workspace files.
    public var size: Int64?
    public var md5Checksum: String?
    public var modifiedTime: Int64?
    public var createdTime: Int64?
    public var trashed: Bool
    public var version: Int64?
    public var headRevisionId: String?
    public var shortcutDetails: ShortcutDetails?
    public var exportLinks: [String: String]?
    public var capabilities: Capabilities?
    /// The shared drive the file is in; nil in My Drive (Drive omits the member there).
    public var driveId: String?
    /// Where the file opens in a browser (shown as the `user.drive.web_view_link` attribute).
    public var webViewLink: String?
    /// Who changed the file last; Drive omits it when the user is unknown (a deleted account).
    public var lastModifyingUser: User?
    /// Properties private to this app (drivefs keeps a file's mode and a symbolic link's target here).
    public var appProperties: [String: String]?

    /// A Drive user as listings carry it (`lastModifyingUser(displayName,emailAddress)`).
    public struct User: Codable, Sendable, Equatable {
        public var displayName: String?
        public var emailAddress: String?

        public init(displayName: String? = nil, emailAddress: String? = nil) {
            self.displayName = displayName
            self.emailAddress = emailAddress
        }
    }

    public struct ShortcutDetails: Codable, Sendable, Equatable {
        public var targetId: String
        public var targetMimeType: String?

        public init(targetId: String, targetMimeType: String? = nil) {
            self.targetId = targetId
            self.targetMimeType = targetMimeType
        }
    }

    /// The subset of `capabilities` the filesystem uses for permissions.
    public struct Capabilities: Codable, Sendable, Equatable {
        public var canEdit: Bool?
        public var canDownload: Bool?
        public var canAddChildren: Bool?
        public var canListChildren: Bool?
        public var canRename: Bool?
        public var canTrash: Bool?
        public var canDelete: Bool?

        public init(canEdit: Bool? = nil, canDownload: Bool? = nil, canAddChildren: Bool? = nil, canListChildren: Bool? = nil,
                    canRename: Bool? = nil, canTrash: Bool? = nil, canDelete: Bool? = nil) {
            self.canEdit = canEdit
            self.canDownload = canDownload
            self.canAddChildren = canAddChildren
            self.canListChildren = canListChildren
            self.canRename = canRename
            self.canTrash = canTrash
            self.canDelete = canDelete
        }

        /// The flags in a fixed order (the metadata index packs them as bits).
        public var flags: [Bool?] { [canEdit, canDownload, canAddChildren, canListChildren, canRename, canTrash, canDelete] }

        public init(flags: [Bool?]) {
            func at(_ i: Int) -> Bool? { i < flags.count ? flags[i] : nil }
            self.init(canEdit: at(0), canDownload: at(1), canAddChildren: at(2), canListChildren: at(3), canRename: at(4),
                      canTrash: at(5), canDelete: at(6))
        }
    }

    public static let folderMimeType = "application/vnd.google-apps.folder"
    public static let shortcutMimeType = "application/vnd.google-apps.shortcut"

    public var isFolder: Bool { mimeType == Self.folderMimeType }
    public var isShortcut: Bool { mimeType == Self.shortcutMimeType }
    /// Docs, Sheets, Slides...: no bytes, export only. (Folders and shortcuts are not counted.)
    public var isGoogleWorkspaceDocument: Bool {
        mimeType.hasPrefix("application/vnd.google-apps.") && !isFolder && !isShortcut
    }

    /// The per-file mask of listings: what the filesystem shows and keys its caches on (no
    /// capabilities or export links, which cost bytes on every entry of every page).
    public static let listingFieldMask = "id,name,mimeType,parents,size,md5Checksum,modifiedTime,createdTime,version,"
        + "headRevisionId,shortcutDetails(targetId,targetMimeType),driveId,webViewLink,lastModifyingUser(displayName,emailAddress),appProperties"

    /// The `fields` mask that fills this struct.
    public static let fieldMask = "id,name,mimeType,parents,size,md5Checksum,modifiedTime,createdTime,trashed,version,"
        + "headRevisionId,shortcutDetails,exportLinks,driveId,webViewLink,lastModifyingUser(displayName,emailAddress),appProperties,"
        + "capabilities(canEdit,canDownload,canAddChildren,canListChildren,canRename,canTrash,canDelete)"

    public init(id: String, name: String, mimeType: String, parents: [String] = [], size: Int64? = nil,
                md5Checksum: String? = nil, modifiedTime: Int64? = nil, createdTime: Int64? = nil, trashed: Bool = false,
                version: Int64? = nil, headRevisionId: String? = nil, shortcutDetails: ShortcutDetails? = nil,
                exportLinks: [String: String]? = nil, capabilities: Capabilities? = nil, driveId: String? = nil,
                webViewLink: String? = nil, lastModifyingUser: User? = nil, appProperties: [String: String]? = nil) {
        self.id = id; self.name = name; self.mimeType = mimeType; self.parents = parents; self.size = size
        self.md5Checksum = md5Checksum; self.modifiedTime = modifiedTime; self.createdTime = createdTime
        self.trashed = trashed; self.version = version; self.headRevisionId = headRevisionId
        self.shortcutDetails = shortcutDetails; self.exportLinks = exportLinks; self.capabilities = capabilities
        self.driveId = driveId; self.webViewLink = webViewLink; self.lastModifyingUser = lastModifyingUser
        self.appProperties = appProperties
    }

    enum CodingKeys: String, CodingKey {
        case id, name, mimeType, parents, size, md5Checksum, modifiedTime, createdTime, trashed, version
        case headRevisionId, shortcutDetails, exportLinks, capabilities, driveId, webViewLink, lastModifyingUser, appProperties
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        name = try c.decodeIfPresent(String.self, forKey: .name) ?? ""
        mimeType = try c.decodeIfPresent(String.self, forKey: .mimeType) ?? "application/octet-stream"
        parents = try c.decodeIfPresent([String].self, forKey: .parents) ?? []
        size = try Self.int64(c, .size)
        md5Checksum = try c.decodeIfPresent(String.self, forKey: .md5Checksum)
        modifiedTime = try Self.time(c, .modifiedTime)
        createdTime = try Self.time(c, .createdTime)
        trashed = try c.decodeIfPresent(Bool.self, forKey: .trashed) ?? false
        version = try Self.int64(c, .version)
        headRevisionId = try c.decodeIfPresent(String.self, forKey: .headRevisionId)
        shortcutDetails = try c.decodeIfPresent(ShortcutDetails.self, forKey: .shortcutDetails)
        exportLinks = try c.decodeIfPresent([String: String].self, forKey: .exportLinks)
        capabilities = try c.decodeIfPresent(Capabilities.self, forKey: .capabilities)
        driveId = try c.decodeIfPresent(String.self, forKey: .driveId)
        webViewLink = try c.decodeIfPresent(String.self, forKey: .webViewLink)
        lastModifyingUser = try c.decodeIfPresent(User.self, forKey: .lastModifyingUser)
        appProperties = try c.decodeIfPresent([String: String].self, forKey: .appProperties)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(mimeType, forKey: .mimeType)
        try c.encode(parents, forKey: .parents)
        try c.encodeIfPresent(size.map(String.init), forKey: .size)
        try c.encodeIfPresent(md5Checksum, forKey: .md5Checksum)
        try c.encodeIfPresent(modifiedTime.map { RFC3339.format(millis: $0) }, forKey: .modifiedTime)
        try c.encodeIfPresent(createdTime.map { RFC3339.format(millis: $0) }, forKey: .createdTime)
        try c.encode(trashed, forKey: .trashed)
        try c.encodeIfPresent(version.map(String.init), forKey: .version)
        try c.encodeIfPresent(headRevisionId, forKey: .headRevisionId)
        try c.encodeIfPresent(shortcutDetails, forKey: .shortcutDetails)
        try c.encodeIfPresent(exportLinks, forKey: .exportLinks)
        try c.encodeIfPresent(capabilities, forKey: .capabilities)
        try c.encodeIfPresent(driveId, forKey: .driveId)
        try c.encodeIfPresent(webViewLink, forKey: .webViewLink)
        try c.encodeIfPresent(lastModifyingUser, forKey: .lastModifyingUser)
        try c.encodeIfPresent(appProperties, forKey: .appProperties)
    }

    private static func int64(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int64? {
        try c.decodeInt64IfPresent(forKey: key)
    }

    private static func time(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int64? {
        guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let millis = RFC3339.parseMillis(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not an RFC 3339 time: \(text)")
        }
        return millis
    }
}
