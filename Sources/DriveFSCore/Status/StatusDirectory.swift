import DriveSupport
import Foundation
import Glibc

/// Where live mounts publish their `MountStatus`: one `PID.json` per daemon, replaced whole
/// (write and rename, so a reader never sees half a file), removed when the daemon exits cleanly.
///
/// The directory is `$DRIVEFS_RUNTIME_DIR` when set, else `$XDG_RUNTIME_DIR/drivefs`, else
/// `/run/drivefs` for root and `/tmp/drivefs-UID` for others; it is created with mode 0700 and
/// used only when it is a real directory owned by the user (not a symbolic link someone else put
/// in /tmp). A file whose daemon is gone (killed, crashed) is left behind; readers skip it and
/// remove it.
public struct StatusDirectory: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public static func resolve(_ environment: [String: String], uid: uid_t = getuid()) -> StatusDirectory {
        if let explicit = environment["DRIVEFS_RUNTIME_DIR"], !explicit.isEmpty { return StatusDirectory(path: explicit) }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return StatusDirectory(path: (runtime.hasSuffix("/") ? String(runtime.dropLast()) : runtime) + "/drivefs")
        }
        return StatusDirectory(path: uid == 0 ? "/run/drivefs" : "/tmp/drivefs-\(uid)")
    }

    public struct Unusable: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot use the runtime directory \(path): \(reason)" }
    }

    /// Creates the directory (and its parents) if needed, and checks that it is ours.
    public func prepare() throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw Unusable(path: path, reason: "\(error.localizedDescription)")
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { throw Unusable(path: path, reason: String(cString: strerror(errno))) }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw Unusable(path: path, reason: "it is not a directory") }
        guard st.st_uid == getuid() else { throw Unusable(path: path, reason: "it belongs to uid \(st.st_uid)") }
        guard st.st_mode & 0o022 == 0 else { throw Unusable(path: path, reason: "others may write to it") }
    }

    public func file(for pid: Int32) -> String { path + "/\(pid).json" }

    /// Replaces the daemon's file (mode 0600: it names the account).
    public func publish(_ status: MountStatus) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(status), to: file(for: status.pid), mode: 0o600, durable: false)
    }

    public func remove(pid: Int32) { unlink(file(for: pid)) }

    /// A published file: its status, and the file's identity (a replacement has a new inode).
    public struct Entry: Sendable {
        public let status: MountStatus
        public let path: String
        public let inode: UInt64
    }

    /// The status of every live mount, ordered by mount point. Files of daemons that are gone are
    /// removed when `removingDead` (and skipped in any case); files that cannot be read or are of
    /// another format are skipped.
    public func entries(removingDead: Bool = true) -> [Entry] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        var found: [Entry] = []
        for name in names {
            guard name.hasSuffix(".json"), let pid = Int32(name.dropLast(5)), pid > 0 else { continue }
            let file = path + "/" + name
            var st = stat()
            guard stat(file, &st) == 0, let data = FileManager.default.contents(atPath: file),
                  let status = try? JSONDecoder().decode(MountStatus.self, from: data),
                  status.format == MountStatus.currentFormat, status.pid == pid else {
                if removingDead && !Self.isAlive(pid: pid, processStart: nil) { unlink(file) }
                continue
            }
            guard Self.isAlive(pid: pid, processStart: status.processStart) else {
                if removingDead { unlink(file) }
                continue
            }
            found.append(Entry(status: status, path: file, inode: UInt64(st.st_ino)))
        }
        return found.sorted { ($0.status.mountpoint, $0.status.pid) < ($1.status.mountpoint, $1.status.pid) }
    }

    public func liveMounts(removingDead: Bool = true) -> [MountStatus] { entries(removingDead: removingDead).map(\.status) }

    /// The file's inode now (nil: gone), to see that a daemon has replaced it.
    public func inode(of entry: Entry) -> UInt64? {
        var st = stat()
        return stat(entry.path, &st) == 0 ? UInt64(st.st_ino) : nil
    }

    /// True while `pid` is a running process (not a zombie) and, when `processStart` is given,
    /// the same process that wrote the file (not another one that reuses its number).
    public static func isAlive(pid: Int32, processStart: UInt64?) -> Bool {
        if kill(pid, 0) != 0 && errno == ESRCH { return false }
        guard let stat = processStat(pid) else {
            // No /proc (or not ours to read): kill(2) said it exists.
            return !FileManager.default.fileExists(atPath: "/proc/self/stat")
        }
        if stat.state == "Z" || stat.state == "X" { return false }
        if let processStart, processStart != stat.startTime { return false }
        return true
    }

    /// This process's start time (for `MountStatus.processStart`).
    public static func processStartTime(_ pid: Int32 = getpid()) -> UInt64? { processStat(pid)?.startTime }

    /// `/proc/PID/stat`: the state (field 3) and the start time (field 22), read after the last
    /// `)` since the command name (field 2) may hold spaces and parentheses.
    static func processStat(_ pid: Int32) -> (state: Character, startTime: UInt64)? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); field 22 is fields[19].
        guard fields.count > 19, let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return (state, start)
    }
}
