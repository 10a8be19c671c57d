import Foundation
import XCTest

/// Unmodified rclone (Debian) against `drivefs-emulator` in a private network namespace behind TLS
/// (Tests/interop/rclone_interop.sh says how): lsf -R, copy (small and resumable-sized files), check and
/// md5sum, cat (whole and ranged), a download, mkdir, moveto, deletefile and about.
final class RcloneInteropTests: XCTestCase {
    private var directory: URL?
    private var child: ChildProcess?

    override func tearDown() {
        // The script runs as PID 1 of its own PID namespace under `unshare --kill-child`: stopping unshare
        // kills the emulator and the TLS front with it.
        child?.stop()
        child = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
        directory = nil
        super.tearDown()
    }

    func testRcloneAgainstEmulatorInNetworkNamespace() throws {
        for name in ["rclone", "unshare", "ip", "openssl", "mount", "timeout", "python3"]
        where InteropEnvironment.tool(name) == nil {
            throw InteropEnvironment.missingTool("\(name) is not installed; `make deps` installs it")
        }
        let binary = try InteropEnvironment.emulatorBinary()
        let directory = try InteropEnvironment.makeTemporaryDirectory("rclone-interop")
        self.directory = directory
        try requireNamespaces(directory)

        let script = InteropEnvironment.scripts.appendingPathComponent("rclone_interop.sh")
        let python = InteropEnvironment.tool("python3")?.path ?? "python3"
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/bash"),
            arguments: [script.path, "--emulator", binary.path, "--python", python,
                        "--workdir", directory.appendingPathComponent("run").path],
            logURL: directory.appendingPathComponent("rclone-interop.log"))
        self.child = child
        let timeout: TimeInterval = 300
        let status = child.waitForExit(timeout: timeout)
        let output = child.output
        print(output)
        if status == 2 {
            throw InteropEnvironment.missingTool("rclone_interop.sh: \(output)")
        }
        XCTAssertEqual(status, 0, """
            rclone_interop.sh \(status.map { "exited \($0)" } ?? "timed out after \(Int(timeout)) s"); its output:
            \(InteropEnvironment.tail(output))
            """)
        XCTAssertTrue(status != 0 || output.contains("PASS rclone interop"), "exited 0 without its PASS line")
    }

    /// Creating the namespaces needs root, or unprivileged user namespaces; a machine allowing neither cannot
    /// run this test at all.
    private func requireNamespaces(_ directory: URL) throws {
        guard let unshare = InteropEnvironment.tool("unshare") else { return }
        var arguments = ["--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private", "true"]
        if getuid() != 0 { arguments.insert(contentsOf: ["--user", "--map-root-user"], at: 0) }
        let log = directory.appendingPathComponent("unshare-probe.log")
        if InteropEnvironment.run(unshare, arguments, output: log) != 0 {
            let why = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw InteropEnvironment.missingTool("cannot create mount, network and PID namespaces here "
                + "(`unshare \(arguments.joined(separator: " "))`: \(why.trimmingCharacters(in: .whitespacesAndNewlines)))")
        }
    }
}
