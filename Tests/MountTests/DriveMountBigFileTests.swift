import DriveClient
import Foundation
import XCTest

/// Sizes Drive cannot hold, through the kernel (issue "Not one accepted byte lost"): `truncate -s`
/// past 5 TB and a write past it answer EFBIG ("File too large") and change nothing; a truncate
/// below it is fine. The core's side is BigFileTests.
final class DriveMountBigFileTests: XCTestCase {
    func testTruncateAndWritesPastDrivesLargestFileAreFileTooLarge() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        let path = mount.path("small.txt")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: path))

        let truncate = try ExternalCommand.tool("truncate", ["-s", "6T", path], timeout: 30)
        XCTAssertNotEqual(truncate.status, 0, "truncate -s 6T must fail: \(truncate.summary)")
        XCTAssertTrue(truncate.errorOutput.contains("File too large"), "truncate -s 6T: \(truncate.summary)")
        // A write at 5 TiB (5,242,880 blocks of 1 MiB), where Drive's largest file ends: EFBIG.
        let dd = try ExternalCommand.tool("dd", ["if=/dev/zero", "of=\(path)", "bs=1M", "count=1", "seek=5242880",
                                                 "conv=notrunc"], timeout: 30)
        XCTAssertNotEqual(dd.status, 0, "a write at 5 TiB must fail: \(dd.summary)")
        XCTAssertTrue(dd.errorOutput.contains("File too large"), "dd at 5 TiB: \(dd.summary)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((attributes[.size] as? NSNumber)?.int64Value, 6, "a refused size change changed the size")

        try drive.drivefsUnmount(mount, timeout: 120)
        XCTAssertEqual(try drive.file(at: "small.txt").size, 6)
    }

    /// `truncate -s 1T` on an account with 15 GiB: the close answers ENOSPC ("No space left on
    /// device"), the file keeps its size, nothing is hashed or sent; truncated to 1 MiB it goes up,
    /// and the unmount then has nothing left.
    func testTruncateToATerabyteIsNoSpaceAtCloseAndATruncateBackLetsItGoUp() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        let path = mount.path("sparse.img")
        let big = try ExternalCommand.tool("truncate", ["-s", "1T", path], timeout: 60)
        XCTAssertNotEqual(big.status, 0, "truncate -s 1T on a 15 GiB account must fail: \(big.summary)")
        XCTAssertTrue(big.errorOutput.contains("No space left on device"), "truncate -s 1T: \(big.summary)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((attributes[.size] as? NSNumber)?.int64Value, 1 << 40, "the held file must keep its size")

        try ExternalCommand.tool("truncate", ["-s", "1M", path], timeout: 60).requireSuccess("truncate -s 1M of the held file")
        try drive.drivefsUnmount(mount, timeout: 120)
        XCTAssertEqual(try drive.file(at: "sparse.img").size, 1 << 20)
    }
}
