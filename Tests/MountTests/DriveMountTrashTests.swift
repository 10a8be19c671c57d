import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// `drivefs trash` through a live mount: files removed with `rm` are listed where they were (one
/// files.list), only those of a folder when it is named; a restore shows the file at once (the
/// mount polls once an hour here, so only the restore itself can show it), under the mount's rule
/// for two items of one name when a newer file took the name; emptying refuses without a terminal
/// and `--yes` empties in one files.emptyTrash; a refused empty, an unknown item and a path off any
/// mount fail with a clear message, changing nothing. The mounts send an `rm` at once
/// (`--upload-delay 0`): by default it reaches Drive's trash after the upload delay (a file made
/// again under the name meanwhile is a save), and these tests are of the trash, not of the delay.
final class DriveMountTrashTests: XCTestCase {
    func testListRestoreAndEmptyTheTrashThroughTheMount() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("notes.txt", in: seed, text: "the old notes\n")
            try tree.file("Projects/plan.txt", in: seed, text: "plan\n")
            try tree.file("Projects/keep.txt", in: seed, text: "keep\n")
            try tree.file("spare.txt", in: seed, text: "spare\n")
        }
        defer { drive.stop() }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }
        let mount = try drive.mount(pollInterval: "1h", extraArguments: ["--upload-delay", "0"])
        let notes = try drive.file(at: "notes.txt")
        let plan = try drive.file(at: "Projects/plan.txt")
        XCTAssertEqual(try ExternalCommand.shell("rm '\(mount.path("notes.txt"))' '\(mount.path("Projects/plan.txt"))'", timeout: 60).status, 0)
        XCTAssertTrue(try drive.api().getFile(plan.id).trashed, "rm moves to Drive's trash")
        XCTAssertTrue(drive.settle(), "the mount's index and the removals are done")

        // The list: one files.list, paths on the mount.
        var before = drive.requests("files.list")
        let listed = try drivefs(["trash", "list", "--ids", mount.path("")])
        XCTAssertEqual(listed.status, 0, listed.summary)
        XCTAssertEqual(drive.requests("files.list") - before, 1, "one request a listing: \(drive.statsSummary())")
        let lines = listed.output.split(separator: "\n").map(String.init)
        guard lines.count == 3 else { return XCTFail("a header and two items expected: \(listed.output)") }
        XCTAssertTrue(lines[0].hasPrefix("ID") && lines[0].contains("PATH") && lines[0].contains("TRASHED"), listed.output)
        XCTAssertTrue(lines[1].hasPrefix(plan.id) && lines[1].contains(mount.path("Projects/plan.txt")) && lines[1].contains("5 B"), listed.output)
        XCTAssertTrue(lines[2].hasPrefix(notes.id) && lines[2].contains(mount.path("notes.txt")), listed.output)
        let inFolder = try drivefs(["trash", "list", mount.path("Projects")])
        XCTAssertEqual(inFolder.status, 0, inFolder.summary)
        XCTAssertTrue(inFolder.output.contains(mount.path("Projects/plan.txt")), inFolder.output)
        XCTAssertFalse(inFolder.output.contains("notes.txt"), "only what was in Projects: \(inFolder.output)")

        // A restore shows the file at once, read back as it was.
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("Projects/plan.txt")))
        before = drive.requests("files.update")
        let restored = try drivefs(["trash", "restore", mount.path("Projects/plan.txt")])
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertEqual(restored.output, "Restored \(mount.path("Projects/plan.txt"))\n")
        XCTAssertEqual(drive.requests("files.update") - before, 1, "one files.update: \(drive.statsSummary())")
        XCTAssertEqual(try String(contentsOfFile: mount.path("Projects/plan.txt"), encoding: .utf8), "plan\n", "shown before any poll")
        XCTAssertFalse(try drive.api().getFile(plan.id).trashed)

        // A newer notes.txt took the name: the restored one is older and keeps it (the names rule).
        XCTAssertEqual(try ExternalCommand.shell("printf 'new notes\\n' > '\(mount.path("notes.txt"))'", timeout: 60).status, 0)
        let synced = try poll(timeout: 120, interval: 0.05) {
            try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.state", "--only-values", mount.path("notes.txt")], timeout: 30).output == "synced"
        }
        XCTAssertTrue(synced, "the new notes.txt reached Drive\n\(mount.log.suffix(2000))")
        let newID = try XCTUnwrap(try ExternalCommand.tool("getfattr", ["-n", "user.drive.id", "--only-values", mount.path("notes.txt")], timeout: 30).output)
        let clash = try drivefs(["trash", "restore", mount.path("notes.txt")])
        XCTAssertEqual(clash.status, 0, clash.summary)
        let suffixed = "notes (\(newID.prefix(8))).txt"
        XCTAssertTrue(clash.output.contains("now shows as '\(suffixed)'"), clash.summary)
        XCTAssertEqual(try String(contentsOfFile: mount.path("notes.txt"), encoding: .utf8), "the old notes\n")
        XCTAssertEqual(try String(contentsOfFile: mount.path(suffixed), encoding: .utf8), "new notes\n")

        // Errors: nothing in the trash of that name; a path off any mount.
        let unknown = try drivefs(["trash", "restore", mount.path("Projects/none.txt")])
        XCTAssertEqual(unknown.status, 1, unknown.summary)
        XCTAssertTrue(unknown.errorOutput.contains("is not in the trash"), unknown.summary)
        let elsewhere = try drivefs(["trash", "list", NSTemporaryDirectory()])
        XCTAssertEqual(elsewhere.status, 1, elsewhere.summary)
        XCTAssertTrue(elsewhere.errorOutput.contains("is not on a drivefs mount"), elsewhere.summary)

        // Emptying: refused with no terminal to ask on; refused by Drive; then --yes, one request.
        XCTAssertEqual(try ExternalCommand.shell("rm '\(mount.path("spare.txt"))'", timeout: 60).status, 0)
        let spare = try drive.file(at: "Projects/keep.txt")  // a file that stays
        before = drive.requests("files.emptyTrash")
        let asked = try drivefs(["trash", "empty", mount.path("")])
        XCTAssertEqual(asked.status, 1, asked.summary)
        XCTAssertTrue(asked.errorOutput.contains("no terminal to ask on") && asked.errorOutput.contains("--yes"), asked.summary)
        XCTAssertEqual(drive.requests("files.emptyTrash"), before, "nothing sent")
        drive.emulator.addFaults([.status(403, method: "files.emptyTrash", reason: "insufficientFilePermissions")])
        let refused = try drivefs(["trash", "empty", "--yes", mount.path("")])
        XCTAssertEqual(refused.status, 1, refused.summary)
        XCTAssertTrue(refused.errorOutput.contains("Drive refused") && refused.errorOutput.contains("nothing was deleted"), refused.summary)
        drive.emulator.clearFaults()
        let inTrash = try drivefs(["trash", "list", "--ids", mount.path("")])
        XCTAssertTrue(inTrash.output.contains(mount.path("spare.txt")), "still in the trash: \(inTrash.output)")
        before = drive.requests("files.emptyTrash")
        let emptied = try drivefs(["trash", "empty", "--yes", mount.path("")])
        XCTAssertEqual(emptied.status, 0, emptied.summary)
        XCTAssertEqual(drive.requests("files.emptyTrash") - before, 1)
        let empty = try drivefs(["trash", "list", mount.path("")])
        XCTAssertEqual(empty.output, "The trash is empty.\n", empty.summary)
        XCTAssertFalse(try drive.api().getFile(spare.id).trashed, "what was not in the trash stays")
    }
}

