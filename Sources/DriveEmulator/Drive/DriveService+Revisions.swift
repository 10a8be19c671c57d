import DriveSupport
import Foundation

/// revisions.list, revisions.get (and `alt=media`), revisions.update and revisions.delete.
///
/// Every content change of a file (create with content, update by any upload type) makes a new
/// revision; a blob's revision id is its new `headRevisionId`. `DriveItem.keptRevisions` (10)
/// revisions that are not kept forever are kept per file, the head included, each with its
/// content; an older one is purged when a new one arrives (content deleted, gone from the list, a
/// 404 by id), as Google purges revisions not kept forever. Up to `DriveItem.maxKeptForever` (200)
/// blob revisions may be kept forever (`keepForever`); those are never purged. Folders and
/// shortcuts have no revisions. Restoring an old revision is what Google's clients do: download
/// it and upload it as the file's new content (a new head revision).
extension DriveService {
    static let revisionDefaults = try! FieldSelection.parse("kind,id,mimeType,modifiedTime")
    static let revisionListDefaults = try! FieldSelection.parse("kind,nextPageToken,revisions(kind,id,mimeType,modifiedTime)")

    /// `/drive/v3/files/{fileId}/revisions[/{revisionId}]` → (fileId, revisionId or "").
    static func revisionIds(_ r: HTTPRequest) -> (String, String) {
        guard let range = r.path.range(of: "/files/") else { return ("", "") }
        let parts = r.path[range.upperBound...].split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        return (parts.first ?? "", parts.count > 2 ? parts[2] : "")
    }

    static func revisionNotFound(_ id: String) -> GoogleError {
        GoogleError(404, reason: "notFound", message: "Revision not found: \(id).", location: "revisionId", locationType: "parameter")
    }

    /// Folders and shortcuts (status, reason and wording UNVERIFIED).
    static var revisionsNotSupported: GoogleError {
        GoogleError(403, reason: "revisionsNotSupported", message: "The file does not support revisions.")
    }

    /// The file (which must have revisions) and its kept history. Reading revisions needs a
    /// writer's role (`capabilities.canReadRevisions`): a reader or commenter of another user's
    /// file gets 403 `insufficientFilePermissions` (UNVERIFIED: Google's answer to them).
    private func revisionFile(_ fileId: String) throws -> (DriveItem, String) {
        let (item, rootId, access) = try store.read { s -> (DriveItem, String, ItemAccess) in
            guard let item = s.item(fileId) else { throw GoogleError.notFound(fileId) }
            return (item, s.rootId, s.access(item) ?? .own)
        }
        guard !item.isFolder, !item.isShortcut else { throw DriveService.revisionsNotSupported }
        guard access.canEdit else { throw GoogleError.insufficientFilePermissions(item.id) }
        return (item, rootId)
    }

    func renderRevision(_ rev: DriveRevision, of item: DriveItem, baseURL: String) -> [String: Any] {
        var d: [String: Any] = ["kind": "drive#revision", "id": rev.id, "mimeType": rev.mimeType,
                                "modifiedTime": RFC3339.format(millis: rev.modifiedTime),
                                "lastModifyingUser": rev.modifiedBy.map { OtherUser(email: $0).json } ?? user.json]
        if item.isBlob {
            d["keepForever"] = rev.isKeptForever
            if let size = rev.size { d["size"] = String(size) }
            if let md5 = rev.md5 { d["md5Checksum"] = md5 }
            if let name = rev.originalFilename { d["originalFilename"] = name }
        } else {
            d["published"] = false
            let links = DriveService.revisionExportLinks(item, rev, baseURL: baseURL)
            if !links.isEmpty { d["exportLinks"] = links }
        }
        return d
    }

    /// Where a Docs Editors revision's `exportLinks` point: the emulator's stand-in for Google's
    /// `https://docs.google.com/feeds/download/…/Export?id=…&revision=…&exportFormat=…` (a host and
    /// shape outside the v3 API, which has no way to export a revision), served by
    /// `revisionsExport`. Clients follow them verbatim, as they do Google's.
    static func revisionExportLinks(_ item: DriveItem, _ rev: DriveRevision, baseURL: String) -> [String: String] {
        Dictionary(uniqueKeysWithValues: (ExportFormats.targets[item.mimeType] ?? []).map { mime in
            (mime, "\(baseURL)\(revisionExportPath)?id=\(FileResource.queryEscape(item.id))&revision=\(FileResource.queryEscape(rev.id))"
                + "&mimeType=\(FileResource.queryEscape(mime))")
        })
    }

