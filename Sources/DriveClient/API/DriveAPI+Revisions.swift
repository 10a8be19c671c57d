import DriveSupport
import Foundation

extension DriveAPI {
    /// The fields of a revision the client reads.
    static let revisionFields = "id,modifiedTime,size,md5Checksum,keepForever,originalFilename,lastModifyingUser(displayName,emailAddress)"

    /// Every revision of `fileID`'s content, oldest first (revisions.list, 1,000 a page; at most
    /// 100 pages are read).
    public func listRevisions(_ fileID: String) throws -> [DriveRevision] {
        struct Wire: Decodable {
            struct Revision: Decodable {
                var id: String
                var modifiedTime: String?
                var size: String?
                var md5Checksum: String?
                var keepForever: Bool?
                var originalFilename: String?
                var lastModifyingUser: DriveFile.User?
            }
            var revisions: [Revision]?
            var nextPageToken: String?
        }
        var revisions: [DriveRevision] = []
        var token: String?
        for _ in 0..<100 {
            var query: [(String, String?)] = [("pageSize", "1000"), ("fields", "nextPageToken,revisions(\(Self.revisionFields))")]
            if let token { query.append(("pageToken", token)) }
            let url = apiURL(Self.filePath(fileID) + "/revisions", scope.fileQuery + query)
            let wire = try decode(Wire.self, try executor.execute("revisions.list", TransportRequest(method: "GET", url: url)),
                                  "revisions.list")
            revisions += (wire.revisions ?? []).map { r in
                DriveRevision(id: r.id, modifiedTime: r.modifiedTime.flatMap { RFC3339.parseMillis($0) }, size: r.size.flatMap { Int64($0) },
                              md5Checksum: r.md5Checksum, keepForever: r.keepForever ?? false, lastModifyingUser: r.lastModifyingUser,
                              originalFilename: r.originalFilename)
            }
            guard let next = wire.nextPageToken, !next.isEmpty else { return revisions }
            token = next
        }
        throw DriveError.malformedResponse("revisions.list: more than 100 pages")
    }
}

extension DriveAPI {
    /// A Google Docs Editors file (Docs, Sheets, Slides, Drawings) as it was at `revision`, exported
    /// to `mimeType`. Drive's v3 API has no call for this: files.export exports the head only, and
    /// `revisions.get?alt=media` answers 403 `fileNotDownloadable` for these files. A Docs
    /// revision carries `exportLinks` instead (MIME type → URL, on docs.google.com at Google), and
    /// following the one for `mimeType` with the user's token is how a client downloads it: one
    /// revisions.get (`fields=exportLinks`), then that link (counted as `revisions.export`, a
    /// download). No ranges; the result is collected in memory.
    ///
    /// Contracts: a revision Drive no longer keeps is `DriveError.notFound`; a revision without a
    /// link for `mimeType` is `invalidArgument` (status 0, reason `exportFormat`); a link on a host
    /// other than the API's own or Google's Docs host is refused (`malformedResponse`) without
    /// being fetched, so the token never goes anywhere else.
    public func exportRevision(_ id: String, revision: String, mimeType: String) throws -> [UInt8] {
        struct Wire: Decodable { var exportLinks: [String: String]? }
        let url = apiURL(Self.filePath(id) + "/revisions/" + URLBuilder.encode(revision), [("fields", "exportLinks")])
        let wire = try decode(Wire.self, try executor.execute("revisions.get", TransportRequest(method: "GET", url: url)), "revisions.get")
        guard let link = wire.exportLinks?[mimeType], !link.isEmpty else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "exportFormat",
                                                             message: "Drive offers no \(mimeType) export of revision \(revision)"))
        }
        guard trustsExportLink(link) else {
            throw DriveError.malformedResponse("revisions.get: an export link on an unexpected host (\(CleartextPolicy.host(of: link) ?? "none"))")
        }
        return try executor.execute("revisions.export", TransportRequest(method: "GET", url: link)).body
    }

    /// Hosts an export link may send the user's token to: the API's own (the emulator, a test
    /// server), or Google's Docs host over https.
    func trustsExportLink(_ link: String) -> Bool {
        guard let host = CleartextPolicy.host(of: link)?.lowercased() else { return false }
        if host == CleartextPolicy.host(of: endpoints.apiRoot)?.lowercased() { return true }
        return link.lowercased().hasPrefix("https://") && host == "docs.google.com"
    }
}
