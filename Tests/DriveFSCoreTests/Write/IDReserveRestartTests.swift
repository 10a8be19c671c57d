import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Issue 17: a create is local. The IDs of new files come from the reserve in the cache directory
/// (`<cache>/file-ids`), so a mount that was restarted, after a clean stop or a crash, creates
/// files with Drive unreachable, and they land once Drive answers: one generateIds request for
/// all three runs, and never one ID for two files.
final class IDReserveRestartTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        harness?.backend.unreachable = nil
        harness?.remove()
        harness = nil
    }

    private func drain() {
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
    }

    func testACreateAfterACrashWithDriveUnreachableUsesTheReserve() throws {
        // Run 1: a file and a folder, a clean unmount (the index is saved).
        try harness.mount()
        try harness.writeFile(.root, "one.txt", Array("one\n".utf8))
        _ = try harness.makeDirectory(.root, "d")
        drain()
        harness.unmount()
        XCTAssertEqual(fake.requests["files.generateIds"], 1)

        // Run 2: a file, then kill -9 (its claimed block dies with it).
        try harness.mount()
        try harness.writeFile(.root, "two.txt", Array("two\n".utf8))
        drain()
        (harness.fs.uploads as? UploadQueue)?.crashNow()
        harness.crash()
        XCTAssertEqual(fake.requests["files.generateIds"], 1, "the second run's IDs came from the reserve")

        // Run 3: Drive unreachable from the start (after the root and the token a mount needs), and
        // the mount offline (as the client marks it once its tries failed to connect); the root's
        // listing comes from the restored index.
        try harness.mount(beforeStart: {
            self.fake.unreachable = FakeDriveBackend.cannotConnect
            self.fake.reachability!.markOffline("test: connection refused")
        })
        let before = fake.requests["files.generateIds", default: 0]
        try harness.writeFile(.root, "three.txt", Array("three\n".utf8))
        XCTAssertEqual(try harness.lookup(.root, "three.txt").size, 6)
        XCTAssertEqual(fake.requests["files.generateIds", default: 0], before, "no generateIds: the ID came from the reserve")
        fake.unreachable = nil
        fake.reachability!.recordReached()
        drain()

        let onDrive = fake.children(of: fake.rootID)
        XCTAssertEqual(onDrive.map(\.name), ["d", "one.txt", "three.txt", "two.txt"])
        XCTAssertEqual(Set(onDrive.map(\.id)).count, 4, "four items, four IDs")
        let three = try XCTUnwrap(onDrive.first { $0.name == "three.txt" })
        XCTAssertEqual(fake.content(of: three.id), Array("three\n".utf8))
        XCTAssertEqual(fake.requests["files.generateIds"], 1, "one generateIds for the three runs")
        XCTAssertEqual(fake.filesCreated, 4, "no create met a taken ID: \(fake.requestSummary)")
    }

    /// A reserve the cache directory holds for another drive (another account's root, say) is
    /// ignored, never used: the first create costs one generateIds, and the reserve is replaced
    /// by this drive's.
    func testAReserveOfAnotherDriveIsIgnoredAndReplaced() throws {
        let path = harness.configuration.cacheDirectory.appendingPathComponent(FileIDReserveFile.fileName).path
        try FileManager.default.createDirectory(at: harness.configuration.cacheDirectory, withIntermediateDirectories: true)
        try FileIDReserveFile(path: path, owner: "another-root").save(["foreign-1", "foreign-2"])
        try harness.mount()
        try harness.writeFile(.root, "new.txt", Array("new\n".utf8))
        drain()
        XCTAssertEqual(fake.requests["files.generateIds"], 1)
        let made = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "new.txt" })
        XCTAssertFalse(made.id.hasPrefix("foreign"))
        XCTAssertEqual(FileIDReserveFile(path: path, owner: "another-root").load(), [], "no longer the other drive's")
        let ours = FileIDReserveFile(path: path, owner: fake.rootID).load()
        XCTAssertEqual(ours.count, FakeDriveBackend.idBatchSize - 32, "this drive's batch less the block claimed")
        XCTAssertFalse(ours.contains(made.id))
    }
}