    static let revisionExportPath = "/feeds/download/export"

    // MARK: revisions.list

    func revisionsList(_ r: HTTPRequest) throws -> HTTPResponse {
        let (fileId, _) = DriveService.revisionIds(r)
        let sel = try selection(r, DriveSchema.revisionList, defaults: DriveService.revisionListDefaults)
        let pageSize = try pageSizeParam(r, default: 200, maximum: 1000)
        let (item, _) = try revisionFile(fileId)
        let history = item.revisionHistory
        let binding = ListPageToken.binding(["revisions", item.id])
        var start = 0
        if let text = r.param("pageToken"), !text.isEmpty {
            guard let token = ListPageToken.decode(text, binding: binding) else { throw GoogleError.invalidValue(location: "pageToken") }
            // After the last revision returned; when that one was purged since, at the same offset
            // less what was purged before it is unknowable, so the offset (clamped) is used.
            start = history.firstIndex { $0.id == token.lastId }.map { $0 + 1 } ?? min(token.offset, history.count)
        }
        let page = Array(history[start..<min(history.count, start + pageSize)])
        var body: [String: Any] = ["kind": "drive#revisionList",
                                   "revisions": page.map { renderRevision($0, of: item, baseURL: r.baseURL) }]
        if start + pageSize < history.count, let last = page.last {
            body["nextPageToken"] = ListPageToken(offset: start + pageSize, lastId: last.id, lastSeq: nil).encode(binding: binding)
        }
        return respond(200, body, sel)
    }

    // MARK: revisions.get

    private func revision(_ r: HTTPRequest) throws -> (DriveItem, DriveRevision) {
        let (fileId, revisionId) = DriveService.revisionIds(r)
        let (item, _) = try revisionFile(fileId)
        // `head` is not an alias in v3 (UNVERIFIED); the id must be a kept revision's.
        guard let rev = item.revisionHistory.first(where: { $0.id == revisionId }) else {
            throw DriveService.revisionNotFound(revisionId)
        }
        return (item, rev)
    }

    func revisionsGet(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.revision, defaults: DriveService.revisionDefaults)
        _ = try boolParam(r, "acknowledgeAbuse", default: false)
        let (item, rev) = try revision(r)
        return respond(200, renderRevision(rev, of: item, baseURL: r.baseURL), sel)
    }

    /// The revision's bytes, with `Range` exactly as files.get?alt=media. Docs Editors files: 403
    /// `fileNotDownloadable` ("Only files with binary content can be downloaded. Use Export with
    /// Docs Editors files.", location `alt`), as for the file itself: a Docs revision is read
    /// through its `exportLinks` (`revisionsExport`).
    func revisionsGetMedia(_ r: HTTPRequest) throws -> HTTPResponse {
        _ = try boolParam(r, "acknowledgeAbuse", default: false)
        let (item, rev) = try revision(r)
        guard item.isBlob else { throw GoogleError.fileNotDownloadable }
        guard let file = rev.contentFile else { throw DriveService.revisionNotFound(rev.id) }
        return try mediaResponse(path: store.contentPath(file), size: rev.size ?? 0, mimeType: rev.mimeType, md5: rev.md5, r)
    }
}

extension DriveService {
    // MARK: a Docs revision's export link

    /// `GET /feeds/download/export?id=FILE&revision=REV&mimeType=TARGET` (route `revisions.export`,
    /// charged as a download): the text the revision had, exported to TARGET exactly as
    /// files.export exports the head. Like files.export it needs the revision's reader (a writer's
    /// role, as revisions.get) and a target of `about.exportFormats` (else 400 "The requested
    /// conversion is not supported."); a file that is not a Docs Editors file has no such link:
    /// 403 `fileNotExportable`; an unknown or purged revision: 404. Unlike files.export there is no
    /// 10 MB cap: export links are Google's documented way round it (drive-behaviours §3.8).
    func revisionsExport(_ r: HTTPRequest) throws -> HTTPResponse {
        guard let fileId = r.param("id"), !fileId.isEmpty else { throw GoogleError.required("id") }
        guard let revisionId = r.param("revision"), !revisionId.isEmpty else { throw GoogleError.required("revision") }
        guard let target = r.param("mimeType"), !target.isEmpty else { throw GoogleError.required("mimeType") }
        let (item, _) = try revisionFile(fileId)
        guard item.isWorkspace else {
            throw GoogleError(403, reason: "fileNotExportable", message: "Export only supports Docs Editors files.")
        }
        guard let rev = item.revisionHistory.first(where: { $0.id == revisionId }) else {
            throw DriveService.revisionNotFound(revisionId)
        }
        guard (ExportFormats.targets[item.mimeType] ?? []).contains(target) else { throw DriveService.conversionNotSupported }
        var text: [UInt8] = []
        if let file = rev.contentFile {
            text = Array((try? Data(contentsOf: URL(fileURLWithPath: store.contentPath(file)))) ?? Data())
        }
        let source = ExportSource(fileId: item.id, name: item.name, sourceMime: item.mimeType, text: text)
        guard let bytes = ExportFormats.exportBytes(source, target: target) else { throw DriveService.conversionNotSupported }
        return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", target)]), body: .bytes(bytes))
    }
}

