import DriveSupport
import Foundation

/// A resumable upload session as persisted in `uploads/<id>.json`; its bytes are in `uploads/<id>.data`
/// (the bytes held = that file's size, so a chunk cut short keeps what arrived).
struct UploadSessionRecord: Codable {
    var uploadId: String
    /// Set for files.update sessions.
    var fileId: String?
    /// The initiation's JSON metadata, verbatim.
    var metadata: String
    var contentType: String?
    /// Known from `X-Upload-Content-Length` or a chunk's `Content-Range` total.
    var totalLength: Int64?
    /// The initiation's query parameters (`fields`, `addParents`…), carried into the final response.
    var query: [[String]]
    var createdTime: Int64
    /// Set once the upload has completed: later probes answer with this file.
    var completedFileId: String?

    func param(_ name: String) -> String? { query.first { $0.first == name }.flatMap { $0.count > 1 ? $0[1] : nil } }
}

/// Resumable sessions, persisted so they survive a client's disconnect and an emulator restart.
/// Each session has its own lock, held while a chunk streams in (never the metadata lock).
final class UploadSessions: Sendable {
    final class Session: @unchecked Sendable {  // @unchecked: `record` and `hasher` only with `lock` held
        let lock = NSLock()
        var record: UploadSessionRecord
        /// The checksums of the session's data so far, kept while chunks arrive in order (this
        /// process only), so that the last chunk does not re-read the whole upload. nil: the data
        /// is hashed from disk at completion. INVARIANT: when set, it covers exactly the bytes held.
        var hasher: ContentHasher?
        init(_ record: UploadSessionRecord) { self.record = record }
    }

    static let lifetimeMillis: Int64 = 7 * 24 * 3600 * 1000

    private let directory: URL
    private let sessions: Locked<[String: Session]>

    init(store: DriveStore) throws {
        directory = store.uploadsDirectory
        var loaded: [String: Session] = [:]
        let decoder = JSONDecoder()
        let now = store.nowMillis
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasSuffix(".json") {
            let url = directory.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url), let record = try? decoder.decode(UploadSessionRecord.self, from: data) else {
                continue
            }
            // Google keeps sessions for about a week.
            if now - record.createdTime > UploadSessions.lifetimeMillis {
                unlink(url.path)
                unlink(directory.appendingPathComponent("\(record.uploadId).data").path)
                continue
            }
            loaded[record.uploadId] = Session(record)
        }
        sessions = Locked(loaded)
    }

    func dataPath(_ id: String) -> String { directory.appendingPathComponent("\(id).data").path }

    /// The data file first, then the record: the record's durable write (`AtomicFile` fsyncs the
    /// directory) also makes the data file's entry durable, so an answered session survives a crash.
    func create(_ record: UploadSessionRecord) throws -> Session {
        let session = Session(record)
        guard FileManager.default.createFile(atPath: dataPath(record.uploadId), contents: nil) else {
            throw DriveStore.StoreError.io("cannot create \(dataPath(record.uploadId))")
        }
        do { try save(record) } catch {
            unlink(dataPath(record.uploadId))
            throw error
        }
        sessions.withLock { $0[record.uploadId] = session }
        return session
    }

    func get(_ id: String) -> Session? { sessions.withLock { $0[id] } }

    /// Writes the record atomically and durably (`AtomicFile`), so a session survives a crash.
    func save(_ record: UploadSessionRecord) throws {
        let path = directory.appendingPathComponent("\(record.uploadId).json").path
        do {
            try AtomicFile.write(try JSONEncoder().encode(record), to: path, mode: 0o600)
        } catch let failure as AtomicFile.Failure {
            throw DriveStore.StoreError.io(failure.description)
        }
    }

    func remove(_ id: String) {
        sessions.withLock { $0[id] = nil }
        unlink(directory.appendingPathComponent("\(id).json").path)
        unlink(dataPath(id))
    }

    /// Bytes held for a session.
    func held(_ id: String) -> Int64 {
        var st = stat()
        guard stat(dataPath(id), &st) == 0 else { return 0 }
        return Int64(st.st_size)
    }
}
