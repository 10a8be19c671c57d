import DriveSupport
import Foundation

/// Drive v3 operations the filesystem needs, over `DriveRequestExecutor` (which adds the token,
/// pacing, retries and counters). Blocking; call from the filesystem's threads, never from a Task.
///
/// Every call that returns files asks for `DriveFile.fieldMask`. Creates carry an ID from the
/// `FileIDPool` where Drive accepts one, so a create whose response was lost and that is retried
/// gets 409 fileIdInUse; the file that the first attempt made is then fetched and returned: never a
/// duplicate (see `DriveAPI+Create.swift` for the types Drive refuses IDs for).
public final class DriveAPI: Sendable {
    public let executor: DriveRequestExecutor
    public let endpoints: DriveEndpoints
    /// Uploads up to this size (inclusive) are multipart; larger ones resumable. Google allows 5 MiB.
    public let multipartLimit: Int64
    /// Resumable chunk size: a positive multiple of 256 KiB (other values are rounded down, to at least 256 KiB).
    public let chunkSize: Int64
    /// The size chunks grow to: each chunk Drive took whole doubles the next one, up to this. Every
    /// chunk costs a round trip, so on a link with 50 ms of latency 8 MiB chunks at 40 MiB/s send
    /// at 80% of the link, 64 MiB ones at 97%; starting small keeps a short upload's progress
    /// visible and a failing one cheap. Equal to `chunkSize` unless asked (a multiple of 256 KiB).
    public let maxChunkSize: Int64
    let idPool: FileIDPool
    /// Which drive this API works in (`DriveScope.swift`): My Drive, or one shared drive, whose
    /// parameters then ride on every request that takes them.
    public let scope: DriveScope
    /// My Drive's change feed also carries the user's shared-drive changes (`changeType: drive`:
    /// a drive joined, left, renamed, a role changed), as `DriveChangePage.driveChanges`: what the
    /// account layout's `Shared drives` folder follows. Drive shows them only to a changes.list with
    /// `supportsAllDrives=true`, which this adds (the items of shared drives stay out: no
    /// `includeItemsFromAllDrives`). Off: My Drive's requests stay exactly as before.
    public let feedSeesDriveChanges: Bool

    public static let chunkGranularity: Int64 = 256 * 1024

    public init(executor: DriveRequestExecutor, endpoints: DriveEndpoints = .google,
                chunkSize: Int64 = 8 * 1024 * 1024, maxChunkSize: Int64? = nil, multipartLimit: Int64 = 5 * 1024 * 1024,
                idBatchSize: Int = 100, scope: DriveScope = .myDrive, idLowWater: Int? = nil, feedSeesDriveChanges: Bool = false) {
        self.executor = executor
        self.scope = scope
        self.feedSeesDriveChanges = feedSeesDriveChanges
        self.endpoints = endpoints
        self.chunkSize = max(Self.chunkGranularity, chunkSize / Self.chunkGranularity * Self.chunkGranularity)
        self.maxChunkSize = max(self.chunkSize, (maxChunkSize ?? self.chunkSize) / Self.chunkGranularity * Self.chunkGranularity)
        self.multipartLimit = multipartLimit
        self.idPool = FileIDPool(batchSize: idBatchSize, lowWater: idLowWater)
    }

