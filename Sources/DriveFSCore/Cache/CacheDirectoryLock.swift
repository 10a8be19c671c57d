import DriveSupport
import Foundation
import Glibc

/// An exclusive `flock` on `<cache dir>/lock`, held while a filesystem uses the directory: the
/// block cache index and the metadata index are written by one process only. The descriptor is inherited by the
/// daemon when `drivefs mount` forks, and the lock goes with the last process that holds it (a
/// killed daemon releases it: nothing stale to clean up).
///
/// The lock file also says who holds it (`recordHolder`: the daemon's pid and mount point, written
/// once the mount is live; emptied when a new holder takes it), so that a new mount can tell a
/// daemon still serving a mount (refused) from one whose mount is gone and that only finishes
/// (saving its index, draining uploads), which it waits for (`waitUntilFree`).
public final class CacheDirectoryLock: Sendable {
    public let path: String
    private let descriptor: Locked<Int32>

    public init(directory: URL) throws(FilesystemError) {
        try Self.createDirectory(directory)
        path = directory.appendingPathComponent("lock").path
        let fd: Int32
        do throws(SystemCallError) {
            fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        } catch {
            Log.shared.error("cache", "cannot open \(path): \(error.reason)")
            throw FilesystemError(errno: EACCES)
        }
        do throws(SystemCallError) {
            try SystemCall.flock(fd, LOCK_EX | LOCK_NB)
        } catch {
            close(fd)
            if error.errno == EWOULDBLOCK {
                Log.shared.error("cache", "the cache directory \(directory.path) is in use by another drivefs mount")
                throw FilesystemError(errno: EBUSY)
            }
            throw FilesystemError(errno: error.errno)
        }
        _ = try? SystemCall.truncate(fd, to: 0)
        descriptor = Locked(fd)
    }

    /// Who holds a cache directory: the daemon's pid and the mount point it serves (or served).
    public struct Holder: Sendable, Equatable {
        public var pid: Int32
        public var mountpoint: String
        public init(pid: Int32, mountpoint: String) { self.pid = pid; self.mountpoint = mountpoint }
    }

