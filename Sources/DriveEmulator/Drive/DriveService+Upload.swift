import DriveSupport
import Foundation

/// Uploads on `/upload/drive/v3/files[/{fileId}]` (and `/resumable/upload/...`): `uploadType=media`,
/// `multipart` and `resumable`, for files.create (POST) and files.update (PATCH). Content always
/// streams to disk; checksums are computed on the way (resumable: when the last byte arrives).
extension DriveService {
    static let chunkGranularity: Int64 = 256 * 1024
    /// 5 TiB, about.maxUploadSize; also bounds every offset so that arithmetic on them cannot overflow.
    static let maxUploadSize: Int64 = 5_497_558_138_880
    static let multipartMetadataLimit = 1 << 20

    func uploadCreate(_ r: HTTPRequest) throws -> HTTPResponse { try upload(r, fileId: nil) }
    func uploadUpdate(_ r: HTTPRequest) throws -> HTTPResponse { try upload(r, fileId: DriveService.fileId(r)) }

    private func upload(_ r: HTTPRequest, fileId: String?) throws -> HTTPResponse {
        if let uploadId = r.param("upload_id") { return try resumableChunk(r, uploadId: uploadId) }
        let m = r.method.uppercased()
        guard m == (fileId == nil ? "POST" : "PATCH") else { throw GoogleError.unknownPath(r.path) }
        let type = r.param("uploadType") ?? (r.path.hasPrefix("/resumable/") ? "resumable" : "")
        switch type {
        case "media": return try mediaUpload(r, fileId: fileId)
        case "multipart", "related": return try multipartUpload(r, fileId: fileId)
        case "resumable": return try resumableInitiate(r, fileId: fileId)
        default: throw GoogleError.invalidValue(location: "uploadType")
        }
    }

    private func requireExisting(_ fileId: String?, allDrives: Bool) throws {
        guard let fileId else { return }
        try store.read { s in guard s.item(fileId, allDrives: allDrives) != nil else { throw GoogleError.notFound(fileId) } }
    }

    private func finish(_ r: HTTPRequest, fileId: String?, patch: MetadataPatch, staged: StagedContent,
                        fieldsText: String?, addParents: String?, removeParents: String?) throws -> HTTPResponse {
        let sel = try selection(fieldsText: fieldsText, DriveSchema.file, defaults: FileResource.defaultFields)
        let item: DriveItem
        if let fileId {
            item = try updateItem(fileId, patch, addParents: addParents, removeParents: removeParents, content: staged,
                                  allDrives: DriveService.supportsAllDrives(r))
        } else {
            item = try createItem(patch, content: staged, allDrives: DriveService.supportsAllDrives(r))
        }
        return respondFile(r, item, sel)
    }

    /// Streams a body into a new temporary file; a truncated body removes it and propagates.
    private func stage(_ r: HTTPRequest, contentType: String?) throws -> StagedContent {
        let writer = try ContentWriter(path: store.newTempPath())
        do { try writer.copy(from: r.body) } catch { writer.abandon(); throw error }
        return StagedContent(tempPath: writer.path, summary: writer.finish(), contentType: contentType)
    }

    // MARK: uploadType=media

    private func mediaUpload(_ r: HTTPRequest, fileId: String?) throws -> HTTPResponse {
        _ = try selection(r, DriveSchema.file, defaults: nil)
        try requireExisting(fileId, allDrives: DriveService.supportsAllDrives(r))
        let patch = try MetadataPatch([:], mode: fileId == nil ? .create : .update)
        let staged = try stage(r, contentType: r.headers["Content-Type"])
        return try finish(r, fileId: fileId, patch: patch, staged: staged, fieldsText: r.param("fields"),
                          addParents: r.param("addParents"), removeParents: r.param("removeParents"))
    }

    // MARK: uploadType=multipart

