import Foundation
import XCTest

/// Where the interop tests find the emulator binary, the scripts and the external tools.
///
/// Skip policy: a test skips only when a tool it needs is not installed (`make deps` installs them all),
/// with a message saying what is missing. With `DRIVEFS_INTEROP_REQUIRED=1` in the environment a missing
/// tool fails instead, for CI machines where a skip would hide a broken setup. A missing emulator binary
/// always fails: it is built by `swift build --build-tests`.
enum InteropEnvironment {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let scripts = packageRoot.appendingPathComponent("Tests/interop")

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// XCTSkip, or a thrown failure under DRIVEFS_INTEROP_REQUIRED=1.
    static func missingTool(_ message: String) -> Error {
        if environment["DRIVEFS_INTEROP_REQUIRED"] == "1" {
            return InteropSetupError(message: "\(message) (DRIVEFS_INTEROP_REQUIRED=1)")
        }
        return XCTSkip(message)
    }

    /// `drivefs-emulator` from the same build as this test bundle (so `swift test -c release` uses the release
    /// binary), else `.build/debug`, or DRIVEFS_EMULATOR.
    static func emulatorBinary() throws -> URL {
        var candidates: [URL] = []
        if let path = environment["DRIVEFS_EMULATOR"] { candidates.append(URL(fileURLWithPath: path)) }
        if let runner = Bundle.main.executableURL {
            candidates.append(runner.deletingLastPathComponent().appendingPathComponent("drivefs-emulator"))
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("drivefs-emulator"))
        }
        candidates.append(packageRoot.appendingPathComponent(".build/debug/drivefs-emulator"))
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) {
            return found
        }
        throw InteropSetupError(message: "drivefs-emulator is not built (looked at \(candidates.map(\.path))); "
            + "run `swift build --build-tests` first")
    }

    /// A Python with google-api-python-client and google-auth: DRIVEFS_PYTHON (set by `make test`; must work
    /// when set), else `.build/interop-venv/bin/python` (made by `make deps`).
    static func pythonWithGoogleClient() throws -> URL {
        let probe = "import googleapiclient.discovery, google.oauth2.credentials"
        if let path = environment["DRIVEFS_PYTHON"], !path.isEmpty {
            let python = URL(fileURLWithPath: path)
            guard run(python, ["-c", probe]) == 0 else {
                throw InteropSetupError(message: "DRIVEFS_PYTHON=\(path) cannot import googleapiclient and google.oauth2")
            }
            return python
        }
        let venv = packageRoot.appendingPathComponent(".build/interop-venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: venv.path), run(venv, ["-c", probe]) == 0 else {
            throw missingTool("google-api-python-client is not installed: no DRIVEFS_PYTHON and no usable "
                + "\(venv.path); `make deps` creates it")
        }
        return venv
    }

    /// An executable found on PATH (and in the sbin directories, which a non-root PATH may lack).
    static func tool(_ name: String) -> URL? {
        let path = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/local/sbin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// Runs a short helper command to completion (10 s at most); its exit status, or -1 when it could not run.
    @discardableResult
    static func run(_ executable: URL, _ arguments: [String], output: URL? = nil) -> Int32 {
        let log = output ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("drivefs-interop-probe-\(UUID().uuidString).log")
        defer { if output == nil { try? FileManager.default.removeItem(at: log) } }
        guard let child = try? ChildProcess(executable: executable, arguments: arguments, logURL: log) else { return -1 }
        return child.waitForExit(timeout: 10) ?? -1
    }

    static func makeTemporaryDirectory(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("drivefs-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The last `limit` characters of a log, for failure messages.
    static func tail(_ text: String, _ limit: Int = 12_000) -> String {
        text.count <= limit ? text : "…" + String(text.suffix(limit))
    }
}

struct InteropSetupError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// `drivefs-emulator` on 127.0.0.1 with a free port and a fresh state directory.
final class EmulatorProcess {
    let child: ChildProcess
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    let baseURL: String

    init(binary: URL, directory: URL, extraArguments: [String] = []) throws {
        let state = directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        child = try ChildProcess(
            executable: binary,
            arguments: ["--host", "127.0.0.1", "--port", "0", "--state-dir", state.path, "--log-level", "debug"]
                + extraArguments,
            logURL: directory.appendingPathComponent("emulator.log"))
        guard let line = child.awaitLine(containing: "listening on http://", timeout: 30),
              let range = line.range(of: #"http://[0-9.]+:[0-9]+"#, options: .regularExpression) else {
            let output = child.output
            child.stop()
            throw InteropSetupError(message: "drivefs-emulator did not print 'listening on http://HOST:PORT/' "
                + "within 30 s; its output:\n\(InteropEnvironment.tail(output))")
        }
        baseURL = String(line[range])
    }

    func stop() { child.stop() }
}
