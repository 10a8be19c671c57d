import DriveSupport
import Foundation
import Glibc

/// The few system calls the upload queue makes on local files, each retrying EINTR and throwing
/// the system's errno as a `FilesystemError` (so a full disk is ENOSPC, an I/O error EIO).
enum LocalFiles {
    /// `path` and its missing parents, with `mode`; the new entries are fsynced into their parents.
    static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws(FilesystemError) {
        if isDirectory(path) { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path { try makeDirectories(parent, mode: mode) }
        if mkdir(path, mode) != 0, errno != EEXIST { throw FilesystemError(errno: errno) }
        if !parent.isEmpty { try syncDirectory(parent) }
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// fdatasync of a file's content (and size).
    static func syncFile(_ path: String) throws(FilesystemError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FilesystemError(errno: errno) }
        defer { close(fd) }
        while fdatasync(fd) != 0 {
            if errno != EINTR { throw FilesystemError(errno: errno) }
        }
    }

    /// fsync of a directory, so that entries created or renamed in it survive a power cut.
    static func syncDirectory(_ path: String) throws(FilesystemError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FilesystemError(errno: errno) }
        defer { close(fd) }
        while fsync(fd) != 0 {
            if errno != EINTR { throw FilesystemError(errno: errno) }
        }
    }

    /// Renames `from` to `to` (copying, then removing, across filesystems), both directories fsynced.
    static func move(_ from: String, to: String) throws(FilesystemError) {
        if rename(from, to) != 0 {
            guard errno == EXDEV else { throw FilesystemError(errno: errno) }
            do {
                try FileManager.default.copyItem(atPath: from, toPath: to)
            } catch {
                unlink(to)
                throw FilesystemError(errno: EIO)
            }
            try syncFile(to)
            unlink(from)
        }
        try syncDirectory((to as NSString).deletingLastPathComponent)
        try syncDirectory((from as NSString).deletingLastPathComponent)
    }

    static func write(_ text: String, to path: String) throws(FilesystemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FilesystemError(errno: errno) }
        defer { close(fd) }
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { throw FilesystemError(errno: n < 0 ? errno : EIO) }
            done += n
        }
        while fdatasync(fd) != 0 {
            if errno != EINTR { throw FilesystemError(errno: errno) }
        }
    }

    /// Size, mtime (ns) and md5 of a file, read in one streaming pass.
    static func digest(_ path: String) throws(FilesystemError) -> (size: Int64, mtimeNanos: Int64, md5: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FilesystemError(errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FilesystemError(errno: errno) }
        var digest = Digest(.md5)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total: Int64 = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw FilesystemError(errno: errno) }
            if n == 0 { break }
            buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            total += Int64(n)
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return (total, mtime, digest.hexDigest())
    }
}
