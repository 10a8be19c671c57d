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

    /// The whole order: `ChangesInFlight` → a copy's lock → the queue's → `handles` → `locals` →
    /// the table's state; the leaves (the table's state among them) one at a time.
    func testTheWholeOrderAndTheLeaves() throws {
        #if !DEBUG
        throw XCTSkip("the lock order is checked in debug builds only")
        #else
        let inFlight = RankedCondition(.changesInFlight), copy = RankedCondition(.localContent)
        let queue = RankedCondition(.uploadQueue)
        let handles = RankedLocked(.handles, 0), locals = RankedLocked(.locals, 0), table = RankedLocked(.nodeTable, 0)
        let cache = RankedCondition(.leaf)
        inFlight.lock()
        copy.lock()
        queue.lock()
        handles.withLock { _ in
            locals.withLock { _ in
                table.withLock { _ in
                    XCTAssertFalse(LockOrder.mayLock(.leaf), "no other leaf under the table's state")
                    XCTAssertFalse(LockOrder.mayLock(.handles), "nothing earlier under the table's state")
                }
            }
        }
        queue.unlock()
        copy.unlock()
        inFlight.unlock()
        cache.lock()
        XCTAssertFalse(LockOrder.mayLock(.nodeTable), "not the table's state under another leaf")
        XCTAssertFalse(LockOrder.mayLock(.leaf), "not two leaves")
        XCTAssertFalse(LockOrder.mayLock(.localContent), "nothing ranked under a leaf")
        cache.unlock()
        XCTAssertTrue(LockOrder.mayLock(.changesInFlight), "nothing held once every lock was let go")
        #endif
    }
}
