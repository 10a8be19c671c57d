import DriveSupport
import Foundation

/// Shared drives (`drives.create|list|get|update|delete`) and the rules every other method follows
/// for their items.
///
/// Contracts:
/// - A shared drive is its root folder: an item whose id is the drive's id, no parent, `driveId`
///   set (files.get(driveId, supportsAllDrives=true) answers it, as at Google). Its name is the
///   drive's name; drives.update renames both at once since they are one record.
/// - Every item below it carries the drive's id in `driveId` and has no `owners`.
/// - A request that does not say `supportsAllDrives=true` (or the deprecated `supportsTeamDrives`)
///   cannot see shared-drive items: they answer 404 notFound "File not found: ID." exactly like an
///   unknown id (drive-behaviours §2.2), for a path id, a `parents` id, `addParents` and a shortcut target.
/// - The emulated user is a member of every drive it creates, as organizer (all capabilities
///   true); the control API and seeds change the role or remove the membership
///   (`DriveService+Sharing.swift`): a drive the user is not a member of is a 404 everywhere.
extension DriveService {
    /// `supportsAllDrives=true` or the deprecated `supportsTeamDrives=true`, from a query lookup.
    static func supportsAllDrives(_ param: (String) -> String?) -> Bool {
        func on(_ v: String?) -> Bool { v.map { ["true", "1", ""].contains($0.lowercased()) } ?? false }
        return on(param("supportsAllDrives")) || on(param("supportsTeamDrives"))
    }

    static func supportsAllDrives(_ r: HTTPRequest) -> Bool { supportsAllDrives { r.param($0) } }

    /// `includeItemsFromAllDrives` (or the deprecated `includeTeamDriveItems`).
    func includeItemsFromAllDrives(_ r: HTTPRequest) throws -> Bool {
        try boolParam(r, "includeItemsFromAllDrives", default: false) || boolParam(r, "includeTeamDriveItems", default: false)
    }

    /// `driveId` (or the deprecated `teamDriveId`) when not empty.
    static func driveIdParam(_ r: HTTPRequest) -> String? {
        guard let v = r.param("driveId") ?? r.param("teamDriveId"), !v.isEmpty else { return nil }
        return v
    }

    /// Routes whose path names a file (`/files/{id}…`) and whose method takes `supportsAllDrives`
    /// (discovery: files.get, update, copy, delete, and their media/upload forms): a shared-drive
    /// item there without `supportsAllDrives=true` is a 404. files.export and revisions.* have no
    /// such parameter in the discovery document (google-api-python-client cannot even send it), so
    /// they serve shared-drive items without it.
    static let fileScopedMethods: Set<String> = [
        "files.get", "files.get.media", "files.update", "files.update.upload", "files.copy", "files.delete",
    ]

    /// Throws Google's 404 when the request's path names a shared-drive item and the request does
    /// not support all drives. Unknown ids are left to the handler (same answer).
    func requireVisibleFile(_ name: String, _ r: HTTPRequest) throws {
        guard DriveService.fileScopedMethods.contains(name), !DriveService.supportsAllDrives(r) else { return }
        let id = DriveService.fileId(r)
        let hidden = store.read { s in s.item(id).map { $0.driveId != nil } ?? false }
        if hidden { throw GoogleError.notFound(id) }
    }

    /// The 400 Google gives when `driveId` and `corpora=drive` do not come together (reason and
    /// message as reported by users of Google's API; the status is a guess).
    static var driveIdRequiresDriveCorpora: GoogleError {
        GoogleError(400, reason: "teamDriveIdRequiresTeamDriveCorpora",
                    message: "The driveId parameter must be specified if and only if corpora is set to drive.",
                    location: "driveId", locationType: "parameter")
    }

    /// The 403 Google gives for `corpora=drive|allDrives` or a `driveId` without
    /// `includeItemsFromAllDrives=true` (status and message as reported; the reason is a guess).
    static var includeItemsRequired: GoogleError {
        GoogleError(403, reason: "teamDriveItemsRequired",
                    message: "The includeItemsFromAllDrives parameter must be set to true when driveId is specified or corpora contains drive or allDrives.",
                    location: "includeItemsFromAllDrives", locationType: "parameter")
    }

    /// `includeItemsFromAllDrives=true` without `supportsAllDrives=true` (a GUESS: status, reason
    /// and message are the emulator's own; public material does not settle Google's answer).
    static var supportsAllDrivesRequired: GoogleError {
        GoogleError(403, reason: "teamDrivesParameterRestricted",
                    message: "The includeItemsFromAllDrives parameter can only be set to true when supportsAllDrives is also set to true.",
                    location: "supportsAllDrives", locationType: "parameter")
    }

