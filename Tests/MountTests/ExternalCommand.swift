import Foundation
import XCTest

/// Runs an external program with a hard time limit: a hung mount must never hang the test run.
///
/// Output goes to temporary files (no pipe can fill up and block the child). On timeout the child
/// gets SIGTERM, then SIGKILL a second later; FUSE waits are killable, so it does end.
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer { try? out.close(); try? err.close() }
        process.standardOutput = out
        process.standardError = err
        if let input {
            let inURL = scratch.appendingPathComponent("in")
            try input.write(to: inURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        do { try process.run() } catch { throw Failure.cannotStart(executable, error) }
        let timedOut = !waitForExit(process, timeout: timeout)
        if timedOut { stop(process) }
        return Result(status: process.terminationStatus,
                      standardOutput: (try? Data(contentsOf: outURL)) ?? Data(),
                      standardError: (try? Data(contentsOf: errURL)) ?? Data(),
                      timedOut: timedOut)
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