extension DriveService {
    // MARK: revisions.update

    /// Patch of `keepForever` (blobs; accepted and ignored on Docs Editors files, which have none)
    /// and the publishing members (accepted; Docs Editors files are not published by the emulator).
    /// Other members are read-only: 403 `fieldNotWritable`. A writer's right.
    func revisionsUpdate(_ r: HTTPRequest) throws -> HTTPResponse {
        let sel = try selection(r, DriveSchema.revision, defaults: DriveService.revisionDefaults)
        let (fileId, revisionId) = DriveService.revisionIds(r)
        let body = try jsonBody(r)
        let writable: Set<String> = ["keepForever", "published", "publishAuto", "publishedOutsideDomain"]
        for key in body.keys where DriveSchema.revision[key] != nil && !writable.contains(key) && key != "kind" {
            throw GoogleError.fieldNotWritable
        }
        var keep: Bool?
        if let v = body["keepForever"], !(v is NSNull) {
            guard let b = v as? Bool else { throw GoogleError.invalidValue(location: "keepForever") }
            keep = b
        }
        _ = try revisionFile(fileId)
        let (item, rev) = try store.mutate { s -> (DriveItem, DriveRevision) in
            guard var item = s.item(fileId) else { throw GoogleError.notFound(fileId) }
            var history = item.revisionHistory
            guard let index = history.firstIndex(where: { $0.id == revisionId }) else { throw DriveService.revisionNotFound(revisionId) }
            if let keep, item.isBlob, history[index].isKeptForever != keep {
                if keep, history.filter(\.isKeptForever).count >= DriveItem.maxKeptForever {
                    throw DriveService.keepForeverLimit
                }
                history[index].keepForever = keep ? true : nil
                item.revisions = history
                s.put(item, recordChange: false)
            }
            return (item, history[index])
        }
        return respond(200, renderRevision(rev, of: item, baseURL: r.baseURL), sel)
    }

    /// More than 200 revisions kept forever (the limit is Google's; status, reason and message
    /// are the emulator's guess).
    static var keepForeverLimit: GoogleError {
        GoogleError(400, reason: "badRequest", message: "A file can have at most \(DriveItem.maxKeptForever) revisions kept forever.",
                    location: "keepForever", locationType: "other")
    }

    // MARK: revisions.delete

    /// Deletes a blob revision that is not the head (kept forever or not), with its content. The
    /// head (so also the last remaining revision) and the revisions of Docs Editors files cannot be
    /// deleted (the discovery document); Google's answer to such a request is not documented: the
    /// emulator's is 400 `badRequest` (UNVERIFIED). A writer's right.
    func revisionsDelete(_ r: HTTPRequest) throws -> HTTPResponse {
        let (fileId, revisionId) = DriveService.revisionIds(r)
        _ = try revisionFile(fileId)
        let released = try store.mutate { s -> String? in
            guard var item = s.item(fileId) else { throw GoogleError.notFound(fileId) }
            var history = item.revisionHistory
            guard let index = history.firstIndex(where: { $0.id == revisionId }) else { throw DriveService.revisionNotFound(revisionId) }
            guard item.isBlob else {
                throw GoogleError(400, reason: "badRequest", message: "Revisions of Docs Editors files cannot be deleted.")
            }
            guard index != history.count - 1 else {
                throw GoogleError(400, reason: "badRequest", message: "The head revision of a file cannot be deleted.")
            }
            let gone = history.remove(at: index)
            item.revisions = history
            s.put(item, recordChange: false)
            return gone.contentFile == item.contentFile ? nil : gone.contentFile
        }
        store.removeContent(released)
        return HTTPResponse(status: 204)
    }
}
