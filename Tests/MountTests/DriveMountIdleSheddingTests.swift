import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A walk of the whole mount does not leave its nodes behind (NodeTable+Shedding.swift and
/// +Repack.swift): once the mount is idle for `--release-idle-after`, the kernel is asked to drop
/// the files' entries, forgets them, and the folders are packed again, those holding folders the
/// kernel keeps too: no listing stays materialized, and the daemon's nodes return to about one per
/// folder. Inode numbers are the same on the next walk, and a shell whose working
/// directory is in the mount keeps it (folders' own entries are never dropped).
final class DriveMountIdleSheddingTests: XCTestCase {
    private static let top = 6, sub = 4, files = 100

    private func index(_ drive: EmulatedDrive) throws -> MountStatus.Index? {
        let run = try DriveFSBinary.run(["status", "--json"], timeout: 20, environment: drive.environment)
        guard run.status == 0 else { return nil }
        return try? JSONDecoder().decode([MountStatus].self, from: run.standardOutput).first?.index
    }

    func testAWalkedMountLeftIdleGoesBackToAboutANodePerFolder() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            for t in 0..<Self.top {
                for s in 0..<Self.sub {
                    for f in 0..<Self.files { try tree.file("d\(t)/s\(s)/f\(f).txt", in: seed, text: "\(t).\(s).\(f)\n") }
                }
            }
        }
        defer { drive.stop() }
        let mount = try drive.mount(extraArguments: ["--release-idle-after", "2s"])
        let folders = 1 + Self.top + Self.top * Self.sub
        let items = Self.top * Self.sub * Self.files

        // A shell sits in a folder of the mount all along.
        let resident = Process()
        resident.executableURL = URL(fileURLWithPath: "/bin/sleep")
        resident.arguments = ["600"]
        resident.currentDirectoryURL = URL(fileURLWithPath: mount.path("d0/s0"))
        try resident.run()
        defer { if resident.isRunning { resident.terminate() } }

        let walk = try ExternalCommand.tool("ls", ["-liR", mount.mountpoint], timeout: 120)
        XCTAssertEqual(walk.status, 0, walk.summary)
        XCTAssertEqual(walk.output.components(separatedBy: ".txt\n").count - 1, items)

        var last: MountStatus.Index?
        let shed = poll(timeout: 60, interval: 0.5) {
            last = try? index(drive)
            guard let last else { return false }
            // Every listing packed; a node per folder the kernel keeps, kept under its packed parent.
            return last.nodes <= folders && last.materializedFolders == 0
        }
        XCTAssertTrue(shed, "the walk's nodes were not let go: \(String(describing: last)); log:\n\(mount.log.suffix(3000))")
        XCTAssertGreaterThanOrEqual(last?.packedItems ?? 0, items, "the files are packed, not lost")

        let link = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(resident.processIdentifier)/cwd")
        XCTAssertEqual(link, mount.path("d0/s0"), "the working directory is still reachable")

        let again = try ExternalCommand.tool("ls", ["-liR", mount.mountpoint], timeout: 120)
        XCTAssertEqual(again.output, walk.output, "the same names and inode numbers")
        resident.terminate()
        resident.waitUntilExit()
        try drive.drivefsUnmount(mount)
    }
}
