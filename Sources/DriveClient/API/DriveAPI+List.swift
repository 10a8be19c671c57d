import Foundation

extension DriveAPI {
    /// A folder's children that are not trashed, all pages.
    public func listChildren(of folderID: String) throws -> [DriveFile] {
        try list(query: DriveQuery.children(of: folderID))
    }

    /// Every file matching `q`, following `nextPageToken` until it is absent (pages may be short
    /// or empty before the end).
    public func list(query q: String, orderBy: String? = nil, pageSize: Int = 1000) throws -> [DriveFile] {
        var files: [DriveFile] = []
        var token: String?
        repeat {
            let page = try listPage(query: q, pageToken: token, orderBy: orderBy, pageSize: pageSize)
            files.append(contentsOf: page.files)
            token = page.nextPageToken
        } while token != nil
        return files
    }

    /// One page of files.list. The fields mask includes `nextPageToken` (without it paging would
    /// silently stop) and `incompleteSearch`.
    public func listPage(query q: String, pageToken: String? = nil, orderBy: String? = nil, pageSize: Int = 1000) throws -> DriveFileListPage {
        let url = apiURL("files", [
            ("q", q), ("pageSize", String(max(1, min(1000, pageSize)))), ("pageToken", pageToken), ("orderBy", orderBy),
            ("fields", "nextPageToken,incompleteSearch,files(\(DriveFile.fieldMask))"),
        ])
        let response = try executor.execute("files.list", TransportRequest(method: "GET", url: url))
        struct Wire: Decodable {
            var files: [DriveFile]?
            var nextPageToken: String?
            var incompleteSearch: Bool?
        }
        let wire = try decode(Wire.self, response, "files.list")
        let next = wire.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
        return DriveFileListPage(files: wire.files ?? [], nextPageToken: next, incompleteSearch: wire.incompleteSearch ?? false)
    }
}
