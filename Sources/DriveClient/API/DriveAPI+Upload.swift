import DriveSupport
import Foundation

/// Uploads: multipart up to `multipartLimit` bytes (inclusive), resumable above.
///
/// Contracts:
/// - Every upload checks the `md5Checksum` in Drive's final answer against the md5 of the source;
///   a difference throws `DriveError.checksumMismatch` (the file then exists on Drive with wrong
///   content: the caller decides whether to upload again or trash it).
/// - Multipart creates carry a pooled ID and are retried whole (a lost answer → 409 → the file is
///   fetched and checked to be ours). A resumable create's initiation that meets 409 fileIdInUse
///   means an earlier upload with that ID completed: the file is fetched and checked to be ours
///   (name, parent, size, md5: `landedCreate`) and returned, never a conflict and never a second
///   file. Resumable uploads are never replayed blindly: after any failure the client asks the
///   server what it holds (`PUT`, `Content-Range: bytes */N`) and continues from there; a session
///   that fails with a 4xx (other than 401, 403, 429: see `restartsSession`) starts over, at most twice.
/// - With a `sessionFile`, the session is persisted after initiation and after every chunk, and
///   removed on success, so another process can finish the upload with `resumeUpload(from:)`.
extension DriveAPI {
    /// A new file with content. `id`: see "Creates and IDs" in `DriveAPI+Create.swift`.
    public func createFile(name: String, parent: String, mimeType: String? = nil, source: UploadSource,
                           modifiedTime: Int64? = nil, sessionFile: String? = nil, id: String? = nil,
                           appProperties: [String: String]? = nil) throws -> DriveFile {
        let size = try Self.size(of: source)
        let identity = try createIdentity(name: name, parent: parent, mimeType: mimeType, callerID: id)
        let metadata = FileMetadataBody(id: identity.id, name: name, parents: [parent], mimeType: mimeType,
                                        modifiedTime: modifiedTime, appProperties: appProperties)
        let method = "files.create.upload"
        if size <= multipartLimit {
            let content = MultipartContent(source, size: size)
            let file = try create(identity, method: method) {
                CreateExpectation(name: name, parent: parent, mimeType: mimeType, size: size, md5: try content.md5())
            } _: {
                multipartRequest(method: "POST", path: "files", metadata: metadata, content: content, contentType: mimeType)
            }
            return try verified(file, md5: try content.md5())
        }
        let prepared = try PreparedSource(source)
        var session = try newSession(prepared, fileId: identity.id ?? "", isUpdate: false, metadata: metadata,
                                     contentType: mimeType, method: method)
        let file = try runResumable(&session, prepared: prepared, sessionFile: sessionFile, probeFirst: false)
        return try verified(file, md5: prepared.md5)
    }

    /// New content (and optionally new metadata) for an existing file.
    public func updateContent(_ id: String, source: UploadSource, mimeType: String? = nil, name: String? = nil,
                              modifiedTime: Int64? = nil, sessionFile: String? = nil,
                              appProperties: [String: String]? = nil) throws -> DriveFile {
        let size = try Self.size(of: source)
        let metadata = FileMetadataBody(name: name, mimeType: mimeType, modifiedTime: modifiedTime, appProperties: appProperties)
        let method = "files.update.upload"
        if size <= multipartLimit {
            let content = MultipartContent(source, size: size)
            let request = multipartRequest(method: "PATCH", path: Self.filePath(id), metadata: metadata, content: content, contentType: mimeType)
            let file = try decode(DriveFile.self, try executor.execute(method, request), method)
            return try verified(file, md5: try content.md5())
        }
        let prepared = try PreparedSource(source)
        var session = try newSession(prepared, fileId: id, isUpdate: true, metadata: metadata, contentType: mimeType, method: method)
        let file = try runResumable(&session, prepared: prepared, sessionFile: sessionFile, probeFirst: false)
        return try verified(file, md5: prepared.md5)
    }

    /// A source's size (a `stat` for files: multipart uploads are hashed while they are sent).
    static func size(of source: UploadSource) throws -> Int64 {
        switch source {
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(let path), .hashedFile(let path, _): return try PreparedSource.statFile(path).size
        }
    }

