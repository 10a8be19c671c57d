import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Atomic, private file writes for credentials: a temporary file created with the final mode
/// (never readable by others, even for an instant), written, fsynced, renamed over the target,
/// and the directory fsynced so the rename survives a crash.
enum CredentialFileWriter {
    static func write(_ bytes: [UInt8], to url: URL, mode: mode_t = 0o600) throws {
        let path = url.path
        let temp = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot create", path) }
        var ok = fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { ok = false; break }
            offset += n
        }
        if ok { ok = fsync(fd) == 0 }
        let e = errno
        close(fd)
        guard ok else { unlink(temp); throw failure("cannot write", path, e) }
        guard rename(temp, path) == 0 else { let e = errno; unlink(temp); throw failure("cannot replace", path, e) }
        let dir = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { _ = fsync(dir); close(dir) }
    }

    /// Creates the directory (and parents) with `mode` for what it creates; tightens an existing
    /// drivefs directory to `mode`.
    static func ensureDirectory(_ url: URL, mode: mode_t = 0o700) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw OAuthError.configuration("\(url.path) exists and is not a directory") }
            _ = chmod(url.path, mode)
            return
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: Int(mode)])
        } catch {
            throw OAuthError.configuration("cannot create \(url.path): \(error.localizedDescription)")
        }
        _ = chmod(url.path, mode)
    }

    private static func failure(_ what: String, _ path: String, _ e: Int32 = errno) -> OAuthError {
        .configuration("\(what) \(path): \(String(cString: strerror(e)))")
    }
}
