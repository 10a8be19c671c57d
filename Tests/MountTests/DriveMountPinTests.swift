import DriveClient
import DriveEmulator
import Foundation
import XCTest

/// Files kept offline: `drivefs pin` of a folder through a live mount, `drivefs pin --list` until
/// all of it is local, `drivefs status PATH` with each file's state; then the emulator stops and
/// the drive is mounted again offline: every pinned file (one added to the folder after the pin
/// too) reads whole, and an unpinned file that was never read fails at once with EIO.
final class DriveMountPinTests: XCTestCase {
    func testAPinnedFolderIsReadableInAMountThatStartsOffline() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("keep/a.txt", in: seed, text: "kept offline\n")
            try tree.file("keep/sub/b.bin", in: seed, size: 300_000, seed: 5)
            try tree.file("loose.bin", in: seed, size: 300_000, seed: 6)
        }
        defer { drive.stop() }
        func shell(_ script: String) throws -> ExternalCommand.Result { try ExternalCommand.shell(script, timeout: 60) }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }

        var mount = try drive.mount()
        let pin = try drivefs(["pin", mount.path("keep")])
        XCTAssertEqual(pin.status, 0, pin.summary)
        XCTAssertEqual(try shell("echo 'added after the pin' > '\(mount.path("keep/later.txt"))'").status, 0)
        var listed = ""
        let local = try waitUntil(timeout: 120, interval: 0.2) {
            listed = try drivefs(["pin", "--list"]).output
            return listed.contains("\(mount.path("keep"))  3 files") && listed.contains("(all local)")
        }
        XCTAssertTrue(local, "drivefs pin --list says the folder is all local:\n\(listed)\n\(mount.log.suffix(2000))")
        let states = try drivefs(["status", mount.path("keep")])
        XCTAssertEqual(states.status, 0, states.summary)
        let line = states.output.split(separator: "\n").first { $0.hasPrefix(mount.path("keep/a.txt") + " ") }
        XCTAssertEqual(line?.split(separator: " ").last, "offline", "pinned and all local: \(states.output)")
        let loose = try drivefs(["status", mount.path("loose.bin")])
        XCTAssertTrue(loose.output.contains("cloud"), "nothing of an unread, unpinned file is local: \(loose.output)")
        let overview = try drivefs(["status"])
        XCTAssertTrue(overview.output.contains("pinned: 293 KiB (293 KiB local) against the cache's cap of"), overview.output)
        XCTAssertFalse(overview.output.contains("the pins alone need more"), overview.output)
        let md5 = try drive.file(at: "keep/sub/b.bin").md5Checksum
        try drive.drivefsUnmount(mount)

        drive.stopEmulator()
        mount = try drive.mount()
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), mount.log)
        XCTAssertEqual(try shell("cat '\(mount.path("keep/a.txt"))'").output, "kept offline\n")
        XCTAssertEqual(try shell("cat '\(mount.path("keep/later.txt"))'").output, "added after the pin\n")
        let sum = try shell("md5sum < '\(mount.path("keep/sub/b.bin"))'")
        XCTAssertEqual(sum.status, 0, sum.summary)
        XCTAssertEqual(sum.output.split(separator: " ").first.map(String.init), md5)
        let unpinned = try ExternalCommand.tool("cat", [mount.path("loose.bin")], timeout: 60)
        XCTAssertNotEqual(unpinned.status, 0)
        XCTAssertTrue(unpinned.errorOutput.contains("Input/output error"), unpinned.summary)
        try drive.drivefsUnmount(mount)
    }
}