extension DriveMountTrashTests {
    /// On a terminal (a pseudo-terminal from script(1)), `drivefs trash empty` asks with the count;
    /// no deletes nothing, yes deletes: the trash counted again by the daemon, then one files.emptyTrash.
    func testEmptyingAsksFirstOnATerminal() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("a.txt", in: seed, text: "a\n")
            try tree.file("b.txt", in: seed, text: "b\n")
        }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "1h", extraArguments: ["--upload-delay", "0"])
        let a = try drive.file(at: "a.txt")
        XCTAssertEqual(try ExternalCommand.shell("rm '\(mount.path("a.txt"))' '\(mount.path("b.txt"))'", timeout: 60).status, 0)
        XCTAssertTrue(drive.settle())
        let command = "'\(try DriveFSBinary.path())' trash empty '\(mount.mountpoint)'"
        func onATerminal(answer: String) throws -> ExternalCommand.Result {
            try ExternalCommand.run("/usr/bin/script", ["-qec", command, "/dev/null"], timeout: 30, environment: drive.environment,
                                    input: Data(answer.utf8))
        }
        let lists = drive.requests("files.list")
        let no = try onATerminal(answer: "n\n")
        XCTAssertTrue(no.output.contains("Delete 2 items in the trash of \(mount.mountpoint) for good? [y/N]"), no.summary)
        XCTAssertTrue(no.output.contains("Nothing was deleted."), no.summary)
        XCTAssertEqual(drive.requests("files.emptyTrash"), 0)
        XCTAssertEqual(drive.requests("files.list") - lists, 1, "the count for the question")
        XCTAssertTrue(try drive.api().getFile(a.id).trashed)

        let yes = try onATerminal(answer: "y\n")
        XCTAssertTrue(yes.output.contains("Deleted 2 items for good."), yes.summary)
        XCTAssertEqual(drive.requests("files.emptyTrash"), 1)
        XCTAssertEqual(drive.requests("files.list") - lists, 3, "the question's count, and the daemon's before it empties")
        XCTAssertThrowsError(try drive.api().getFile(a.id), "deleted for good")
    }
}

