import DriveSupport
import Foundation

/// A create whose content goes up while it is still being written: a resumable session started
/// before the size is known, chunks sent as `Content-Range: bytes a-b/*` as the writer gets ahead,
/// the last one with the total (drive-behaviours §2.8; Google's "upload in chunks" with an unknown
/// size). What a 1 GiB `cp` onto the mount needs to reach Drive at the link's speed: without it,
/// the upload starts only once the file is closed.
///
/// Contracts:
/// - The file exists on Drive only after `finish` (a session that is abandoned creates nothing);
///   it is created under the caller's `id`, so an upload that falls back to `createFile` with the
///   same ID can never make a second file.
/// - The bytes are read from `path` at their offsets as they are sent, and hashed as they are read
///   (no pass of its own); `finish` checks Drive's `md5Checksum` against that hash
///   (`DriveError.checksumMismatch` otherwise). The caller guarantees that bytes below the
///   `claimed` end of a chunk it asked for never change afterwards (else it abandons the stream).
/// - Every chunk but the last is a multiple of 256 KiB. Each is retried by the executor's policy; a
///   retry first asks the server how much it holds (`bytes */*`) and continues from there. A
///   failure that means "start a new session" (`DriveAPI.restartsSession`) is thrown: the caller
///   gives up on the stream and uploads the whole file the ordinary way.
/// - One thread at a time (the caller hands it from thread to thread, never sharing it).
public protocol StreamingCreate: AnyObject, Sendable {
    var fileID: String { get }
    /// Bytes the server confirmed holding.
    var confirmedBytes: Int64 { get }
    /// How many bytes the next chunk takes when `available` bytes are written (0: wait for more).
    /// Always leaves at least one byte for `finish`.
    func chunkLength(available: Int64) -> Int64
    /// Sends `[confirmedBytes, confirmedBytes + length)` of `path` (`length` from `chunkLength`).
    func send(path: String, length: Int64) throws
    /// Sends the rest of `path`, `size` bytes in all, ending the upload: the new file, its md5 checked.
    func finish(path: String, size: Int64) throws -> DriveFile
}

extension DriveAPI {
    /// Starts a streaming create under `id` (see `StreamingCreate`): one request, the session's initiation.
    public func beginStreamingCreate(name: String, parent: String, mimeType: String?, id: String,
                                     appProperties: [String: String]?) throws -> any StreamingCreate {
        guard Self.acceptsGeneratedID(mimeType: mimeType) else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "idNotSupported",
                                                             message: "Drive does not accept a pre-generated ID for \(mimeType ?? "") files"))
        }
        let metadata = FileMetadataBody(id: id, name: name, parents: [parent], mimeType: mimeType, appProperties: appProperties)
        let method = "files.create.upload"
        let request = TransportRequest(
            method: "POST", url: uploadURL("files", [("uploadType", "resumable")] + scope.fileQuery + [("fields", DriveFile.fieldMask)]),
            headers: Self.jsonHeaders + [("X-Upload-Content-Type", mimeType ?? "application/octet-stream")],
            body: .bytes(metadata.json))
        let response = try executor.execute(method, request)
        guard let location = response.headers["location"], !location.isEmpty else {
            throw DriveError.malformedResponse("resumable upload initiation without a Location")
        }
        return DriveStream(api: self, fileID: id, sessionURI: location, method: method)
    }
}

/// `StreamingCreate` over the REST API.
/// @unchecked Sendable: one writer at a time by contract (`StreamingCreate`); its counters change only on
/// that thread
final class DriveStream: StreamingCreate, @unchecked Sendable {
    // @unchecked: mutable state is used by one thread at a time (the protocol's contract), and
    // the hash behind its own lock (curl's read callback runs on the sending thread too).
    let api: DriveAPI
    let fileID: String
    let sessionURI: String
    let method: String
    private(set) var confirmedBytes: Int64 = 0
    private var chunkSize: Int64
    private let hash = OffsetMD5()

    init(api: DriveAPI, fileID: String, sessionURI: String, method: String) {
        self.api = api
        self.fileID = fileID
        self.sessionURI = sessionURI
        self.method = method
        chunkSize = api.chunkSize
    }

    func chunkLength(available: Int64) -> Int64 {
        available - confirmedBytes > chunkSize ? chunkSize : 0
    }

