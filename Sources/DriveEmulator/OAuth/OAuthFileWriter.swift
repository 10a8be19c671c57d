import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file atomically with a given mode: a temporary file in the same directory, written,
/// fsynced and renamed over the target, so readers see the old file or the new one, never half.
/// The mode is set at creation, so a secret is never readable by others even for an instant.
enum OAuthFileWriter {
    enum Failure: Error, CustomStringConvertible {
        case io(path: String, errno: Int32)
        var description: String {
            switch self {
            case .io(let path, let e): return "cannot write \(path): \(String(cString: strerror(e)))"
            }
        }
    }

    static func write(_ bytes: [UInt8], to url: URL, mode: mode_t) throws {
        let path = url.path
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure.io(path: path, errno: errno) }
        var ok = fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { ok = false; break }
            offset += n
        }
        let savedErrno = errno
        if ok { ok = fsync(fd) == 0 }
        close(fd)
        guard ok, rename(temp, path) == 0 else {
            let e = ok ? errno : savedErrno
            unlink(temp)
            throw Failure.io(path: path, errno: e)
        }
    }

    /// Appends with one write(2) on an O_APPEND descriptor (created with `mode`), without fsync.
    static func append(_ bytes: [UInt8], to url: URL, mode: mode_t) throws {
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure.io(path: url.path, errno: errno) }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw Failure.io(path: url.path, errno: errno) }
    }
}
