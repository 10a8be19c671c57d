import DriveSupport
import Foundation

/// Other users, sharing and shared-drive membership, as tests and demos set them up (the control
/// API's `/__emulator/items|share|unshare|membership|sharing` and the seed's `@sharing.json`).
///
/// Contracts:
/// - Another user's items live in that user's own tree (a root of theirs, invisible, and folders
///   under it); the emulated user sees an item while it, or a folder above it, is shared with them
///   (`sharedRole`), with the strongest of those roles. Unseen items are 404 for every method.
/// - Sharing and unsharing write one change per item of the subtree (the user's own items in it
///   too, whose `parents` may have changed): items the user now sees are ordinary entries, items
///   no longer seen are `removed: true` (changes.list shows items as they are now).
/// - Joining, leaving a shared drive or changing role writes a `changeType: drive` change and one
///   change per item of the drive (removed when the user left).
extension DriveService {
    /// The emulated user's email; the control API refuses it as another user.
    var userEmail: String { user.emailAddress }

    static func parseRole(_ text: String, allowed: [DriveRole]) throws -> DriveRole {
        guard let role = DriveRole(rawValue: text), allowed.contains(role) else {
            throw GoogleError.badRequest("Unknown role \(text): one of \(allowed.map(\.rawValue).joined(separator: ", ")).")
        }
        return role
    }

    /// The root folder of `email`'s own drive, made on first use (never visible to the user).
    private func foreignRoot(_ email: String) throws -> String {
        if let id = store.read({ s in s.data.items.values.first { $0.owner == email && $0.parent == nil }?.id }) { return id }
        return try store.mutate { s in
            let id = DriveIDs.newRootID()
            var root = DriveItem(id: id, name: "My Drive", mimeType: DriveMime.folder, parent: nil, createdTime: s.now, modifiedTime: s.now)
            root.owner = email
            root.lastModifiedBy = email
            root.seq = s.nextSeq()
            s.put(root, recordChange: false)
            return id
        }
    }

    /// Makes an item as another user `owner`, in `parent` (a folder of theirs; nil: their root),
    /// with `content` for a file (empty when nil); shares it with the user when `role` is given.
    func makeForeignItem(owner: String, name: String, mimeType: String?, parent: String?, content: [UInt8]?,
                         role: DriveRole?, createdTime: String? = nil, modifiedTime: String? = nil) throws -> DriveItem {
        let owner = owner.lowercased()
        guard owner.contains("@"), owner != userEmail.lowercased() else {
            throw GoogleError.badRequest("owner must be the email of another user than \(userEmail).")
        }
        let parentId = try parent ?? foreignRoot(owner)
        var meta: [String: Any] = ["name": name, "parents": [parentId]]
        if let mimeType { meta["mimeType"] = mimeType }
        if let createdTime { meta["createdTime"] = createdTime }
        if let modifiedTime { meta["modifiedTime"] = modifiedTime }
        let patch = try MetadataPatch(meta, mode: .create)
        var staged: StagedContent?
        if let content, mimeType != DriveMime.folder {
            let writer = try ContentWriter(path: store.newTempPath())
            try content.withUnsafeBytes { try writer.write($0) }
            staged = StagedContent(tempPath: writer.path, summary: writer.finish(), contentType: nil)
        }
        let item = try createItem(patch, content: staged, allDrives: false, owner: owner)
        guard let role else { return item }
        return try share(item.id, role: role)
    }

    /// Shares another user's item with the user as `role` (reader, commenter, writer).
    @discardableResult
    func share(_ fileId: String, role: DriveRole) throws -> DriveItem {
        try store.mutate { s in
            guard var item = s.data.items[fileId], item.owner != nil, item.parent != nil else {
                throw GoogleError.notFound(fileId)
            }
            if item.sharedRole == nil { item.sharedTime = s.now }
            item.sharedRole = role
            s.put(item, recordChange: false)
            DriveService.recordAccessChanges(below: item.id, &s)
            return s.data.items[fileId]!
        }
    }

    /// Stops sharing another user's item with the user directly (what a folder above still
    /// shares stays).
    func unshare(_ fileId: String) throws {
        try store.mutate { s in
            guard var item = s.data.items[fileId], item.owner != nil, item.parent != nil else {
                throw GoogleError.notFound(fileId)
            }
            item.sharedRole = nil
            item.sharedTime = nil
            s.put(item, recordChange: false)
            DriveService.recordAccessChanges(below: item.id, &s)
        }
    }

    /// One change for `id` and each item below it, as the user now sees them.
    private static func recordAccessChanges(below id: String, _ s: inout MetadataState) {
        for child in [id] + s.descendants(of: id) {
            guard let item = s.data.items[child] else { continue }
            s.change(child, removed: !s.isVisible(item), driveId: item.driveId)
        }
    }

