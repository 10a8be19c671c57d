import DriveClient
import DriveEmulator
import Foundation
import TestSupport
import XCTest

/// Issue 7's promise: whatever `close` accepted reaches Drive through crashes, restarts, expired
/// tokens and server errors, once, with the right bytes. `kill -9` with 100 files queued, then a
/// new mount; uploads under a 5xx storm, 10-second access tokens, connection resets mid-upload
/// and an emulator restart. Each ends with `drivefs unmount` and an exact comparison of Drive's
/// folder with the source: every file once, each with the source's md5, nothing else.
final class DriveMountWriteRecoveryTests: XCTestCase {
    /// Local files to upload: `small` of 8 KiB, `medium` of 300 KB (one multipart request each,
    /// long enough to be cut mid-body), and the `large` sizes (resumable, in several chunks).
    private func sourceFiles(_ root: URL, small: Int, medium: Int, large: [Int], seed: UInt64) throws -> [String: String] {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for i in 0..<small {
            try Data(TestContent.bytes(count: 8 << 10, seed: seed &+ UInt64(i))).write(to: root.appendingPathComponent(String(format: "small-%03d.bin", i)))
        }
        for i in 0..<medium {
            try Data(TestContent.bytes(count: 300_000 + i, seed: seed &+ 1_000 &+ UInt64(i)))
                .write(to: root.appendingPathComponent(String(format: "medium-%02d.bin", i)))
        }
        for (i, size) in large.enumerated() {
            try TestContent.writeFile(root.appendingPathComponent("large-\(i).bin"), size: size, seed: seed &+ 2_000 &+ UInt64(i))
        }
        return try WriteTests.localMD5s(root)
    }

    /// Drive's copy of `folder` (a top-level folder) equals `expected` exactly, and the folder
    /// itself exists once.
    private func assertArrivedOnce(_ drive: EmulatedDrive, _ folder: String, _ expected: [String: String], _ what: String,
                                   file: StaticString = #filePath, line: UInt = #line) throws {
        let top = try RemoteTree.read(drive)
        XCTAssertEqual(top.entries.filter { $0.path == folder }.count, 1, "\(what): the folder \(folder) on Drive once", file: file, line: line)
        let problems = try RemoteTree.read(drive, at: folder).problems(comparedWith: expected)
        XCTAssertTrue(problems.isEmpty, "\(what): every accepted file must be on Drive exactly once with its md5:\n"
                      + WriteTests.describe(problems), file: file, line: line)
    }

    /// Files of `folder` on Drive so far (0 while the folder is not there).
    private func landed(_ drive: EmulatedDrive, _ folder: String) -> Int {
        (try? RemoteTree.read(drive, at: folder).files.count) ?? 0
    }

    private func faultCount(_ drive: EmulatedDrive, _ statuses: [String]) -> Int {
        drive.emulator.stats().methods.values.reduce(0) { sum, m in sum + statuses.reduce(0) { $0 + (m.statuses[$1] ?? 0) } }
    }

    // MARK: kill -9

    func testKilledWithUploadsQueuedTheNextMountUploadsEachFileOnce() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = drive.temp.appendingPathComponent("source/queued")
        let expected = try sourceFiles(source, small: 100, medium: 0, large: [], seed: 8_000)

