import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whole-file replacement that readers and crashes never see half done: a temporary file in the
/// same directory, created with the final mode (a secret is never readable by others, even for
/// an instant), written in full, fsynced, renamed over the target, and the directory fsynced so
/// the rename itself survives a crash. Credentials, upload sessions and the emulator's state all
/// go through here.
public enum AtomicFile {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let operation: String
        public let path: String
        public let errno: Int32
        public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    /// - Parameter durable: false skips both fsyncs, for files that mean nothing after a crash
    ///   (a daemon's status in a runtime directory): readers still never see a partial file.
    public static func write<C: ContiguousBytes>(_ bytes: C, to path: String, mode: mode_t = 0o600, durable: Bool = true) throws {
        try write(to: path, mode: mode, durable: durable) { emit in try bytes.withUnsafeBytes { try emit($0) } }
    }

    /// The same replacement, for a file written in pieces (an index of hundreds of MB is never held
    /// whole in memory): `produce` hands each piece to `emit`, in order. A failed `emit` throws
    /// out of `produce`; an error `produce` throws leaves the old file as it was.
    public static func write(to path: String, mode: mode_t = 0o600, durable: Bool = true,
                             producing produce: (_ emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temp = directory + "/.\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(operation: "create", path: temp, errno: errno) }
        // The umask may have narrowed the mode at creation; set exactly what was asked.
        var failure: Failure? = fchmod(fd, mode) == 0 ? nil : Failure(operation: "chmod", path: temp, errno: errno)
        var produced: Error?
        if failure == nil {
            do {
                try produce { piece in
                    do throws(SystemCallError) { try SystemCall.writeAll(fd, piece) } catch {
                        throw Failure(operation: "write", path: temp, errno: error.errno)
                    }
                }
            } catch let error as Failure {
                failure = error
            } catch {
                produced = error
            }
        }
        if let produced {
            close(fd)
            unlink(temp)
            throw produced
        }
        if failure == nil, durable {
            do throws(SystemCallError) { try SystemCall.retrying("fsync") { fsync(fd) } } catch {
                failure = Failure(operation: "fsync", path: temp, errno: error.errno)
            }
        }
        close(fd)
        if failure == nil, rename(temp, path) != 0 { failure = Failure(operation: "replace", path: path, errno: errno) }
        if let failure {
            unlink(temp)
            throw failure
        }
        guard durable else { return }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { _ = fsync(dir); close(dir) }
    }

    /// Appends `bytes` with one O_APPEND descriptor (created with `mode`): for journals whose lines
    /// never interleave. Without `durable`, no fsync: the last line may be lost in a crash. With it,
    /// the line is on disk (fdatasync) when this returns.
    public static func append<C: ContiguousBytes>(_ bytes: C, to path: String, mode: mode_t = 0o600, durable: Bool = false) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        do throws(SystemCallError) {
            try SystemCall.writeAll(fd, bytes)
            if durable { try SystemCall.retrying("fdatasync") { fdatasync(fd) } }
        } catch {
            throw Failure(operation: error.call == "write" ? "append to" : error.call, path: path, errno: error.errno)
        }
    }
}