    /// The usual stack: libcurl, a token manager over `grant`, a 10 req/s pacer, default retries.
    /// `concurrency`: how many requests may run at once (FUSE threads + read-ahead streams +
    /// uploads); the connection pool keeps that many connections alive between requests.
    public static func make(grant: any TokenGrant, endpoints: DriveEndpoints = .fromEnvironment(),
                            caFile: String? = nil, time: any TimeSource = SystemTimeSource(),
                            concurrency: Int = 16, scope: DriveScope = .myDrive) throws -> DriveAPI {
        let transport = try CurlTransport(options: CurlTransport.Options(concurrency: concurrency, caFile: caFile))
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant, time: time),
                                            pacer: Pacer(time: time), time: time, reachability: Reachability(time: time))
        return DriveAPI(executor: executor, endpoints: endpoints, scope: scope)
    }

    public var reachability: Reachability? { executor.reachability }

    // MARK: - Helpers

    func apiURL(_ path: String, _ query: [(String, String?)] = []) -> String {
        URLBuilder.make(endpoints.driveBase, path, query)
    }

    func uploadURL(_ path: String, _ query: [(String, String?)] = []) -> String {
        URLBuilder.make(endpoints.uploadBase, path, query)
    }

    static func filePath(_ id: String) -> String { "files/" + URLBuilder.encode(id) }

    static let jsonHeaders = [("Content-Type", "application/json; charset=UTF-8")]

    static func jsonBody(_ metadata: FileMetadataBody) -> TransportRequest.Body { .bytes(metadata.json) }

    func decode<T: Decodable>(_ type: T.Type, _ response: TransportResponse, _ what: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(response.body))
        } catch {
            throw DriveError.malformedResponse("\(what): \(error)")
        }
    }

    // MARK: - Metadata

    public func about() throws -> DriveAbout {
        let response = try executor.execute("about.get", TransportRequest(method: "GET", url: apiURL("about", [("fields", DriveAbout.fieldMask)])))
        return try decode(AboutWire.self, response, "about").about
    }

    /// files.get (metadata). `id` may be `root`.
    public func getFile(_ id: String) throws -> DriveFile {
        let response = try executor.execute("files.get", TransportRequest(method: "GET", url: apiURL(Self.filePath(id), scope.fileQuery + [("fields", DriveFile.fieldMask)])))
        return try decode(DriveFile.self, response, "files.get")
    }

    /// A folder. `id`: see "Creates and IDs" in `DriveAPI+Create.swift`.
    public func createFolder(name: String, parent: String, modifiedTime: Int64? = nil, id: String? = nil,
                             appProperties: [String: String]? = nil) throws -> DriveFile {
        try createMetadataOnly(name: name, parent: parent, mimeType: DriveFile.folderMimeType, modifiedTime: modifiedTime, id: id,
                               appProperties: appProperties)
    }

    /// A file without content (metadata-only create), e.g. a Google Doc (`application/vnd.google-apps.document`)
    /// or an empty placeholder. `id`: see "Creates and IDs" in `DriveAPI+Create.swift`.
    public func createEmpty(name: String, parent: String, mimeType: String, modifiedTime: Int64? = nil, id: String? = nil,
                            appProperties: [String: String]? = nil) throws -> DriveFile {
        try createMetadataOnly(name: name, parent: parent, mimeType: mimeType, modifiedTime: modifiedTime, id: id,
                               appProperties: appProperties)
    }

    private func createMetadataOnly(name: String, parent: String, mimeType: String, modifiedTime: Int64?, id: String?,
                                    appProperties: [String: String]?) throws -> DriveFile {
        let identity = try createIdentity(name: name, parent: parent, mimeType: mimeType, callerID: id)
        let body = FileMetadataBody(id: identity.id, name: name, parents: [parent], mimeType: mimeType, modifiedTime: modifiedTime,
                                    appProperties: appProperties)
        return try create(identity, method: "files.create", expected: CreateExpectation(name: name, parent: parent, mimeType: mimeType)) {
            TransportRequest(method: "POST", url: apiURL("files", scope.fileQuery + [("fields", DriveFile.fieldMask)]), headers: Self.jsonHeaders, body: Self.jsonBody(body))
        }
    }

    /// files.update (metadata only): rename, change MIME type, set modifiedTime.
    public func updateMetadata(_ id: String, name: String? = nil, mimeType: String? = nil, modifiedTime: Int64? = nil,
                               appProperties: [String: String]? = nil) throws -> DriveFile {
        try patch(id, FileMetadataBody(name: name, mimeType: mimeType, modifiedTime: modifiedTime, appProperties: appProperties),
                  query: [])
    }

    public func setModifiedTime(_ id: String, millis: Int64) throws -> DriveFile {
        try updateMetadata(id, modifiedTime: millis)
    }

    /// Moves (one parent: add the new, remove the old) and optionally renames in the same request.
    public func move(_ id: String, addParent: String, removeParent: String?, newName: String? = nil,
                     appProperties: [String: String]? = nil) throws -> DriveFile {
        try patch(id, FileMetadataBody(name: newName, appProperties: appProperties),
                  query: [("addParents", addParent), ("removeParents", removeParent)])
    }

    /// files.update `{"trashed": true}` (v3 has no trash method). Only the owner may trash.
    public func trash(_ id: String) throws -> DriveFile { try patch(id, FileMetadataBody(trashed: true), query: []) }

    public func untrash(_ id: String) throws -> DriveFile { try patch(id, FileMetadataBody(trashed: false), query: []) }

    private func patch(_ id: String, _ body: FileMetadataBody, query: [(String, String?)]) throws -> DriveFile {
        let url = apiURL(Self.filePath(id), query + scope.fileQuery + [("fields", DriveFile.fieldMask)])
        let response = try executor.execute("files.update", TransportRequest(method: "PATCH", url: url, headers: Self.jsonHeaders, body: Self.jsonBody(body)))
        return try decode(DriveFile.self, response, "files.update")
    }

    /// Permanent delete, skipping the trash. A retried delete whose first attempt landed gets 404:
    /// that counts as success.
    public func delete(_ id: String) throws {
        var attempted = false
        do {
            _ = try executor.execute("files.delete") { attempt in
                attempted = attempt > 0
                return TransportRequest(method: "DELETE", url: apiURL(Self.filePath(id), scope.fileQuery))
            }
        } catch DriveError.notFound(let info) {
            if !attempted { throw DriveError.notFound(info) }
        }
    }

    /// Empties the trash of this API's drive (My Drive's, or the shared drive's).
    public func emptyTrash() throws {
        _ = try executor.execute("files.emptyTrash", TransportRequest(method: "DELETE", url: apiURL("files/trash", scope.emptyTrashQuery)))
    }

    /// files.generateIds (1...1000).
    public func generateIds(count: Int) throws -> [String] {
        let n = max(1, min(1000, count))
        let response = try executor.execute("files.generateIds", TransportRequest(method: "GET", url: apiURL("files/generateIds", [("count", String(n)), ("space", "drive")])))
        struct Wire: Decodable { var ids: [String]? }
        guard let ids = try decode(Wire.self, response, "files.generateIds").ids, !ids.isEmpty else {
            throw DriveError.malformedResponse("files.generateIds: no ids")
        }
        return ids
    }
}
