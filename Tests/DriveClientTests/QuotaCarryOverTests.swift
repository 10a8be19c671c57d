import DriveClient
import DriveSupport
import Foundation
import XCTest

/// The quota a mount spent in its last minute, left in its cache directory for the next mount of
/// it (`QuotaCarryOver`), over an injected clock: the new pacer's first requests wait for those
/// units to leave the minute, exactly as the old pacer's would have.
final class QuotaCarryOverTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("quota-carry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func pacer(_ time: ManualTimeSource, _ quota: QuotaBudget = .units(perMinute: 1_000)) -> Pacer {
        Pacer(ratePerSecond: 1_000, burst: 1_000, time: time, quota: quota)
    }

    /// A mount that spent 900 of its 1,000 units, stopped; a new one over the same cache directory
    /// 15 s later: its first download (200) waits until the 800 spent first leave the minute (45 s),
    /// where a pacer that starts with an empty minute sends it at once.
    func testAMountStartedRightAfterABusyOneWaitsForWhatItSpentInTheMinute() throws {
        let time = ManualTimeSource()
        let start = time.now()
        let first = pacer(time)
        for _ in 0..<4 { XCTAssertEqual(first.acquire(priority: .interactive, charge: .download), .granted(waited: 0)) }
        time.advance(10)
        XCTAssertEqual(first.acquire(priority: .interactive, charge: .list), .granted(waited: 0))
        QuotaCarryOver.save(from: first, in: directory)
        XCTAssertEqual(first.quotaSpentLastMinute().map(\.units), [200, 200, 200, 200, 100])
        XCTAssertEqual(first.quotaSpentLastMinute().first?.at ?? 0, start, accuracy: 1e-6, "times since the epoch")

        time.advance(5)
        let fresh = pacer(time)
        XCTAssertEqual(QuotaCarryOver.load(into: fresh, from: directory.appendingPathComponent("elsewhere")), 0, "no file: nothing")

        let second = pacer(time)
        XCTAssertEqual(QuotaCarryOver.load(into: second, from: directory), 900)
        XCTAssertEqual(second.status.quotaUsedLastMinute, 900, "counted against this mount's budget at once")
        XCTAssertEqual(second.acquire(priority: .interactive, charge: .list), .granted(waited: 0), "100 more still fit")
        XCTAssertEqual(second.acquire(priority: .interactive, charge: .download), .granted(waited: 45),
                       "until the first mount's first downloads leave the minute")
        XCTAssertEqual(time.now() - start, 60, accuracy: 1e-6)

        XCTAssertEqual(fresh.acquire(priority: .interactive, charge: .download), .granted(waited: 0), "an empty minute")
    }

    /// Charges a minute old are dropped; a corrupt file, or one written under the other kind of
    /// budget, is ignored (with a log line); a pacer without a budget takes nothing.
    func testOldChargesAreDroppedAndAFileThatDoesNotFitIsIgnored() throws {
        let time = ManualTimeSource()
        let first = pacer(time)
        for _ in 0..<3 { _ = first.acquire(priority: .interactive, charge: .download) }
        time.advance(30)
        _ = first.acquire(priority: .interactive, charge: .list)
        QuotaCarryOver.save(from: first, in: directory)

        time.advance(30)
        XCTAssertEqual(QuotaCarryOver.load(into: pacer(time), from: directory), 100, "the downloads are a minute old")
        XCTAssertEqual(QuotaCarryOver.load(into: pacer(time, .legacy(requestsPerMinute: 100)), from: directory), 0,
                       "units are not requests")
        XCTAssertEqual(QuotaCarryOver.load(into: Pacer(time: time), from: directory), 0, "no budget, nothing to count")
        time.advance(30)
        XCTAssertEqual(QuotaCarryOver.load(into: pacer(time), from: directory), 0, "all of it a minute old")

        let path = directory.appendingPathComponent(QuotaCarryOver.fileName).path
        try Data("{\"metering\":".utf8).write(to: URL(fileURLWithPath: path))
        let afterCorrupt = pacer(time)
        XCTAssertEqual(QuotaCarryOver.load(into: afterCorrupt, from: directory), 0)
        XCTAssertEqual(afterCorrupt.acquire(priority: .interactive, charge: .download), .granted(waited: 0))

        // A clock set back: a charge dated in the future counts as now, not for longer.
        let record = QuotaCarryOver(metering: "units", spent: [.init(at: time.now() + 3_600, units: 1_000)])
        try JSONEncoder().encode(record).write(to: URL(fileURLWithPath: path))
        let skewed = pacer(time)
        XCTAssertEqual(QuotaCarryOver.load(into: skewed, from: directory), 1_000)
        XCTAssertEqual(skewed.acquire(priority: .interactive, charge: .read), .granted(waited: 60))
    }
}
