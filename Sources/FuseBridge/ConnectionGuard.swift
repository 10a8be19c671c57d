import CFuse
import DriveSupport
import Foundation
import Glibc

/// Frees the mount when the daemon dies uncleanly (a trap, `kill -9`): see cfuse.c for why a dead
/// daemon can leave its mount hung (a thread of it waiting in `notify_inval_entry` on a folder's
/// lock held by a request that waits for the daemon), and how the guard ends the connection
/// through fusectl's `abort` file. Needs fusectl mounted at /sys/fs/fuse/connections (systemd
/// mounts it at boot) and the file writable by this user (the kernel gives it to the mount's
/// owner); without them the mount is served unguarded, as before.
enum ConnectionGuard {
    static let connections = "/sys/fs/fuse/connections"

    /// Arms the guard for the FUSE mount on `mountpoint` (mounted by this process, newest first):
    /// the signal handlers now, the watcher process once the caller serves (it must be the thread
    /// that serves the mount, after daemonizing). Returns what to log.
    static func arm(mountpoint: String) -> (armed: Bool, message: String) {
        guard let connection = connection(of: mountpoint) else {
            return (false, "no crash guard: \(mountpoint) is not in /proc/self/mountinfo as a FUSE mount")
        }
        let abort = "\(connections)/\(connection)/abort"
        let rc = cfuse_guard_arm(abort)
        guard rc == 0 else {
            let why = rc == -ENOENT ? "fusectl is not mounted at \(connections)" : String(cString: strerror(-rc))
            return (false, "no crash guard (\(abort): \(why)): if this process dies uncleanly the mount may hang until "
                    + "`echo 1 > \(abort)`")
        }
        let watcher = cfuse_guard_start_watcher()
        guard watcher > 0 else {
            return (true, "crash guard armed for connection \(connection), without its watcher (fork: \(String(cString: strerror(-watcher)))): "
                    + "a kill -9 may leave the mount hung")
        }
        return (true, "crash guard armed for connection \(connection) (watcher pid \(watcher))")
    }

    static func disarm() { cfuse_guard_disarm() }

    /// The fusectl connection number of the FUSE mount on `mountpoint`: the minor device number
    /// in /proc/self/mountinfo (FUSE mounts have major 0). Read from the file rather than by stat:
    /// a stat of the mountpoint would wait for the daemon, which does not serve yet.
    static func connection(of mountpoint: String) -> UInt32? {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        let resolved = realpath(mountpoint, nil).map { p -> String in defer { free(p) }; return String(cString: p) } ?? mountpoint
        return connection(in: text, mountpoint: resolved)
    }

    /// `connection(of:)` over the text of a mountinfo file: the last (newest) FUSE mount on `mountpoint`.
    static func connection(in mountinfo: String, mountpoint: String) -> UInt32? {
        MountInfo.entries(mountinfo).last { $0.isFuse && $0.major == 0 && $0.mountPoint == mountpoint }?.minor
    }
}
