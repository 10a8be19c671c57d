import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A process started by an interop test, with stdout and stderr going to one log file.
///
/// Output goes to a file rather than a pipe so that a chatty child can never block on a full pipe while
/// the test waits for it. `stop()` is idempotent and always ends the child: SIGTERM, then SIGKILL after
/// a grace period. Only the test's own thread touches an instance.
final class ChildProcess {
    let process = Process()
    let logURL: URL
    private var stopped = false

    init(executable: URL, arguments: [String], logURL: URL, environment: [String: String]? = nil,
         currentDirectory: URL? = nil) throws {
        self.logURL = logURL
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        try process.run()
        try? log.close()
    }

    /// Everything the child has written so far.
    var output: String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// The first line of output that contains `marker`, waiting up to `timeout` seconds for it.
    /// Nil when the child exits or the time runs out first.
    func awaitLine(containing marker: String, timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = output.split(separator: "\n").first(where: { $0.contains(marker) }) {
                return String(line)
            }
            if !process.isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// The exit status, or nil when the child was still running after `timeout` seconds (it is then stopped).
    func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning {
            stop()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func stop(grace: TimeInterval = 5) {
        guard !stopped else { return }
        stopped = true
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit { stop() }
}