    private func multipartUpload(_ r: HTTPRequest, fileId: String?) throws -> HTTPResponse {
        _ = try selection(r, DriveSchema.file, defaults: nil)
        guard let boundary = MultipartReader.boundary(contentType: r.headers["Content-Type"]) else {
            throw GoogleError.badRequest("Multipart upload requests need a multipart/related Content-Type with a boundary.")
        }
        try requireExisting(fileId, allDrives: DriveService.supportsAllDrives(r))
        let reader = MultipartReader(body: r.body, boundary: boundary)
        let writer = try ContentWriter(path: store.newTempPath())
        var mediaType: String?
        var metadata: [UInt8] = []
        do {
            guard try reader.start() else { throw MultipartReader.Failure.malformed("no parts") }
            _ = try reader.readHeaders()
            let (meta, more) = try reader.readBody(limit: DriveService.multipartMetadataLimit)
            metadata = meta
            guard more else { throw MultipartReader.Failure.malformed("no media part") }
            let mediaHeaders = try reader.readHeaders()
            mediaType = mediaHeaders["Content-Type"]
            if try reader.readBody({ try writer.write($0) }) {
                // Parts after the media part are read and ignored.
                while try reader.readBody({ _ in }) {}
            }
            try r.body.drain()
        } catch let e as MultipartReader.Failure {
            writer.abandon()
            guard case .malformed(let why) = e else { throw e }
            throw GoogleError.badRequest("Malformed multipart body: \(why).")
        } catch {
            writer.abandon()
            throw error
        }
        let staged = StagedContent(tempPath: writer.path, summary: writer.finish(), contentType: mediaType)
        do {
            let patch = try MetadataPatch(try DriveService.parseJSONObject(metadata), mode: fileId == nil ? .create : .update)
            return try finish(r, fileId: fileId, patch: patch, staged: staged, fieldsText: r.param("fields"),
                              addParents: r.param("addParents"), removeParents: r.param("removeParents"))
        } catch {
            unlink(staged.tempPath)
            throw error
        }
    }

    // MARK: uploadType=resumable

    private func resumableInitiate(_ r: HTTPRequest, fileId: String?) throws -> HTTPResponse {
        _ = try selection(r, DriveSchema.file, defaults: nil)
        let metaBytes = try r.body.readAll(limit: DriveService.multipartMetadataLimit)
        let patch = try MetadataPatch(try DriveService.parseJSONObject(metaBytes), mode: fileId == nil ? .create : .update)
        let allDrives = DriveService.supportsAllDrives(r)
        try requireExisting(fileId, allDrives: allDrives)
        if let fileId {
            // New content is a writer's right: refused at initiation, as at the end.
            try store.read { s in
                if let item = s.item(fileId, allDrives: allDrives), !(s.access(item)?.canEdit ?? true) {
                    throw GoogleError.insufficientFilePermissions(item.id)
                }
            }
        } else {
            // Fail early on what would fail at the end.
            try store.read { s in
                let parentRaw = patch.parents?.first ?? "root"
                guard let parent = s.item(parentRaw, allDrives: allDrives) else { throw GoogleError.notFound(parentRaw) }
                if parent.isFolder, !s.canAddChildren(parent) { throw GoogleError.insufficientFilePermissions(parent.id) }
                if let id = patch.id {
                    if let refused = DriveService.generatedIDRefused(forMimeType: patch.mimeType ?? "") { throw refused }
                    if s.data.items[id] != nil { throw GoogleError.fileIdInUse }
                    guard s.data.issuedIds.contains(id) else {
                        throw GoogleError(400, reason: "invalid", message: "The provided file ID is not usable.",
                                          location: "file.id", locationType: "other")
                    }
                }
            }
        }
        var total: Int64?
        if let text = r.headers["X-Upload-Content-Length"] {
            guard let n = Int64(text.trimmingCharacters(in: .whitespaces)), n >= 0, n <= DriveService.maxUploadSize else {
                throw GoogleError.badRequest("Invalid X-Upload-Content-Length header.")
            }
            total = n
        }
        let uploadId = "AEnB2U" + SecureRandom.token(length: 90)
        let query = r.query.filter { $0.name != "upload_id" }.map { [$0.name, $0.value] }
        let record = UploadSessionRecord(uploadId: uploadId, fileId: fileId.map { id in store.read { $0.resolve(id) } },
                                         metadata: String(decoding: metaBytes, as: UTF8.self),
                                         contentType: r.headers["X-Upload-Content-Type"], totalLength: total,
                                         query: query, createdTime: store.nowMillis)
        _ = try sessions.create(record)
        var pairs = query.filter { $0[0] != "uploadType" }.map { "\(FileResource.queryEscape($0[0]))=\(FileResource.queryEscape($0[1]))" }
        pairs.insert("uploadType=resumable", at: 0)
        pairs.append("upload_id=\(uploadId)")
        let path = fileId.map { "/upload/drive/v3/files/\(FileResource.queryEscape($0))" } ?? "/upload/drive/v3/files"
        let headers = HTTPHeaders([("Location", "\(r.baseURL)\(path)?\(pairs.joined(separator: "&"))"),
                                   ("X-GUploader-UploadID", uploadId), ("Content-Type", "text/html; charset=UTF-8")])
        return HTTPResponse(status: 200, headers: headers, body: .empty)
    }

