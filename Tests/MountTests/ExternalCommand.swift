import Foundation
import XCTest

/// Runs an external program with a hard time limit: a hung mount must never hang the test run.
///
/// Output goes to temporary files (no pipe can fill up and block the child). On timeout the child
/// gets SIGTERM, then SIGKILL a second later; FUSE waits are killable, so it does end. A child that
/// never ends is reported with status -1, never waited for forever.
struct ExternalCommand {
    struct Result {
        let status: Int32
        let standardOutput: Data
        let standardError: Data
        let timedOut: Bool

        var output: String { String(decoding: standardOutput, as: UTF8.self) }
        var errorOutput: String { String(decoding: standardError, as: UTF8.self) }
        /// For assertion messages.
        var summary: String { "status \(status)\(timedOut ? " (timed out)" : ""); stdout: \(output.prefix(2000)); stderr: \(errorOutput.prefix(2000))" }
    }

    enum Failure: Error, CustomStringConvertible {
        case cannotStart(String, Error)
        var description: String {
            switch self { case let .cannotStart(path, error): return "cannot start \(path): \(error)" }
        }
    }

    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 20,
                    environment: [String: String]? = nil, input: Data? = nil) throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outPath = scratch.appendingPathComponent("out").path, errPath = scratch.appendingPathComponent("err").path
        var inPath = "/dev/null"
        if let input {
            inPath = scratch.appendingPathComponent("in").path
            try input.write(to: URL(fileURLWithPath: inPath))
        }

        // posix_spawn rather than Foundation's Process: Process decides that a child has ended when
        // every holder of a socket it hands down has closed it, so a child that daemonizes (smoke-mount
        // without -f) would look alive for as long as its daemon.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal handling, whatever the test runner ignores.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw Failure.cannotStart(executable, POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO))
        }

        var status = waitForExit(pid: pid, timeout: timeout)
        let timedOut = status == nil
        if timedOut {
            kill(pid, SIGTERM)
            status = waitForExit(pid: pid, timeout: 1)
            if status == nil {
                kill(pid, SIGKILL)
                status = waitForExit(pid: pid, timeout: 5)
            }
        }
        return Result(status: status ?? -1,
                      standardOutput: FileManager.default.contents(atPath: outPath) ?? Data(),
                      standardError: FileManager.default.contents(atPath: errPath) ?? Data(),
                      timedOut: timedOut)
    }

    /// The exit status (128 + N for a signal), or nil when the child is still running at `timeout`.
    static func waitForExit(pid: pid_t, timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                let signal = raw & 0x7f
                return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            }
            if result < 0 && errno != EINTR { return -1 }
            if Date() > deadline { return nil }
            usleep(5_000)
        }
    }

    /// Runs a program found on PATH (`/bin/sh -c` is not used: arguments stay exact).
    static func runTool(_ name: String, _ arguments: [String], timeout: TimeInterval = 20) throws -> Result {
        guard let path = which(name) else { throw Failure.cannotStart(name, CocoaError(.fileNoSuchFile)) }
        return try run(path, arguments, timeout: timeout)
    }

    /// True when the process ended within `timeout`.
    static func waitForExit(_ process: Process, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }

    /// SIGTERM, then SIGKILL if it has not ended a second later; waits (bounded) for the end.
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        if !waitForExit(process, timeout: 1) {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(process, timeout: 5)
        }
    }

    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
