import DriveSupport
import Foundation

/// What an upload sends: bytes in memory, or a file read as it is sent (never loaded whole: a
/// multipart body streams the file between its framing, `TransportRequest.Body.parts`).
public enum UploadSource: Sendable {
    case bytes([UInt8])
    case file(path: String)
    /// A file whose md5 the caller measured already (it must not change before it is sent): a
    /// resumable upload then makes no hashing pass of its own before sending. Drive's md5 is still
    /// checked against it at the end; a multipart upload hashes what it sends, as for `.file`.
    case hashedFile(path: String, md5: String)

    /// The file read, for `.file` and `.hashedFile`.
    public var filePath: String? {
        switch self {
        case .bytes: return nil
        case .file(let path), .hashedFile(let path, _): return path
        }
    }
}

/// A source with its size and md5, measured before sending. The md5 is computed by one streaming
/// pass (1 MiB at a time); the file must not change while it is uploaded (a persisted session
/// checks size and mtime before resuming).
struct PreparedSource {
    let source: UploadSource
    let size: Int64
    let md5: String
    let modifiedNanos: Int64?

    init(_ source: UploadSource) throws {
        self.source = source
        switch source {
        case .bytes(let bytes):
            size = Int64(bytes.count)
            md5 = Digest.hex(.md5, of: bytes)
            modifiedNanos = nil
        case .file(let path):
            let (size, mtime) = try Self.statFile(path)
            self.size = size
            self.modifiedNanos = mtime
            self.md5 = try Self.md5(path: path, size: size)
        case .hashedFile(let path, let md5):
            let (size, mtime) = try Self.statFile(path)
            self.size = size
            self.modifiedNanos = mtime
            self.md5 = md5.lowercased()
        }
    }

    static func statFile(_ path: String) throws -> (size: Int64, mtimeNanos: Int64) {
        var info = Foundation.stat()
        guard fstatat(AT_FDCWD, path, &info, 0) == 0 else { throw DriveError.localFile(path: path, SystemCallError("stat", errno: errno)) }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    static func md5(path: String, size: Int64) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DriveError.localFile(path: path, SystemCallError("open", errno: errno)) }
        defer { close(fd) }
        var digest = Digest(.md5)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total: Int64 = 0
        while true {
            let n: Int
            do { n = try buffer.withUnsafeMutableBytes { try SystemCall.read(fd, into: $0) } } catch {
                throw DriveError.localFile(path: path, error as? SystemCallError ?? SystemCallError("read", errno: EIO))
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            total += Int64(n)
        }
        guard total == size else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "uploadSourceChanged", message: "\(path) changed while it was read"))
        }
        return digest.hexDigest()
    }


    /// Bytes `[offset, offset + length)` as a request body (streamed from disk for files).
    func body(offset: Int64, length: Int64) -> TransportRequest.Body {
        switch source {
        case .bytes(let bytes): return .bytes(Array(bytes[Int(offset)..<Int(offset + length)]))
        case .file(let path), .hashedFile(let path, _): return .file(path: path, offset: offset, length: length)
        }
    }
}

/// The md5 of a multipart upload's content, computed as the transport reads the file to send it
/// (no pass of its own, no copy in memory): the last attempt's, once that attempt read all `size`
/// bytes; nil otherwise (a transport that did not read the body, an attempt cut short), and the
/// caller then hashes the file itself (`md5(orReadFrom:)`).
/// @unchecked Sendable: its digest and counts only with `lock` held
final class StreamedMD5: RequestBodyObserver, @unchecked Sendable {
    // @unchecked: every mutable field is behind `lock`.
    private let lock = NSLock()
    private var digest: Digest?
    private var count: Int64 = 0
    private var complete: String?
    let size: Int64

    init(size: Int64) { self.size = size }

    func begin() {
        lock.lock(); defer { lock.unlock() }
        digest = Digest(.md5)
        count = 0
        complete = nil
        if size == 0, let d = digest.take() { complete = d.hexDigest() }
    }

    func read(_ bytes: UnsafeRawBufferPointer) {
        lock.lock(); defer { lock.unlock() }
        guard count + Int64(bytes.count) <= size else {
            _ = digest.take()
            return
        }
        digest?.update(bytes)
        count += Int64(bytes.count)
        if count == size, let d = digest.take() { complete = d.hexDigest() }
    }

    /// The md5 of what the last attempt sent, when it read it all.
    var md5: String? {
        lock.lock(); defer { lock.unlock() }
        return complete
    }

    /// The streamed md5, or one pass over `path` when there is none.
    func md5(orReadFrom path: String) throws -> String {
        if let md5 { return md5 }
        return try PreparedSource.md5(path: path, size: size)
    }
}
