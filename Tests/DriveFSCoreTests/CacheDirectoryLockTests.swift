@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A new mount over a cache directory another daemon still holds: it waits (bounded, saying so)
/// while that daemon only finishes (its mount is gone: saving its index, draining uploads), and
/// is refused at once while that daemon still serves a live mount. The test's own lock stands in
/// for the old daemon; its "unmount" is the test releasing it.
final class CacheDirectoryLockTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachelock-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func testANewMountWaitsForAnUnmountedDaemonToFinish() throws {
        let old = try CacheDirectoryLock(directory: directory)
        old.recordHolder(pid: 4242, mountpoint: "/home/me/gdrive")
        XCTAssertEqual(CacheDirectoryLock.holder(of: directory), CacheDirectoryLock.Holder(pid: 4242, mountpoint: "/home/me/gdrive"))
        let waiting = expectation(description: "the new mount says it waits")
        let events = Locked<[CacheDirectoryLock.WaitEvent]>([])
        let policy = CacheDirectoryLock.WaitPolicy(timeout: 120, pollInterval: 0.01, isMounted: { _ in false }) { event in
            events.withLock { $0.append(event) }
            if case .waiting = event { waiting.fulfill() }
        }
        let outcome = Locked<Result<Void, CacheDirectoryLock.Busy>?>(nil)
        let done = expectation(description: "the wait ends")
        let directory = self.directory!
        Thread.detachNewThread {
            let result = Result { () throws(CacheDirectoryLock.Busy) in
                try CacheDirectoryLock.waitUntilFree(directory: directory, policy: policy)
            }
            outcome.withLock { $0 = result }
            done.fulfill()
        }
        wait(for: [waiting], timeout: 60)
        XCTAssertNil(outcome.withLock { $0 }, "the wait ended while the old daemon held the lock")
        old.release()
        wait(for: [done], timeout: 60)
        XCTAssertNoThrow(try outcome.withLock { $0 }?.get())
        guard case .waiting(let holder)? = events.withLock({ $0.first }) else { return XCTFail("\(events.withLock { $0 })") }
        XCTAssertEqual(holder, CacheDirectoryLock.Holder(pid: 4242, mountpoint: "/home/me/gdrive"))
        // Free again: the new mount takes it, with no record of a holder yet.
        let new = try CacheDirectoryLock(directory: directory)
        XCTAssertNil(CacheDirectoryLock.holder(of: directory))
        new.release()
    }

    func testALiveMountIsRefusedAtOnce() throws {
        let old = try CacheDirectoryLock(directory: directory)
        defer { old.release() }
        old.recordHolder(pid: 4242, mountpoint: "/home/me/gdrive")
        let asked = Locked<[String]>([])
        let policy = CacheDirectoryLock.WaitPolicy(timeout: 120, pollInterval: 0.01, isMounted: { path in
            asked.withLock { $0.append(path) }
            return true
        }) { event in XCTFail("reported \(event) for a live mount") }
        XCTAssertThrowsError(try CacheDirectoryLock.waitUntilFree(directory: directory, policy: policy)) { error in
            XCTAssertEqual(error as? CacheDirectoryLock.Busy, .serving(CacheDirectoryLock.Holder(pid: 4242, mountpoint: "/home/me/gdrive")))
        }
        XCTAssertEqual(asked.withLock { $0 }, ["/home/me/gdrive"])
    }

    func testTheWaitIsBounded() throws {
        let old = try CacheDirectoryLock(directory: directory)
        defer { old.release() }
        let events = Locked<[CacheDirectoryLock.WaitEvent]>([])
        let policy = CacheDirectoryLock.WaitPolicy(timeout: 0.2, pollInterval: 0.01, isMounted: { _ in false }) { event in
            events.withLock { $0.append(event) }
        }
        XCTAssertThrowsError(try CacheDirectoryLock.waitUntilFree(directory: directory, policy: policy)) { error in
            XCTAssertEqual(error as? CacheDirectoryLock.Busy, .stillFinishing(nil))
        }
        XCTAssertEqual(events.withLock { $0.first }, .waiting(nil), "a holder that never served a mount has no record")
    }

    func testMountinfoPathsAreDecoded() {
        let table = """
        36 35 98:0 / /mnt/plain rw,noatime master:1 - ext3 /dev/root rw
        40 35 0:41 / /home/me/my\\040drive rw,nosuid,nodev - fuse.drivefs drivefs:me@example.com rw,user_id=0
        """
        XCTAssertTrue(CacheDirectoryLock.isFuseMount("/home/me/my drive", mountinfo: table))
        XCTAssertFalse(CacheDirectoryLock.isFuseMount("/mnt/plain", mountinfo: table), "not FUSE")
        XCTAssertFalse(CacheDirectoryLock.isFuseMount("/home/me/gdrive", mountinfo: table))
    }
}
