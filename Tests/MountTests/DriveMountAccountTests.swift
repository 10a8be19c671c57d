import DriveClient
import Foundation
import TestSupport
import XCTest

/// `drivefs mount --account`: the whole account under one mount point, `My Drive/` and
/// `Shared drives/<name>/` for two shared drives (the emulator's `@shared/NAME/…` seed), read and
/// written through the kernel; a cold listing of `Shared drives` is one drives.list page and opens
/// no drive; a move from My Drive into a shared drive is a copy (EXDEV) that lands in that drive.
final class DriveMountAccountTests: XCTestCase {
    private func drive() throws -> EmulatedDrive {
        try EmulatedDrive { seed in
            try Data("in my drive\n".utf8).write(to: seed.appendingPathComponent("mine.txt"))
            let team = seed.appendingPathComponent("@shared/Team files/plans")
            try FileManager.default.createDirectory(at: team, withIntermediateDirectories: true)
            try Data("the team's plan\n".utf8).write(to: team.appendingPathComponent("plan.txt"))
            let design = seed.appendingPathComponent("@shared/Design")
            try FileManager.default.createDirectory(at: design, withIntermediateDirectories: true)
            try Data("logo\n".utf8).write(to: design.appendingPathComponent("logo.txt"))
        }
    }

    private func sharedDriveClient(_ drive: EmulatedDrive, _ name: String) throws -> (api: DriveAPI, id: String) {
        let other = try drive.api()
        let id = try other.resolveSharedDrive(name).id
        return (DriveAPI(executor: other.executor, endpoints: other.endpoints, scope: .sharedDrive(id)), id)
    }

