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

/// `CancellationFlag.onCancel` / `remove` and `Wakeup`: the handlers a timed wait adds for its
/// duration, and the sleep they wake.
final class WakeupTests: XCTestCase {
    /// A handler removed when its wait ended is not called by a later cancel (a long-lived flag,
    /// a transfer thread's, does not collect one per backoff); one still added is.
    func testARemovedHandlerIsNotCalled() {
        let flag = CancellationFlag()
        let calls = Locked<[String]>([])
        let gone = flag.onCancel { calls.withLock { $0.append("removed") } }
        XCTAssertNotNil(gone)
        flag.remove(gone)
        flag.onCancel { calls.withLock { $0.append("kept") } }
        flag.cancel()
        XCTAssertEqual(calls.withLock { $0 }, ["kept"])
        // Added after the cancel: called at once, nothing to remove.
        XCTAssertNil(flag.onCancel { calls.withLock { $0.append("late") } })
        XCTAssertEqual(calls.withLock { $0 }, ["kept", "late"])
    }

    /// A wake that comes before the sleep ends it at once, and is taken: the next sleep lasts.
    func testAWakeBeforeTheSleepIsKeptUntilASleepTakesIt() {
        let wakeup = Wakeup()
        wakeup.wake()
        XCTAssertTrue(wakeup.wait(seconds: 3600), "the kept wake ended the hour at once")
        XCTAssertFalse(wakeup.wait(seconds: 0.001), "taken: nothing ends the next sleep early")
        wakeup.wake()
        XCTAssertTrue(SystemTimeSource().sleep(3600, until: wakeup))
    }

    /// A cancelled flag ends `sleep(_:unless:)` at once on the system clock, whether it came
    /// before the sleep or during it.
    func testACancelEndsASleepOnTheSystemClock() {
        let before = CancellationFlag()
        before.cancel()
        XCTAssertTrue(SystemTimeSource().sleep(3600, unless: before))
        let during = CancellationFlag()
        let done = expectation(description: "the hour's sleep ended")
        let started = Locked(false)
        Thread {
            started.withLock { $0 = true }
            XCTAssertTrue(SystemTimeSource().sleep(3600, unless: during))
            done.fulfill()
        }.start()
        while !started.withLock({ $0 }) {}
        during.cancel()
        wait(for: [done], timeout: 10)
    }
}
