import CSystem
import DriveSupport
import Foundation
import Glibc

/// The few system calls the upload queue makes on local files, through `SystemCall` (EINTR
/// retried), throwing the system's errno as a `FilesystemError` (so a full disk is ENOSPC, an I/O
/// error EIO).
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
        let fd = try call { try SystemCall.open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        try call { try SystemCall.retrying("fdatasync") { fdatasync(fd) } }
    }

    /// fsync of a directory, so that entries created or renamed in it survive a power cut.
    static func syncDirectory(_ path: String) throws(FilesystemError) {
        let fd = try call { try SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try call { try SystemCall.retrying("fsync") { fsync(fd) } }
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
        let fd = try call { try SystemCall.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600) }
        defer { close(fd) }
        try call {
            try SystemCall.writeAll(fd, Array(text.utf8))
            try SystemCall.retrying("fdatasync") { fdatasync(fd) }
        }
    }

    /// Runs `body` (`SystemCall`s), throwing a failed call's errno unchanged (the queue decides
    /// what it means).
    static func call<T>(_ body: () throws -> T) throws(FilesystemError) -> T {
        do { return try body() } catch { throw FilesystemError(errno: (error as? SystemCallError)?.errno ?? EIO) }
    }

    /// Size, mtime (ns) and md5 of a file, read in one streaming pass. Holes of a sparse file
    /// (`SEEK_DATA` / `SEEK_HOLE`) are not read from disk: their zeros come from a buffer of zeros.
    /// md5 still has to take every zero (about a second of CPU a GiB: minutes for a sparse
    /// terabyte), so `progress` is told the bytes hashed after each MiB, and answers false to stop
    /// (the digest then throws EINTR).
    static func digest(_ path: String, progress: (Int64) -> Bool = { _ in true })
        throws(FilesystemError) -> (size: Int64, mtimeNanos: Int64, md5: String) {
        let fd = try call { try SystemCall.open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        let info = try call { try SystemCall.status(fd) }
        let size = Int64(info.st_size)
        let chunk = Int64(zeros.count)
        var digest = Digest(.md5)
        var buffer = [UInt8](repeating: 0, count: zeros.count)
        var at: Int64 = 0
        scan: while at < size {
            // A hole up to the next data (ENXIO: none before the end; a filesystem without
            // SEEK_DATA answers EINVAL, and everything is read).
            var data = Int64(csystem_seek_data(fd, off_t(at)))
            if data < 0 { data = errno == ENXIO ? size : at }
            while at < min(data, size) {
                let n = Int(min(chunk, min(data, size) - at))
                zeros.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                at += Int64(n)
                guard progress(at) else { throw FilesystemError(errno: EINTR) }
            }
            guard at < size else { break }
            var hole = Int64(csystem_seek_hole(fd, off_t(at)))
            if hole < 0 || hole <= at { hole = size }
            while at < min(hole, size) {
                let want = Int(min(chunk, min(hole, size) - at))
                let n = try call {
                    try buffer.withUnsafeMutableBytes { try SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: at) }
                }
                // Shorter than it was (the caller compares the mtime and size it gets).
                if n == 0 { break scan }
                buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                at += Int64(n)
                guard progress(at) else { throw FilesystemError(errno: EINTR) }
            }
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return (at, mtime, digest.hexDigest())
    }

    /// What a hole is made of, a MiB at a time.
    private static let zeros = [UInt8](repeating: 0, count: 1 << 20)
}
