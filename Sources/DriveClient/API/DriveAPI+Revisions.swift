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
