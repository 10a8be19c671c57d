import DriveClient
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The quota a mount spent in its last minute outlives it (`QuotaCarryOver`): a mount that read a
/// file and was unmounted leaves what it spent in its cache directory, and the next mount over the
/// same cache directory counts it against its own minute from the start (what its pacer then waits
/// for is QuotaCarryOverTests', on an injected clock).
final class DriveMountQuotaCarryOverTests: XCTestCase {
    func testTheNextMountCountsWhatTheLastOneSpentInTheMinute() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("data.bin", in: seed, size: 256 << 10, seed: 7)
        }
        defer { drive.stop() }
        let first = try drive.mount()
        XCTAssertEqual(try ExternalCommand.tool("cmp", ["-s", first.path("data.bin"), drive.seed.appendingPathComponent("data.bin").path]).status, 0)
        XCTAssertEqual(try first.unmount(timeout: 30).status, 0)
        XCTAssertTrue(ExternalCommand.waitForExit(first.process, timeout: 60), "the first mount's daemon did not end\n\(first.log.suffix(2000))")

        let path = URL(fileURLWithPath: drive.cacheDirectory).appendingPathComponent(QuotaCarryOver.fileName)
        let left = try JSONDecoder().decode(QuotaCarryOver.self, from: try Data(contentsOf: path))
        XCTAssertEqual(left.metering, "units")
        let spent = left.spent.reduce(0) { $0 + $1.units }
        XCTAssertGreaterThan(spent, 200, "data.bin's download costs 200 units, the listings and polls more: \(left)")

        let second = try drive.mount()
        let said = try poll(timeout: 30, interval: 0.05) { second.log.contains("were spent by the previous mount") }
        XCTAssertTrue(said, "the second mount did not count the first one's minute\n\(second.log.suffix(2000))")
        let line = try XCTUnwrap(second.log.split(separator: "\n").first { $0.contains("were spent by the previous mount") })
        let before = try XCTUnwrap(line.range(of: " of this minute's "), String(line))
        let carried = try XCTUnwrap(Int(line[..<before.lowerBound].split(separator: " ").last ?? ""), String(line))
        XCTAssertGreaterThan(carried, 0, String(line))
        XCTAssertLessThanOrEqual(carried, spent, "only what the first mount left, less what left the minute since")
        XCTAssertEqual(try second.unmount(timeout: 30).status, 0)
        XCTAssertTrue(ExternalCommand.waitForExit(second.process, timeout: 60))
    }
}
