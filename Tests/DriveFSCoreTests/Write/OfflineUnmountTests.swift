import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// An unmount while Drive is unreachable (issue 18, left by its first landing): the drain went on
/// for the whole `drainTimeout` (an hour by default) with nothing able to go, so `fusermount -u` on
/// a train left the daemon waiting and the next mount refused its cache. Offline for
/// `offlineDrainGrace` seconds of the drain, the unmount ends, what is left kept in the journal,
/// and the next mount with Drive back sends it.
final class OfflineUnmountTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }

    override func setUpWithError() throws {
        harness = try CoreHarness { c in
            c.readOnly = false
            // Long enough that a drain waiting it out fails the bounded wait below.
            c.drainTimeout = 600
            c.offlineDrainGrace = 0.5
        }
    }

    override func tearDown() {
        harness?.backend.unreachable = nil
        harness?.backend.reachability?.recordReached()
        harness?.remove()
        harness = nil
    }

    func testAnUnmountOfflineEndsAndTheNextMountSendsWhatWasLeft() throws {
        try harness.mount()
        // One create online fills the ID reserve, so that a create offline is local.
        try harness.writeFile(.root, "online.txt", Array("online\n".utf8))
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60))

        fake.unreachable = FakeDriveBackend.cannotConnect
        fake.reachability!.markOffline("test: connection refused")
        try harness.writeFile(.root, "train.txt", Array("written on the train\n".utf8))
        XCTAssertFalse(harness.fs.uploadStatus.isIdle, "the upload waits for Drive")

        let unmounted = DispatchSemaphore(value: 0)
        // The harness is used by this thread again only after the semaphore (or not at all).
        nonisolated(unsafe) let h = harness!
        Thread.detachNewThread {
            h.unmount()
            unmounted.signal()
        }
        XCTAssertEqual(unmounted.wait(timeout: .now() + 120), .success,
                       "the unmount ended while offline (it waited for the drain timeout before)")
        XCTAssertFalse(fake.children(of: fake.rootID).contains { $0.name == "train.txt" }, "nothing went while offline")

        // Drive is back: the next mount sends what the journal kept.
        fake.unreachable = nil
        fake.reachability!.recordReached()
        try harness.mount()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 60), "the kept upload went: \(harness.fs.uploadStatus)")
        let landed = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "train.txt" })
        XCTAssertEqual(fake.content(of: landed.id), Array("written on the train\n".utf8))
    }
}
