import Foundation

/// Which drive a `DriveAPI` works in.
///
/// Contract: `.myDrive` adds nothing to any request (URLs stay exactly as they were before scopes
/// existed). `.sharedDrive(id)` adds, to every request whose method takes them (per the discovery
/// document): `supportsAllDrives=true` to files.get / create / update / copy / delete (metadata,
/// media and uploads); `supportsAllDrives=true&includeItemsFromAllDrives=true&corpora=drive&driveId=ID`
/// to files.list; `driveId=ID&supportsAllDrives=true` to changes.getStartPageToken and, with
/// `includeItemsFromAllDrives=true`, to changes.list; `driveId=ID` to files.emptyTrash. Methods
/// without such parameters (about, generateIds, export, revisions) are sent as they are: a shared-drive
/// item needs no flag there, and google-api-python-client refuses parameters its discovery lacks,
/// which says Google does not expect them.
public enum DriveScope: Sendable, Equatable, CustomStringConvertible {
    case myDrive
    case sharedDrive(String)

    /// The shared drive's id (also its root folder's file id), nil for My Drive.
    public var driveId: String? {
        if case .sharedDrive(let id) = self { return id }
        return nil
    }

    /// The folder at the top of this scope: `root` for My Drive, the drive's id for a shared drive.
    public var rootFolderID: String { driveId ?? "root" }

    public var description: String { driveId.map { "shared drive \($0)" } ?? "My Drive" }

    /// For files.get / create / update / copy / delete and uploads.
    var fileQuery: [(String, String?)] {
        driveId == nil ? [] : [("supportsAllDrives", "true")]
    }

    /// For files.list.
    var listQuery: [(String, String?)] {
        guard let driveId else { return [] }
        return [("supportsAllDrives", "true"), ("includeItemsFromAllDrives", "true"), ("corpora", "drive"), ("driveId", driveId)]
    }

    /// For changes.getStartPageToken.
    var startPageTokenQuery: [(String, String?)] {
        guard let driveId else { return [] }
        return [("driveId", driveId), ("supportsAllDrives", "true")]
    }

    /// For changes.list.
    var changesQuery: [(String, String?)] {
        guard let driveId else { return [] }
        return [("driveId", driveId), ("supportsAllDrives", "true"), ("includeItemsFromAllDrives", "true")]
    }

    /// For files.emptyTrash.
    var emptyTrashQuery: [(String, String?)] {
        guard let driveId else { return [] }
        return [("driveId", driveId)]
    }
}

/// A shared drive, as drives.list / drives.get describe it (the parts the mount needs).
public struct SharedDrive: Sendable, Equatable, Codable, CustomStringConvertible {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }

    public var description: String { "\(name) (\(id))" }
}