    /// Makes the user a member of shared drive `driveId` as `role`, or not a member (nil).
    func setMembership(_ driveId: String, role: DriveRole?) throws {
        try store.mutate { s in
            guard var root = s.data.items[driveId], root.isSharedDriveRoot else { throw DriveService.sharedDriveNotFound(driveId) }
            root.member = role == nil ? false : nil
            root.memberRole = role == .organizer ? nil : role
            s.put(root, recordChange: false)
            let member = role != nil
            s.change(driveId, removed: !member, driveId: driveId, isDrive: true)
            for id in [driveId] + s.descendants(of: driveId) {
                s.change(id, removed: !member, driveId: driveId)
            }
        }
    }

    /// What is shared with the user and which drives they belong to (`GET /__emulator/sharing`).
    func sharingState() -> [String: Any] {
        store.read { s in
            let shared = s.data.items.values.filter { $0.sharedRole != nil }.sorted { $0.seq < $1.seq }.map { item -> [String: Any] in
                var d: [String: Any] = ["fileId": item.id, "name": item.name, "owner": item.owner ?? "",
                                        "role": item.sharedRole!.rawValue]
                if let t = item.sharedTime { d["sharedWithMeTime"] = RFC3339.format(millis: t) }
                return d
            }
            let drives = s.sharedDriveRoots.map { root -> [String: Any] in
                ["driveId": root.id, "name": root.name,
                 "role": root.member == false ? NSNull() : (root.memberRole ?? .organizer).rawValue as Any]
            }
            return ["shared": shared, "drives": drives]
        }
    }

    // MARK: Control API

    /// The control API's sharing endpoints; nil for other paths. `name` is the path after
    /// `/__emulator/`.
    public func controlResponse(_ name: String, _ request: HTTPRequest) -> HTTPResponse? {
        let routes: [String: String] = ["items": "POST", "share": "POST", "unshare": "POST", "membership": "POST",
                                        "sharing": "GET"]
        guard let allowed = routes[name] else { return nil }
        guard request.method.uppercased() == allowed || (allowed == "GET" && request.method.uppercased() == "HEAD") else {
            var error = GoogleError(405, reason: "httpMethodNotAllowed", message: "Method \(request.method) is not allowed on \(request.path).")
            error.extraHeaders.append(("Allow", allowed == "GET" ? "GET, HEAD" : allowed))
            return error.response
        }
        do {
            if name == "sharing" { return .json(200, sharingState()) }
            let body = try DriveService.parseJSONObject(try request.body.readAll(limit: 16 << 20))
            switch name {
            case "items":
                let item = try makeForeignItem(body)
                var out: [String: Any] = ["id": item.id, "name": item.name, "mimeType": item.mimeType, "owner": item.owner ?? ""]
                if let p = item.parent { out["parent"] = p }
                if let role = item.sharedRole { out["role"] = role.rawValue }
                return .json(200, out)
            case "share":
                guard let fileId = body["fileId"] as? String, let roleText = body["role"] as? String else {
                    throw GoogleError.badRequest("share needs a fileId and a role.")
                }
                let item = try share(fileId, role: try DriveService.parseRole(roleText, allowed: DriveRole.fileRoles))
                return .json(200, ["fileId": item.id, "role": roleText])
            case "unshare":
                guard let fileId = body["fileId"] as? String else { throw GoogleError.badRequest("unshare needs a fileId.") }
                try unshare(fileId)
                return .json(200, ["fileId": fileId])
            default:
                guard let driveId = body["driveId"] as? String else { throw GoogleError.badRequest("membership needs a driveId.") }
                var role: DriveRole?
                if let text = body["role"] as? String { role = try DriveService.parseRole(text, allowed: DriveRole.memberRoles) }
                else if let value = body["role"], !(value is NSNull) { throw GoogleError.badRequest("role must be a string or null.") }
                try setMembership(driveId, role: role)
                return .json(200, ["driveId": driveId, "role": role.map { $0.rawValue as Any } ?? NSNull()])
            }
        } catch let e as GoogleError {
            return e.response
        } catch {
            return GoogleError.badRequest("Unreadable request body.").response
        }
    }

    /// `{"owner": EMAIL, "name": NAME, "mimeType"?: TYPE, "parent"?: ID, "content"?: TEXT,
    /// "contentBase64"?: B64, "role"?: ROLE}` (`POST /__emulator/items`).
    private func makeForeignItem(_ body: [String: Any]) throws -> DriveItem {
        let known: Set<String> = ["owner", "name", "mimeType", "parent", "content", "contentBase64", "role"]
        if let extra = body.keys.first(where: { !known.contains($0) }) { throw GoogleError.badRequest("Unknown key \(extra).") }
        guard let owner = body["owner"] as? String, let name = body["name"] as? String else {
            throw GoogleError.badRequest("An item needs an owner and a name.")
        }
        var content: [UInt8]?
        if let text = body["content"] as? String { content = Array(text.utf8) }
        if let b64 = body["contentBase64"] as? String {
            guard let data = Data(base64Encoded: b64) else { throw GoogleError.badRequest("contentBase64 is not base64.") }
            content = Array(data)
        }
        let role = try (body["role"] as? String).map { try DriveService.parseRole($0, allowed: DriveRole.fileRoles) }
        return try makeForeignItem(owner: owner, name: name, mimeType: body["mimeType"] as? String,
                                   parent: body["parent"] as? String, content: content, role: role)
    }
}
