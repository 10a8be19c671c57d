import Foundation
import XCTest

/// Finds executables built by this package, for tests that spawn them (`drivefs-emulator`,
/// `drivefs`). SwiftPM puts them next to the test bundle (`.build/<triple>/debug/`); failing
/// that, `.build/debug/` under the package root found from this file's path.
enum ExecutableLocator {
    static func url(of name: String, file: StaticString = #filePath) throws -> URL {
        var candidates: [URL] = []
        let bundleDir = Bundle(for: Anchor.self).bundleURL.deletingLastPathComponent()
        candidates.append(bundleDir.appendingPathComponent(name))
        candidates.append(Bundle.main.bundleURL.appendingPathComponent(name))
        // Tests/<Target>/Support/<file> → package root.
        let root = URL(fileURLWithPath: "\(file)").deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw NotBuilt(name: name, candidates: candidates.map(\.path))
    }

    /// A missing binary is a failure, never a skip: `swift build --build-tests` always builds it, so
    /// its absence means a broken build or a wrong path, which a skip would hide.
    struct NotBuilt: Error, CustomStringConvertible {
        let name: String
        let candidates: [String]
        var description: String { "\(name) is not built (looked in \(candidates)); run swift build first" }
    }
    private final class Anchor {}
}

/// A spawned process whose stdout lines can be awaited, killed on `terminate()` or deinit.
final class SpawnedProcess: @unchecked Sendable {
    let process = Process()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    /// Guarded by `lock`.
    private var stdoutText = ""
    private var stderrText = ""
    private let changed = NSCondition()

    init(executable: URL, arguments: [String], environment: [String: String]? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        stdoutPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.append(handle.availableData, toStdout: true)
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.append(handle.availableData, toStdout: false)
        }
        try process.run()
    }

    private func append(_ data: Data, toStdout: Bool) {
        guard !data.isEmpty else { return }
        changed.lock()
        if toStdout { stdoutText += String(decoding: data, as: UTF8.self) } else { stderrText += String(decoding: data, as: UTF8.self) }
        changed.broadcast()
        changed.unlock()
    }

    var stdout: String { changed.lock(); defer { changed.unlock() }; return stdoutText }
    var stderr: String { changed.lock(); defer { changed.unlock() }; return stderrText }

    /// Waits for a stdout line that starts with `prefix`; returns it, or nil on timeout/exit.
    func waitForLine(prefix: String, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        changed.lock()
        defer { changed.unlock() }
        while true {
            if let line = stdoutText.components(separatedBy: "\n").dropLast().first(where: { $0.hasPrefix(prefix) }) {
                return line
            }
            if !process.isRunning && Date() > deadline.addingTimeInterval(-timeout + 0.2) { return nil }
            if !changed.wait(until: min(deadline, Date().addingTimeInterval(0.2))) && Date() >= deadline { return nil }
        }
    }

    /// Waits (bounded) until stdout contains `text`: after the process has exited, what it wrote
    /// may still be on its way through the pipe to the reading handler.
    func waitForStdout(containing text: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        changed.lock()
        defer { changed.unlock() }
        while !stdoutText.contains(text) {
            if !changed.wait(until: deadline) && Date() >= deadline { return stdoutText.contains(text) }
        }
        return true
    }

    /// Waits for exit; the status, or nil on timeout.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    func terminate() {
        if process.isRunning {
            process.terminate()
            _ = waitForExit(timeout: 5)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    deinit {
        stdoutPipe.fileHandleForReading.readabilityHandler = nil
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