extension DriveMountTrashTests {
    /// A `--shared-drive` mount: its own trash only (My Drive's trashed file is neither listed nor
    /// emptied), each item with the time Drive gives there; a restore Drive refuses to a member
    /// who only writes (403) restores nothing and says why; emptying sends the drive's ID.
    func testTheTrashOfASharedDrive() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            try Data("in my drive\n".utf8).write(to: seed.appendingPathComponent("mine.txt"))
            let team = seed.appendingPathComponent("@shared/Team files/plans")
            try FileManager.default.createDirectory(at: team, withIntermediateDirectories: true)
            try Data("the team's plan\n".utf8).write(to: team.appendingPathComponent("plan.txt"))
        }
        defer { drive.stop() }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }
        let mine = try drive.file(at: "mine.txt")
        _ = try drive.api().trash(mine.id)
        let mount = try drive.mount(pollInterval: "1h", extraArguments: ["--shared-drive", "Team files", "--upload-delay", "0"])
        XCTAssertEqual(try ExternalCommand.shell("rm '\(mount.path("plans/plan.txt"))'", timeout: 60).status, 0)

        let listed = try drivefs(["trash", "list", mount.mountpoint])
        XCTAssertEqual(listed.status, 0, listed.summary)
        let lines = listed.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, "the shared drive's trash only: \(listed.output)")
        XCTAssertTrue(lines[1].contains(mount.path("plans/plan.txt")), listed.output)
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        XCTAssertTrue(lines[1].contains("\(year)-") && lines[1].contains("Z"), "Drive gives the time in a shared drive: \(listed.output)")

        // A writer may not untrash in a shared drive (fileOrganizer may): Drive's 403, nothing changed.
        let team = try drive.api().resolveSharedDrive("Team files").id
        let request = TransportRequest(method: "POST", url: drive.baseURL + "/__emulator/membership",
                                       headers: [("Content-Type", "application/json")],
                                       body: .bytes(Array(#"{"driveId":"\#(team)","role":"writer"}"#.utf8)))
        XCTAssertEqual(try drive.api().executor.execute("control", request).status, 200)
        let refused = try drivefs(["trash", "restore", mount.path("plans/plan.txt")])
        XCTAssertEqual(refused.status, 1, refused.summary)
        XCTAssertTrue(refused.errorOutput.contains("Drive refused"), refused.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("plans/plan.txt")))

        let before = drive.requests("files.emptyTrash")
        let manager = TransportRequest(method: "POST", url: drive.baseURL + "/__emulator/membership",
                                       headers: [("Content-Type", "application/json")],
                                       body: .bytes(Array(#"{"driveId":"\#(team)","role":"organizer"}"#.utf8)))
        XCTAssertEqual(try drive.api().executor.execute("control", manager).status, 200)
        let emptied = try drivefs(["trash", "empty", "--yes", mount.mountpoint])
        XCTAssertEqual(emptied.status, 0, emptied.summary)
        XCTAssertEqual(drive.requests("files.emptyTrash") - before, 1)
        XCTAssertEqual(try drivefs(["trash", "list", mount.mountpoint]).output, "The trash is empty.\n")
        XCTAssertTrue(try drive.api().getFile(mine.id).trashed, "My Drive's trash is another trash")
    }
}

extension DriveMountTrashTests {
    /// A mount that started offline (Drive stopped): each trash command says Drive cannot be
    /// reached and exits 1 at once (the core asks nothing offline: TrashTests).
    func testOfflineTheTrashCommandsSayDriveCannotBeReached() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("a.txt", in: seed, text: "a\n") }
        defer { drive.stop() }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }
        var mount = try drive.mount()
        XCTAssertEqual(try ExternalCommand.shell("rm '\(mount.path("a.txt"))'", timeout: 60).status, 0)
        try drive.drivefsUnmount(mount)
        drive.stopEmulator()
        mount = try drive.mount()
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), mount.log)
        for arguments in [["trash", "list", mount.mountpoint], ["trash", "restore", mount.path("a.txt")],
                          ["trash", "empty", "--yes", mount.mountpoint]] {
            let result = try drivefs(arguments)
            XCTAssertEqual(result.status, 1, result.summary)
            XCTAssertTrue(result.errorOutput.contains("Google Drive cannot be reached (the mount is offline)"), result.summary)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("a.txt")))
    }
}
