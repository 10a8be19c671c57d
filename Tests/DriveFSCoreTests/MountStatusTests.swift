@testable import DriveClient
import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// `DriveFilesystem.status()` (what the daemon publishes for `drivefs status`) over the fake, and
/// the runtime directory's rules: where it is, whom it must belong to, which files count.
final class MountStatusTests: XCTestCase {
    /// The write lane as `drivefs status` shows it: the writes that wait are the upload queue's
    /// backlog (each job at least one write) and the requests at the write lane, and the time to
    /// drain is theirs at the rate now. Before, only the pacer's waiters counted (at most the
    /// transfers running): 2 writes and 0.8 s shown for a backlog of 42 taking 16.8 s.
    func testTheWritesWaitingAreTheUploadBacklogAtTheWriteRate() {
        let pacer = Pacer.Status(requestRate: 100, configuredRequestRate: 100, quota: nil, quotaUsedLastMinute: 700, writeRate: 2.5,
                                 writes: WriteBudget(perSecond: 2.5, burst: 2), queued: 3, writesQueued: 2, quotaRefusals: 0,
                                 writeRefusals: 1, quotaBlockedUntil: nil, writesBlockedUntil: nil)
        let running = [UploadProgress(path: "/a", size: 1, bytesDone: 0), UploadProgress(path: "/b", size: 1, bytesDone: 0)]
        var pacing = MountStatus.Pacing(pacer, uploads: UploadQueueStatus(queued: 40, running: running))
        XCTAssertEqual(pacing.writesQueued, 42)
        XCTAssertEqual(try XCTUnwrap(pacing.writeDrainSeconds), 16.8, accuracy: 1e-9)
        XCTAssertEqual(pacing.requestsQueued, 3)
        XCTAssertEqual(pacing.writeRefusals, 1)
        // A rename waiting at the write lane beside the running uploads counts too.
        var more = pacer
        more.writesQueued = 3
        pacing = MountStatus.Pacing(more, uploads: UploadQueueStatus(queued: 0, running: running))
        XCTAssertEqual(pacing.writesQueued, 3)
        // No write lane: no drain time.
        var none = pacer
        none.writeRate = nil
        XCTAssertNil(MountStatus.Pacing(none, uploads: UploadQueueStatus(queued: 5)).writeDrainSeconds)
    }

    func testStatusShowsCacheUseAgainstTheCapAndTheFeedsLag() throws {
        let backend = FakeDriveBackend()
        let content = CoreHarness.pattern(300_000, seed: 3)
        backend.addFile("data.bin", content: content)
        let harness = try CoreHarness(backend: backend) { $0.cacheSize = 64 << 20 }
        defer { harness.remove() }
        let fs = try harness.mount()

        var status = fs.status()
        XCTAssertEqual(status.cache.capBytes, 64 << 20)
        XCTAssertEqual(status.cache.directory, harness.configuration.cacheDirectory.path)
        XCTAssertEqual(status.cache.usedBytes, 0)
        XCTAssertEqual(status.uploads, .none, "read-only: nothing to upload")
        XCTAssertEqual(status.changes.pollIntervalSeconds, 3600)
        XCTAssertNotNil(status.changes.lastPoll, "the poll at start succeeded")
        XCTAssertLessThan(try XCTUnwrap(status.changes.lagSeconds), 60)
        XCTAssertNil(status.changes.lastError)

        XCTAssertEqual(try harness.read(try harness.resolve("data.bin").inode), content)
        status = fs.status()
        XCTAssertGreaterThanOrEqual(status.cache.usedBytes, Int64(content.count))
        XCTAssertGreaterThanOrEqual(status.items, 2, "the root and data.bin")
    }

    func testAFailingChangeFeedShowsItsErrorUntilAPollSucceeds() throws {
        let backend = FakeDriveBackend()
        let harness = try CoreHarness(backend: backend)
        defer { harness.remove() }
        let fs = try harness.mount()
        let before = try XCTUnwrap(fs.status().changes.lastPoll)

        backend.changesFailure = DriveError.transport(.couldNotConnect("Drive is unreachable"))
        XCTAssertThrowsError(try fs.pollChanges())
        var changes = fs.status().changes
        XCTAssertEqual(changes.lastPoll, before, "the last success stays")
        XCTAssertTrue(changes.lastError?.contains("unreachable") == true, "\(changes)")

        backend.changesFailure = nil
        try fs.pollChanges()
        changes = fs.status().changes
        XCTAssertNil(changes.lastError)
        XCTAssertNotNil(changes.lagSeconds)
    }

    // MARK: The runtime directory

