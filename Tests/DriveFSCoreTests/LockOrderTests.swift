@testable import DriveFSCore
import XCTest

/// The core's lock order as debug builds check it (`LockOrder`): a copy's lock before the upload
/// queue's, never after; two copies' locks at most (an editor's save).
final class LockOrderTests: XCTestCase {
    func testRankedLocksAreCheckedInTheCoresOrder() throws {
        #if !DEBUG
        throw XCTSkip("the lock order is checked in debug builds only")
        #else
        let copy = RankedCondition(.localContent), other = RankedCondition(.localContent), third = RankedCondition(.localContent)
        let queue = RankedCondition(.uploadQueue)
        XCTAssertTrue(LockOrder.mayLock(.localContent))
        copy.lock()
        XCTAssertTrue(LockOrder.mayLock(.uploadQueue), "a copy's lock, then the queue's")
        XCTAssertTrue(LockOrder.mayLock(.localContent), "an editor's save holds two copies' locks")
        other.lock()
        XCTAssertFalse(LockOrder.mayLock(.localContent), "never three")
        other.unlock()
        copy.unlock()
        queue.lock()
        XCTAssertFalse(LockOrder.mayLock(.localContent), "never a copy's lock under the queue's")
        XCTAssertFalse(LockOrder.mayLock(.uploadQueue))
        queue.unlock()
        XCTAssertTrue(LockOrder.mayLock(.localContent), "nothing held once every lock was let go")
        third.lock()
        third.unlock()
        #endif
    }
}
