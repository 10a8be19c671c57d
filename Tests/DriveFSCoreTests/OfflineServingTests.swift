import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Offline (issue 18): with Drive unreachable and the reachability saying so, the core serves what
/// it holds. Listings held are answered whatever their age (no listing could replace them), a name
/// they lack is ENOENT (not EIO), cached bytes are read, a read of what is not local fails at once
/// with EIO, and a file made offline lands once Drive answers. No time is measured: the listings
/// are made stale by moving the clock past their TTL, and requests are counted.
final class OfflineServingTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func tearDown() {
        harness?.backend.unreachable = nil
        harness?.remove()
        harness = nil
    }

    private func goOffline() {
        fake.unreachable = FakeDriveBackend.cannotConnect
        fake.reachability!.markOffline("test: connection refused")
    }

    private func goOnline() {
        fake.unreachable = nil
        fake.reachability!.recordReached()
    }

    func testOfflineTheHeldListingsAndCachedBytesAreServedAndNewFilesWait() throws {
        let clock = ShiftedClock()
        harness = try CoreHarness(time: clock) {
            $0.readOnly = false
            $0.directoryCacheTTL = 300
        }
        let folder = fake.addFolder("docs")
        fake.addFile("cached.txt", in: folder, content: Array("kept locally\n".utf8))
        fake.addFile("remote.bin", in: folder, content: CoreHarness.pattern(300_000, seed: 3))
        try harness.mount()
        let docs = try harness.resolve("docs").inode
        let cached = try harness.lookup(docs, "cached.txt").inode
        XCTAssertEqual(try harness.read(cached), Array("kept locally\n".utf8))
        let remote = try harness.lookup(docs, "remote.bin").inode
        // One create online fills the ID reserve (a mount's first create asks Drive for IDs).
        try harness.writeFile(.root, "online.txt", Array("online\n".utf8))
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60))

        goOffline()
        clock.shift(3600)  // every listing held is past its TTL: online, each would be listed again
        fake.resetCounters()
        XCTAssertEqual(try harness.lookup(docs, "cached.txt").size, 13, "a stale listing is served offline")
        XCTAssertThrowsError(try harness.lookup(docs, "missing.txt")) { XCTAssertEqual($0 as? FilesystemError, .notFound) }
        XCTAssertEqual(Set(try harness.listPlus(docs).map(\.entry.name)), [".", "..", "cached.txt", "remote.bin"])
        XCTAssertEqual(try harness.read(cached), Array("kept locally\n".utf8), "cached bytes are read offline")
        XCTAssertThrowsError(try harness.read(remote)) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EIO) }
        XCTAssertEqual(fake.requests["files.list", default: 0], 0, "no listing was tried: \(fake.requestSummary)")

        let made = try harness.writeFile(docs, "written offline.txt", Array("offline\n".utf8))
        XCTAssertEqual(try harness.read(made), Array("offline\n".utf8))

        goOnline()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "uploads did not drain: \(harness.fs.uploadStatus)")
        let onDrive = try XCTUnwrap(fake.children(of: folder).first { $0.name == "written offline.txt" })
        XCTAssertEqual(fake.content(of: onDrive.id), Array("offline\n".utf8))
        XCTAssertEqual(try harness.read(remote), CoreHarness.pattern(300_000, seed: 3), "online again: fetched")
    }
}

/// The system's clock moved on by `shift` (sleeps are real): listings grow old without waiting.
private final class ShiftedClock: TimeSource, @unchecked Sendable {
    private let offset = Locked(0.0)
    func shift(_ seconds: Double) { offset.withLock { $0 += seconds } }
    func now() -> Double { Date().timeIntervalSince1970 + offset.withLock { $0 } }
    func sleep(_ seconds: Double) { SystemTimeSource().sleep(seconds) }
}
