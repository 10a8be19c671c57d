import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// `drivefs status` over a live mount of the emulator's Drive: the daemon's published status, as
/// `--json` prints it and as the table shows it, and what becomes of a status file whose daemon
/// is gone.
final class DriveMountStatusTests: XCTestCase {
    private func runStatus(_ drive: EmulatedDrive, _ arguments: [String] = []) throws -> ExternalCommand.Result {
        try DriveFSBinary.run(["status"] + arguments, timeout: 20, environment: drive.environment)
    }

    private func statuses(_ drive: EmulatedDrive, _ arguments: [String] = []) throws -> [MountStatus] {
        let run = try runStatus(drive, ["--json"] + arguments)
        XCTAssertEqual(run.status, 0, run.summary)
        do {
            return try JSONDecoder().decode([MountStatus].self, from: run.standardOutput)
        } catch {
            XCTFail("drivefs status --json printed what is not a [MountStatus]: \(error)\n\(run.output)")
            return []
        }
    }

    /// The daemon publishes right after the mount is live (on its serving thread): waits for it.
    private func waitForStatusFile(_ drive: EmulatedDrive, _ mount: MountedDriveFS) -> Bool {
        poll(timeout: 20) {
            FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(mount.process.processIdentifier).json")
        }
    }

    func testStatusJSONDescribesTheLiveMount() throws {
        _ = try MountedDriveFS.requireFuse()
        let content = TestContent.bytes(count: 300_000, seed: 7)
        let drive = try EmulatedDrive { seed in
            try Data(content).write(to: seed.appendingPathComponent("data.bin"))
        }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "1s", extraArguments: ["--cache-size", "64M"])
        XCTAssertTrue(waitForStatusFile(drive, mount), "no status file in \(drive.runtimeDirectory); log:\n\(mount.log)")
        XCTAssertEqual(try ExternalCommand.tool("cmp", ["-s", mount.path("data.bin"), drive.seed.appendingPathComponent("data.bin").path]).status, 0)
        // The first poll runs as the filesystem starts; the status shows it once it succeeded.
        XCTAssertTrue(drive.waitForPolls(2), "the change feed was not read: \(drive.statsSummary())")

        var found = try statuses(drive)
        if found.first?.changes.lastPoll == nil {
            // The poll the emulator counted may still be on its way back to the mount.
            XCTAssertTrue(poll(timeout: 10) { (try? self.statuses(drive).first?.changes.lastPoll) != nil })
            found = try statuses(drive)
        }
        XCTAssertEqual(found.count, 1, "\(found)")
        let status = try XCTUnwrap(found.first)
        XCTAssertEqual(status.format, MountStatus.currentFormat)
        XCTAssertEqual(status.mountpoint, mount.mountpoint)
        XCTAssertEqual(status.pid, mount.process.processIdentifier, "-f: the daemon is the process started")
        XCTAssertEqual(status.profile, "default")
        XCTAssertEqual(status.account, EmulatedDrive.account)
        XCTAssertEqual(status.drive, "My Drive")
        XCTAssertEqual(status.cache.capBytes, 64 << 20)
        XCTAssertEqual(status.cache.directory, drive.cacheDirectory)
        XCTAssertGreaterThanOrEqual(status.cache.usedBytes, Int64(content.count), "data.bin was read through the cache")
        XCTAssertLessThanOrEqual(status.cache.usedBytes, 1 << 20)
        XCTAssertEqual(status.uploads, .none, "read-only: no uploads")
        XCTAssertEqual(status.changes.pollIntervalSeconds, 1)
        XCTAssertNil(status.changes.lastError)
        let lag = try XCTUnwrap(status.changes.lagSeconds, "\(status)")
        XCTAssertLessThan(lag, 30, "polled every second")
        XCTAssertGreaterThanOrEqual(status.items, 1)
        XCTAssertNotNil(RFC3339.parseMillis(status.updated), status.updated)
        // Google's limits as the pacer holds them (the tests' mounts: 100 writes/s after 200).
        let pacing = try XCTUnwrap(status.pacing, "\(status)")
        XCTAssertEqual(pacing.writeRate, 100)
        XCTAssertEqual(pacing.writeBurst, 200)
        XCTAssertEqual(pacing.writeCeiling, 100, "a start above Google's 3 a second is its own ceiling")
        XCTAssertEqual(pacing.quotaMetering, "units")
        XCTAssertEqual(pacing.quotaPerMinute, 292_500)
        XCTAssertGreaterThan(pacing.quotaUsedLastMinute, 200, "data.bin's download costs 200 units, the listing and polls more")
        XCTAssertEqual(pacing.writesQueued, 0)
        XCTAssertEqual(pacing.quotaRefusals + pacing.writeRefusals, 0)

        // Only the mount asked for; a directory with no mount is a failure naming it.
        XCTAssertEqual(try statuses(drive, [mount.mountpoint]).map(\.pid), [status.pid])
        let elsewhere = try runStatus(drive, [drive.temp.path])
        XCTAssertEqual(elsewhere.status, 1, elsewhere.summary)
        XCTAssertTrue(elsewhere.errorOutput.contains("no live drivefs mount on"), elsewhere.summary)