    /// Starts a resumable upload of a file without sending content: initiates the session and
    /// persists it to `sessionFile`. `resumeUpload(from:)` (in this process or another) sends it.
    /// For a create, the file gets a pooled ID (`session.fileId`; empty for the types Drive refuses IDs
    /// for, see `DriveAPI+Create.swift`); for an update pass `updating`.
    public func beginUpload(name: String?, parent: String?, mimeType: String? = nil, path: String, modifiedTime: Int64? = nil,
                            updating fileID: String? = nil, sessionFile: String) throws -> ResumableUploadSession {
        let prepared = try PreparedSource(.file(path: path))
        let isUpdate = fileID != nil
        let acceptsID = Self.acceptsGeneratedID(mimeType: mimeType)
        let id = try fileID ?? (acceptsID ? nextPooledID() : "")
        let metadata = FileMetadataBody(id: isUpdate || id.isEmpty ? nil : id, name: name, parents: isUpdate ? nil : parent.map { [$0] },
                                        mimeType: mimeType, modifiedTime: modifiedTime)
        var session = try newSession(prepared, fileId: id, isUpdate: isUpdate, metadata: metadata, contentType: mimeType,
                                     method: isUpdate ? "files.update.upload" : "files.create.upload")
        guard let uri = try initiate(session) else { throw DriveError.malformedResponse("resumable upload initiation without a Location") }
        session.sessionURI = uri
        try session.save(to: sessionFile)
        return session
    }

    /// Finishes an upload whose session was persisted (possibly by another process): asks the
    /// server how much it holds and sends the rest. The source must be unchanged (size and mtime).
    public func resumeUpload(from sessionFile: String) throws -> DriveFile {
        var session = try ResumableUploadSession.load(from: sessionFile)
        let (size, mtime) = try PreparedSource.statFile(session.sourcePath)
        guard size == session.size, session.sourceModifiedNanos == nil || session.sourceModifiedNanos == mtime else {
            throw ResumableUploadSession.error("\(session.sourcePath) changed since the upload began; start a new upload")
        }
        let prepared = PreparedSourceSnapshot.make(path: session.sourcePath, size: size, md5: session.md5, mtime: mtime)
        let file = try runResumable(&session, prepared: prepared, sessionFile: sessionFile, probeFirst: true)
        return try verified(file, md5: session.md5)
    }

    // MARK: - Multipart

    /// A multipart upload's content: bytes in memory (hashed at once), or a file streamed into the
    /// body and hashed as it is read (`StreamedMD5`), so that no upload costs a copy of its file in
    /// memory, and no pass of its own to hash it.
    struct MultipartContent {
        let source: UploadSource
        let size: Int64
        let streamed: StreamedMD5?
        private let known: String?

        init(_ source: UploadSource, size: Int64) {
            self.source = source
            self.size = size
            switch source {
            case .bytes(let bytes):
                known = Digest.hex(.md5, of: bytes)
                streamed = nil
            case .file, .hashedFile:
                known = nil
                streamed = StreamedMD5(size: size)
            }
        }

        /// The md5 of what was sent (a pass over the file when the last attempt did not read it all).
        func md5() throws -> String {
            if let known { return known }
            guard let path = source.filePath, let streamed else { return "" }
            return try streamed.md5(orReadFrom: path)
        }
    }

