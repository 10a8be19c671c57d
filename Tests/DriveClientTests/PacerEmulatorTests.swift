import DriveClient
import DriveEmulator
import DriveSupport
import TestSupport
import XCTest

/// The pacer against the in-process emulator with Google's limits (`--limits google`): the emulator
/// and the client share one manual clock, so the emulator sees exactly the times the pacer granted,
/// and the test moves time itself (the pacer in `.ticked` mode): counts and order are exact, no
/// timing is measured.
final class PacerEmulatorTests: XCTestCase {
    /// Whether `condition` holds within `timeout` seconds of real time: for effects that land on other threads.
    private func eventually(_ timeout: Double = 10, _ condition: () -> Bool) -> Bool { poll(timeout: timeout, interval: 0.001, condition) }

    func testABurstOfCreatesDrawsNoRefusalAndADownloadIsNotHeldBehindIt() throws {
        let clock = ManualTimeSource()
        var config = EmulatorConfig(port: 0, clock: clock)
        config.driveLimits = .google
        let harness = try EmulatorHarness(config: config)
        defer { harness.stop() }
        // The defaults a mount uses (2.5 writes/s rising to 3 after a burst of 2; 90% of 325,000
        // units a minute).
        let pacer = Pacer(ratePerSecond: 100, burst: 200, time: clock, waiting: .ticked, quota: .default, writes: .default)
        let executor = DriveRequestExecutor(transport: harness.transport, tokens: harness.tokens, pacer: pacer,
                                            retryPolicy: .none, time: clock)
        let api = DriveAPI(executor: executor, endpoints: harness.endpoints)
        func creates() -> Int { harness.requests("files.create.upload") }

        let content = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let big = try api.createFile(name: "big.bin", parent: "root", source: .bytes(content))
        clock.advance(10) // the write budgets fill again

        let count = 40
        let failures = Locked<[String]>([])
        var done: [DispatchSemaphore] = []
        for n in 0..<count {
            let semaphore = DispatchSemaphore(value: 0)
            Thread {
                do {
                    _ = try RequestContext(priority: .background).scope {
                        try api.createFile(name: "small-\(n).txt", parent: "root", source: .bytes(Array("file \(n)\n".utf8)))
                    }
                } catch {
                    failures.withLock { $0.append("small-\(n): \(error)") }
                }
                semaphore.signal()
            }.start()
            done.append(semaphore)
        }
        // The write lane's burst (2) goes at once; the other 38 wait for their slots.
        XCTAssertTrue(pacer.waitUntilQueued(count - 2, timeout: 20))
        XCTAssertTrue(eventually { creates() == 3 }, "\(creates())")
        XCTAssertEqual(pacer.status.writesQueued, count - 2)

        for step in 0..<(count - 2) {
            if step == count / 2 {
                // A user's download in the middle of the backlog: sent without waiting for a write
                // slot (nothing moves the clock meanwhile, so no write can go either).
                let before = creates()
                let downloaded = Locked<[UInt8]?>(nil)
                let finished = DispatchSemaphore(value: 0)
                Thread {
                    downloaded.withLock { $0 = try? api.downloadData(big.id) }
                    finished.signal()
                }.start()
                XCTAssertEqual(finished.wait(timeout: .now() + 20), .success, "the download was held behind the writes")
                XCTAssertEqual(downloaded.withLock { $0 }, content)
                XCTAssertEqual(creates(), before, "no write went while the download did")
                XCTAssertEqual(pacer.status.writesQueued, count - 2 - step, "the backlog is still there")
            }
            // Each write's success climbs the lane, 0.05 a write from 2.5 up to Google's 3 (no
            // refusal yet). One write interval at the rate it has once the last write's answer came
            // (a hair more, so that the manual clock's rounding never leaves a slot just out of
            // reach): exactly one more write goes, and Drive refuses none.
            let expected = min(3, 2.5 + 0.05 * Double(creates()))
            XCTAssertTrue(eventually { abs(pacer.currentWriteRate! - expected) < 1e-9 }, "step \(step): \(pacer.currentWriteRate!)")
            clock.advance(1 / expected + 1e-4)
            pacer.tick()
            XCTAssertTrue(pacer.waitUntilQueued(count - 3 - step, timeout: 20), "step \(step)")
            XCTAssertTrue(eventually { creates() == 4 + step }, "step \(step): \(creates())")
        }
        for semaphore in done { XCTAssertEqual(semaphore.wait(timeout: .now() + 20), .success) }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(creates(), count + 1)
        XCTAssertEqual(harness.requests("files.get.media"), 1)
        let users = harness.emulator.stats().users ?? [:]
        XCTAssertEqual(users.count, 1)
        let user = try XCTUnwrap(users.values.first)
        XCTAssertEqual(user.writesRefused, 0, "no write was refused")
        XCTAssertEqual(user.quotaRefused, 0)
        XCTAssertEqual(user.writes, count + 1)
        XCTAssertEqual(pacer.status.writeRefusals, 0)
        XCTAssertEqual(pacer.currentWriteRate, 3, "the lane reached Google's write limit, and no further")
    }
}