        // The table: a header and one row with the same facts.
        let table = try runStatus(drive)
        XCTAssertEqual(table.status, 0, table.summary)
        let lines = table.output.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.first?.hasPrefix("MOUNTPOINT") == true, table.output)
        let row = try XCTUnwrap(lines.first { $0.hasPrefix(mount.mountpoint + " ") }, table.output)
        for fact in ["default", EmulatedDrive.account, "\(status.pid)", "of 64 MiB", "none", "ago"] {
            XCTAssertTrue(row.contains(fact), "'\(fact)' is not in the row: \(row)")
        }
        let limits = try XCTUnwrap(lines.first { $0.hasPrefix(mount.mountpoint + ": Google's limits: ") }, table.output)
        for fact in ["writes 0 queued at 100/s,", "of 292,500 units in the last minute", "refused 0 (quota) and 0 (writes)"] {
            XCTAssertTrue(limits.contains(fact), "'\(fact)' is not in: \(limits)")
        }

        // A clean unmount takes the file away.
        XCTAssertEqual(try mount.unmount().status, 0)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 20), "drivefs did not end after unmount")
        XCTAssertFalse(FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(status.pid).json"), "left behind at exit")
        XCTAssertEqual(try statuses(drive), [])
    }

    func testAStatusFileWhoseDaemonIsGoneIsIgnoredAndRemoved() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in try Data("x\n".utf8).write(to: seed.appendingPathComponent("x.txt")) }
        defer { drive.stop() }
        let mount = try drive.mount()
        XCTAssertTrue(waitForStatusFile(drive, mount), "no status file; log:\n\(mount.log)")
        let live = try XCTUnwrap(try statuses(drive).first)

        // A daemon that died without cleaning up: a process that has ended (and was reaped), and
        // a live process that is not the one that wrote the file (its start time differs).
        let deadPID = try deadProcessID()
        var dead = live
        dead.pid = deadPID
        dead.mountpoint = "/nonexistent/dead"
        try write(dead, in: drive)
        var reused = live
        reused.pid = getpid()
        reused.processStart = (StatusDirectory.processStartTime(getpid()) ?? 0) + 1
        reused.mountpoint = "/nonexistent/reused"
        try write(reused, in: drive)
        let garbledPID = try deadProcessID()
        try Data("not json".utf8).write(to: URL(fileURLWithPath: drive.runtimeDirectory + "/\(garbledPID).json"))

        let found = try statuses(drive)
        XCTAssertEqual(found.map(\.mountpoint), [mount.mountpoint], "only the live mount: \(found.map(\.mountpoint))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(deadPID).json"), "the dead daemon's file stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(getpid()).json"), "the reused pid's file stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(garbledPID).json"), "the garbled file stays")
        XCTAssertTrue(FileManager.default.fileExists(atPath: drive.runtimeDirectory + "/\(live.pid).json"))
    }

    /// The pid of a process that has ended and been reaped (so no process has it now, unless the
    /// kernel handed it out again within microseconds: then another is taken).
    private func deadProcessID() throws -> Int32 {
        for _ in 0..<10 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.run()
            process.waitUntilExit()
            if kill(process.processIdentifier, 0) != 0 && errno == ESRCH { return process.processIdentifier }
        }
        throw NoDeadPID()
    }

    struct NoDeadPID: Error, CustomStringConvertible { let description = "every ended process's pid was reused at once" }

    private func write(_ status: MountStatus, in drive: EmulatedDrive) throws {
        let data = try JSONEncoder().encode(status)
        try data.write(to: URL(fileURLWithPath: drive.runtimeDirectory + "/\(status.pid).json"))
    }

    /// Issue 9: `drivefs status --json` parsed during an upload shows it progressing. A 12 MiB file
    /// goes up at 2 MiB/s (a resumable upload in chunks) while the test reads the status; then
    /// `drivefs unmount` waits for it.
    func testStatusShowsAnUploadProgressing() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive(configure: { $0.bandwidthBytesPerSecond = 2 << 20 }) { _ in }
        defer { drive.stop() }
        let mount = try drive.mount()
        XCTAssertTrue(waitForStatusFile(drive, mount), "no status file in \(drive.runtimeDirectory); log:\n\(mount.log)")
        let bytes = TestContent.bytes(count: 12 << 20, seed: 77)
        let local = drive.temp.appendingPathComponent("big.bin")
        try Data(bytes).write(to: local)
        try ExternalCommand.tool("cp", [local.path, mount.path("big.bin")], timeout: 60).requireSuccess("cp of a 12 MiB file")
        var seen: [MountStatus.Upload] = []
        var queuedOrRunning = false
        _ = poll(timeout: 60) {
            guard let status = try? self.statuses(drive).first else { return false }
            if status.uploads.queued > 0 || !status.uploads.running.isEmpty { queuedOrRunning = true }
            if let upload = status.uploads.running.first(where: { $0.path.hasSuffix("big.bin") }) { seen.append(upload) }
            return seen.contains { $0.phase != .hashing && $0.bytesDone > 0 && $0.bytesDone < $0.size } || (queuedOrRunning && status.uploads.queued == 0 && status.uploads.running.isEmpty)
        }
        XCTAssertTrue(queuedOrRunning, "the status never showed the upload queued or running")
        XCTAssertTrue(seen.contains { $0.size == Int64(bytes.count) }, "the running upload's size: \(seen)")
        // Bytes sent, not bytes hashed before sending (`phase` hashing).
        XCTAssertTrue(seen.contains { $0.phase != .hashing && $0.bytesDone > 0 && $0.bytesDone < $0.size },
                      "the status must show the upload part done (bytes done between 0 and the size): \(seen)")
        try drive.drivefsUnmount(mount, timeout: 120)
        XCTAssertEqual(try drive.file(at: "big.bin").md5Checksum, Digest.hex(.md5, of: bytes))
    }
}
