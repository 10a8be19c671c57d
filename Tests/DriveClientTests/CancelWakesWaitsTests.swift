@testable import DriveClient
import DriveSupport
import TestSupport
import XCTest

/// A cancel ends the executor's backoff and the pacer's wait at once, however long they are: the
/// waits sleep until their time or a cancel, woken by the flag's handler, never in short polls.
/// The clock stands still (`StillClock`), so a wait that polls never ends and only a wake can end
/// one; each wait is bounded (10 s) and fails, not hangs, when no wake comes.
final class CancelWakesWaitsTests: XCTestCase {
    private var clock: StillClock!

    override func setUp() { clock = StillClock() }
    override func tearDown() { clock.release() }

    /// A minute's backoff (full jitter at 1.0 of 60 s), every attempt failing with a 503.
    private func executor() -> DriveRequestExecutor {
        DriveRequestExecutor(transport: ScriptedTransport(), tokens: nil, pacer: nil,
                             retryPolicy: RetryPolicy(maxAttempts: 5, maxElapsed: 3600, baseDelay: 60, maxDelay: 60,
                                                      random: FixedRandom(value: 1)),
                             time: clock)
    }

    private static let unavailable = DriveError.server(GoogleErrorInfo(status: 503, reason: "backendError", message: "try again"))

    /// Runs a call that fails and backs off, under `flag`, on a thread of its own; the answer is
    /// set when it returns.
    private func startFailingCall(_ exec: DriveRequestExecutor, flag: CancellationFlag,
                                  attempted: (@Sendable () -> Void)? = nil) -> Locked<(any Error)?> {
        let outcome = Locked<(any Error)?>(nil)
        Thread {
            do {
                try RequestContext(cancellation: flag).scope {
                    _ = try exec.retrying("files.get") { _ -> Int in
                        attempted?()
                        throw Self.unavailable
                    }
                }
            } catch {
                outcome.withLock { $0 = error }
            }
        }.start()
        return outcome
    }

    func testACancelEndsAMinuteLongBackoffAtOnce() {
        let flag = CancellationFlag()
        let outcome = startFailingCall(executor(), flag: flag)
        waitUntil("the call backs off", timeout: 10) { clock.sleepsBegun == 1 }
        flag.cancel()
        waitUntil("the cancelled call returns", timeout: 10) { outcome.withLock { $0 != nil } }
        XCTAssertEqual(outcome.withLock { $0 } as? DriveError, .cancelled)
        XCTAssertEqual(clock.sleepsBegun, 1, "no other attempt, no other sleep")
    }

    /// The cancel comes from another thread as the call fails its first attempt, so it lands before
    /// the backoff's look at the flag, between that look and the sleep, or during the sleep; none
    /// hangs.
    func testACancelRacingTheStartOfABackoffNeverHangs() {
        let exec = executor()
        for round in 0..<300 {
            let flag = CancellationFlag()
            let attempted = Locked(false)
            let outcome = startFailingCall(exec, flag: flag) { attempted.withLock { $0 = true } }
            Thread {
                while !attempted.withLock({ $0 }) {}
                flag.cancel()
            }.start()
            guard waitUntil("round \(round): the cancelled call returns", timeout: 10, { outcome.withLock { $0 != nil } }) else { return }
            XCTAssertEqual(outcome.withLock { $0 } as? DriveError, .cancelled, "round \(round)")
        }
    }

    /// A pacer with one slot a second: the first request takes it, the next two wait (the first
    /// of them sleeps on the clock for everyone, the other on the pacer's condition). Each cancel
    /// ends its own wait at once; the other waits on.
    func testACancelEndsAPacerWaitAtOnce() {
        let pacer = Pacer(ratePerSecond: 1, burst: 1, time: clock, waiting: .sleeping)
        XCTAssertEqual(pacer.acquire(priority: .interactive, cancellation: nil), .granted(waited: 0))
        let flags = [CancellationFlag(), CancellationFlag()]
        let admissions = Locked<[Int: Pacer.Admission]>([:])
        for (i, flag) in flags.enumerated() {
            Thread {
                let admission = pacer.acquire(priority: .interactive, cancellation: flag)
                admissions.withLock { $0[i] = admission }
            }.start()
            waitUntil("waiter \(i) queued", timeout: 10) { pacer.queued == i + 1 }
        }
        waitUntil("the first waiter sleeps on the clock", timeout: 10) { clock.sleepsBegun == 1 }
        flags[0].cancel()
        waitUntil("the sleeping waiter returns", timeout: 10) { admissions.withLock { $0[0] != nil } }
        XCTAssertEqual(admissions.withLock { $0[0] }, .cancelled)
        XCTAssertNil(admissions.withLock { $0[1] }, "the other waits on (it sleeps on the clock now)")
        waitUntil("the other waiter sleeps on the clock", timeout: 10) { clock.sleepsBegun == 2 }
        flags[1].cancel()
        waitUntil("the second waiter returns", timeout: 10) { admissions.withLock { $0[1] != nil } }
        XCTAssertEqual(admissions.withLock { $0[1] }, .cancelled)
        XCTAssertEqual(pacer.queued, 0)
    }

    /// A cancel racing a request's arrival in a full pacer: it lands before the wait, between its
    /// look at the flag and its sleep, or during it; none hangs.
    func testACancelRacingThePacersWaitNeverHangs() {
        for round in 0..<300 {
            let pacer = Pacer(ratePerSecond: 1, burst: 1, time: clock, waiting: .sleeping)
            _ = pacer.acquire(priority: .interactive, cancellation: nil)
            let flag = CancellationFlag()
            let admission = Locked<Pacer.Admission?>(nil)
            let started = Locked(false)
            Thread {
                started.withLock { $0 = true }
                let answer = pacer.acquire(priority: .interactive, cancellation: flag)
                admission.withLock { $0 = answer }
            }.start()
            while !started.withLock({ $0 }) {}
            flag.cancel()
            guard waitUntil("round \(round): the cancelled request returns", timeout: 10, { admission.withLock { $0 != nil } }) else { return }
            XCTAssertEqual(admission.withLock { $0 }, .cancelled, "round \(round)")
        }
    }
}
