import DriveSupport
import Foundation

/// The change feed: every create, update (content or metadata), move, trash, untrash and delete
/// gets the next token; Drive keeps one entry per file (the newest), oldest first; an entry shows
/// the file as it is now, a deleted file is a tombstone (`removed: true`, no `file`).
/// Page tokens are small decimal strings; the start page token is the next token to be handed out.
///
/// Shared drives: each change remembers the drive its file was in (`ChangeRecord.driveId`).
/// `driveId=X` (with `supportsAllDrives=true`, and for changes.list `includeItemsFromAllDrives=true`)
/// reads that drive's feed; My Drive's feed holds shared-drive changes only with
/// `includeItemsFromAllDrives=true` (and not with `restrictToMyDrive=true`). One counter numbers
/// every feed (Google's drive feeds have tokens of their own; any token of ours is valid in any feed).
extension DriveService {
    func changesStartPageToken(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.startPageToken, defaults: nil)
        let allDrives = DriveService.supportsAllDrives(r)
        let driveId = DriveService.driveIdParam(r)
        let token = try store.read { s -> Int64 in
            if let driveId { _ = try DriveService.requireDrive(s, driveId, allDrives: allDrives) }
            return s.data.changeCounter + 1
        }
        return respond(200, ["kind": "drive#startPageToken", "startPageToken": String(token)], sel)
    }

    func changesList(_ r: HTTPRequest) throws -> HTTPResponse {
        let defaults = try! FieldSelection.parse(
            "kind,nextPageToken,newStartPageToken,changes(kind,changeType,type,time,removed,fileId,file(kind,id,name,mimeType,resourceKey))")
        let sel = try selection(r, DriveSchema.changeList, defaults: defaults)
        guard let tokenText = r.param("pageToken"), !tokenText.isEmpty else { throw GoogleError.required("pageToken") }
        let pageSize = try pageSizeParam(r, default: 100, maximum: 1000)
        let includeRemoved = try boolParam(r, "includeRemoved", default: true)
        let restrictToMyDrive = try boolParam(r, "restrictToMyDrive", default: false)
        let driveId = DriveService.driveIdParam(r)
        let allDrives = DriveService.supportsAllDrives(r)
        let includeAll = try includeItemsFromAllDrives(r)
        if driveId != nil, !includeAll { throw DriveService.includeItemsRequired }
        if includeAll, !allDrives { throw DriveService.supportsAllDrivesRequired }
        let inFeed: (ChangeRecord) -> Bool
        if let driveId { inFeed = { $0.driveId == driveId } }
        else if includeAll, !restrictToMyDrive { inFeed = { _ in true } }
        else { inFeed = { $0.driveId == nil } }
        let spaces = Set((r.param("spaces") ?? "drive").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        guard spaces.isSubset(of: ["drive", "appDataFolder", "photos"]), !spaces.isEmpty else { throw GoogleError.invalidValue(location: "spaces") }

        let (entries, next, newStart, rootId) = try store.read { s -> ([(ChangeRecord, DriveItem?)], Int64?, Int64, String) in
            guard let token = Int64(tokenText), token >= 1, token <= s.data.changeCounter + 1 else {
                throw GoogleError.invalidValue(location: "pageToken")
            }
            if let driveId { _ = try DriveService.requireDrive(s, driveId, allDrives: allDrives) }
            guard spaces.contains("drive") else { return ([], nil, s.data.changeCounter + 1, s.rootId) }
            let (records, next) = s.changes(from: token, limit: pageSize) { (includeRemoved || !$0.removed) && inFeed($0) }
            let page = records.map { ($0, $0.removed ? nil : s.data.items[$0.fileId]) }
            return (page, next, s.data.changeCounter + 1, s.rootId)
        }
        let res = resource(r, rootId: rootId)
        // What `changes(file(…))` keeps of each file (nil: all of it).
        let shaping = sel ?? defaults
        var fileMembers: Set<String>?
        if !shaping.all, let changesEntry = shaping.members["changes"], let changesSel = changesEntry {
            fileMembers = changesSel.memberNames(of: "file")
        }
        let changes: [[String: Any]] = entries.map { record, item in
            var c: [String: Any] = ["kind": "drive#change", "changeType": "file", "type": "file", "fileId": record.fileId,
                                    "time": RFC3339.format(millis: record.time), "removed": record.removed || item == nil]
            if let item { c["file"] = res.render(item, only: fileMembers) }
            if let d = record.driveId { c["driveId"] = d; c["teamDriveId"] = d }
            return c
        }
        var body: [String: Any] = ["kind": "drive#changeList", "changes": changes]
        if let next { body["nextPageToken"] = String(next) } else { body["newStartPageToken"] = String(newStart) }
        return respond(200, body, sel)
    }
}
