import DriveSupport
import Foundation

/// A resumable upload in progress, small enough to persist as JSON so that a later process can
/// finish it (`DriveAPI.resumeUpload(from:)`). Sessions live about a week on Google's side.
///
/// The session URI is a bearer capability for this one upload: the file is written with mode 0600.
public struct ResumableUploadSession: Codable, Sendable, Equatable {
    /// Drive's `Location` from the initiation; empty until initiated.
    public var sessionURI: String
    /// The file being sent (uploads from memory cannot be persisted).
    public var sourcePath: String
    public var size: Int64
    public var md5: String
    /// The source's mtime (ns) when the upload began; a resume refuses a changed source.
    public var sourceModifiedNanos: Int64?
    /// Bytes the server confirmed (from its last `Range`).
    public var confirmedBytes: Int64
    public var chunkSize: Int64
    /// The file ID: the pooled ID for a create, the target for an update.
    public var fileId: String
    public var isUpdate: Bool
    /// The JSON metadata sent at initiation (sent again if the session expired and must restart).
    public var metadataJSON: String
    public var contentType: String
    /// The counter name (`files.create.upload` / `files.update.upload`).
    public var method: String

    public init(sessionURI: String, sourcePath: String, size: Int64, md5: String, sourceModifiedNanos: Int64?,
                confirmedBytes: Int64, chunkSize: Int64, fileId: String, isUpdate: Bool, metadataJSON: String,
                contentType: String, method: String) {
        self.sessionURI = sessionURI
        self.sourcePath = sourcePath
        self.size = size
        self.md5 = md5
        self.sourceModifiedNanos = sourceModifiedNanos
        self.confirmedBytes = confirmedBytes
        self.chunkSize = chunkSize
        self.fileId = fileId
        self.isUpdate = isUpdate
        self.metadataJSON = metadataJSON
        self.contentType = contentType
        self.method = method
    }

    /// Writes the session atomically (temporary file, fsync, rename), mode 0600.
    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(self)
        do {
            try AtomicFile.write(data, to: path, mode: 0o600)
        } catch {
            throw Self.error("cannot save the upload session: \(error)")
        }
    }

    public static func load(from path: String) throws -> ResumableUploadSession {
        guard let data = FileManager.default.contents(atPath: path) else { throw error("cannot read \(path)") }
        do {
            return try JSONDecoder().decode(ResumableUploadSession.self, from: data)
        } catch {
            throw Self.error("\(path) is not an upload session: \(error)")
        }
    }

    static func error(_ message: String) -> DriveError {
        .invalidArgument(GoogleErrorInfo(status: 0, reason: "uploadSession", message: message))
    }
}
