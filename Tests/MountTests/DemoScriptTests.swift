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
            throw XCTSkip("curl is missing: the demo's instructions use it ('make deps' installs it)")
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
        defer {
            ExternalCommand.stop(demo)
            if emulatorPID > 0 && kill(emulatorPID, 0) == 0 { kill(emulatorPID, SIGKILL) }
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

        // The printed token command, pasted into a shell, yields an access token.
        let lines = printed.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try XCTUnwrap(lines.firstIndex { $0.contains("TOKEN=$(curl") }, printed)
        let block = lines[start...start + 2].joined(separator: "\n")
        let token = try ExternalCommand.run("/bin/bash", ["-c", block + "\nprintf %s \"$TOKEN\""], timeout: 20)
        XCTAssertEqual(token.status, 0, token.summary)
        XCTAssertTrue(token.output.hasPrefix("ya29."), "no access token from the printed command: \(token.summary)")

        // The stats command answers JSON that counted the token request.
        let stats = try ExternalCommand.runTool("curl", ["-s", "\(header.1)__emulator/stats"], timeout: 20)
        XCTAssertTrue(stats.output.contains("\"token\""), stats.summary)

        // Ctrl-C (SIGINT) stops the demo and its emulator, and removes the temporary state.
        let stateLine = try XCTUnwrap(printed.firstMatch(of: /state: (\S+) \(removed/), printed)
        XCTAssertTrue(FileManager.default.fileExists(atPath: String(stateLine.1)))
        kill(demo.processIdentifier, SIGINT)
        XCTAssertTrue(ExternalCommand.waitForExit(demo, timeout: 15), "the demo ignored Ctrl-C")
        XCTAssertNotEqual(kill(emulatorPID, 0), 0, "the emulator survived the demo")
        XCTAssertFalse(FileManager.default.fileExists(atPath: String(stateLine.1)), "the temporary state was left behind")
        XCTAssertTrue(text().contains("demo: emulator stopped"), text())
    }
}
