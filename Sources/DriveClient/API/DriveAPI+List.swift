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

    /// One page of files.list with the full `DriveFile.fieldMask`.
    public func listPage(query q: String, pageToken: String? = nil, orderBy: String? = nil, pageSize: Int = 1000) throws -> DriveFileListPage {
        try listPage(query: q, pageToken: pageToken, orderBy: orderBy, pageSize: pageSize, fields: DriveFile.fieldMask)
    }
}

extension DriveAPI {
    /// The non-trashed children of any of `parents`, in one query per group, handed to `onPage` page
    /// by page as they arrive (`onPage` returns false to stop early). `fields` is the per-file mask
    /// (`DriveFile.listingFieldMask` by default); it must contain `parents` when more than one parent
    /// is asked for, or the caller cannot tell whose child an entry is.
    ///
    /// Google answers an OR of too many parents with 400 "The query is too complex." (see
    /// `DriveQuery.isQueryTooComplex`): the group is then split in halves and each half listed on its
    /// own, so a caller's group size is a wish, not a risk. Pages may be short (at most 460 files
    /// when `parents` is in the mask) or empty before the end; paging follows `nextPageToken` only.
    public func listChildren(ofAny parents: [String], fields: String = DriveFile.listingFieldMask, pageSize: Int = 1000,
                             onPage: (DriveFileListPage) throws -> Bool) throws {
        guard !parents.isEmpty else { return }
        let q = DriveQuery.children(ofAny: parents)
        var token: String?
        var first = true
        repeat {
            let page: DriveFileListPage
            do {
                page = try listPage(query: q, pageToken: token, pageSize: pageSize, fields: fields)
            } catch let error as DriveError where first && parents.count > 1 && DriveQuery.isQueryTooComplex(error) {
                let half = parents.count / 2
                var go = true
                try listChildren(ofAny: Array(parents[..<half]), fields: fields, pageSize: pageSize) { page in
                    go = try onPage(page)
                    return go
                }
                guard go else { return }
                try listChildren(ofAny: Array(parents[half...]), fields: fields, pageSize: pageSize, onPage: onPage)
                return
            }
            first = false
            guard try onPage(page) else { return }
            token = page.nextPageToken
        } while token != nil
    }

    /// One page of files.list with a caller-chosen per-file `fields` mask. The page's mask always
    /// includes `nextPageToken` (without it paging would silently stop) and `incompleteSearch`.
    public func listPage(query q: String, pageToken: String?, orderBy: String? = nil, pageSize: Int,
                         fields: String) throws -> DriveFileListPage {
        let url = apiURL("files", [
            ("q", q), ("pageSize", String(max(1, min(1000, pageSize)))), ("pageToken", pageToken), ("orderBy", orderBy),
        ] + scope.listQuery + [
            ("fields", "nextPageToken,incompleteSearch,files(\(fields))"),
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
