import DriveSupport
import Foundation

/// The change log: where to start, and pages of changes (oldest first; each entry is a file's
/// current state or a tombstone).
extension DriveAPI {
    public func changesStartPageToken() throws -> String {
        let response = try executor.execute("changes.getStartPageToken", TransportRequest(method: "GET", url: apiURL("changes/startPageToken", scope.startPageTokenQuery)))
        struct Wire: Decodable { var startPageToken: String? }
        guard let token = try decode(Wire.self, response, "changes.getStartPageToken").startPageToken else {
            throw DriveError.malformedResponse("changes.getStartPageToken: no startPageToken")
        }
        return token
    }

    public func changes(pageToken: String, pageSize: Int = 1000) throws -> DriveChangePage {
        let fields = "nextPageToken,newStartPageToken,changes(fileId,removed,time,changeType,driveId,file(\(DriveFile.fieldMask)))"
        let drives: [(String, String?)] = feedSeesDriveChanges && scope.driveId == nil ? [("supportsAllDrives", "true")] : []
        let url = apiURL("changes", [("pageToken", pageToken), ("pageSize", String(pageSize)), ("includeRemoved", "true")] + scope.changesQuery
                         + drives + [("fields", fields)])
        let response = try executor.execute("changes.list", TransportRequest(method: "GET", url: url))
        struct Wire: Decodable {
            struct Change: Decodable {
                var fileId: String?; var removed: Bool?; var time: String?; var file: DriveFile?
                var changeType: String?; var driveId: String?
            }
            var changes: [Change]?
            var nextPageToken: String?
            var newStartPageToken: String?
        }
        let wire = try decode(Wire.self, response, "changes.list")
        // A shared drive's own change (`changeType: drive`) has a `driveId` and no `fileId`: kept
        // apart; any other entry without an ID says nothing the mount can use, and is left out.
        let driveChanges = (wire.changes ?? []).compactMap { $0.changeType == "drive" ? $0.driveId : nil }
        let changes = (wire.changes ?? []).compactMap { c -> DriveChange? in
            guard c.changeType != "drive", let id = c.fileId ?? c.file?.id else { return nil }
            return DriveChange(fileId: id, removed: c.removed ?? false, time: c.time.flatMap { RFC3339.parseMillis($0) }, file: c.file)
        }
        guard wire.nextPageToken != nil || wire.newStartPageToken != nil else {
            throw DriveError.malformedResponse("changes.list: neither nextPageToken nor newStartPageToken")
        }
        return DriveChangePage(changes: changes, nextPageToken: wire.nextPageToken, newStartPageToken: wire.newStartPageToken,
                               driveChanges: driveChanges)
    }
}
