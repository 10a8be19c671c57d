import DriveClient
import Foundation
import XCTest

/// The write side under bulk copies (issue 7, "Done when"): `cp -r` of 1,000 small files and a
/// large one, checked on Drive through the API and byte for byte through a second mount with an
/// empty cache; the request budget of 1,000 small creates; `rsync -a` twice, the second run
/// transferring nothing (sizes, mtimes, modes and links kept), also from a fresh mount.
final class DriveMountWriteCopyTests: XCTestCase {
    /// `count` files of 4 KiB of random content from `seed` below `root`, spread over `folders`
    /// folders (`dir-03/file-0042.bin`), or all in `root` when `folders` is 1.
    private func smallFiles(in root: URL, count: Int, folders: Int, seed: UInt64) throws {
        for i in 0..<count {
            let dir = folders > 1 ? root.appendingPathComponent(String(format: "dir-%02d", i % folders)) : root
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let path = dir.appendingPathComponent(String(format: "file-%04d.bin", i)).path
            guard FileManager.default.createFile(atPath: path, contents: Data(TestContent.bytes(count: 4096, seed: seed &+ UInt64(i)))) else {
                throw StepFailed(description: "cannot write the local source file \(path)")
            }
        }
    }

    func testCopyOfATreeOf1000SmallFilesAndALargeFileArrivesIntact() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = try WriteTests.directory(drive.temp, "source/tree")
        try smallFiles(in: source, count: 1000, folders: 10, seed: 1_000)
        // 40 MiB: far above the multipart limit (5 MB), so it goes up resumable.
        try TestContent.writeFile(source.appendingPathComponent("large.bin"), size: 40 << 20, seed: 1_001)
        let expected = try WriteTests.localMD5s(source)
        XCTAssertEqual(expected.count, 1001, "the local source tree")

