import Foundation
import TestSupport
import XCTest

/// How a `drivefs mount` ends: `fusermount -u`, `drivefs unmount`, and a `kill -9` whose dead
/// mount point the next `drivefs mount` there cleans up.
final class DriveMountLifecycleTests: XCTestCase {
    private func drive() throws -> EmulatedDrive {
        try EmulatedDrive { seed in try Data("still here\n".utf8).write(to: seed.appendingPathComponent("hello.txt")) }
    }

    private func assertEnds(_ mount: MountedDriveFS, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(poll(timeout: 10) { !mount.isMounted }, "still in /proc/mounts", file: file, line: line)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 10), "drivefs outlived its mount", file: file, line: line)
        XCTAssertEqual(mount.exitStatus, 0, "drivefs's exit status after an unmount; log:\n\(mount.log)", file: file, line: line)
    }

    func testFusermountUnmountEndsTheDaemon() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mount = try drive.mount()
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("hello.txt")]).output, "still here\n")
        let unmount = try mount.unmount()
        XCTAssertEqual(unmount.status, 0, unmount.summary)
        assertEnds(mount)
    }

    func testDrivefsUnmountEndsTheDaemon() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mount = try drive.mount()
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("hello.txt")]).output, "still here\n")
        let unmount = try DriveFSBinary.run(["unmount", mount.mountpoint, "--timeout", "10"], timeout: 20,
                                            environment: drive.environment)
        XCTAssertEqual(unmount.status, 0, unmount.summary)
        XCTAssertFalse(mount.isMounted, "drivefs unmount returned while the mount was still listed")
        assertEnds(mount)
        let again = try DriveFSBinary.run(["unmount", mount.mountpoint], timeout: 20, environment: drive.environment)
        XCTAssertEqual(again.status, 1, "nothing mounted any more: \(again.summary)")
    }

    func testAKilledDaemonsMountPointIsRecoveredByTheNextMount() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let first = try drive.mount()
        XCTAssertEqual(try ExternalCommand.tool("cat", [first.path("hello.txt")]).output, "still here\n")
        kill(first.process.processIdentifier, SIGKILL)
        XCTAssertTrue(ExternalCommand.waitForExit(first.process, timeout: 10), "kill -9 did not end drivefs")
        XCTAssertTrue(first.isMounted, "the dead daemon's mount is still listed")
        let dead = try ExternalCommand.tool("stat", [first.mountpoint])
        XCTAssertNotEqual(dead.status, 0, dead.summary)
        XCTAssertTrue(dead.errorOutput.contains("Transport endpoint is not connected"), dead.summary)

        let second = try drive.mount(mountpoint: first.mountpoint)
        XCTAssertTrue(second.log.contains("left mounted by a drivefs that died"), second.log)
        XCTAssertEqual(try ExternalCommand.tool("cat", [second.path("hello.txt")]).output, "still here\n")
        let entries = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8))?.split(separator: "\n")
            .filter { $0.split(separator: " ").dropFirst().first.map(String.init) == first.mountpoint } ?? []
        XCTAssertEqual(entries.count, 1, "the stale mount is gone, only the new one is listed: \(entries)")
        let unmount = try second.unmount()
        XCTAssertEqual(unmount.status, 0, unmount.summary)
        assertEnds(second)
    }

    /// SIGTERM and SIGINT (a service manager, Ctrl-C in the foreground) unmount cleanly.
    func testSignalsUnmountCleanly() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        for signal in [SIGTERM, SIGINT] {
            let mount = try drive.mount()
            XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("hello.txt")]).output, "still here\n")
            kill(mount.process.processIdentifier, signal)
            assertEnds(mount)
        }
    }

    /// A second mount of the same profile cannot share the first one's cache directory: it fails
    /// clearly and mounts nothing; with a cache directory of its own it works.
    func testASecondMountNeedsItsOwnCacheDirectory() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let first = try drive.mount()
        let other = drive.temp.appendingPathComponent("second-mnt").path
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let refused = try DriveFSBinary.run(["mount", other, "-f"], timeout: 30, environment: drive.environment)
        XCTAssertEqual(refused.status, 1, refused.summary)
        XCTAssertTrue(refused.errorOutput.contains("is in use by another drivefs mount"), refused.summary)
        XCTAssertNil(MountedDriveFS.mountEntry(for: other))
        let second = try drive.mount(extraArguments: ["--cache-dir", drive.temp.appendingPathComponent("cache-2").path])
        XCTAssertEqual(try ExternalCommand.tool("cat", [second.path("hello.txt")]).output, "still here\n")
        _ = try second.unmount()
        assertEnds(second)
        _ = try first.unmount()
        assertEnds(first)
    }
}
