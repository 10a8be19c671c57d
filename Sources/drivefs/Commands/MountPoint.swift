import CommandLineKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Checking and cleaning a mount point before mounting, and unmounting it.
enum MountPoint {
    /// The absolute mount point, once it is an existing directory with nothing live mounted on it.
    /// A mount left by a killed drivefs ("Transport endpoint is not connected") is detached first.
    static func prepare(_ path: String) throws -> String {
        let absolute = path.hasPrefix("/") ? path
            : URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        var st = stat()
        var failure: Int32 = stat(absolute, &st) == 0 ? 0 : errno
        // A dead FUSE mount still answers stat from the kernel's attribute cache (for as long as
        // the dead daemon's attribute timeout); statvfs is never cached, so it reaches the daemon.
        if failure == 0 && isMounted(absolute) {
            var fs = statvfs()
            if statvfs(absolute, &fs) != 0 { failure = errno }
        }
        if failure != 0 {
            let code = failure
            guard code == ENOTCONN || code == ECONNABORTED else {
                if code == ENOENT {
                    throw CLIError.failure("mountpoint '\(path)' does not exist", hint: "Create it first: mkdir -p '\(path)'")
                }
                throw CLIError.failure("cannot use mountpoint '\(path)': \(String(cString: strerror(code)))")
            }
            FileHandle.standardError.write(Data("drivefs: '\(path)' was left mounted by a drivefs that died; cleaning it up\n".utf8))
            guard detach(absolute), stat(absolute, &st) == 0 else {
                throw CLIError.failure("'\(path)' is left over from a filesystem that died, and cannot be cleaned up",
                                       hint: "Try: fusermount -uz '\(path)' (as the user who mounted it, or root)")
            }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw CLIError.failure("mountpoint '\(path)' is not a directory", hint: "Mount on an empty directory.")
        }
        if isMounted(absolute) {
            throw CLIError.failure("something is already mounted on '\(path)'", hint: "Unmount it first: drivefs unmount '\(path)'")
        }
        return absolute
    }

    /// fusermount3 (or fusermount) from PATH or the usual places.
    static func fusermount() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in ["fusermount3", "fusermount"] {
            for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin"] {
                let candidate = directory + "/" + name
                if access(candidate, X_OK) == 0 { return candidate }
            }
        }
        return nil
    }

    /// `fusermount -u` (or `-uz`, lazily): true when it succeeded.
    @discardableResult
    static func unmount(_ path: String, lazy: Bool, errorOutput: inout String) -> Bool {
        guard let tool = fusermount() else {
            errorOutput = "fusermount is not installed (Debian package fuse3)"
            return false
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = [lazy ? "-uz" : "-u", path]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            errorOutput = "cannot run \(tool): \(error)"
            return false
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errorOutput = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0
    }

    static func detach(_ path: String) -> Bool {
        var output = ""
        return unmount(path, lazy: true, errorOutput: &output)
    }

    /// Listed in /proc/mounts (octal escapes as the kernel writes them).
    static func isMounted(_ path: String) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
        let escaped = path.replacingOccurrences(of: "\\", with: "\\134").replacingOccurrences(of: " ", with: "\\040")
            .replacingOccurrences(of: "\t", with: "\\011").replacingOccurrences(of: "\n", with: "\\012")
        return text.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count >= 2 && fields[1] == escaped
        }
    }
}