        let mount = try drive.mount(pollInterval: "10m")
        let started = Date()
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("tree")], timeout: 300)
            .requireSuccess("cp -r of 1,000 files of 4 KiB and a 40 MiB file into the mount")
        let copied = Date()
        // New files are listed at once, before their uploads finish.
        let find = try ExternalCommand.tool("find", [mount.path("tree"), "-type", "f"], timeout: 60)
        XCTAssertEqual(find.output.split(separator: "\n").count, 1001,
                       "find in the mount right after cp -r must list all 1,001 copied files: \(find.summary.prefix(500))")
        try drive.drivefsUnmount(mount, timeout: 300)
        print("write tests: cp -r of 1,001 files took \(String(format: "%.1f", copied.timeIntervalSince(started))) s,"
              + " until unmounted \(String(format: "%.1f", Date().timeIntervalSince(started))) s (\(drive.statsSummary()))")

        let remote = try RemoteTree.read(drive, at: "tree")
        let problems = remote.problems(comparedWith: expected)
        XCTAssertTrue(problems.isEmpty, "after drivefs unmount every copied file must be on Drive exactly once with the source's md5:\n"
                      + WriteTests.describe(problems))
        XCTAssertEqual(remote.folders.map(\.path).sorted(), (0..<10).map { String(format: "dir-%02d", $0) },
                       "the copied folders on Drive, each once")

        let fresh = try drive.mountFresh(pollInterval: "10m")
        let diff = try ExternalCommand.tool("diff", ["-r", source.path, fresh.path("tree")], timeout: 300)
        XCTAssertEqual(diff.status, 0, "diff -r of the source against a second mount with an empty cache must find no difference: \(diff.summary)")
    }

    /// A large new file written from its start goes to Drive while it is written (early upload):
    /// the session and chunks arrive before `close`, nothing exists on Drive until the last chunk,
    /// and the whole costs the session, one request per chunk (8 then 16 MiB) and the last piece,
    /// plus one update for the time set after landing: the same count whether the writer was ahead
    /// of the stream or not.
    func testALargeFileGoesUpWhileItIsWrittenAndLandsOnce() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        drive.emulator.resetStats()
        let bytes = TestContent.bytes(count: 40 << 20, seed: 4_242)
        let path = mount.path("stream.bin")
        // One open that creates the file, as cp does (a create, a close and a second open would
        // make an empty file on Drive first, and then the writes would be an update).
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StepFailed(description: "cannot create \(path) on the mount: errno \(errno)") }
        var closed = false
        defer { if !closed { close(fd) } }
        var at = 0
        while at < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + at, min(1 << 20, bytes.count - at)) }
            guard n > 0 else { throw StepFailed(description: "write to \(path) failed: errno \(errno)") }
            at += n
        }
        let uploads = { drive.emulator.stats().methods["files.create.upload"]?.requests ?? 0 }
        let deadline = Date().addingTimeInterval(120)
        while uploads() < 2 && Date() < deadline { usleep(20_000) }
        XCTAssertGreaterThanOrEqual(uploads(), 2, "the session and a chunk must arrive while the file is open: \(drive.statsSummary())")
        let api = try drive.api()
        XCTAssertTrue(try api.listChildren(of: try api.getFile("root").id).filter { $0.name == "stream.bin" }.isEmpty,
                      "nothing may exist on Drive before the close")
        closed = true
        guard close(fd) == 0 else { throw StepFailed(description: "close of \(path) failed: errno \(errno)") }
        try drive.drivefsUnmount(mount, timeout: 300)
        let remote = try RemoteTree.read(drive)
        XCTAssertEqual(remote.problems(comparedWith: ["stream.bin": WriteTests.md5(bytes)]), [])
        XCTAssertEqual(uploads(), 1 + 2 + 1, "session, chunks of 8 and 16 MiB, the last 16 MiB: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(drive.emulator.stats().methods["files.update"]?.requests ?? 0, 1, drive.statsSummary())
    }

    /// Issue 7's number: `cp` of 1,000 files of 4 KiB into a folder costs at most 1,010 Drive API
    /// requests until all are on Drive (one multipart create per file with a pre-generated ID,
    /// IDs reserved in batches). Counted by the emulator from the cp to the end of `drivefs
    /// unmount`, the token endpoint excepted; the poll interval is 10 minutes, so the change feed
    /// adds nothing.
    func testCopyOf1000SmallFilesIntoAFolderTakesAtMost1010Requests() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = try WriteTests.directory(drive.temp, "source/batch")
        try smallFiles(in: source, count: 1000, folders: 1, seed: 2_000)
        let expected = try WriteTests.localMD5s(source)

        let mount = try drive.mount(pollInterval: "10m")
        XCTAssertTrue(drive.waitForPolls(1), "no change-feed read at start: \(drive.statsSummary())")
        drive.settle(quiet: 1, timeout: 20)
        drive.emulator.resetStats()
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("batch")], timeout: 300)
            .requireSuccess("cp -r of 1,000 files of 4 KiB into the mount")
        try drive.drivefsUnmount(mount, timeout: 300)
        let requests = drive.apiRequests()
        let summary = drive.statsSummary()
        print("budget: cp -r of 1,000 files of 4 KiB until unmounted: \(requests) requests (\(summary))")
        XCTAssertLessThanOrEqual(requests, 1010, "cp of 1,000 files of 4 KiB into a folder, counted from the cp to the end of"
                                 + " drivefs unmount, must take at most 1,010 Drive API requests (issue 7); it took \(requests): \(summary)")
        XCTAssertGreaterThanOrEqual(drive.requests("files.create.upload") + drive.requests("files.create"), 1000,
                                    "1,000 new files cannot reach Drive with fewer than 1,000 creates: \(summary)")

        let problems = try RemoteTree.read(drive, at: "batch").problems(comparedWith: expected)
        XCTAssertTrue(problems.isEmpty, "every copied file on Drive exactly once with the source's md5:\n" + WriteTests.describe(problems))
    }

    // MARK: rsync

    /// 40 files in nested folders: empty, small and a 3 MiB one, an executable (0755), a private
    /// one (0600), a symbolic link, an empty folder; every file and folder with its own mtime in
    /// the past.
    private func rsyncSource(_ root: URL) throws {
        let fm = FileManager.default
        func write(_ path: String, _ data: Data, mode: Int = 0o644, mtime: TimeInterval) throws {
            let url = root.appendingPathComponent(path)
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
            try fm.setAttributes([.posixPermissions: mode, .modificationDate: Date(timeIntervalSince1970: mtime)], ofItemAtPath: url.path)
        }
        let base: TimeInterval = 1_735_000_000  // December 2024
        try write("README.md", Data("# rsync source\n".utf8), mtime: base)
        try write("empty.txt", Data(), mtime: base + 11)
        try write("bin/tool.sh", Data("#!/bin/sh\necho rsync tool\n".utf8), mode: 0o755, mtime: base + 22)
        try write("private/key.pem", Data("not a real key\n".utf8), mode: 0o600, mtime: base + 33)
        try write("docs/nested/deep/note.txt", Data("three folders down\n".utf8), mtime: base + 44)
        try write("data/large.bin", Data(TestContent.bytes(count: 3 << 20, seed: 3_000)), mtime: base + 55)
        for i in 0..<34 {
            let size = (i * 7_919) % 150_000 + 1
            try write(String(format: "data/chunk-%02d.bin", i), Data(TestContent.bytes(count: size, seed: 3_001 + UInt64(i))),
                      mtime: base + 100 + Double(i) * 3_600)
        }
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("latest").path, withDestinationPath: "docs/nested/deep/note.txt")
        try fm.createDirectory(at: root.appendingPathComponent("emptydir"), withIntermediateDirectories: true)
        // Folders last, deepest first: writing into a folder changes its mtime.
        for (i, dir) in ["docs/nested/deep", "docs/nested", "docs", "bin", "private", "data", "emptydir", ""].enumerated() {
            try fm.setAttributes([.modificationDate: Date(timeIntervalSince1970: base - 1_000 * Double(i + 1))],
                                 ofItemAtPath: root.appendingPathComponent(dir).path)
        }
    }

    /// rsync's itemized changes (`>f+++++++++ data/x.bin`, `.d..t...... docs/`): what it found
    /// different and acted on.
    private func itemizedChanges(_ output: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: "^(?:[<>ch.*][fdLDS][^ ]{9}|\\*deleting) ")
        return output.split(separator: "\n").map(String.init).filter {
            pattern.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil
        }
    }

    private func assertTransfersNothing(_ run: ExternalCommand.Result, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(run.status, 0, "\(what): rsync failed: \(run.summary)", file: file, line: line)
        let transferred = run.output.split(separator: "\n").first { $0.hasPrefix("Number of regular files transferred:") }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "") ?? "") }
        XCTAssertEqual(transferred, 0, "\(what): rsync -a of an unchanged tree must transfer no file (sizes and mtimes kept);"
                       + " its --stats: \(run.output.suffix(1500))", file: file, line: line)
        let changes = itemizedChanges(run.output)
        XCTAssertEqual(changes, [], "\(what): rsync -a must find nothing to change (sizes, mtimes, modes, link targets kept),"
                       + " it itemized \(changes.count) change(s)", file: file, line: line)
    }

    func testRsyncTwiceTransfersNothingTheSecondTime() throws {
        _ = try MountedDriveFS.requireFuse()
        guard ExternalCommand.which("rsync") != nil else {
            throw MountedDriveFS.missingRequirement("rsync is missing: install it ('make deps') to run the rsync mount test")
        }
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = try WriteTests.directory(drive.temp, "source/proj")
        try rsyncSource(source)

        let mount = try drive.mount()
        try ExternalCommand.tool("rsync", ["-a", source.path + "/", mount.path("proj") + "/"], timeout: 120)
            .requireSuccess("first rsync -a of a 40-file tree into the mount")
        let again = try ExternalCommand.tool("rsync", ["-a", "--itemize-changes", "--stats", source.path + "/", mount.path("proj") + "/"],
                                             timeout: 120)
        assertTransfersNothing(again, "second rsync -a on the same mount")

        try drive.drivefsUnmount(mount)
        let expected = try WriteTests.localMD5s(source)
        let problems = try RemoteTree.read(drive, at: "proj").problems(comparedWith: expected)
        XCTAssertTrue(problems.isEmpty, "the rsynced files on Drive, each once (rsync's temporary files renamed, none left):\n"
                      + WriteTests.describe(problems))

        // What another machine sees: sizes, mtimes, modes and the link come from Drive.
        let fresh = try drive.mountFresh()
        let third = try ExternalCommand.tool("rsync", ["-a", "--itemize-changes", "--stats", source.path + "/", fresh.path("proj") + "/"],
                                             timeout: 120)
        assertTransfersNothing(third, "rsync -a again through a second mount with an empty cache")
        let diff = try ExternalCommand.tool("diff", ["-r", "--no-dereference", source.path, fresh.path("proj")], timeout: 60)
        XCTAssertEqual(diff.status, 0, "diff -r of the source against the fresh mount: \(diff.summary)")
    }
}
