import Foundation
import Glibc

/// A system call that failed: the call's name and the errno it left. Each layer turns it into its
/// own error where it reports one (the filesystem core: `FilesystemError(local:)`, which makes a
/// full disk or quota ENOSPC).
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call, as its man page names it (`pwrite`, `fdatasync`, ...).
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The system's words for `errno` (`strerror`).
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String { "\(call): \(reason) (errno \(errno))" }
}

/// The one wrapper for the system calls drivefs makes on descriptors (files, pipes, sockets).
///
/// Contracts:
/// - EINTR is retried here and nowhere else: a caller never sees it from these functions (a
///   cancellation that should stop a loop is the caller's check between calls).
/// - A failure throws `SystemCallError` with the call's name and errno, read at once after the
///   call (nothing in between may overwrite it).
/// - `writeAll` writes every byte or throws: a short write continues where it stopped, and a write
///   that makes no progress (returns 0) throws EIO rather than spinning.
/// - `readFully` fills the buffer or stops at end of file: it returns how many bytes it read, so
///   the caller decides whether a short file is an error.
public enum SystemCall {
    /// Calls `body` again while it fails with EINTR. `body` returns what the system call returns
    /// (negative on failure, with `errno` set); a failure other than EINTR throws.
    @discardableResult
    public static func retrying<Result: BinaryInteger>(_ call: String, _ body: () -> Result) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Glibc.errno
            if code != EINTR { throw SystemCallError(call, errno: code) }
        }
    }

    /// `open(2)`: the new descriptor (`mode` counts only with `O_CREAT`).
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemCallError) -> Int32 {
        try retrying("open") { Glibc.open(path, flags, mode) }
    }

    /// `ftruncate(2)`: the file's size becomes `length` (bytes past it go, bytes added read as zeros).
    public static func truncate(_ fd: Int32, to length: Int64) throws(SystemCallError) {
        try retrying("ftruncate") { Glibc.ftruncate(fd, off_t(length)) }
    }

    /// `fstat(2)` of the open file.
    public static func status(_ fd: Int32) throws(SystemCallError) -> stat {
        var info = stat()
        try retrying("fstat") { Glibc.fstat(fd, &info) }
        return info
    }

    /// `fstat(2)`'s size of the open file.
    public static func size(_ fd: Int32) throws(SystemCallError) -> Int64 {
        var info = stat()
        try retrying("fstat") { Glibc.fstat(fd, &info) }
        return Int64(info.st_size)
    }

    /// `fdatasync(2)`: the file's data (and the metadata needed to read it back) on disk.
    public static func fdatasync(_ fd: Int32) throws(SystemCallError) {
        try retrying("fdatasync") { Glibc.fdatasync(fd) }
    }

    /// `fsync(2)`: the file's data and metadata on disk (of a directory: its entries).
    public static func fsync(_ fd: Int32) throws(SystemCallError) {
        try retrying("fsync") { Glibc.fsync(fd) }
    }

    /// `flock(2)`: `operation` is `LOCK_EX`, `LOCK_SH` or `LOCK_UN`, with `LOCK_NB` not to wait
    /// (a lock held elsewhere then throws `EWOULDBLOCK`).
    public static func flock(_ fd: Int32, _ operation: Int32) throws(SystemCallError) {
        try retrying("flock") { callFlock(fd, operation) }
    }

    /// One `read(2)` into `buffer`: how many bytes arrived, 0 at end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        guard buffer.count > 0 else { return 0 }
        return try retrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// One `pread(2)` into `buffer` at `offset`: how many bytes arrived, 0 at end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemCallError) -> Int {
        guard buffer.count > 0 else { return 0 }
        return try retrying("pread") { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads until `buffer` is full or the file ends (at the descriptor's position, or from
    /// `offset` with `pread`); returns how many bytes it read.
    public static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil) throws(SystemCallError) -> Int {
        try readFully(offset == nil ? "read" : "pread", count: buffer.count) { done in
            let target = buffer.baseAddress! + done
            if let offset { return Glibc.pread(fd, target, buffer.count - done, off_t(offset + Int64(done))) }
            return Glibc.read(fd, target, buffer.count - done)
        }
    }

    /// Writes all of `buffer` at the descriptor's position (`write(2)` until done).
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemCallError) {
        try writeAll("write", count: buffer.count) { done in Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done) }
    }

    /// Writes all of `buffer` at `offset` (`pwrite(2)` until done; the position does not move).
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(SystemCallError) {
        try writeAll("pwrite", count: buffer.count) { done in
            Glibc.pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
        }
    }

    /// Writes all of `bytes` at the descriptor's position.
    public static func writeAll(_ fd: Int32, _ bytes: some ContiguousBytes) throws(SystemCallError) {
        let failure = bytes.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) { try writeAll(fd, raw); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Writes all of `bytes` at `offset`.
    public static func writeAll(_ fd: Int32, _ bytes: some ContiguousBytes, at offset: Int64) throws(SystemCallError) {
        let failure = bytes.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) { try writeAll(fd, raw, at: offset); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Sends all of `bytes` on a socket (`send(2)` until done, `MSG_NOSIGNAL`: a peer that went
    /// away is EPIPE, never a SIGPIPE).
    public static func sendAll(_ fd: Int32, _ bytes: some ContiguousBytes) throws(SystemCallError) {
        let failure = bytes.withUnsafeBytes { raw -> SystemCallError? in
            do throws(SystemCallError) {
                try writeAll("send", count: raw.count) { done in Glibc.send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL)) }
                return nil
            } catch { return error }
        }
        if let failure { throw failure }
    }

    /// The loop behind every `writeAll`: `write(done)` writes from byte `done` on and returns what
    /// the system call returned. (The seam the tests drive with short writes and EINTR.)
    static func writeAll(_ call: String, count: Int, _ write: (_ done: Int) -> Int) throws(SystemCallError) {
        var done = 0
        while done < count {
            let n = try retrying(call) { write(done) }
            if n == 0 { throw SystemCallError(call, errno: EIO) }
            done += n
        }
    }

    /// The loop behind `readFully`: `read(done)` reads into byte `done` on; 0 ends the file.
    static func readFully(_ call: String, count: Int, _ read: (_ done: Int) -> Int) throws(SystemCallError) -> Int {
        var done = 0
        while done < count {
            let n = try retrying(call) { read(done) }
            if n == 0 { break }
            done += n
        }
        return done
    }
}

/// flock(2) itself: `Glibc.flock` names the struct of the same name, and inside `SystemCall` the
/// bare name is `SystemCall.flock`.
private func callFlock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }
