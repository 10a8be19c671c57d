import DriveClient
import DriveSupport
import XCTest

final class PacerTests: XCTestCase {
    func testHundredAcquisitionsAtTenPerSecondWithBurstTenTakeNineSeconds() {
        let time = ManualTimeSource()
        let start = time.now()
        let pacer = Pacer(ratePerSecond: 10, burst: 10, time: time)
        for _ in 0..<100 { pacer.acquire() }
        XCTAssertEqual(time.now() - start, 9.0, accuracy: 1e-6)
        XCTAssertEqual(time.sleeps.count, 90)
    }

    func testBurstIsFreeAndIdleTimeRefillsOnlyUpToTheBurst() {
        let time = ManualTimeSource()
        let pacer = Pacer(ratePerSecond: 5, burst: 3, time: time)
        for _ in 0..<3 { XCTAssertEqual(pacer.acquire(), 0) }
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-9)
        time.advance(100) // a long idle period refills to the burst, not beyond
        for _ in 0..<3 { XCTAssertEqual(pacer.acquire(), 0) }
        XCTAssertEqual(pacer.acquire(), 0.2, accuracy: 1e-9)
    }

    func testConcurrentAcquirersShareTheRate() {
        // Real threads, real clock (short): 5 threads × 5 acquisitions at 50/s with burst 5 need ≥ 0.4 s.
        let pacer = Pacer(ratePerSecond: 50, burst: 5, time: SystemTimeSource())
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: 5) { _ in
            for _ in 0..<5 { pacer.acquire() }
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(elapsed, 0.39)
        XCTAssertLessThan(elapsed, 10, "generous: a shared machine can be slow; the lower bound is the contract")
    }
}