    func testTheRuntimeDirectoryIsChosenFromTheEnvironment() {
        let rows: [([String: String], uid_t, String)] = [
            (["DRIVEFS_RUNTIME_DIR": "/x/rt", "XDG_RUNTIME_DIR": "/run/user/1000"], 1000, "/x/rt"),
            (["XDG_RUNTIME_DIR": "/run/user/1000"], 1000, "/run/user/1000/drivefs"),
            (["XDG_RUNTIME_DIR": "/run/user/1000/"], 1000, "/run/user/1000/drivefs"),
            (["XDG_RUNTIME_DIR": "relative"], 1000, "/tmp/drivefs-1000"),
            (["DRIVEFS_RUNTIME_DIR": ""], 1000, "/tmp/drivefs-1000"),
            ([:], 0, "/run/drivefs"),
            ([:], 1000, "/tmp/drivefs-1000"),
        ]
        for (environment, uid, expected) in rows {
            XCTAssertEqual(StatusDirectory.resolve(environment, uid: uid).path, expected, "\(environment) uid \(uid)")
        }
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func testARuntimeDirectoryOthersCouldTamperWithIsRefused() throws {
        let temp = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let fresh = StatusDirectory(path: temp.appendingPathComponent("a/b/drivefs").path)
        XCTAssertNoThrow(try fresh.prepare())
        var st = stat()
        XCTAssertEqual(stat(fresh.path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)

        let open = temp.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        chmod(open.path, 0o777)
        XCTAssertThrowsError(try StatusDirectory(path: open.path).prepare()) { XCTAssertTrue("\($0)".contains("others may write"), "\($0)") }

        let link = temp.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: URL(fileURLWithPath: fresh.path))
        XCTAssertThrowsError(try StatusDirectory(path: link.path).prepare()) { XCTAssertTrue("\($0)".contains("not a directory"), "\($0)") }
    }

    private func sample(pid: Int32, mountpoint: String) -> MountStatus {
        MountStatus(mountpoint: mountpoint, profile: "default", account: "me@example.com", drive: "My Drive", pid: pid,
                    processStart: StatusDirectory.processStartTime(pid), version: "0.1.0",
                    started: "2026-12-01T10:00:00.000Z", updated: "2026-12-01T10:00:01.000Z",
                    filesystem: MountStatus.Filesystem(
                        cache: MountStatus.Cache(directory: "/c", usedBytes: 5, capBytes: 10),
                        uploads: MountStatus.Uploads(queued: 1, running: [MountStatus.Upload(path: "/a.txt", size: 10, bytesDone: 4)],
                                                     failed: 2, lastError: "quota"),
                        changes: MountStatus.Changes(pollIntervalSeconds: 30, lastPoll: nil, lagSeconds: nil, lastError: nil),
                        items: 3),
                    lastError: MountStatus.Problem(at: "2026-12-01T10:00:00.500Z", level: "warning", area: "fs", message: "m"))
    }

    func testPublishedStatusesAreReadBackAndDeadDaemonsFilesRemoved() throws {
        let temp = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let directory = StatusDirectory(path: temp.path)
        try directory.prepare()
        let mine = sample(pid: getpid(), mountpoint: "/b")
        try directory.publish(mine)
        XCTAssertEqual(directory.liveMounts(), [mine], "a full round trip, uploads included")

        // A process that has ended, a reused pid (another start time), and another format.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let dead = sample(pid: ended.processIdentifier, mountpoint: "/a")
        try directory.publish(dead)
        var reused = sample(pid: getppid(), mountpoint: "/c")
        reused.processStart = (reused.processStart ?? 0) + 1
        try directory.publish(reused)
        var future = sample(pid: getpid(), mountpoint: "/d")
        future.format = MountStatus.currentFormat + 1
        future.pid = 1
        try JSONEncoder().encode(future).write(to: URL(fileURLWithPath: directory.file(for: 1)))
        try Data("{".utf8).write(to: URL(fileURLWithPath: temp.appendingPathComponent(".1234.json.tmp-1-2").path))

        XCTAssertEqual(directory.liveMounts(removingDead: false).map(\.mountpoint), ["/b"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.file(for: dead.pid)), "kept when not removing")
        XCTAssertEqual(directory.liveMounts().map(\.mountpoint), ["/b"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file(for: dead.pid)), "an ended daemon's file goes")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.file(for: reused.pid)), "a reused pid's file goes")
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.file(for: 1)), "another format of a live pid stays")

        directory.remove(pid: getpid())
        XCTAssertEqual(directory.liveMounts(), [])
    }

    func testAProcessIsAliveOnlyWithItsOwnStartTime() {
        let start = StatusDirectory.processStartTime()
        XCTAssertNotNil(start, "/proc/self/stat")
        XCTAssertTrue(StatusDirectory.isAlive(pid: getpid(), processStart: start))
        XCTAssertTrue(StatusDirectory.isAlive(pid: getpid(), processStart: nil))
        XCTAssertFalse(StatusDirectory.isAlive(pid: getpid(), processStart: start.map { $0 + 1 }))
        XCTAssertFalse(StatusDirectory.isAlive(pid: Int32.max, processStart: nil))
    }
}