    /// `Content-Range` of a chunk: `bytes a-b/total`, `bytes a-b/*`, `bytes */total`, `bytes */*`.
    struct ChunkRange {
        var first: Int64?
        var last: Int64?
        var total: Int64?

        static func parse(_ text: String) -> ChunkRange? {
            let t = text.trimmingCharacters(in: .whitespaces)
            guard t.lowercased().hasPrefix("bytes ") else { return nil }
            let spec = t.dropFirst(6).trimmingCharacters(in: .whitespaces)
            let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
            guard halves.count == 2 else { return nil }
            var r = ChunkRange()
            if halves[1] != "*" {
                guard let n = Int64(halves[1]), n >= 0, n <= DriveService.maxUploadSize else { return nil }
                r.total = n
            }
            if halves[0] != "*" {
                let ends = halves[0].split(separator: "-", omittingEmptySubsequences: false)
                guard ends.count == 2, let a = Int64(ends[0]), let b = Int64(ends[1]), a >= 0, b >= a,
                      b < DriveService.maxUploadSize else { return nil }
                if let total = r.total, b >= total { return nil }
                r.first = a
                r.last = b
            }
            return r
        }
    }

    private func resumableChunk(_ r: HTTPRequest, uploadId: String) throws -> HTTPResponse {
        guard let session = sessions.get(uploadId), store.nowMillis - session.record.createdTime <= UploadSessions.lifetimeMillis else {
            throw GoogleError(404, reason: "notFound", message: "The upload session was not found or has expired.")
        }
        session.lock.lock()
        defer { session.lock.unlock() }
        if let done = session.record.completedFileId {
            try r.body.drain()
            let sel = try selection(fieldsText: session.record.param("fields"), DriveSchema.file, defaults: FileResource.defaultFields)
            let item = try store.read { s -> DriveItem in
                guard let item = s.item(done) else { throw GoogleError.notFound(done) }
                return item
            }
            return respondFile(r, item, sel)
        }
        var held = sessions.held(uploadId)
        guard let header = r.headers["Content-Range"] else {
            // No Content-Range: the body is the whole content, from byte 0.
            truncate(sessions.dataPath(uploadId), 0)
            session.hasher = ContentHasher()
            let writer = try ContentWriter(appendingTo: sessions.dataPath(uploadId), hasher: session.hasher)
            defer { writer.finish() }
            do { held = try writer.copy(from: r.body) } catch { session.hasher = nil; throw error }
            if let known = session.record.totalLength, known != held { throw GoogleError.badRequest("Failed to parse Content-Range header.") }
            session.record.totalLength = held
            return try completeSession(session, r)
        }
        guard let range = ChunkRange.parse(header) else { throw GoogleError.badRequest("Failed to parse Content-Range header.") }
        if let total = range.total {
            if let known = session.record.totalLength, known != total {
                throw GoogleError.badRequest("Failed to parse Content-Range header.")
            }
            if session.record.totalLength == nil {
                session.record.totalLength = total
                try sessions.save(session.record)
            }
        }
        if let first = range.first, let last = range.last {
            guard first <= held else {
                throw GoogleError.badRequest("Invalid request.  According to the Content-Range header, the upload offset is \(first) byte(s), which exceeds already uploaded size of \(held) byte(s).")
            }
            let length = last - first + 1
            let isFinal = range.total.map { last + 1 == $0 } ?? false
            if !isFinal, length % DriveService.chunkGranularity != 0 {
                throw GoogleError.badRequest("Invalid request. The number of bytes uploaded is required to be equal or greater than 262144, except for the final request (it's recommended to be the exact multiple of 262144). The received request contained \(length) bytes, which does not meet this requirement.")
            }
            // A complete body shorter than its Content-Range says is a malformed request: refused,
            // and nothing of it kept. A body cut short by the connection (HTTPBodyError.truncated)
            // is different: what arrived stays on disk before the error propagates.
            if let declared = r.body.declaredLength, declared < length {
                try r.body.drain()
                throw DriveService.chunkShorterThanRange(declared: declared, length: length)
            }
            // Bytes this server already holds are skipped; the rest is appended.
            let skipped = try DriveService.discard(r.body, count: held - first)
            var appended: Int64 = 0
            if last + 1 > held {
                if held == 0 { session.hasher = ContentHasher() }
                if session.hasher?.size != held { session.hasher = nil }
                let writer = try ContentWriter(appendingTo: sessions.dataPath(uploadId), hasher: session.hasher)
                defer { writer.finish() }
                do { appended = try writer.copy(from: r.body, limit: last + 1 - held) } catch { session.hasher = nil; throw error }
                // The Range a 308 acknowledges must survive a crash (the client will not send it again).
                if store.durable { try writer.sync() }
            }
            if skipped + appended < length {
                // A chunked body that ended early (no declared length to check up front): undo.
                session.hasher = nil
                _ = truncate(sessions.dataPath(uploadId), off_t(held))
                throw DriveService.chunkShorterThanRange(declared: skipped + appended, length: length)
            }
            held += appended
        }
        try r.body.drain()
        if let total = range.total, held >= total {
            return try completeSession(session, r)
        }
        var headers = HTTPHeaders()
        if held > 0 { headers.add("Range", "bytes=0-\(held - 1)") }
        headers.add("X-GUploader-UploadID", uploadId)
        if r.headers["X-GUploader-No-308"]?.lowercased() == "yes" {
            headers.add("X-Http-Status-Code-Override", "308")
            return HTTPResponse(status: 200, headers: headers)
        }
        return HTTPResponse(status: 308, headers: headers)
    }

