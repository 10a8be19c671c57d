@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// `BackgroundLoop`'s contract: wakes coalesce into one more run, runs never overlap, a stop lets
/// the run in progress end and nothing runs after it, a second start does nothing. Each waiting
/// run is held on a semaphore the test releases; no timing is asserted.
final class BackgroundLoopTests: XCTestCase {
    /// A body whose runs each wait for `release` (after saying they began on `began`).
    private final class HeldBody: Sendable {
        let began = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let inside = Locked(0)
        let overlapped = Locked(false)

        func run() {
            let now = inside.withLock { n -> Int in n += 1; return n }
            if now > 1 { overlapped.withLock { $0 = true } }
            began.signal()
            _ = gate.wait(timeout: .now() + 60)
            inside.withLock { $0 -= 1 }
        }
    }

    func testWakesWhileARunIsInProgressMakeOneMoreRun() {
        let loop = BackgroundLoop(name: "test-loop", interval: nil)
        let body = HeldBody()
        loop.start { body.run() }
        XCTAssertTrue(loop.isIdle)
        loop.wake()
        XCTAssertFalse(loop.isIdle)
        XCTAssertEqual(body.began.wait(timeout: .now() + 60), .success)
        loop.wake()
        loop.wake()
        loop.wake()
        XCTAssertFalse(loop.isIdle)
        body.gate.signal()
        XCTAssertEqual(body.began.wait(timeout: .now() + 60), .success)
        body.gate.signal()
        waitUntil("two runs, nothing asked for", { loop.runs == 2 && loop.isIdle })
        // Idle with nothing asked for: nothing can start a third run.
        XCTAssertEqual(loop.runs, 2)
        XCTAssertFalse(body.overlapped.withLock { $0 })
        loop.stop()
    }

    func testStopLetsTheRunEndAndAWakeAfterItDoesNothing() {
        let loop = BackgroundLoop(name: "test-loop", interval: nil)
        let body = HeldBody()
        loop.start(runFirst: true) { body.run() }
        XCTAssertEqual(body.began.wait(timeout: .now() + 60), .success)
        // The stop is asked for while the run is held (or, on a slow machine, just after it ended):
        // when it returns, the run has ended and no other began.
        let seen = Locked<(inside: Int, runs: Int)?>(nil)
        let stopped = DispatchGroup()
        stopped.enter()
        Thread {
            loop.stop()
            seen.withLock { $0 = (body.inside.withLock { $0 }, loop.runs) }
            stopped.leave()
        }.start()
        body.gate.signal()
        XCTAssertEqual(stopped.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(seen.withLock { $0 }?.inside, 0)
        XCTAssertEqual(seen.withLock { $0 }?.runs, 1)
        loop.wake()
        XCTAssertTrue(loop.isIdle, "a wake after stop asks for nothing")
        loop.start { body.run() }
        XCTAssertTrue(loop.isIdle, "a start after stop starts nothing")
        XCTAssertEqual(loop.runs, 1)
    }

    func testAnIntervalRunsWithoutWakes() {
        let loop = BackgroundLoop(name: "test-loop", interval: 0.1)
        let runs = Locked(0)
        loop.start { runs.withLock { $0 += 1 } }
        waitUntil("two runs on the timer alone", { runs.withLock { $0 } >= 2 })
        loop.stop()
        let after = runs.withLock { $0 }
        XCTAssertEqual(loop.runs, after, "nothing runs after stop")
    }

    func testASecondStartDoesNothing() {
        let loop = BackgroundLoop(name: "test-loop", interval: nil)
        let first = Locked(0), second = Locked(0)
        loop.start { first.withLock { $0 += 1 } }
        loop.start(runFirst: true) { second.withLock { $0 += 1 } }
        loop.wake()
        waitUntil("one run, nothing asked for", { loop.runs == 1 && loop.isIdle })
        loop.stop()
        XCTAssertEqual(first.withLock { $0 }, 1)
        XCTAssertEqual(second.withLock { $0 }, 0)
    }
}
