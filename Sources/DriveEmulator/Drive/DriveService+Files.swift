import DriveSupport
import Foundation

/// Content received for a create or update, already on disk under `tmp/` with its checksums.
struct StagedContent {
    var tempPath: String
    var summary: ContentSummary
    /// The media's own Content-Type, when the client sent a meaningful one.
    var contentType: String?
}

extension DriveService {
    // MARK: files.get

    func filesGet(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.fileId(r)
        let sel = try selection(r, DriveSchema.file, defaults: FileResource.defaultFields)
        let item = try store.read { s -> DriveItem in
            guard let item = s.item(id) else { throw GoogleError.notFound(id) }
            return item
        }
        return respondFile(r, item, sel)
    }

    // MARK: files.create (metadata only)

    func filesCreate(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.file, defaults: FileResource.defaultFields)
        let patch = try MetadataPatch(try jsonBody(r), mode: .create)
        let item = try createItem(patch, content: nil, allDrives: DriveService.supportsAllDrives(r))
        return respondFile(r, item, sel)
    }

    /// Google refuses a pre-generated ID for a shortcut and for Docs Editors types (drive-behaviours
    /// §2.5; status and reason UNVERIFIED). Google does accept IDs from `generateIds?type=shortcuts`
    /// for shortcuts; the emulator does not remember an ID's type and refuses them all.
    static func generatedIDRefused(forMimeType mime: String) -> GoogleError? {
        if mime == DriveMime.shortcut {
            return GoogleError(400, reason: "invalid", message: "The provided file ID is not usable.",
                               location: "file.id", locationType: "other")
        }
        if DriveMime.isWorkspace(mime) {
            return GoogleError(400, reason: "invalid", message: "Generated IDs are not supported for Docs Editors formats.",
                               location: "file.id", locationType: "other")
        }
        return nil
    }

    /// Creates an item from validated metadata and (optionally) staged content, which it adopts.
    /// The item joins its parent's drive (`driveId`); `allDrives` is the request's
    /// `supportsAllDrives`: without it a parent or shortcut target in a shared drive is a 404.
    ///
    /// `owner` makes the item as another user (the control API and seeds): owned by them, last
    /// modified by them, in a folder of theirs; nil: the emulated user, who needs the right to add
    /// children to the parent (403 `insufficientFilePermissions` otherwise).
    func createItem(_ patch: MetadataPatch, content: StagedContent?, allDrives: Bool, owner: String? = nil) throws -> DriveItem {
        let name = patch.name ?? "Untitled"
        var mime = patch.mimeType ?? ""
        if mime.isEmpty {
            if let t = content?.contentType, !t.isEmpty, t != "application/octet-stream" { mime = t }
            else { mime = ExportFormats.mimeType(forName: name) }
        }
        if content != nil, mime == DriveMime.folder || mime == DriveMime.shortcut {
            throw GoogleError.badRequest("Folders and shortcuts cannot have content.")
        }
        if content != nil, DriveMime.isWorkspace(mime), let t = content?.contentType, !t.hasPrefix("text/"),
           !(ExportFormats.imports[t] ?? []).contains(mime) {
            throw GoogleError(400, reason: "conversionUnsupportedConversionPath",
                              message: "Conversion of the uploaded content to the requested output type is not supported.")
        }
        if mime == DriveMime.shortcut, patch.shortcutTargetId == nil {
            throw GoogleError.required("shortcutDetails.targetId", message: "Shortcut target ID is required.")
        }
        // Blobs and Workspace files always own a content file (empty when created from metadata).
        var staged = content
        if staged == nil, mime != DriveMime.folder, mime != DriveMime.shortcut {
            let path = store.newTempPath()
            let w = try ContentWriter(path: path)
            staged = StagedContent(tempPath: path, summary: w.finish(), contentType: nil)
        }
        let contentName = try staged.map { try store.adoptContent(tempPath: $0.tempPath) }
        do {
            return try store.mutate { s in
                guard (patch.parents?.count ?? 0) <= 1 else { throw GoogleError.cannotAddParent }
                let parentRaw = patch.parents?.first ?? "root"
                let found = owner == nil ? s.item(parentRaw, allDrives: allDrives) : s.data.items[parentRaw]
                guard let parent = found else { throw GoogleError.notFound(parentRaw) }
                guard parent.isFolder else { throw GoogleError.badRequest("The specified parent is not a folder.") }
                if let owner {
                    guard parent.owner == owner, parent.driveId == nil else { throw GoogleError.notFound(parentRaw) }
                } else if !s.canAddChildren(parent) {
                    throw GoogleError.insufficientFilePermissions(parent.id)
                }
                var id = DriveIDs.newFileID(forMimeType: mime)
                if let wanted = patch.id {
                    if let refused = DriveService.generatedIDRefused(forMimeType: mime) { throw refused }
                    if s.data.items[wanted] != nil { throw GoogleError.fileIdInUse }
                    guard s.data.issuedIds.contains(wanted) else {
                        throw GoogleError(400, reason: "invalid", message: "The provided file ID is not usable.",
                                          location: "file.id", locationType: "other")
                    }
                    id = wanted
                }
                var targetMime: String?
                if let target = patch.shortcutTargetId {
                    guard let t = s.item(target, allDrives: allDrives) else { throw GoogleError.notFound(target) }
                    targetMime = t.mimeType
                }
                var item = DriveItem(id: id, name: name, mimeType: mime, parent: parent.id, createdTime: s.now, modifiedTime: s.now)
                item.driveId = parent.driveId
                item.owner = owner
                item.lastModifiedBy = owner
                patch.applySimple(to: &item)
                if patch.name == nil, let target = patch.shortcutTargetId, let t = s.item(target) { item.name = t.name }
                item.explicitlyTrashed = patch.trashed ?? false
                item.trashed = item.explicitlyTrashed || parent.trashed
                if item.explicitlyTrashed { item.trashedTime = s.now }
                if mime == DriveMime.shortcut {
                    item.shortcutTargetId = patch.shortcutTargetId
                    item.shortcutTargetMimeType = targetMime
                }
                if let staged, let contentName {
                    item.contentFile = contentName
                    if item.isBlob {
                        item.takeContent(staged.summary)
                        if item.originalFilename == nil { item.originalFilename = item.name }
                    }
                    _ = item.appendHeadRevision(after: [])
                }
                item.seq = s.nextSeq()
                if patch.id != nil { s.consume(id) }
                // Another user's item the user cannot see is not in the user's change feed.
                s.put(item, recordChange: owner == nil || s.isVisible(item))
                return item
            }
        } catch {
            store.removeContent(contentName)
            throw error
        }
    }

    // MARK: files.update (metadata)

    func filesUpdate(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.file, defaults: FileResource.defaultFields)
        let patch = try MetadataPatch(try jsonBody(r), mode: .update)
        let item = try updateItem(DriveService.fileId(r), patch, addParents: r.param("addParents"),
                                  removeParents: r.param("removeParents"), content: nil, allDrives: DriveService.supportsAllDrives(r))
        return respondFile(r, item, sel)
    }

    static func idList(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Applies a metadata patch, `addParents`/`removeParents` and optionally new content (a new revision).
    /// `allDrives` is the request's `supportsAllDrives`: without it a shared-drive item, or a new
    /// parent in a shared drive, is a 404. A move into another drive (or between a shared drive and
    /// My Drive) carries the item and everything below it into that drive (`driveId`).
    func updateItem(_ rawId: String, _ patch: MetadataPatch, addParents addText: String?, removeParents removeText: String?,
                    content: StagedContent?, allDrives: Bool) throws -> DriveItem {
        let addParents = DriveService.idList(addText)
        let removeParents = DriveService.idList(removeText)
        let contentName = try content.map { try store.adoptContent(tempPath: $0.tempPath) }
        var released: [String] = []
        do {
            let item = try store.mutate { s -> DriveItem in
                guard var item = s.item(rawId, allDrives: allDrives) else { throw GoogleError.notFound(rawId) }
                // My Drive's root and every shared drive's root folder: names and places are fixed.
                let isRoot = item.parent == nil
                if isRoot, patch.name != nil || patch.trashed != nil || !addParents.isEmpty || !removeParents.isEmpty || content != nil {
                    throw GoogleError.insufficientFilePermissions(item.id)
                }
                // What the user's role allows (another user's item, a shared drive's item): edits
                // and content need a writer, the trash its owner (a file organizer in a drive).
                let access = s.access(item) ?? .own
                let edits = content != nil || patch.editsItem
                if edits, !access.canEdit { throw GoogleError.insufficientFilePermissions(item.id) }
                if patch.trashed != nil, !access.canTrash { throw GoogleError.insufficientFilePermissions(item.id) }
                // Moves: exactly one parent before and after.
                var newParent = item.parent
                if !addParents.isEmpty || !removeParents.isEmpty {
                    let adds = addParents.map { s.resolve($0) }
                    let removes = Set(removeParents.map { s.resolve($0) })
                    guard adds.count <= 1 else { throw GoogleError.cannotAddParent }
                    if let add = adds.first, add != item.parent {
                        guard let p = item.parent, removes.contains(p) else { throw GoogleError.cannotAddParent }
                        guard let target = s.item(add, allDrives: allDrives) else { throw GoogleError.notFound(addParents[0]) }
                        guard target.isFolder else { throw GoogleError.badRequest("The specified parent is not a folder.") }
                        guard access.canMove else { throw GoogleError.insufficientFilePermissions(item.id) }
                        guard s.canAddChildren(target) else { throw GoogleError.insufficientFilePermissions(target.id) }
                        if add == item.id || s.descendants(of: item.id).contains(add) {
                            throw GoogleError.badRequest("A folder cannot be moved into itself or one of its descendants.")
                        }
                        newParent = add
                    } else if adds.isEmpty, let p = item.parent, removes.contains(p) {
                        throw GoogleError.badRequest("A file must have exactly one parent.")
                    }
                }
                if let mime = patch.mimeType, mime != item.mimeType,
                   item.isFolder || mime == DriveMime.folder || item.isShortcut || mime == DriveMime.shortcut || DriveMime.isWorkspace(mime) != item.isWorkspace {
                    throw GoogleError.badRequest("The mimeType of this item cannot be changed to \(mime).")
                }
                if content != nil, item.isFolder || item.isShortcut {
                    throw GoogleError.badRequest("Folders and shortcuts cannot have content.")
                }
                // Validation done: mutate.
                let moved = newParent != item.parent
                if edits { item.lastModifiedBy = nil }
                patch.applySimple(to: &item)
                if let mime = patch.mimeType { item.mimeType = mime }
                item.parent = newParent
                let oldDrive = item.driveId
                if moved { item.driveId = newParent.flatMap { s.data.items[$0]?.driveId } }
                let wasTrashed = item.trashed
                if let t = patch.trashed {
                    if t && !item.explicitlyTrashed { item.trashedTime = s.now }
                    if !t { item.trashedTime = nil }
                    item.explicitlyTrashed = t
                }
                let parentTrashed = newParent.flatMap { s.data.items[$0]?.trashed } ?? false
                item.trashed = item.explicitlyTrashed || parentTrashed
                if let content, let contentName {
                    let previous = item.revisionHistory
                    item.contentFile = contentName
                    if item.isBlob {
                        item.takeContent(content.summary)
                    }
                    if patch.modifiedTime == nil { item.modifiedTime = s.now }
                    released = item.appendHeadRevision(after: previous)
                }
                s.put(item)
                if item.driveId != oldDrive {
                    for id in s.descendants(of: item.id) {
                        guard var child = s.data.items[id] else { continue }
                        child.driveId = item.driveId
                        s.put(child)
                    }
                }
                if moved || wasTrashed != item.trashed { s.propagateTrash(below: item.id) }
                return s.data.items[item.id]!
            }
            released.forEach { store.removeContent($0) }
            return item
        } catch {
            store.removeContent(contentName)
            throw error
        }
    }

    // MARK: files.delete, files.emptyTrash

    func filesDelete(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.fileId(r)
        let contents = try store.mutate { s -> [String] in
            guard let item = s.item(id) else { throw GoogleError.notFound(id) }
            guard item.parent != nil, s.access(item)?.canDelete ?? true else { throw GoogleError.insufficientFilePermissions(item.id) }
            return removeTree(item.id, &s)
        }
        contents.forEach { store.removeContent($0) }
        return HTTPResponse(status: 204)
    }

    /// Removes an item and everything below it; returns the content files to delete after the commit.
    private func removeTree(_ id: String, _ s: inout MetadataState) -> [String] {
        let ids = [id] + s.descendants(of: id)
        var contents: [String] = []
        for victim in ids.reversed() {
            contents += s.data.items[victim]?.allContentFiles ?? []
            s.remove(victim)
        }
        return contents
    }

    /// Without `driveId`: My Drive's trash; with it: that shared drive's (files.emptyTrash takes no
    /// `supportsAllDrives` in the discovery document; naming the drive is enough).
    func filesEmptyTrash(_ r: HTTPRequest) throws -> HTTPResponse {
        let driveId = DriveService.driveIdParam(r)
        let contents = try store.mutate { s -> [String] in
            if let driveId {
                let root = try DriveService.requireDrive(s, driveId, allDrives: true)
                guard (root.memberRole ?? .organizer) >= .organizer else { throw GoogleError.insufficientFilePermissions(driveId) }
            }
            // Top-most trashed items; their subtrees go with them. The user's trash holds only
            // what the user owns.
            let tops = s.data.items.values.filter { item in
                item.driveId == driveId && item.owner == nil && item.trashed
                    && !(item.parent.flatMap { s.data.items[$0]?.trashed } ?? false)
            }.map(\.id)
            return tops.flatMap { removeTree($0, &s) }
        }
        contents.forEach { store.removeContent($0) }
        return HTTPResponse(status: 204)
    }

    static func sharedDriveNotFound(_ id: String) -> GoogleError {
        GoogleError(404, reason: "notFound", message: "Shared drive not found: \(id)", location: "driveId", locationType: "parameter")
    }

    // MARK: files.copy

    func filesCopy(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.fileId(r)
        let sel = try selection(r, DriveSchema.file, defaults: FileResource.defaultFields)
        var patch = try MetadataPatch(try jsonBody(r), mode: .copy)
        let source = try store.read { s -> DriveItem in
            guard let item = s.item(id) else { throw GoogleError.notFound(id) }
            return item
        }
        guard !source.isFolder else {
            throw GoogleError(403, reason: "cannotCopyFile", message: "This file cannot be copied by the user.")
        }
        var staged: StagedContent?
        if let file = source.contentFile {
            let temp = store.newTempPath()
            do { try FileManager.default.copyItem(atPath: store.contentPath(file), toPath: temp) } catch { throw GoogleError.notFound(id) }
            staged = StagedContent(tempPath: temp, summary: ContentSummary(size: source.size ?? 0, md5: source.md5 ?? "",
                                                                           sha1: source.sha1 ?? "", sha256: source.sha256 ?? ""),
                                   contentType: nil)
        }
        if patch.name == nil { patch.name = source.name }
        if patch.mimeType == nil { patch.mimeType = source.mimeType }
        // "Any discoverable parent" of the source: its own when the user may add to it, else
        // the root (another user's folder the user only reads).
        if patch.parents == nil, let p = source.parent {
            let writable = store.read { s in s.data.items[p].map { s.canAddChildren($0) } ?? false }
            patch.parents = [writable ? p : "root"]
        }
        if patch.description == nil { patch.description = .some(source.description) }
        if patch.shortcutTargetId == nil { patch.shortcutTargetId = source.shortcutTargetId }
        if patch.properties == nil, let p = source.properties { patch.properties = p.mapValues { .some($0) } }
        if patch.appProperties == nil, let p = source.appProperties { patch.appProperties = p.mapValues { .some($0) } }
        let item = try createItem(patch, content: staged ?? nil, allDrives: DriveService.supportsAllDrives(r))
        return respondFile(r, item, sel)
    }

    // MARK: files.generateIds

    func filesGenerateIds(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.generatedIds, defaults: nil)
        let count = try intParam(r, "count") ?? 10
        guard (1...1000).contains(count) else { throw GoogleError.invalidValue(location: "count") }
        let space = r.param("space") ?? "drive"
        guard ["drive", "appDataFolder"].contains(space) else { throw GoogleError.invalidValue(location: "space") }
        let type = r.param("type") ?? "files"
        guard ["files", "shortcuts"].contains(type) else { throw GoogleError.invalidValue(location: "type") }
        let ids = (0..<count).map { _ in DriveIDs.newFileID() }
        try store.mutate { $0.issue(ids) }
        return respond(200, ["kind": "drive#generatedIds", "space": space, "ids": ids], sel)
    }
}