    func multipartRequest(method: String, path: String, metadata: FileMetadataBody, content: MultipartContent,
                          contentType: String?) -> TransportRequest {
        let boundary = "drivefs_" + SecureRandom.token(length: 24)
        let head = Array("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8) + metadata.json
            + Array("\r\n--\(boundary)\r\nContent-Type: \(contentType ?? "application/octet-stream")\r\n\r\n".utf8)
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let body: TransportRequest.Body
        switch content.source {
        case .bytes(let bytes):
            // Already in memory: one buffer.
            body = .bytes(head + bytes + tail)
        case .file(let file), .hashedFile(let file, _):
            body = .parts([.bytes(head), .file(path: file, offset: 0, length: content.size), .bytes(tail)])
        }
        var request = TransportRequest(method: method, url: uploadURL(path, [("uploadType", "multipart")] + scope.fileQuery + [("fields", DriveFile.fieldMask)]),
                                       headers: [("Content-Type", "multipart/related; boundary=\(boundary)")], body: body)
        request.bodyObserver = content.streamed
        return request
    }

    // MARK: - Resumable

    func newSession(_ prepared: PreparedSource, fileId: String, isUpdate: Bool, metadata: FileMetadataBody,
                    contentType: String?, method: String) throws -> ResumableUploadSession {
        var path = ""
        if let p = prepared.source.filePath { path = p }
        return ResumableUploadSession(sessionURI: "", sourcePath: path, size: prepared.size, md5: prepared.md5,
                                      sourceModifiedNanos: prepared.modifiedNanos, confirmedBytes: 0, chunkSize: chunkSize,
                                      fileId: fileId, isUpdate: isUpdate, metadataJSON: String(decoding: metadata.json, as: UTF8.self),
                                      contentType: contentType ?? "application/octet-stream", method: method)
    }

    /// Starts a session: POST (create) or PATCH (update) with the metadata → 200 + `Location`.
    /// With `acceptIDTaken`, a 409 (the create's ID is taken) returns nil instead of throwing.
    func initiate(_ session: ResumableUploadSession, acceptIDTaken: Bool = false) throws -> String? {
        let path = session.isUpdate ? Self.filePath(session.fileId) : "files"
        let request = TransportRequest(
            method: session.isUpdate ? "PATCH" : "POST",
            url: uploadURL(path, [("uploadType", "resumable")] + scope.fileQuery + [("fields", DriveFile.fieldMask)]),
            headers: Self.jsonHeaders + [("X-Upload-Content-Type", session.contentType),
                                         ("X-Upload-Content-Length", String(session.size))],
            body: .bytes(Array(session.metadataJSON.utf8)))
        let response = try executor.execute(session.method, request, accept: acceptIDTaken ? [409] : [])
        if response.status == 409 { return nil }
        guard let location = response.headers["location"], !location.isEmpty else {
            throw DriveError.malformedResponse("resumable upload initiation without a Location")
        }
        return location
    }

    enum ChunkOutcome {
        case progress
        case done(DriveFile)
        /// The session must be replaced by a new one (see `restartsSession`).
        case restart
    }

    func runResumable(_ session: inout ResumableUploadSession, prepared: PreparedSource, sessionFile: String?,
                      probeFirst: Bool) throws -> DriveFile {
        var restarts = 0
        var mustProbe = probeFirst && !session.sessionURI.isEmpty
        func persist(_ s: ResumableUploadSession) throws {
            guard let sessionFile, !s.sourcePath.isEmpty else { return }
            try s.save(to: sessionFile)
        }
        while true {
            if session.sessionURI.isEmpty {
                // A create's ID is used for one file only (pooled, or the caller's by contract), so a
                // taken ID means an earlier upload of this file landed: after a restart, or when the
                // caller retries a whole create whose answer it lost. Accepted (no failure counted),
                // fetched and checked to be ours.
                let idMayBeOurs = !session.isUpdate && !session.fileId.isEmpty
                guard let uri = try initiate(session, acceptIDTaken: idMayBeOurs) else {
                    let file = try landedCreate(session.fileId, expected: Self.expectation(of: session))
                    if let sessionFile { unlink(sessionFile) }
                    return file
                }
                session.sessionURI = uri
                session.confirmedBytes = 0
                mustProbe = false
                try persist(session)
            }
            sending: while true {
                // A failure that means "new session" is an outcome, not an error, while restarts are
                // left: the call that recovers from it counts no failure.
                let outcome: ChunkOutcome = try executor.retrying(session.method) { attempt in
                    do {
                        if attempt > 0 || mustProbe {
                            mustProbe = false
                            if case .done(let file) = try probe(&session) { return .done(file) }
                        }
                        return try sendChunk(&session, prepared: prepared)
                    } catch let error as DriveError where restarts < 2 && Self.restartsSession(error) {
                        return .restart
                    }
                }
                switch outcome {
                case .done(let file):
                    if let sessionFile { unlink(sessionFile) }
                    return file
                case .progress:
                    try persist(session)
                case .restart:
                    // The session is gone or broken (expired, forgotten, refused): start over.
                    restarts += 1
                    session.sessionURI = ""
                    session.confirmedBytes = 0
                    break sending
                }
            }
        }
    }

    /// What a resumable create's file must look like (from the metadata it was initiated with).
    static func expectation(of session: ResumableUploadSession) -> CreateExpectation {
        let metadata = FileMetadataBody(json: session.metadataJSON) ?? FileMetadataBody()
        return CreateExpectation(name: metadata.name, parent: metadata.parents?.first, mimeType: metadata.mimeType,
                                 size: session.size, md5: session.md5)
    }

    /// Whether a failure during a resumable session means "start a new session" (drive-behaviours
    /// §2.8: any 4xx during a session). Not 401 (a token matter, handled by the executor), 403 and
    /// 429 (rate limits, quotas and permissions are about the account or the file, not the session:
    /// a new session would meet them again).
    public static func restartsSession(_ error: DriveError) -> Bool {
        guard let status = error.status, (400..<500).contains(status) else { return false }
        return ![401, 403, 429].contains(status)
    }

    /// Sends the next chunk from the confirmed offset.
    func sendChunk(_ session: inout ResumableUploadSession, prepared: PreparedSource) throws -> ChunkOutcome {
        let start = session.confirmedBytes
        let length = min(session.chunkSize, session.size - start)
        let range = length > 0 ? "bytes \(start)-\(start + length - 1)/\(session.size)" : "bytes */\(session.size)"
        let request = TransportRequest(method: "PUT", url: session.sessionURI, headers: [("Content-Range", range)],
                                       body: length > 0 ? prepared.body(offset: start, length: length) : .none)
        let response = try executor.send(session.method, request, accept: [308])
        let result = try outcome(of: response, session: &session)
        if case .progress = result, length > 0, session.confirmedBytes == start + length, session.chunkSize < maxChunkSize {
            // Taken whole: the next chunk is twice as large (`maxChunkSize`); the session keeps it.
            session.chunkSize = min(maxChunkSize, session.chunkSize * 2)
        }
        return result
    }

    /// Asks the server how much of the upload it holds.
    func probe(_ session: inout ResumableUploadSession) throws -> ChunkOutcome {
        let request = TransportRequest(method: "PUT", url: session.sessionURI, headers: [("Content-Range", "bytes */\(session.size)")])
        let response = try executor.send(session.method, request, accept: [308])
        return try outcome(of: response, session: &session)
    }

    private func outcome(of response: TransportResponse, session: inout ResumableUploadSession) throws -> ChunkOutcome {
        if response.status == 308 {
            // `Range: bytes=0-N` → N+1 bytes held; no Range → nothing held.
            session.confirmedBytes = Self.confirmedBytes(fromRange: response.headers["range"])
            guard session.confirmedBytes <= session.size else {
                throw DriveError.malformedResponse("upload server claims more bytes than were sent")
            }
            return .progress
        }
        return .done(try decode(DriveFile.self, response, session.method))
    }

    static func confirmedBytes(fromRange header: String?) -> Int64 {
        guard let header, let dash = header.lastIndex(of: "-"), let last = Int64(header[header.index(after: dash)...].trimmingCharacters(in: .whitespaces)) else {
            return 0
        }
        return last + 1
    }

    func verified(_ file: DriveFile, md5: String) throws -> DriveFile {
        guard let reported = file.md5Checksum else {
            throw DriveError.checksumMismatch(expected: md5, actual: "(none reported)")
        }
        guard reported.lowercased() == md5.lowercased() else {
            throw DriveError.checksumMismatch(expected: md5, actual: reported)
        }
        return file
    }
}

/// A `PreparedSource` rebuilt from a persisted session (no second md5 pass).
enum PreparedSourceSnapshot {
    static func make(path: String, size: Int64, md5: String, mtime: Int64) -> PreparedSource {
        PreparedSource(path: path, size: size, md5: md5, modifiedNanos: mtime)
    }
}

extension PreparedSource {
    init(path: String, size: Int64, md5: String, modifiedNanos: Int64?) {
        self.source = .file(path: path)
        self.size = size
        self.md5 = md5
        self.modifiedNanos = modifiedNanos
    }
}
