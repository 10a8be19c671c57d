import Foundation
import XCTest

/// The unmodified google-api-python-client against `drivefs-emulator` (Tests/interop/python_client_interop.py):
/// the emulator is right only if Google's own client works with it unchanged.
final class PythonClientInteropTests: XCTestCase {
    private var directory: URL?
    private var emulator: EmulatorProcess?

    override func tearDown() {
        emulator?.stop()
        emulator = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
        super.tearDown()
    }

    /// Paging over 250 files, a grouped query longer than 2,048 characters (sent as POST + X-HTTP-Method-Override),
    /// get, ranged downloads, folders, multipart and resumable uploads, content update, revisions (ranged download of an old one),
    /// rename, move, trash, delete, about, the change feed, revisions kept forever, deleted and restored, another user's
    /// folder shared through the control API (sharedWithMe, a refused write), and a shared drive the user only reads.
    func testDriveWorkflow() throws {
        try runScript(emulatorArguments: [], scriptArguments: [], timeout: 300)
    }

    /// With 2-second access tokens: the emulator answers 401 to the expired token, the client refreshes with
    /// the well-known refresh token and the call succeeds.
    func testRefreshesExpiredAccessToken() throws {
        try runScript(emulatorArguments: ["--token-lifetime", "2"],
                      scriptArguments: ["--steps", "about,root,token_refresh", "--token-lifetime", "2"],
                      timeout: 120)
    }

    private func runScript(emulatorArguments: [String], scriptArguments: [String], timeout: TimeInterval) throws {
        let python = try InteropEnvironment.pythonWithGoogleClient()
        let binary = try InteropEnvironment.emulatorBinary()
        let directory = try InteropEnvironment.makeTemporaryDirectory("python-interop")
        self.directory = directory
        let emulator = try EmulatorProcess(binary: binary, directory: directory, extraArguments: emulatorArguments)
        self.emulator = emulator

        let script = InteropEnvironment.scripts.appendingPathComponent("python_client_interop.py")
        let child = try ChildProcess(
            executable: python,
            arguments: ["-u", script.path, "--base-url", emulator.baseURL] + scriptArguments,
            logURL: directory.appendingPathComponent("python.log"))
        let status = child.waitForExit(timeout: timeout)
        let output = child.output
        print(output)
        if status == 2 {
            throw InteropEnvironment.missingTool("python_client_interop.py: \(output)")
        }
        guard status == 0 else {
            XCTFail("""
                python_client_interop.py \(status.map { "exited \($0)" } ?? "timed out after \(Int(timeout)) s"); its output:
                \(InteropEnvironment.tail(output))
                --- emulator log:
                \(InteropEnvironment.tail(emulator.child.output, 6_000))
                """)
            return
        }
        XCTAssertTrue(output.contains("PASS "), "the script exited 0 without its PASS line:\n\(output)")
    }
}