    func send(path: String, length: Int64) throws {
        let end = confirmedBytes + length
        precondition(length > 0 && length % DriveAPI.chunkGranularity == 0, "a streamed chunk must be a multiple of 256 KiB")
        if case .done = try put(path: path, end: end, total: nil) {
            throw DriveError.malformedResponse("the upload server ended a streamed upload before its last chunk")
        }
        if confirmedBytes == end, chunkSize < api.maxChunkSize {
            chunkSize = min(api.maxChunkSize, chunkSize * 2)
        }
    }

    func finish(path: String, size: Int64) throws -> DriveFile {
        guard size >= confirmedBytes else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "uploadSourceChanged",
                                                             message: "\(path) is shorter than what was already sent"))
        }
        while true {
            // The rest in chunks of at most the largest size, the last one with the total.
            let left = size - confirmedBytes
            let last = left <= chunkSize
            let end = last ? size : confirmedBytes + chunkSize
            switch try put(path: path, end: end, total: last ? size : nil) {
            case .done(let file):
                guard let md5 = hash.md5(ifHashed: size) else {
                    throw DriveError.checksumMismatch(expected: "(the content was not read whole)", actual: file.md5Checksum ?? "(none)")
                }
                return try api.verified(file, md5: md5)
            case .progress, .restart:
                if !last, confirmedBytes == end, chunkSize < api.maxChunkSize { chunkSize = min(api.maxChunkSize, chunkSize * 2) }
            }
        }
    }

    /// Sends `[confirmedBytes, end)` (`total` nil: more follows), retrying as the executor's policy
    /// says; each retry asks the server what it holds first.
    private func put(path: String, end: Int64, total: Int64?) throws -> DriveAPI.ChunkOutcome {
        let totalText = total.map(String.init) ?? "*"
        return try api.executor.retrying(method) { attempt in
            if attempt > 0 {
                let probe = TransportRequest(method: "PUT", url: sessionURI, headers: [("Content-Range", "bytes */\(totalText)")])
                if case .done(let file) = try outcome(try api.executor.send(method, probe, accept: [308]), sent: end) { return .done(file) }
            }
            let start = confirmedBytes
            guard end > start || total != nil else { return .progress }
            let range = end > start ? "bytes \(start)-\(end - 1)/\(totalText)" : "bytes */\(totalText)"
            var request = TransportRequest(method: "PUT", url: sessionURI, headers: [("Content-Range", range)],
                                           body: end > start ? .file(path: path, offset: start, length: end - start) : .none)
            hash.startAt(start)
            request.bodyObserver = hash
            return try outcome(try api.executor.send(method, request, accept: [308]), sent: end)
        }
    }

    private func outcome(_ response: TransportResponse, sent end: Int64) throws -> DriveAPI.ChunkOutcome {
        if response.status == 308 {
            let held = DriveAPI.confirmedBytes(fromRange: response.headers["range"])
            guard held <= end else {
                throw DriveError.malformedResponse("upload server claims more bytes than were sent")
            }
            confirmedBytes = held
            return .progress
        }
        return .done(try api.decode(DriveFile.self, response, method))
    }
}

/// An md5 over a file's bytes taken in order from request bodies that may repeat what an earlier
/// attempt read: each request says where its body starts (`startAt`); bytes already hashed are
/// skipped, and a body that starts past the hashed end (a gap) stops the hash for good.
/// @unchecked Sendable: its digest and offsets only with `lock` held
final class OffsetMD5: RequestBodyObserver, @unchecked Sendable {
    // @unchecked: every mutable field is behind `lock`.
    private let lock = NSLock()
    private var digest: Digest? = Digest(.md5)
    private var hashed: Int64 = 0
    private var position: Int64 = 0
    private var requestStart: Int64 = 0

    var hashedBytes: Int64 {
        lock.lock(); defer { lock.unlock() }
        return hashed
    }

    func startAt(_ offset: Int64) {
        lock.lock(); defer { lock.unlock() }
        requestStart = offset
        if offset > hashed { _ = digest.take() }
    }

    func begin() {
        lock.lock(); defer { lock.unlock() }
        position = requestStart
    }

    func read(_ bytes: UnsafeRawBufferPointer) {
        lock.lock(); defer { lock.unlock() }
        let end = position + Int64(bytes.count)
        defer { position = end }
        guard end > hashed, position <= hashed else { return }
        let skip = Int(hashed - position)
        digest?.update(UnsafeRawBufferPointer(rebasing: bytes[skip...]))
        hashed = end
    }

    /// The hex md5 when exactly `size` bytes were hashed.
    func md5(ifHashed size: Int64) -> String? {
        lock.lock(); defer { lock.unlock() }
        guard hashed == size, let d = digest.take() else { return nil }
        return d.hexDigest()
    }
}
