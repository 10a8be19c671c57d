import DriveClient
import Foundation
import TestSupport
import XCTest

/// `drivefs mount --shared-drive NAME_OR_ID`: a shared drive (seeded with the emulator's
/// `@shared/NAME/…` convention) instead of My Drive, by name and by ID; a name nobody has fails
/// clearly before anything is mounted.
final class DriveMountSharedDriveTests: XCTestCase {
    private func drive() throws -> EmulatedDrive {
        try EmulatedDrive { seed in
            try Data("in my drive\n".utf8).write(to: seed.appendingPathComponent("mine.txt"))
            let team = seed.appendingPathComponent("@shared/Team files/plans")
            try FileManager.default.createDirectory(at: team, withIntermediateDirectories: true)
            try Data("the team's plan\n".utf8).write(to: team.appendingPathComponent("plan.txt"))
        }
    }

    func testASharedDriveMountsByNameAndByID() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let byName = try drive.mount(extraArguments: ["--shared-drive", "Team files"])
        XCTAssertTrue(byName.log.contains("shared drive 'Team files' mounted at"), byName.log)
        XCTAssertEqual(try ExternalCommand.tool("cat", [byName.path("plans/plan.txt")]).output, "the team's plan\n")
        let top = try ExternalCommand.tool("ls", ["-A", byName.mountpoint]).output
        XCTAssertEqual(top, "plans\n", "only the shared drive's items, not My Drive's")
        _ = try byName.unmount()
        XCTAssertTrue(poll(timeout: 10) { !byName.isMounted })

        let id = try XCTUnwrap(try drive.api().resolveSharedDrive("Team files").id)
        let byID = try drive.mount(extraArguments: ["--shared-drive", id])
        let listing = try ExternalCommand.tool("find", [byID.mountpoint, "-type", "f", "-printf", "%P\n"]).output
        XCTAssertEqual(listing, "plans/plan.txt\n")
    }

    func testAnUnknownSharedDriveFailsBeforeMounting() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mountpoint = drive.temp.appendingPathComponent("unused-mnt").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let result = try DriveFSBinary.run(["mount", mountpoint, "-f", "--shared-drive", "Nobody's drive",
                                            "--api-url", drive.baseURL + "/", "--token-url", drive.tokenURL],
                                           timeout: 30, environment: drive.environment)
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertTrue(result.errorOutput.contains("no shared drive called 'Nobody's drive'"), result.summary)
        XCTAssertNil(MountedDriveFS.mountEntry(for: mountpoint))
    }
}
