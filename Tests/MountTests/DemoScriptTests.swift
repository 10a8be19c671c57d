import Foundation
import XCTest

/// `scripts/demo.sh` (what `make demo` runs): it starts the emulator, prints instructions that
/// work when pasted into a shell, and stops the emulator on Ctrl-C.
final class DemoScriptTests: XCTestCase {
    private static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testDemoStartsTheEmulatorPrintsWorkingInstructionsAndStopsOnCtrlC() throws {
        let binDirectory = URL(fileURLWithPath: try DriveFSBinary.path()).deletingLastPathComponent()
        guard FileManager.default.isExecutableFile(atPath: binDirectory.appendingPathComponent("drivefs-emulator").path) else {
            XCTFail("drivefs-emulator is not built next to drivefs in \(binDirectory.path)")
            return
        }
        guard ExternalCommand.which("curl") != nil else {
            throw MountedDriveFS.missingRequirement("curl is missing: the demo's instructions use it ('make deps' installs it)")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-demo-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outputURL = scratch.appendingPathComponent("demo.out")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }

        let demo = Process()
        demo.executableURL = URL(fileURLWithPath: "/bin/bash")
        demo.arguments = [Self.packageRoot.appendingPathComponent("scripts/demo.sh").path, binDirectory.path]
        var environment = ProcessInfo.processInfo.environment
        environment["DRIVEFS_DEMO_PORT"] = nil
        environment["DRIVEFS_DEMO_STATE_DIR"] = nil
        demo.environment = environment
        demo.standardOutput = output
        demo.standardError = output
        demo.standardInput = FileHandle.nullDevice
        try demo.run()
        var emulatorPID: pid_t = 0
        var demoMount: String?
        defer {
            ExternalCommand.stop(demo)
            if emulatorPID > 0 && kill(emulatorPID, 0) == 0 { kill(emulatorPID, SIGKILL) }
            if let demoMount, MountedDriveFS.mountEntry(for: demoMount) != nil {
                _ = try? ExternalCommand.runTool("fusermount", ["-uz", demoMount], timeout: 10)
            }
        }

        func text() -> String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
        let deadline = Date().addingTimeInterval(60)
        while !text().contains("Press Ctrl-C") {
            guard demo.isRunning, Date() < deadline else {
                XCTFail("the demo did not get ready; its output:\n\(text())")
                return
            }
            usleep(50_000)
        }
        let printed = text()
        let header = try XCTUnwrap(printed.firstMatch(of: /listening on (http:\/\/127\.0\.0\.1:\d+\/) \(pid (\d+)\)/), printed)
        emulatorPID = pid_t(header.2)!
        XCTAssertEqual(kill(emulatorPID, 0), 0, "the emulator process is not running")

        // The demo mounted the emulator's Drive and showed it; the mount serves its files.
        let mounted = try XCTUnwrap(printed.firstMatch(of: /mounted at (\S+) \(writable/), printed)
        demoMount = String(mounted.1)
        XCTAssertNotNil(MountedDriveFS.mountEntry(for: demoMount!), "the demo's mount is not in /proc/mounts")
        XCTAssertTrue(printed.contains("About this demo.txt"), "ls -l of the mount: \(printed)")
        let about = try ExternalCommand.runTool("cat", [demoMount! + "/About this demo.txt"], timeout: 20)
        XCTAssertEqual(about.status, 0, about.summary)
        XCTAssertFalse(about.output.isEmpty)

        // The printed token command, pasted into a shell, yields an access token.
        let lines = printed.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try XCTUnwrap(lines.firstIndex { $0.contains("TOKEN=$(curl") }, printed)
        let block = lines[start...start + 2].joined(separator: "\n")
        let token = try ExternalCommand.run("/bin/bash", ["-c", block + "\nprintf %s \"$TOKEN\""], timeout: 20)
        XCTAssertEqual(token.status, 0, token.summary)
        XCTAssertTrue(token.output.hasPrefix("ya29."), "no access token from the printed command: \(token.summary)")

        // The printed listing, pasted after it, shows the seeded tree (a '/' in a name included).
        let listStart = try XCTUnwrap(lines.firstIndex { $0.contains("drive/v3/files \\") }, printed)
        let listing = try ExternalCommand.run(
            "/bin/bash", ["-c", block + "\n" + lines[listStart...listStart + 2].joined(separator: "\n")], timeout: 20)
        XCTAssertEqual(listing.status, 0, listing.summary)
        XCTAssertTrue(listing.output.contains("\"About this demo.txt\""), listing.summary)
        XCTAssertTrue(listing.output.contains("\"Reports/2026.txt\""), listing.summary)

        try checkPrintedLogin(lines: lines, printed: printed, scratch: scratch)

        // When the interop venv exists (make deps), the printed python client command reads the Drive.
        if let python = lines.first(where: { $0.contains("python_client_interop.py --base-url") }) {
            let result = try ExternalCommand.run("/bin/bash", ["-c", python.trimmingCharacters(in: .whitespaces)], timeout: 60)
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertTrue(result.output.contains("PASS 3 steps"), result.summary)
        }

        // The stats command answers JSON that counted the token request.
        let stats = try ExternalCommand.runTool("curl", ["-s", "\(header.1)__emulator/stats"], timeout: 20)
        XCTAssertTrue(stats.output.contains("\"token\""), stats.summary)
        // The demo's emulator meters Drive as Google's 2026 limits do (`--limits google`): its stats
        // hold the user's quota units and writes, which only a metered emulator keeps.
        let metered = try JSONSerialization.jsonObject(with: Data(stats.output.utf8)) as? [String: Any]
        XCTAssertNotNil(metered?["users"] as? [String: Any], "the demo's emulator runs without Google's limits: \(stats.output)")

        // Ctrl-C (SIGINT) stops the demo and its emulator, and removes the temporary state.
        let stateLine = try XCTUnwrap(printed.firstMatch(of: /state: (\S+) \(removed/), printed)
        XCTAssertTrue(FileManager.default.fileExists(atPath: String(stateLine.1)))
        kill(demo.processIdentifier, SIGINT)
        XCTAssertTrue(ExternalCommand.waitForExit(demo, timeout: 15), "the demo ignored Ctrl-C")
        XCTAssertNotEqual(kill(emulatorPID, 0), 0, "the emulator survived the demo")
        XCTAssertFalse(FileManager.default.fileExists(atPath: String(stateLine.1)), "the temporary state was left behind")
        XCTAssertTrue(text().contains("demo: emulator stopped"), text())
        XCTAssertNil(MountedDriveFS.mountEntry(for: demoMount!), "Ctrl-C left the demo's mount behind")
    }

    /// The printed `auth login` (completed by fetching its consent URL, as the text says), then
    /// `auth status` and `auth logout`, all in a private configuration directory.
    private func checkPrintedLogin(lines: [Substring], printed: String, scratch: URL) throws {
        let start = try XCTUnwrap(lines.firstIndex { $0.contains(" auth login --profile demo") }, printed)
        let status = try XCTUnwrap(lines.firstIndex { $0.contains(" auth status --profile demo") }, printed)
        let logout = try XCTUnwrap(lines.firstIndex { $0.contains(" auth logout --profile demo") }, printed)
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("DRIVEFS_") { environment[key] = nil }
        environment["XDG_CONFIG_HOME"] = scratch.appendingPathComponent("config").path
        environment["XDG_CACHE_HOME"] = scratch.appendingPathComponent("cache").path
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil

        let outputURL = scratch.appendingPathComponent("login.out")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        let login = Process()
        login.executableURL = URL(fileURLWithPath: "/bin/bash")
        login.arguments = ["-c", "exec " + lines[start...start + 1].joined(separator: "\n").trimmingCharacters(in: .whitespaces)]
        login.environment = environment
        login.standardOutput = output
        login.standardError = output
        login.standardInput = FileHandle.nullDevice
        try login.run()
        defer { ExternalCommand.stop(login) }
        func text() -> String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

        let deadline = Date().addingTimeInterval(20)
        var consent: String?
        while consent == nil && login.isRunning && Date() < deadline {
            consent = text().firstMatch(of: /http:\/\/127\.0\.0\.1:\d+\/o\/oauth2\/v2\/auth\?\S+/).map { String($0.0) }
            if consent == nil { usleep(50_000) }
        }
        let url = try XCTUnwrap(consent, "auth login printed no consent URL: \(text())")
        let browser = try ExternalCommand.runTool("curl", ["-sL", "-o", "/dev/null", "-w", "%{http_code}", url], timeout: 20)
        XCTAssertEqual(browser.output, "200", browser.summary)
        XCTAssertTrue(ExternalCommand.waitForExit(login, timeout: 20), "auth login did not finish: \(text())")
        XCTAssertEqual(login.isRunning ? nil : login.terminationStatus, 0, text())
        XCTAssertTrue(text().contains("Signed in (profile 'demo'"), text())

        for index in [status, logout] {
            let command = lines[index].trimmingCharacters(in: .whitespaces)
            let result = try ExternalCommand.run("/bin/bash", ["-c", command], timeout: 20, environment: environment)
            XCTAssertEqual(result.status, 0, "\(command): \(result.summary)")
            if index == status {
                XCTAssertTrue(result.output.contains("Drive Emulator User"), "\(command): \(result.summary)")
            }
        }
    }
}