    /// The cache directory and its missing parents, private to the user (0700); EACCES, logged,
    /// when it cannot be made.
    static func createDirectory(_ directory: URL) throws(FilesystemError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            Log.shared.error("cache", "cannot create the cache directory \(directory.path): \(error)")
            throw FilesystemError(errno: EACCES)
        }
    }

    private static let recordTag = "drivefs cache holder 1\n"

    /// Records the holder in the lock file (by the daemon, once its mount is live). Best effort:
    /// without a record, a waiting mount only waits longer.
    public func recordHolder(pid: Int32, mountpoint: String) {
        let bytes = Array((Self.recordTag + "\(pid)\n" + mountpoint).utf8)
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            _ = try? SystemCall.truncate(fd, to: 0)
            try? SystemCall.writeAll(fd, bytes, at: 0)
        }
    }

    /// The holder recorded in `directory`'s lock file; nil when none is (no holder yet, or one
    /// that has not served a mount).
    public static func holder(of directory: URL) -> Holder? {
        let path = directory.appendingPathComponent("lock").path
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
              text.hasPrefix(recordTag) else { return nil }
        let rest = text.dropFirst(recordTag.count)
        guard let newline = rest.firstIndex(of: "\n"), let pid = Int32(rest[..<newline]) else { return nil }
        let mountpoint = String(rest[rest.index(after: newline)...])
        return mountpoint.isEmpty ? nil : Holder(pid: pid, mountpoint: mountpoint)
    }

    /// Why `waitUntilFree` gave up.
    public enum Busy: Error, Equatable, CustomStringConvertible {
        /// The holder still serves a live mount.
        case serving(Holder)
        /// The holder did not let go within the policy's timeout.
        case stillFinishing(Holder?)

        public var description: String {
            switch self {
            case .serving(let h): return "the cache directory is in use by the drivefs mount at \(h.mountpoint) (pid \(h.pid))"
            case .stillFinishing(let h?): return "the drivefs daemon (pid \(h.pid)) that served \(h.mountpoint) still uses the cache directory"
            case .stillFinishing(nil): return "the cache directory is in use by another drivefs process"
            }
        }
    }

    public enum WaitEvent: Sendable, Equatable {
        /// The directory is held by a daemon that serves no mount: waiting starts.
        case waiting(Holder?)
        /// Still waiting, `seconds` after the start (about every `reportInterval`).
        case stillWaiting(Holder?, seconds: Double)
    }

    public struct WaitPolicy: Sendable {
        public var timeout: Double
        /// How often the lock is tried again (a waiting mount has nothing else to do).
        public var pollInterval: Double
        public var reportInterval: Double
        /// Whether `path` is a live FUSE mount (default: `/proc/self/mountinfo` says so).
        public var isMounted: @Sendable (String) -> Bool
        public var report: @Sendable (WaitEvent) -> Void

        public init(timeout: Double, pollInterval: Double = 0.1, reportInterval: Double = 5,
                    isMounted: @escaping @Sendable (String) -> Bool = CacheDirectoryLock.isFuseMount,
                    report: @escaping @Sendable (WaitEvent) -> Void) {
            self.timeout = timeout
            self.pollInterval = pollInterval
            self.reportInterval = reportInterval
            self.isMounted = isMounted
            self.report = report
        }
    }

    /// Returns once `directory` is free (nobody holds its lock), waiting up to `policy.timeout`
    /// while its holder serves no live mount: a daemon whose mount was just unmounted (`fusermount
    /// -u`) finishes its work (the index saved, uploads drained) before it exits, and the new
    /// mount waits for that instead of failing. A holder whose recorded mount point is still a
    /// FUSE mount is refused at once (`Busy.serving`). The lock is not kept: the caller takes it
    /// (another mount may take it first; the caller then fails as before).
    public static func waitUntilFree(directory: URL, policy: WaitPolicy) throws(Busy) {
        let path = directory.appendingPathComponent("lock").path
        guard let fd = try? SystemCall.open(path, O_RDONLY | O_CLOEXEC) else { return }  // no lock file yet: nobody holds it
        defer { close(fd) }
        let start = Date().timeIntervalSince1970
        var lastReport: Double? = nil
        while true {
            if (try? SystemCall.flock(fd, LOCK_EX | LOCK_NB)) != nil {
                _ = try? SystemCall.flock(fd, LOCK_UN)
                return
            }
            let holder = holder(of: directory)
            if let holder, policy.isMounted(holder.mountpoint) { throw .serving(holder) }
            let now = Date().timeIntervalSince1970
            if now - start >= policy.timeout { throw .stillFinishing(holder) }
            if lastReport == nil {
                policy.report(.waiting(holder))
                lastReport = now
            } else if now - lastReport! >= policy.reportInterval {
                policy.report(.stillWaiting(holder, seconds: now - start))
                lastReport = now
            }
            let pause = timespec(tv_sec: Int(policy.pollInterval), tv_nsec: Int((policy.pollInterval.truncatingRemainder(dividingBy: 1)) * 1e9))
            withUnsafePointer(to: pause) { _ = nanosleep($0, nil) }
        }
    }

    /// Whether `path` is a FUSE mount point in `/proc/self/mountinfo`.
    @Sendable public static func isFuseMount(_ path: String) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        return isFuseMount(path, mountinfo: table)
    }

    /// Whether `mountinfo` (the kernel's table) has a FUSE mount on `path` (its type starts with `fuse`).
    static func isFuseMount(_ path: String, mountinfo: String) -> Bool {
        MountInfo.entries(mountinfo).contains { $0.type.hasPrefix("fuse") && $0.mountPoint == path }
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
