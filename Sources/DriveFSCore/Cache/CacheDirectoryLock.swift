import DriveSupport
import Foundation
import Glibc

/// An exclusive `flock` on `<cache dir>/lock`, held while a filesystem uses the directory: the
/// block cache index and the metadata index are written by one process only. The descriptor is inherited by the
/// daemon when `drivefs mount` forks, and the lock goes with the last process that holds it (a
/// killed daemon releases it: nothing stale to clean up).
public final class CacheDirectoryLock: Sendable {
    public let path: String
    private let descriptor: Locked<Int32>

    public init(directory: URL) throws(FilesystemError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            Log.shared.error("cache", "cannot create the cache directory \(directory.path): \(error)")
            throw FilesystemError(errno: EACCES)
        }
        path = directory.appendingPathComponent("lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            Log.shared.error("cache", "cannot open \(path): \(String(cString: strerror(errno)))")
            throw FilesystemError(errno: EACCES)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                Log.shared.error("cache", "the cache directory \(directory.path) is in use by another drivefs mount")
                throw FilesystemError(errno: EBUSY)
            }
            throw FilesystemError(errno: code)
        }
        descriptor = Locked(fd)
    }

    /// Gives the directory up (at unmount); idempotent.
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }
}