    func testTheAccountShowsMyDriveAndEverySharedDriveReadAndWritten() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mount = try drive.mount(extraArguments: ["--account", "--upload-delay", "0"])
        XCTAssertTrue(mount.log.contains("the account mounted at"), mount.log)
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.mountpoint]).output, "My Drive\nShared drives\nTrash\n")
        XCTAssertTrue(drive.waitForPolls(1), drive.statsSummary())
        drive.settle()

        // The request budget: a cold `ls "Shared drives"` reads one drives.list page, opens no drive.
        let listsBefore = drive.requests("drives.list")
        let getsBefore = drive.requests("files.get")
        let tokensBefore = drive.requests("changes.getStartPageToken")
        let long = try ExternalCommand.tool("ls", ["-l", mount.path("Shared drives")]).output
        XCTAssertTrue(long.contains(" Design\n") && long.contains(" Team files\n"), long)
        XCTAssertEqual(drive.requests("drives.list") - listsBefore, 1, "a cold ls of Shared drives: \(drive.statsSummary())")
        XCTAssertEqual(drive.requests("files.get"), getsBefore, "no drive opened: \(drive.statsSummary())")
        XCTAssertEqual(drive.requests("changes.getStartPageToken"), tokensBefore, "no drive opened: \(drive.statsSummary())")

        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("My Drive/mine.txt")]).output, "in my drive\n")
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("Shared drives/Team files/plans/plan.txt")]).output, "the team's plan\n")
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Shared drives/Design")]).output, "logo.txt\n")
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Shared drives")]).output, "Design\nTeam files\n")
        XCTAssertEqual(drive.requests("drives.list") - listsBefore, 1, "within the TTL, no second read: \(drive.statsSummary())")

        // A write into a shared drive lands there; a move from My Drive into it copies (EXDEV).
        try Data("new in design\n".utf8).write(to: URL(fileURLWithPath: mount.path("Shared drives/Design/new.txt")))
        let moved = try ExternalCommand.tool("mv", [mount.path("My Drive/mine.txt"), mount.path("Shared drives/Design/mine.txt")])
        XCTAssertEqual(moved.status, 0, moved.summary)
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("My Drive")]).output, "")
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Shared drives/Design")]).output, "logo.txt\nmine.txt\nnew.txt\n")
        // Renaming a top folder is refused.
        let renamed = try ExternalCommand.tool("mv", [mount.path("My Drive"), mount.path("Mine")])
        XCTAssertNotEqual(renamed.status, 0, renamed.summary)

        let design = try sharedDriveClient(drive, "Design")
        XCTAssertTrue(poll(timeout: 30) {
            Set(((try? design.api.listChildren(of: design.id)) ?? []).map(\.name)) == ["logo.txt", "mine.txt", "new.txt"]
        }, "the writes landed in the Design drive: \((try? design.api.listChildren(of: design.id))?.map(\.name) ?? [])")
        XCTAssertEqual(try drive.api().listChildren(of: "root").map(\.name), [], "mine.txt left My Drive")

        _ = try mount.unmount()
        XCTAssertTrue(poll(timeout: 30) { !mount.isMounted })
    }

    private func setRole(_ drive: EmulatedDrive, _ driveID: String, _ role: String?) throws {
        let body = role.map { #"{"driveId":"\#(driveID)","role":"\#($0)"}"# } ?? #"{"driveId":"\#(driveID)","role":null}"#
        let request = TransportRequest(method: "POST", url: drive.baseURL + "/__emulator/membership",
                                       headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        XCTAssertEqual(try drive.api().executor.execute("control", request).status, 200)
    }

    /// Membership follows My Drive's change feed (`changeType: drive`), not the listing's TTL (5
    /// minutes here): a drive the user leaves goes within a poll or two, one joined again comes
    /// back, read-only for a reader.
    func testADriveLeftOrJoinedShowsWithinAPoll() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mount = try drive.mount(extraArguments: ["--account", "--dir-cache-ttl", "10m"])
        let shared = mount.path("Shared drives")
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", shared]).output, "Design\nTeam files\n")
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("Shared drives/Design/logo.txt")]).output, "logo\n")
        let design = try drive.api().resolveSharedDrive("Design").id

        try setRole(drive, design, nil)
        let polls = drive.requests("changes.list")
        XCTAssertTrue(poll(timeout: 30) { (try? ExternalCommand.tool("ls", ["-A", shared]).output) == "Team files\n" },
                      "Design is gone after the feed said so: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(drive.requests("changes.list") - polls, 3, "within a poll or two: \(drive.statsSummary())")
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("Shared drives/Design/logo.txt")))

        try setRole(drive, design, "reader")
        XCTAssertTrue(poll(timeout: 30) { (try? ExternalCommand.tool("ls", ["-A", shared]).output) == "Design\nTeam files\n" },
                      drive.statsSummary())
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("Shared drives/Design/logo.txt")]).output, "logo\n")
        // A reader writes nothing: the kernel is shown no write bit, and a write is refused.
        let touched = try ExternalCommand.tool("touch", [mount.path("Shared drives/Design/new.txt")])
        XCTAssertNotEqual(touched.status, 0, touched.summary)
        XCTAssertTrue(touched.errorOutput.contains("Permission denied"), touched.summary)
        _ = try mount.unmount()
        XCTAssertTrue(poll(timeout: 30) { !mount.isMounted })
    }

    /// `Trash/` through the kernel: a file trashed on Drive is listed, `mv` out restores it, `rm`
    /// deletes another for good.
    func testTrashShowsWhatDriveTrashedAndMvRestoresRmDeletes() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try drive()
        defer { drive.stop() }
        let mount = try drive.mount(extraArguments: ["--account"])
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Trash")]).output, "")
        let other = try drive.api()
        let mine = try drive.file(at: "mine.txt")
        _ = try other.trash(mine.id)
        let doomed = try other.createFile(name: "doomed.txt", parent: "root", source: .bytes(Array("bye\n".utf8)))
        _ = try other.trash(doomed.id)
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Trash")]).output, "doomed.txt\nmine.txt\n")

        let restored = try ExternalCommand.tool("mv", [mount.path("Trash/mine.txt"), mount.path("My Drive/mine.txt")])
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertFalse(try other.getFile(mine.id).trashed)
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("My Drive/mine.txt")]).output, "in my drive\n")
        let removed = try ExternalCommand.tool("rm", [mount.path("Trash/doomed.txt")])
        XCTAssertEqual(removed.status, 0, removed.summary)
        XCTAssertThrowsError(try other.getFile(doomed.id), "deleted for good")
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.path("Trash")]).output, "")
        let refused = try ExternalCommand.tool("touch", [mount.path("Trash/new.txt")])
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        _ = try mount.unmount()
        XCTAssertTrue(poll(timeout: 30) { !mount.isMounted })
    }

    func testAccountAndSharedDriveExcludeEachOther() throws {
        let drive = try drive()
        defer { drive.stop() }
        let mountpoint = drive.temp.appendingPathComponent("unused-mnt").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let result = try DriveFSBinary.run(["mount", mountpoint, "-f", "--account", "--shared-drive", "Design",
                                            "--api-url", drive.baseURL + "/", "--token-url", drive.tokenURL],
                                           timeout: 30, environment: drive.environment)
        XCTAssertEqual(result.status, 2, result.summary)
        XCTAssertTrue(result.errorOutput.contains("--account and --shared-drive exclude each other"), result.summary)
        XCTAssertNil(MountedDriveFS.mountEntry(for: mountpoint))
    }
}
