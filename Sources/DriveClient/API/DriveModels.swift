import Foundation

/// about.get: who is logged in and how much room is left.
public struct DriveAbout: Sendable, Equatable {
    public var displayName: String?
    public var emailAddress: String?
    public var permissionId: String?
    /// nil for unlimited storage.
    public var storageLimit: Int64?
    public var storageUsage: Int64?
    public var usageInDrive: Int64?
    public var usageInDriveTrash: Int64?
    public var maxUploadSize: Int64?
    /// Google Workspace MIME type → the MIME types it can be exported to.
    public var exportFormats: [String: [String]]

    public static let fieldMask = "user(displayName,emailAddress,permissionId),storageQuota,maxUploadSize,exportFormats"
}

/// about.get's answer as Drive sends it (int64s as strings).
struct AboutWire: Decodable {
    struct User: Decodable { var displayName: String?; var emailAddress: String?; var permissionId: String? }
    struct Quota: Decodable {
        var limit: Int64?, usage: Int64?, usageInDrive: Int64?, usageInDriveTrash: Int64?
        enum CodingKeys: String, CodingKey { case limit, usage, usageInDrive, usageInDriveTrash }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            limit = try c.decodeInt64IfPresent(forKey: .limit)
            usage = try c.decodeInt64IfPresent(forKey: .usage)
            usageInDrive = try c.decodeInt64IfPresent(forKey: .usageInDrive)
            usageInDriveTrash = try c.decodeInt64IfPresent(forKey: .usageInDriveTrash)
        }
    }
    var user: User?
    var storageQuota: Quota?
    var maxUploadSize: Int64?
    var exportFormats: [String: [String]]?
    enum CodingKeys: String, CodingKey { case user, storageQuota, maxUploadSize, exportFormats }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decodeIfPresent(User.self, forKey: .user)
        storageQuota = try c.decodeIfPresent(Quota.self, forKey: .storageQuota)
        maxUploadSize = try c.decodeInt64IfPresent(forKey: .maxUploadSize)
        exportFormats = try c.decodeIfPresent([String: [String]].self, forKey: .exportFormats)
    }

    var about: DriveAbout {
        DriveAbout(displayName: user?.displayName, emailAddress: user?.emailAddress, permissionId: user?.permissionId,
                   storageLimit: storageQuota?.limit, storageUsage: storageQuota?.usage, usageInDrive: storageQuota?.usageInDrive,
                   usageInDriveTrash: storageQuota?.usageInDriveTrash, maxUploadSize: maxUploadSize, exportFormats: exportFormats ?? [:])
    }
}

/// One page of files.list.
public struct DriveFileListPage: Sendable, Equatable {
    public var files: [DriveFile]
    public var nextPageToken: String?
    public var incompleteSearch: Bool
}

/// One entry of the change log: the file's current state, or a tombstone (`removed`, no `file`)
/// for deletion or loss of access.
public struct DriveChange: Sendable, Equatable {
    public var fileId: String
    public var removed: Bool
    public var time: Int64?
    public var file: DriveFile?

    /// A change as Drive reports it (the core also applies an upload's landing to its table as one).
    public init(fileId: String, removed: Bool, time: Int64?, file: DriveFile?) {
        self.fileId = fileId
        self.removed = removed
        self.time = time
        self.file = file
    }
}

/// One page of changes.list: exactly one of `nextPageToken` (more to read now) and
/// `newStartPageToken` (caught up: poll from there later) is set.
public struct DriveChangePage: Sendable, Equatable {
    public var changes: [DriveChange]
    public var nextPageToken: String?
    public var newStartPageToken: String?
    /// The shared drives whose own entry changed on this page (`changeType: drive`: joined, left,
    /// renamed, role changed), by ID; only in a feed read with `DriveAPI.feedSeesDriveChanges`.
    public var driveChanges: [String] = []
}

/// One stored version of a file's content (revisions.list). Google Docs have revisions too, with
/// no size or checksum.
public struct DriveRevision: Sendable, Equatable {
    public var id: String
    /// Milliseconds since the epoch.
    public var modifiedTime: Int64?
    public var size: Int64?
    public var md5Checksum: String?
    /// Kept however old it gets (Drive prunes other old revisions of binary files after 30 days
    /// or 100 revisions).
    public var keepForever: Bool
    public var lastModifyingUser: DriveFile.User?
    public var originalFilename: String?

    public init(id: String, modifiedTime: Int64? = nil, size: Int64? = nil, md5Checksum: String? = nil, keepForever: Bool = false,
                lastModifyingUser: DriveFile.User? = nil, originalFilename: String? = nil) {
        self.id = id
        self.modifiedTime = modifiedTime
        self.size = size
        self.md5Checksum = md5Checksum
        self.keepForever = keepForever
        self.lastModifyingUser = lastModifyingUser
        self.originalFilename = originalFilename
    }
}
