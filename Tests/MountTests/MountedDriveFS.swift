import Foundation
import XCTest

/// A `drivefs` mount in a subprocess, in the foreground (`-f`), on a fresh temporary directory:
/// `drivefs debug smoke-mount DIR -f` by default, any mounting command (`drivefs mount ...`) given
/// its words before the mountpoint.
///
/// `start` returns once the mount is listed in /proc/mounts (or fails within `mountTimeout`).
/// `tearDown` always leaves nothing behind, whatever state the mount is in: `fusermount -u`, then
/// `fusermount -uz` (lazy, for a busy mount), then the daemon is stopped (SIGTERM, SIGKILL), then
/// the empty mountpoint is removed. Every step is bounded in time.
final class MountedDriveFS {
    static let mountTimeout: TimeInterval = 60

    let mountpoint: String
    let process: Process
    private let logURL: URL
    private let fusermount: String

    /// Skips the test when this machine cannot mount FUSE at all, so a developer without FUSE can
    /// still run the suite; with `DRIVEFS_MOUNT_REQUIRED=1` (CI) it fails instead, because there a
    /// skip would hide a broken setup.
    static func requireFuse(environment: [String: String] = ProcessInfo.processInfo.environment,
                            fuseDevice: String = "/dev/fuse",
                            which: (String) -> String? = { ExternalCommand.which($0) }) throws -> String {
        guard FileManager.default.fileExists(atPath: fuseDevice) else {
            throw missingRequirement("\(fuseDevice) is missing: this machine (or container) has no FUSE device; mount tests need one",
                                     environment: environment)
        }
        guard let fusermount = which("fusermount3") ?? which("fusermount") else {
            throw missingRequirement("fusermount is missing: install the fuse3 package ('make deps') to run the mount tests",
                                     environment: environment)
        }
        return fusermount
    }

    /// What a mount test throws when something it needs is missing: `XCTSkip`, or a `RequirementMissing`
    /// failure when `DRIVEFS_MOUNT_REQUIRED=1`.
    static func missingRequirement(_ message: String,
                                   environment: [String: String] = ProcessInfo.processInfo.environment) -> Error {
        if environment["DRIVEFS_MOUNT_REQUIRED"] == "1" {
            return RequirementMissing(description: message + " (DRIVEFS_MOUNT_REQUIRED=1: this is a failure, not a skip)")
        }
        return XCTSkip(message)
    }

    struct RequirementMissing: Error, CustomStringConvertible { let description: String }

    /// - Parameters:
    ///   - environment: the child's whole environment (nil: this process's).
    ///   - mountpoint: mount there instead of on a fresh directory (created if missing), e.g. to
    ///     mount again where a killed drivefs left its mount behind. Its parent holds the log.
    ///   - workingDirectory: drivefs's working directory (where a core dump goes), else this process's.
    ///   - readyLine: when given, `start` also waits until drivefs's output contains it (a stale
    ///     mount left on `mountpoint` is listed in /proc/mounts before the new one is live).
    static func start(command: [String] = ["debug", "smoke-mount"], extraArguments: [String] = [],
                      environment: [String: String]? = nil, mountpoint existing: String? = nil,
                      readyLine: String? = nil, workingDirectory: String? = nil) throws -> MountedDriveFS {
        let fusermount = try requireFuse()
        let binary = try DriveFSBinary.path()
        let base = existing.map { URL(fileURLWithPath: $0).deletingLastPathComponent() }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-mount-\(UUID().uuidString)")
        let mountpoint = existing ?? base.appendingPathComponent("mnt").path
        if existing == nil || !FileManager.default.fileExists(atPath: base.path) {
            try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        }
        let logURL = base.appendingPathComponent("drivefs-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = command + [mountpoint, "-f"] + extraArguments
        if let environment { process.environment = environment }
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        let log = try FileHandle(forWritingTo: logURL)
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? log.close()

        let mount = MountedDriveFS(mountpoint: mountpoint, process: process, logURL: logURL, fusermount: fusermount)
        let deadline = Date().addingTimeInterval(mountTimeout)
        while !mount.isMounted || !(readyLine.map { mount.log.contains($0) } ?? true) {
            if !process.isRunning || Date() > deadline {
                let log = mount.log
                mount.tearDown()
                throw MountFailure(description: "the mount did not appear in /proc/mounts within \(Int(mountTimeout)) s"
                                   + " (drivefs \(process.isRunning ? "still running" : "exited with \(process.terminationStatus)")); log:\n\(log)")
            }
            usleep(20_000)
        }
        return mount
    }

    struct MountFailure: Error, CustomStringConvertible { let description: String }

    private init(mountpoint: String, process: Process, logURL: URL, fusermount: String) {
        self.mountpoint = mountpoint
        self.process = process
        self.logURL = logURL
        self.fusermount = fusermount
    }

    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    /// What drivefs wrote on standard output and error so far.
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// drivefs's exit status, or nil while it runs (reading `terminationStatus` then would trap).
    var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    var isMounted: Bool { MountedDriveFS.mountEntry(for: mountpoint) != nil }

    /// The /proc/mounts line for `mountpoint` split into fields, if mounted.
    static func mountEntry(for mountpoint: String) -> [String]? {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        // /proc/mounts escapes space, tab, newline and backslash as octal.
        let escaped = mountpoint.replacingOccurrences(of: "\\", with: "\\134").replacingOccurrences(of: " ", with: "\\040")
            .replacingOccurrences(of: "\t", with: "\\011").replacingOccurrences(of: "\n", with: "\\012")
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            if fields.count >= 4 && fields[1] == escaped { return fields }
        }
        return nil
    }

    /// `fusermount -u`, as a user would.
    func unmount(timeout: TimeInterval = 10) throws -> ExternalCommand.Result {
        try ExternalCommand.run(fusermount, ["-u", mountpoint], timeout: timeout)
    }

    /// Idempotent; safe on a mount in any state.
    func tearDown() {
        if isMounted { _ = try? ExternalCommand.run(fusermount, ["-u", mountpoint], timeout: 5) }
        if isMounted { _ = try? ExternalCommand.run(fusermount, ["-uz", mountpoint], timeout: 5) }
        if !ExternalCommand.waitForExit(process, timeout: 5) { ExternalCommand.stop(process) }
        // rmdir only: never delete recursively under what might still be a mount.
        if !isMounted {
            rmdir(mountpoint)
            try? FileManager.default.removeItem(at: logURL)
            rmdir(URL(fileURLWithPath: mountpoint).deletingLastPathComponent().path)
        }
    }
}
