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
///
/// Sharing: an entry shows the file as the user sees it now, so an item the user lost access to
/// (unshared, or its drive left) is `removed: true` with no `file`; one that became visible is an
/// ordinary entry. A drive the user joined or left is a `changeType: drive` entry (`driveId`, the
/// `drive` while the user is a member, `removed: true` once not), in the user's feed for requests
/// with `supportsAllDrives=true` (not in a drive's feed, nor with `restrictToMyDrive`).
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
        // A drive's own changes (the user joined or left it) are in the user's feed for clients
        // that support shared drives, not in a drive's feed nor in a feed restricted to My Drive.
        let drives = driveId == nil && allDrives && !restrictToMyDrive
        if let driveId { inFeed = { $0.isDrive != true && $0.driveId == driveId } }
        else if includeAll, !restrictToMyDrive { inFeed = { $0.isDrive != true || drives } }
        else { inFeed = { $0.isDrive == true ? drives : $0.driveId == nil } }
        let spaces = Set((r.param("spaces") ?? "drive").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        guard spaces.isSubset(of: ["drive", "appDataFolder", "photos"]), !spaces.isEmpty else { throw GoogleError.invalidValue(location: "spaces") }

        typealias Entry = (record: ChangeRecord, item: DriveItem?, access: ItemAccess?)
        let (entries, next, newStart, rootId) = try store.read { s -> ([Entry], Int64?, Int64, String) in
            guard let token = Int64(tokenText), token >= 1, token <= s.data.changeCounter + 1 else {
                throw GoogleError.invalidValue(location: "pageToken")
            }
            if let driveId { _ = try DriveService.requireDrive(s, driveId, allDrives: allDrives) }
            guard spaces.contains("drive") else { return ([], nil, s.data.changeCounter + 1, s.rootId) }
            // An entry shows the file (or drive) as it is now: one the user can no longer see is
            // reported removed, as Google reports a loss of access (drive-behaviours §1.9).
            func current(_ record: ChangeRecord) -> Entry {
                if record.isDrive == true {
                    let root = s.data.items[record.fileId]
                    let live = !record.removed && root?.isSharedDriveRoot == true && root?.member != false
                    return (record, live ? root : nil, nil)
                }
                guard !record.removed, let item = s.data.items[record.fileId], let access = s.access(item) else { return (record, nil, nil) }
                return (record, item, access)
            }
            let (records, next) = s.changes(from: token, limit: pageSize) { record in
                inFeed(record) && (includeRemoved || current(record).item != nil)
            }
            return (records.map(current), next, s.data.changeCounter + 1, s.rootId)
        }
        let res = resource(r, rootId: rootId)
        // What `changes(file(…))` keeps of each file (nil: all of it).
        let shaping = sel ?? defaults
        var fileMembers: Set<String>?
        if !shaping.all, let changesEntry = shaping.members["changes"], let changesSel = changesEntry {
            fileMembers = changesSel.memberNames(of: "file")
        }
        let changes: [[String: Any]] = entries.map { record, item, access in
            if record.isDrive == true {
                var c: [String: Any] = ["kind": "drive#change", "changeType": "drive", "type": "drive", "driveId": record.fileId,
                                        "teamDriveId": record.fileId, "time": RFC3339.format(millis: record.time),
                                        "removed": item == nil]
                if let item { c["drive"] = renderDrive(item) }
                return c
            }
            var c: [String: Any] = ["kind": "drive#change", "changeType": "file", "type": "file", "fileId": record.fileId,
                                    "time": RFC3339.format(millis: record.time), "removed": item == nil]
            if let item { c["file"] = res.render(item, only: fileMembers, access: access ?? .own) }
            if let d = record.driveId { c["driveId"] = d; c["teamDriveId"] = d }
            return c
        }
        var body: [String: Any] = ["kind": "drive#changeList", "changes": changes]
        if let next { body["nextPageToken"] = String(next) } else { body["newStartPageToken"] = String(newStart) }
        return respond(200, body, sel)
    }
}
