import DriveSupport
import Foundation

/// What Drive reports about a piece of content.
struct ContentSummary: Sendable {
    var size: Int64
    var md5: String
    var sha1: String
    var sha256: String
}

/// Hashes bytes as they stream past (md5, sha1, sha256 at once).
final class ContentHasher {
    private var md5: Digest? = Digest(.md5)
    private var sha1: Digest? = Digest(.sha1)
    private var sha256: Digest? = Digest(.sha256)
    private(set) var size: Int64 = 0

    func update(_ bytes: UnsafeRawBufferPointer) {
        md5!.update(bytes)
        sha1!.update(bytes)
        sha256!.update(bytes)
        size += Int64(bytes.count)
    }

    func finish() -> ContentSummary {
        ContentSummary(size: size, md5: md5.take()!.hexDigest(), sha1: sha1.take()!.hexDigest(),
                       sha256: sha256.take()!.hexDigest())
    }

    /// Hashes a file on disk in 1 MiB reads.
    static func summarize(path: String) throws -> ContentSummary {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DriveStore.StoreError.io("open \(path): errno \(errno)") }
        defer { close(fd) }
        let hasher = ContentHasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n: Int
            do throws(SystemCallError) { n = try SystemCall.read(fd, into: buffer) } catch {
                throw DriveStore.StoreError.io("read \(path): errno \(error.errno)")
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        return hasher.finish()
    }
}

/// Writes content to a file, hashing it on the way. Never holds more than one buffer in memory.
final class ContentWriter {
    let path: String
    private var fd: Int32
    /// Absent when appending: the checksums of a resumable upload cover bytes from earlier requests,
    /// so they are computed from the whole file when the last byte has arrived.
    private let hasher: ContentHasher?
    private let ownsHasher: Bool
    private(set) var size: Int64 = 0

    /// Opens `path` for writing; `append` keeps what is there (resumable sessions, no hashing then).
    init(path: String, append: Bool = false) throws {
        self.path = path
        hasher = append ? nil : ContentHasher()
        ownsHasher = true
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o644)
        guard fd >= 0 else { throw DriveStore.StoreError.io("open \(path): errno \(errno)") }
    }

    /// Appends to `path`, feeding `hasher` (which must already cover the bytes there).
    init(appendingTo path: String, hasher: ContentHasher?) throws {
        self.path = path
        self.hasher = hasher
        ownsHasher = false
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND, 0o644)
        guard fd >= 0 else { throw DriveStore.StoreError.io("open \(path): errno \(errno)") }
    }

    deinit { if fd >= 0 { Foundation.close(fd) } }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        hasher?.update(bytes)
        size += Int64(bytes.count)
        do throws(SystemCallError) { try SystemCall.writeAll(fd, bytes) } catch {
            throw DriveStore.StoreError.io("write \(path): errno \(error.errno)")
        }
    }

    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    /// Copies a request body (up to `limit` bytes) into the file. Bytes that arrived before a
    /// truncation are written before the error propagates.
    @discardableResult
    func copy(from body: HTTPRequestBody, limit: Int64 = .max) throws -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < limit {
            let want = Int(min(Int64(buffer.count), limit - copied))
            let n = try body.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            if n == 0 { break }
            try write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            copied += Int64(n)
        }
        return copied
    }

    /// Makes the bytes written so far durable (fdatasync): before a resumable chunk is acknowledged.
    func sync() throws {
        guard fd >= 0 else { return }
        do throws(SystemCallError) { try SystemCall.retrying("fdatasync") { fdatasync(fd) } } catch {
            throw DriveStore.StoreError.io("fdatasync \(path): \(error.reason) (errno \(error.errno))")
        }
    }

    private var summary: ContentSummary?

    /// Closes the file (idempotent); the checksums are empty strings for an appending writer.
    @discardableResult
    func finish() -> ContentSummary {
        if let summary { return summary }
        if fd >= 0 { Foundation.close(fd); fd = -1 }
        // An appending writer's hasher belongs to its caller, who finishes it.
        let result = (ownsHasher ? hasher?.finish() : nil) ?? ContentSummary(size: size, md5: "", sha1: "", sha256: "")
        summary = result
        return result
    }

    func abandon() {
        if fd >= 0 { Foundation.close(fd); fd = -1 }
        unlink(path)
    }
}
