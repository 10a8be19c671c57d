import DriveClient
import DriveEmulator
import Foundation
import TestSupport
import XCTest

/// Issue 18: a mount that starts and works without the network. The drive is mounted once (its
/// index saved at unmount, a file read into the cache, a file made so the ID reserve holds IDs),
/// then the emulator is stopped: `drivefs mount` says it is offline and mounts from the saved index;
/// `ls -lR`, `stat` and the cached bytes answer, a read of what is not local fails with EIO (no
/// minute of retries: the command's own bound is generous), a file made offline reads back, and
/// `drivefs status` says since when it is offline; an fsync answers once the file is kept here. With the emulator back, the file reaches Drive.
final class DriveMountOfflineTests: XCTestCase {
    func testAMountStartsOfflineFromTheSavedIndexAndCatchesUpWhenDriveIsBack() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("docs/kept.txt", in: seed, text: "read before going offline\n")
            try tree.file("docs/remote.bin", in: seed, size: 300_000, seed: 9)
        }
        defer { drive.stop() }

        // Through tools with a bound, never in this process: a mount that stops answering must fail
        // the test, not hang it.
        func shell(_ script: String) throws -> ExternalCommand.Result { try ExternalCommand.shell(script, timeout: 60) }
        var mount = try drive.mount()
        XCTAssertEqual(try shell("cat '\(mount.path("docs/kept.txt"))'").output, "read before going offline\n")
        XCTAssertEqual(try shell("echo first > '\(mount.path("first.txt"))'").status, 0)
        try drive.drivefsUnmount(mount)

        drive.stopEmulator()
        mount = try drive.mount()
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), "the first line says it is offline:\n\(mount.log)")
        XCTAssertTrue(mount.log.contains("(offline)"), mount.log)

        let listing = try ExternalCommand.tool("ls", ["-lR", mount.mountpoint], timeout: 60)
        XCTAssertEqual(listing.status, 0, listing.summary)
        for name in ["docs", "kept.txt", "remote.bin", "first.txt"] { XCTAssertTrue(listing.output.contains(name), listing.summary) }
        XCTAssertEqual(try shell("cat '\(mount.path("docs/kept.txt"))'").output, "read before going offline\n")
        let uncached = try ExternalCommand.tool("cat", [mount.path("docs/remote.bin")], timeout: 60)
        XCTAssertNotEqual(uncached.status, 0, "content that is not local cannot be read offline")
        XCTAssertTrue(uncached.errorOutput.contains("Input/output error"), uncached.summary)
        let missing = try ExternalCommand.tool("stat", [mount.path("docs/nothing.txt")], timeout: 60)
        XCTAssertTrue(missing.errorOutput.contains("No such file or directory"), "a name the index lacks: \(missing.summary)")

        // fsync answers offline once the file is kept here (an editor's save must not wait for the network).
        let written = try shell("echo 'written offline' > '\(mount.path("docs/offline.txt"))' && sync '\(mount.path("docs/offline.txt"))'")
        XCTAssertEqual(written.status, 0, written.summary)
        XCTAssertEqual(try shell("cat '\(mount.path("docs/offline.txt"))'").output, "written offline\n")

        let status = try DriveFSBinary.run(["status", "--json"], timeout: 20, environment: drive.environment)
        XCTAssertEqual(status.status, 0, status.summary)
        XCTAssertTrue(status.output.contains("\"offlineSince\""), "drivefs status says since when: \(status.output)")

        try drive.startEmulatorAgain()
        let landed = poll(timeout: 180, interval: 0.5) { (try? drive.file(at: "docs/offline.txt")) != nil }
        XCTAssertTrue(landed, "the file made offline reaches Drive once it answers; log:\n\(mount.log.suffix(3000))")
        try drive.drivefsUnmount(mount)
        let onDrive = try drive.file(at: "docs/offline.txt")
        XCTAssertEqual(onDrive.size, 16)
    }

    /// Issue 18's "written and renamed offline land in order": with the emulator stopped, a file
    /// is written and renamed, a folder made, a file moved into it, another chmodded and touched to
    /// a date, a third removed (before, each of these but the first answered EIO). With the
    /// emulator back, Drive ends with exactly that state, and the requests are what the changes
    /// need: one create of the folder, one upload, one files.update for the move, one for the mode
    /// and time together, one for the trash; nothing else written (counted by the emulator from its
    /// restart to the end of `drivefs unmount`).
    func testWrittenAndRenamedOfflineLandInOrder() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("docs/a.txt", in: seed, text: "moved into a folder made offline\n")
            try tree.file("docs/b.txt", in: seed, text: "chmodded and touched offline\n")
            try tree.file("docs/gone.txt", in: seed, text: "removed offline\n")
        }
        defer { drive.stop() }
        func shell(_ script: String) throws -> ExternalCommand.Result { try ExternalCommand.shell(script, timeout: 60) }
        var mount = try drive.mount()
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-lR", mount.mountpoint], timeout: 60).status, 0)
        XCTAssertEqual(try shell("echo first > '\(mount.path("first.txt"))'").status, 0)  // fills the ID reserve
        try drive.drivefsUnmount(mount)

        drive.stopEmulator()
        mount = try drive.mount()
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), mount.log)
        let docs = mount.path("docs")
        let steps = [
            "echo 'written offline' > '\(docs)/new.txt'",
            "mv '\(docs)/new.txt' '\(docs)/renamed.txt'",
            "mkdir '\(docs)/made offline'",
            "mv '\(docs)/a.txt' '\(docs)/made offline/a.txt'",
            "chmod 600 '\(docs)/b.txt'",
            "touch -d '2020-01-02 03:04:05 UTC' '\(docs)/b.txt'",
            "rm '\(docs)/gone.txt'",
        ]
        for step in steps {
            let result = try shell(step)
            XCTAssertEqual(result.status, 0, "offline: \(step): \(result.summary)")
        }
        let shown = try ExternalCommand.tool("ls", ["-R", docs], timeout: 60)
        XCTAssertEqual(shown.output, "\(docs):\nb.txt\nmade offline\nrenamed.txt\n\n\(docs)/made offline:\na.txt\n", shown.summary)

        try drive.startEmulatorAgain()
        try drive.drivefsUnmount(mount)
        // Counted before this test's own look at Drive (which is counted too).
        let written = ["files.create", "files.create.upload", "files.update", "files.update.upload", "files.delete", "files.copy"]
            .map { ($0, drive.requests($0)) }
        let summary = drive.statsSummary()
        XCTAssertEqual(written.filter { $0.1 > 0 }.map { "\($0.0)=\($0.1)" },
                       ["files.create=1", "files.create.upload=1", "files.update=3"], summary)

        let folder = try drive.file(at: "docs/made offline")
        XCTAssertTrue(folder.isFolder)
        let a = try drive.file(at: "docs/made offline/a.txt")
        XCTAssertEqual(a.parents, [folder.id])
        let renamed = try drive.file(at: "docs/renamed.txt")
        XCTAssertEqual(renamed.size, 16)
        let b = try drive.file(at: "docs/b.txt")
        XCTAssertEqual(b.appProperties?["drivefs.mode"], "600")
        XCTAssertEqual(b.modifiedTime, 1_577_934_245_000)
        XCTAssertThrowsError(try drive.file(at: "docs/gone.txt"), "removed offline: in the trash")
        XCTAssertThrowsError(try drive.file(at: "docs/new.txt"))
        XCTAssertThrowsError(try drive.file(at: "docs/a.txt"))
        let names = try drive.api().listChildren(of: try drive.file(at: "docs").id).map(\.name).sorted()
        XCTAssertEqual(names, ["b.txt", "made offline", "renamed.txt"])
    }

    /// A shared drive mounted by name once is mounted by the same name offline: the name is
    /// resolved from what the profile remembers, and the drive's saved index serves the mount
    /// (before, the name needed Drive and the mount failed).
    func testASharedDriveMountedByNameStartsOfflineByName() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            let team = seed.appendingPathComponent("@shared/Team files/plans")
            try FileManager.default.createDirectory(at: team, withIntermediateDirectories: true)
            try Data("the team's plan\n".utf8).write(to: team.appendingPathComponent("plan.txt"))
        }
        defer { drive.stop() }
        var mount = try drive.mount(extraArguments: ["--shared-drive", "Team files"])
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("plans/plan.txt")], timeout: 60).output, "the team's plan\n")
        try drive.drivefsUnmount(mount)

        drive.stopEmulator()
        mount = try drive.mount(extraArguments: ["--shared-drive", "Team files"])
        XCTAssertTrue(mount.log.contains("offline: Google Drive cannot be reached"), "the first line says it is offline:\n\(mount.log)")
        XCTAssertTrue(mount.log.contains("shared drive 'Team files' mounted at"), mount.log)
        XCTAssertEqual(try ExternalCommand.tool("ls", ["-A", mount.mountpoint], timeout: 60).output, "plans\n")
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("plans/plan.txt")], timeout: 60).output, "the team's plan\n",
                       "the cached file reads offline")
        _ = try mount.unmount()
        XCTAssertTrue(poll(timeout: 30) { !mount.isMounted })

    }
}