    /// The 400 for a chunk whose complete body is shorter than its `Content-Range` (wording: the
    /// emulator's own; Google's is not recorded).
    static func chunkShorterThanRange(declared: Int64, length: Int64) -> GoogleError {
        GoogleError.badRequest("Invalid request. The request body has \(declared) byte(s), fewer than the \(length) byte(s) its Content-Range header announces.")
    }

    /// Reads and drops up to `count` bytes of `body`; the number dropped (fewer when the body ends).
    @discardableResult
    static func discard(_ body: HTTPRequestBody, count: Int64) throws -> Int64 {
        guard count > 0 else { return 0 }
        var left = count
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while left > 0 {
            let want = Int(min(Int64(buffer.count), left))
            let n = try buffer.withUnsafeMutableBytes { try body.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            if n == 0 { break }
            left -= Int64(n)
        }
        return count - left
    }

    /// The last byte has arrived: hash the session's data, turn it into the file, and remember the result.
    private func completeSession(_ session: UploadSessions.Session, _ r: HTTPRequest) throws -> HTTPResponse {
        let record = session.record
        let dataPath = sessions.dataPath(record.uploadId)
        do {
            // The running checksums when they cover the data (taken: a retry after a failure re-reads).
            let running = session.hasher
            session.hasher = nil
            let summary: ContentSummary
            if let running, running.size == sessions.held(record.uploadId) { summary = running.finish() } else {
                summary = try ContentHasher.summarize(path: dataPath)
            }
            let patch = try MetadataPatch(try DriveService.parseJSONObject(Array(record.metadata.utf8)),
                                          mode: record.fileId == nil ? .create : .update)
            let staged = StagedContent(tempPath: dataPath, summary: summary, contentType: record.contentType)
            let sel = try selection(fieldsText: record.param("fields"), DriveSchema.file, defaults: FileResource.defaultFields)
            let item: DriveItem
            if let fileId = record.fileId {
                item = try updateItem(fileId, patch, addParents: record.param("addParents"),
                                      removeParents: record.param("removeParents"), content: staged,
                                      allDrives: DriveService.supportsAllDrives { record.param($0) })
            } else {
                item = try createItem(patch, content: staged, allDrives: DriveService.supportsAllDrives { record.param($0) })
            }
            session.record.completedFileId = item.id
            try? sessions.save(session.record)
            return respondFile(r, item, sel)
        } catch {
            sessions.remove(record.uploadId)
            throw error
        }
    }
}
