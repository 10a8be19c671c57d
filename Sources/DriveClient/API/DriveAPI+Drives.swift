import Foundation

/// Shared drives: listing them and resolving the one a mount names. These calls do not depend on
/// `scope` (drives.* take no `supportsAllDrives`).
extension DriveAPI {
    /// Every shared drive the user can see, all pages (Google allows 100 per page), in Google's order.
    public func listDrives() throws -> [SharedDrive] {
        var drives: [SharedDrive] = []
        var token: String?
        repeat {
            let url = apiURL("drives", [("pageSize", "100"), ("pageToken", token), ("fields", "nextPageToken,drives(id,name)")])
            let response = try executor.execute("drives.list", TransportRequest(method: "GET", url: url))
            struct Wire: Decodable {
                var drives: [SharedDrive]?
                var nextPageToken: String?
            }
            let wire = try decode(Wire.self, response, "drives.list")
            drives += wire.drives ?? []
            token = wire.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
        } while token != nil
        return drives
    }

    /// drives.get. An unknown id (or one the user cannot see) is `DriveError.notFound`.
    public func getDrive(_ id: String) throws -> SharedDrive {
        let url = apiURL("drives/" + URLBuilder.encode(id), [("fields", "id,name")])
        let response = try executor.execute("drives.get", TransportRequest(method: "GET", url: url))
        return try decode(SharedDrive.self, response, "drives.get")
    }

    /// The shared drive `nameOrID` names (for `drivefs mount --shared-drive NAME_OR_ID`): a drive
    /// with exactly that ID first, else the one drive with exactly that name (case-sensitive).
    ///
    /// Errors: no such ID or name → `DriveError.notFound` (reason `sharedDriveNotFound`); several
    /// drives with that name → `DriveError.invalidArgument` (reason `ambiguousSharedDriveName`)
    /// whose message names each of them with its ID, so the user can pick one by ID.
    public func resolveSharedDrive(_ nameOrID: String) throws -> SharedDrive {
        if DriveAPI.couldBeDriveID(nameOrID) {
            do { return try getDrive(nameOrID) } catch DriveError.notFound { /* not an ID: try names */ }
        }
        let matches = try listDrives().filter { $0.name == nameOrID }
        switch matches.count {
        case 1: return matches[0]
        case 0:
            throw DriveError.notFound(GoogleErrorInfo(status: 404, reason: "sharedDriveNotFound",
                                                      message: "No shared drive has the ID or the name \"\(nameOrID)\"."))
        default:
            let list = matches.map(\.description).joined(separator: ", ")
            throw DriveError.invalidArgument(GoogleErrorInfo(
                status: 400, reason: "ambiguousSharedDriveName",
                message: "\(matches.count) shared drives are named \"\(nameOrID)\": \(list). Name one by its ID."))
        }
    }

    /// Drive ids use `[A-Za-z0-9_-]`; anything else is only a name (and asking drives.get would cost a request).
    static func couldBeDriveID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 160 && s.unicodeScalars.allSatisfy { c in
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "_"
        }
    }
}