        let first = try drive.mount()
        // The first three uploads land but their answers are lost (reset after the server acted:
        // only the pre-generated IDs can stop a duplicate); every later upload stalls, so the rest
        // stay queued while the daemon lives.
        drive.emulator.addFaults([
            FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 3),
            FaultRule(method: "files.create.upload", action: .stall(seconds: 900), times: nil),
            FaultRule(method: "files.update.upload", action: .stall(seconds: 900), times: nil),
        ])
        try ExternalCommand.tool("cp", ["-r", source.path, first.path("queued")], timeout: 120).requireSuccess("cp -r of 100 files into the mount")
        let partly = poll(timeout: 30, interval: 0.2) { landed(drive, "queued") >= 3 }
        XCTAssertTrue(partly, "the first 3 uploads (answers lost) should land within 30 s; \(landed(drive, "queued")) did (\(drive.statsSummary()))")
        let before = landed(drive, "queued")
        XCTAssertLessThan(before, 100, "uploads stall: fewer than 100 files may be on Drive before the kill")
        XCTAssertLessThan(drive.answered("files.create.upload", status: "200"), 100, "fewer than 100 uploads answered before the kill")
        print("write tests: \(before) of 100 files on Drive at the kill (\(drive.statsSummary()))")

        kill(first.process.processIdentifier, SIGKILL)
        XCTAssertTrue(ExternalCommand.waitForExit(first.process, timeout: 10), "kill -9 did not end drivefs")
        drive.emulator.clearFaults()

        // The same profile and cache directory, on the same mount point once the dead mount is cleaned up.
        let second = try drive.mount(mountpoint: first.mountpoint)
        try drive.drivefsUnmount(second)
        try assertArrivedOnce(drive, "queued", expected, "after kill -9 and a new mount")
    }

    // MARK: Faults

    func testUploadsSurviveA5xxStorm() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = drive.temp.appendingPathComponent("source/storm")
        let expected = try sourceFiles(source, small: 30, medium: 8, large: [12 << 20], seed: 9_000)
        let mount = try drive.mount()
        drive.emulator.addFaults([
            // The first uploads all fail, then 40 % of every request (uploads, chunks, polls, tokens) answers 503 or 500.
            FaultRule.status(500, method: "files.create.upload", times: 6),
            FaultRule.status(503, method: "*", times: 60, fraction: 0.4),
            FaultRule.status(500, method: "*", times: 20, fraction: 0.2),
        ], seed: 13)
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("storm")], timeout: 120).requireSuccess("cp -r into the mount")
        try drive.drivefsUnmount(mount, timeout: 300)
        let errors = faultCount(drive, ["500", "503"])
        print("write tests: 5xx storm: \(errors) error answers (\(drive.statsSummary()))")
        XCTAssertGreaterThanOrEqual(errors, 20, "the storm must have hit: \(drive.statsSummary())")
        drive.emulator.clearFaults()
        try assertArrivedOnce(drive, "storm", expected, "after a 5xx storm")
    }

    /// Tokens live 10 s: uploads keep going through several refreshes (a 12 MiB resumable upload at
    /// 1 MiB/s outlives its token), and through 401s for a token the server stopped accepting.
    func testUploadsSurviveAnAccessTokenThatExpiresEvery10Seconds() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty { $0.tokenLifetime = 10; $0.bandwidthBytesPerSecond = 1 << 20 }
        defer { drive.stop() }
        let source = drive.temp.appendingPathComponent("source/tokens")
        var expected = try sourceFiles(source, small: 0, medium: 0, large: [12 << 20], seed: 10_000)
        // No upload delay: each fsync of a new file waits for Drive (with one, it answers once kept here).
        let mount = try drive.mount(extraArguments: ["--upload-delay", "0"])
        try ExternalCommand.tool("mkdir", [mount.path("tokens")]).requireSuccess("mkdir tokens")
        try ExternalCommand.tool("cp", [source.appendingPathComponent("large-0.bin").path, mount.path("tokens/")], timeout: 60)
            .requireSuccess("cp of a 12 MiB file into the mount")

        // Rounds of three 256 KiB files, each written and fsynced (on Drive when fsync returns),
        // until the daemon has refreshed its token three times: the work spans 2+ token lifetimes.
        let tokensAtStart = drive.requests("token")
        let roundDir = try WriteTests.directory(drive.temp, "rounds")
        let writer = """
            import os, sys
            for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):
                data = open(src, "rb").read()
                fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)
            """
        let deadline = Date().addingTimeInterval(120)
        var round = 0
        while drive.requests("token") - tokensAtStart < 3 && round < 80 && Date() < deadline {
            if round == 2 {
                // The server refuses the current token (as after an expiry it did not foresee).
                drive.emulator.addFaults([FaultRule.status(401, method: "files.create.upload", times: 2)])
            }
            var arguments: [String] = []
            for k in 0..<3 {
                let name = String(format: "round-%02d-%d.bin", round, k)
                let bytes = TestContent.bytes(count: 256 << 10, seed: 10_100 &+ UInt64(round * 3 + k))
                try Data(bytes).write(to: roundDir.appendingPathComponent(name))
                expected[name] = WriteTests.md5(bytes)
                arguments += [roundDir.appendingPathComponent(name).path, mount.path("tokens/" + name)]
            }
            try WriteTests.python(writer, arguments, timeout: 120).requireSuccess("round \(round): write and fsync three files")
            round += 1
        }
        let refreshes = drive.requests("token") - tokensAtStart
        print("write tests: \(round) rounds, \(refreshes) token requests (\(drive.statsSummary()))")
        XCTAssertGreaterThanOrEqual(refreshes, 3, "the uploads must go on across at least 3 token refreshes (10 s tokens);"
                                    + " \(round) rounds made \(refreshes): \(drive.statsSummary())")
        try drive.drivefsUnmount(mount, timeout: 240)
        try assertArrivedOnce(drive, "tokens", expected, "with 10 s access tokens")
    }

    func testUploadsSurviveConnectionResetsMidUpload() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = drive.temp.appendingPathComponent("source/resets")
        let expected = try sourceFiles(source, small: 20, medium: 10, large: [12 << 20], seed: 11_000)
        let mount = try drive.mount()
        drive.emulator.addFaults([
            // The first four answers are lost after the server acted (the file landed)...
            FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 4),
            // ...then six bodies over 100 KB are cut mid-body (multipart uploads and resumable chunks)...
            FaultRule(method: "files.create.upload", action: .reset(afterBytes: 100_000, phase: .request), times: 6),
            // ...then two more after their first MiB (chunks of the large file, if it is still going).
            FaultRule(method: "files.create.upload", action: .reset(afterBytes: 1 << 20, phase: .request), times: 2),
        ])
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("resets")], timeout: 120).requireSuccess("cp -r into the mount")
        try drive.drivefsUnmount(mount, timeout: 240)
        let resets = drive.emulator.stats().methods["files.create.upload"]?.statuses["reset"] ?? 0
        print("write tests: resets: \(resets) connections reset (\(drive.statsSummary()))")
        XCTAssertGreaterThanOrEqual(resets, 10, "the first ten uploads' connections must have been reset: \(drive.statsSummary())")
        drive.emulator.clearFaults()
        try assertArrivedOnce(drive, "resets", expected, "after connection resets")
    }

    /// The emulator stops in the middle of the uploads (every connection cut, a 16 MiB resumable
    /// upload half done) and starts again on the same port over the same state (its resumable
    /// sessions included), as a server restart looks to a client.
    func testUploadsSurviveAnEmulatorRestartInTheMiddle() throws {
        _ = try MountedDriveFS.requireFuse()
        // 2 MiB/s per connection: slow enough that the restart falls in the middle.
        let drive = try EmulatedDrive.empty { $0.bandwidthBytesPerSecond = 2 << 20 }
        defer { drive.stop() }
        let source = drive.temp.appendingPathComponent("source/restart")
        let expected = try sourceFiles(source, small: 10, medium: 20, large: [16 << 20], seed: 12_000)
        let mount = try drive.mount()
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("restart")], timeout: 120).requireSuccess("cp -r into the mount")
        let started = poll(timeout: 60) { drive.answered("files.create.upload", status: "200") >= 3 }
        XCTAssertTrue(started, "some uploads should land before the restart: \(drive.statsSummary())")
        let before = landed(drive, "restart")
        XCTAssertLessThan(before, expected.count, "the restart must come before every file is on Drive")
        print("write tests: restart with \(before) of \(expected.count) files on Drive (\(drive.statsSummary()))")
        try drive.restartEmulator { $0.bandwidthBytesPerSecond = nil }
        try drive.drivefsUnmount(mount, timeout: 240)
        try assertArrivedOnce(drive, "restart", expected, "after an emulator restart")
    }
}
