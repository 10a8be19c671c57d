import DriveSupport
import Foundation
import XCTest

/// `CancellationFlag.wakes`: a wait with no timeout that only a cancel can end.
final class CancellationWakeTests: XCTestCase {
    /// A waiter on a condition nothing else broadcasts returns once the flag is cancelled, also
    /// when the cancelling thread holds the condition's lock (the wake takes it on its own thread).
    func testACancelWakesAWaitWithNoTimeout() {
        for holdsLock in [false, true] {
            let condition = NSCondition()
            let flag = CancellationFlag()
            let waiting = expectation(description: "waiting")
            let woke = expectation(description: "woke")
            let thread = Thread {
                condition.lock()
                flag.wakes(condition)
                waiting.fulfill()
                while !flag.isCancelled { condition.wait() }
                condition.unlock()
                woke.fulfill()
            }
            thread.start()
            wait(for: [waiting], timeout: 60)
            // The waiter holds the lock until it waits: taking it here means it is waiting (or
            // about to check the flag again).
            condition.lock()
            if holdsLock {
                flag.cancel()
                condition.unlock()
            } else {
                condition.unlock()
                flag.cancel()
            }
            wait(for: [woke], timeout: 60)
        }
    }

    /// A flag cancelled before the wait: the check under the lock sees it, and the wake that
    /// `wakes` starts at once finds nobody waiting (no harm).
    func testAFlagCancelledBeforeTheWaitIsSeenAtOnce() {
        let condition = NSCondition()
        let flag = CancellationFlag()
        flag.cancel()
        condition.lock()
        flag.wakes(condition)
        XCTAssertTrue(flag.isCancelled)
        condition.unlock()
    }
}
