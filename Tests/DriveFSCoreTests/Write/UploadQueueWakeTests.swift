@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The upload queue's backoff sleeps until its end or until what ends it early wakes it: the job's
/// flag (a stop, a cancel), Drive answering again. The clock stands still (`StillClock`), so a
/// backoff that polls never ends and only a wake can end one; every wait here is bounded (10 s).
final class UploadQueueWakeTests: XCTestCase {
    /// An upload failing with 503s, in its first backoff (2 s, and the clock never moves).
    private func queueInBackoff(_ h: UploadQueueHarness, _ clock: StillClock) throws -> (UploadQueue, UploadRequest) {
        let queue = try UploadQueue(directory: h.uploads, backend: h.fake, transfers: 1, time: clock, log: h.log)
        let request = try h.newFile("a.txt")
        h.fake.failNext(method: "files.create.upload", count: 1_000)
        try queue.commit(request, contentPath: h.content("waits"), ready: true)
        h.start(queue)
        waitUntil("the upload backs off", timeout: 10) { clock.sleepsBegun == 1 }
        return (queue, request)
    }

    func testAStopEndsABackoffAtOnce() throws {
        let h = try UploadQueueHarness()
        let clock = StillClock()
        defer { clock.release() }
        let (queue, _) = try queueInBackoff(h, clock)
        let stopped = Locked(false)
        Thread {
            queue.stop()
            stopped.withLock { $0 = true }
        }.start()
        waitUntil("the stop returns", timeout: 10) { stopped.withLock { $0 } }
        clock.release()
        waitUntil("the stop returns once the clock is let go", timeout: 60) { stopped.withLock { $0 } }
        XCTAssertEqual(h.fake.requests["files.create.upload"], 1, "no other attempt")
    }

    func testRemovingTheFileEndsItsBackoffAtOnce() throws {
        let h = try UploadQueueHarness()
        let clock = StillClock()
        defer { clock.release() }
        let (queue, request) = try queueInBackoff(h, clock)
        XCTAssertTrue(try queue.cancel(request.fileID))
        waitUntil("the cancelled job leaves its transfer thread", timeout: 10) { queue.status.isIdle }
        XCTAssertEqual(h.fake.requests["files.create.upload"], 1, "no other attempt")
        clock.release()
        queue.stop()
    }

    /// Offline, the upload waits in backoff; Drive answering again wakes it, and the file lands
    /// although no time passed.
    func testDriveAnsweringAgainEndsABackoffAtOnce() throws {
        let h = try UploadQueueHarness()
        let clock = StillClock()
        defer { clock.release() }
        let reachability = try XCTUnwrap(h.fake.reachability)
        let queue = try UploadQueue(directory: h.uploads, backend: h.fake, transfers: 1, time: clock, log: h.log)
        let request = try h.newFile("held.txt")
        h.fake.unreachable = FakeDriveBackend.cannotConnect
        reachability.markOffline("test: connection refused")
        try queue.commit(request, contentPath: h.content("written offline"), ready: true)
        h.start(queue)
        waitUntil("the upload backs off", timeout: 10) { clock.sleepsBegun == 1 }
        h.fake.unreachable = nil
        reachability.recordReached()
        waitUntil("the file lands", timeout: 10) { h.rootNames() == ["held.txt"] }
        clock.release()
        queue.stop()
    }
}
