import Foundation
import Glibc
import XCTest

/// packaging/drivefs@.service: `systemd-analyze verify` accepts it, and the start and stop it
/// describes work: its ExecStart (with `$NOTIFY_SOCKET`, as systemd runs it) sends READY=1 once the
/// mount is live, and its ExecStop unmounts and ends the service cleanly.
final class SystemdUnitTests: XCTestCase {
    static let unitFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("packaging/drivefs@.service")

    private var temp: URL!

    override func setUpWithError() throws {
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-unit-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let temp { try? FileManager.default.removeItem(at: temp) }
        super.tearDown()
    }

    /// The unit with the built binary in place of the installed one.
    private func unitText() throws -> String {
        try String(contentsOf: Self.unitFile, encoding: .utf8).replacingOccurrences(of: "/usr/bin/drivefs", with: try DriveFSBinary.path())
    }

    /// `Key=value` lines of the unit, in order.
    private func values(_ key: String, in text: String) -> [String] {
        text.split(separator: "\n").filter { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    func testSystemdAnalyzeVerifiesTheUnit() throws {
        // systemd is not in 'make deps' (it is a whole init system): a machine without it skips.
        guard let analyze = ExternalCommand.which("systemd-analyze") else {
            throw XCTSkip("systemd-analyze is missing (package systemd): the unit cannot be verified on this machine")
        }
        let text = try unitText()
        try text.write(to: temp.appendingPathComponent("drivefs@.service"), atomically: true, encoding: .utf8)
        let runtime = temp.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        // --man=no: the page is installed by the package, not on a build machine.
        let verify = try ExternalCommand.run(analyze, ["verify", "--user", "--man=no", temp.appendingPathComponent("drivefs@default.service").path],
                                             timeout: 60, environment: environment)
        XCTAssertEqual(verify.status, 0, verify.summary)
        XCTAssertEqual(verify.errorOutput, "", "systemd-analyze warns: \(verify.summary)")

        XCTAssertEqual(values("Type", in: text), ["notify"])
        XCTAssertEqual(values("Restart", in: text), ["on-failure"])
        XCTAssertTrue(values("ExecStart", in: text).first?.contains(" mount --foreground --profile %i ") == true, text)
        XCTAssertTrue(values("ExecStop", in: text).first?.contains(" unmount ") == true, text)
        let stopTimeout = try XCTUnwrap(values("TimeoutStopSec", in: text).first.flatMap { text -> Int? in
            text.hasSuffix("min") ? Int(text.dropLast(3)).map { $0 * 60 } : Int(text)
        })
        XCTAssertGreaterThanOrEqual(stopTimeout, 600, "queued uploads need time to drain")
    }

    /// A datagram socket where systemd would listen.
    private func notifySocket(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.utf8.count + 1)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        XCTAssertEqual(bound, 0, String(cString: strerror(errno)))
        var timeout = timeval(tv_sec: Int(MountedDriveFS.mountTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    func testTheUnitsStartSignalsReadinessAndItsStopUnmounts() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in try Data("ready\n".utf8).write(to: seed.appendingPathComponent("hello.txt")) }
        defer { drive.stop() }
        let text = try unitText()
        let socketPath = drive.temp.appendingPathComponent("notify").path
        let fd = notifySocket(socketPath)
        defer { close(fd) }

        // ExecStart as systemd runs it for drivefs@default: `mount --foreground --profile default MOUNTPOINT`.
        let start = try XCTUnwrap(values("ExecStart", in: text).first).split(separator: " ").map(String.init)
        let words = Array(start.dropFirst()).map { $0 == "%i" ? "default" : $0 }
        XCTAssertEqual(words.first, "mount")
        XCTAssertEqual(words.last, "${DRIVEFS_MOUNTPOINT}")
        var environment = drive.environment
        environment["NOTIFY_SOCKET"] = socketPath
        XCTAssertTrue(words.contains("--foreground"), "systemd supervises a process that stays")
        // MountedDriveFS adds the mount point and -f (the unit's --foreground, which it replaces).
        let mount = try MountedDriveFS.start(command: Array(words.dropLast()).filter { $0 != "--foreground" }, environment: environment,
                                             readyLine: EmulatedDrive.readyLine)
        defer { mount.tearDown() }

        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = recv(fd, &buffer, buffer.count, 0)
        XCTAssertGreaterThan(received, 0, "no READY=1 within \(Int(MountedDriveFS.mountTimeout)) s: \(mount.log)")
        let message = String(decoding: buffer.prefix(max(0, received)), as: UTF8.self)
        XCTAssertTrue(message.hasPrefix("READY=1\n"), message)
        XCTAssertTrue(mount.isMounted, "READY=1 only once the mount is live")
        XCTAssertEqual(try String(contentsOfFile: mount.path("hello.txt"), encoding: .utf8), "ready\n")

        // ExecStop: drivefs unmount; the service's main process then ends by itself, successfully.
        let stop = try XCTUnwrap(values("ExecStop", in: text).first).split(separator: " ").map(String.init)
        let unmount = try ExternalCommand.run(stop[0], Array(stop.dropFirst().dropLast()) + [mount.mountpoint], timeout: 30,
                                              environment: environment)
        XCTAssertEqual(unmount.status, 0, unmount.summary)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 20), "drivefs did not end after ExecStop")
        XCTAssertEqual(mount.exitStatus, 0, mount.log)
        XCTAssertFalse(mount.isMounted)
    }
}