    /// Checks that `driveId` names a shared drive the request may see (it must support all drives).
    static func requireDrive(_ s: MetadataState, _ id: String, allDrives: Bool) throws -> DriveItem {
        guard allDrives, let root = s.data.items[id], root.isSharedDriveRoot, root.member != false else { throw sharedDriveNotFound(id) }
        return root
    }

    // MARK: Rendering

    static let driveDefaultFields = try! FieldSelection.parse("kind,id,name")

    func renderDrive(_ root: DriveItem) -> [String: Any] {
        [
            "kind": "drive#drive", "id": root.id, "name": root.name, "createdTime": RFC3339.format(millis: root.createdTime),
            "hidden": false, "colorRgb": "#4986e7", "themeId": "abacus",
            "backgroundImageLink": "https://ssl.gstatic.com/team_drive_themes/abacus_background.jpg",
            "capabilities": DriveService.driveCapabilities(root.memberRole ?? .organizer),
            "restrictions": [
                "adminManagedRestrictions": false, "copyRequiresWriterPermission": false, "domainUsersOnly": false,
                "driveMembersOnly": false, "sharingFoldersRequiresOrganizerPermission": false,
            ],
        ]
    }

    /// A drive's `capabilities` for a member of `role`: an organizer may do everything (what the
    /// single-user emulator always said); a file organizer ("Content manager") manages the items
    /// but not the drive or its members; a writer ("Contributor") adds and edits but trashes
    /// nothing; a commenter comments; a reader reads. Every member lists, copies and downloads.
    static func driveCapabilities(_ role: DriveRole) -> [String: Bool] {
        let organizer = role >= .organizer, manager = role >= .fileOrganizer, writer = role >= .writer
        return [
            "canAddChildren": writer, "canChangeCopyRequiresWriterPermissionRestriction": organizer,
            "canChangeDomainUsersOnlyRestriction": organizer, "canChangeDownloadRestriction": organizer,
            "canChangeDriveBackground": organizer, "canChangeDriveMembersOnlyRestriction": organizer,
            "canChangeSharingFoldersRequiresOrganizerPermissionRestriction": organizer, "canComment": role >= .commenter,
            "canCopy": true, "canDeleteChildren": organizer, "canDeleteDrive": organizer, "canDownload": true, "canEdit": writer,
            "canListChildren": true, "canManageMembers": organizer, "canReadRevisions": writer, "canRename": writer,
            "canRenameDrive": organizer, "canResetDriveRestrictions": organizer, "canShare": writer, "canTrashChildren": manager,
        ]
    }

    /// A drive-level write (rename, delete) by a member who is not an organizer: Google's 403
    /// `insufficientFilePermissions` naming the drive (the emulator's reading; UNVERIFIED for drives).
    static func requireOrganizer(_ root: DriveItem) throws {
        guard (root.memberRole ?? .organizer) >= .organizer else { throw GoogleError.insufficientFilePermissions(root.id) }
    }

    /// The drive id in `/drive/v3/drives/{driveId}`.
    static func driveIdInPath(_ r: HTTPRequest) -> String {
        guard let range = r.path.range(of: "/drives/") else { return "" }
        return String(r.path[range.upperBound...].split(separator: "/", omittingEmptySubsequences: false).first ?? "")
    }

    // MARK: drives.create

    /// `requestId` is required; a second create with a `requestId` already used answers 409, as the
    /// discovery document says ("If the shared drive already exists a 409 error will be returned";
    /// reason and message are guesses). `name` is required (400 required on `name`, a guess).
    func drivesCreate(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.drive, defaults: DriveService.driveDefaultFields)
        guard let requestId = r.param("requestId"), !requestId.isEmpty else { throw GoogleError.required("requestId") }
        let body = try jsonBody(r)
        guard let name = body["name"] as? String, !name.isEmpty else { throw GoogleError.required("name", message: "A shared drive name is required.") }
        let root = try createSharedDrive(name: name, requestId: requestId)
        return respond(200, renderDrive(root), sel)
    }

    /// Creates a shared drive (its root folder); a `requestId` already used is a 409.
    func createSharedDrive(name: String, requestId: String?) throws -> DriveItem {
        try store.mutate { s in
            if let requestId, s.sharedDriveRoots.contains(where: { $0.driveRequestId == requestId }) {
                throw GoogleError(409, reason: "duplicate", message: "A shared drive with this request ID already exists.")
            }
            let id = DriveIDs.newSharedDriveID()
            var root = DriveItem(id: id, name: name, mimeType: DriveMime.folder, parent: nil, createdTime: s.now, modifiedTime: s.now)
            root.driveId = id
            root.driveRequestId = requestId
            root.seq = s.nextSeq()
            s.put(root)
            return root
        }
    }

    // MARK: drives.list

    /// Creation order; `pageSize` 1…100 (default 10, larger coerced, ≤ 0 → 400); `q` with the
    /// file query language's `name` and `createdTime` terms (others → 400 invalid on `q`).
    func drivesList(_ r: HTTPRequest) throws -> HTTPResponse {
        let defaults = try! FieldSelection.parse("kind,nextPageToken,drives(kind,id,name)")
        let sel = try selection(r, DriveSchema.driveList, defaults: defaults)
        let pageSize = try pageSizeParam(r, default: 10, maximum: 100)
        let qText = r.param("q") ?? ""
        let query = try queryParam(r)
        if let query, !DriveService.onlyDriveTerms(query) { throw GoogleError.invalidValue(location: "q") }
        let binding = ListPageToken.binding(["drives", qText])
        var resume: ListPageToken?
        if let token = r.param("pageToken"), !token.isEmpty {
            guard let t = ListPageToken.decode(token, binding: binding) else { throw GoogleError.invalidValue(location: "pageToken") }
            resume = t
        }
        let (page, next) = store.read { s -> ([DriveItem], ListPageToken?) in
            let ctx = DriveQuery.Context(rootId: s.rootId, userEmail: user.emailAddress)
            let all = s.sharedDriveRoots.filter { $0.member != false && (query?.matches($0, ctx) ?? true) }
            let offset = resume?.start(in: all) ?? 0
            let page = Array(all[offset..<min(all.count, offset + pageSize)])
            var next: ListPageToken?
            if offset + pageSize < all.count, let last = page.last { next = ListPageToken(offset: offset + pageSize, lastId: last.id) }
            return (page, next)
        }
        var body: [String: Any] = ["kind": "drive#driveList", "drives": page.map(renderDrive)]
        if let next { body["nextPageToken"] = next.encode(binding: binding) }
        return respond(200, body, sel)
    }

    /// Whether a drives.list query names only what a drive has here (`name`, `createdTime`).
    static func onlyDriveTerms(_ q: DriveQuery) -> Bool {
        switch q {
        case .and(let a, let b), .or(let a, let b): return onlyDriveTerms(a) && onlyDriveTerms(b)
        case .not(let a): return onlyDriveTerms(a)
        case .compare(let field, _, _): return field == .name || field == .createdTime
        default: return false
        }
    }

    // MARK: drives.get, drives.update, drives.delete

    func drivesGet(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.drive, defaults: DriveService.driveDefaultFields)
        let id = DriveService.driveIdInPath(r)
        let root = try store.read { s in try DriveService.requireDrive(s, id, allDrives: true) }
        return respond(200, renderDrive(root), sel)
    }

    /// Renames a drive (`name`); other writable members (`colorRgb`, `themeId`, `restrictions`…) are
    /// accepted and ignored; read-only ones (`id`, `kind`, `createdTime`, `capabilities`) → 403
    /// fieldNotWritable.
    func drivesUpdate(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.drive, defaults: DriveService.driveDefaultFields)
        let id = DriveService.driveIdInPath(r)
        let body = try jsonBody(r)
        for key in body.keys where ["id", "kind", "createdTime", "capabilities", "orgUnitId"].contains(key) {
            throw GoogleError.fieldNotWritable
        }
        let name = body["name"]
        if let name, !(name is String) || (name as? String)?.isEmpty == true { throw GoogleError.invalidValue(location: "name") }
        let root = try store.mutate { s -> DriveItem in
            var root = try DriveService.requireDrive(s, id, allDrives: true)
            try DriveService.requireOrganizer(root)
            if let name = name as? String, name != root.name {
                root.name = name
                s.put(root)
            }
            return s.data.items[id] ?? root
        }
        return respond(200, renderDrive(root), sel)
    }

    /// Deletes a drive that holds no untrashed items (discovery: "The shared drive cannot contain
    /// any untrashed items"); its trashed items go with it. Otherwise 403 `cannotDeleteNonEmptyDrive`
    /// (reason and message are guesses).
    func drivesDelete(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.driveIdInPath(r)
        let contents = try store.mutate { s -> [String] in
            try DriveService.requireOrganizer(try DriveService.requireDrive(s, id, allDrives: true))
            let below = s.descendants(of: id)
            if below.contains(where: { s.data.items[$0]?.trashed == false }) {
                throw GoogleError(403, reason: "cannotDeleteNonEmptyDrive",
                                  message: "The shared drive cannot be deleted because it contains untrashed items.")
            }
            var contents: [String] = []
            for victim in ([id] + below).reversed() {
                contents += s.data.items[victim]?.allContentFiles ?? []
                s.remove(victim)
            }
            return contents
        }
        contents.forEach { store.removeContent($0) }
        return HTTPResponse(status: 204)
    }
}
