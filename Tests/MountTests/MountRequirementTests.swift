import XCTest

/// The mount tests' skip policy: a machine without FUSE skips them, unless `DRIVEFS_MOUNT_REQUIRED=1`
/// (CI) turns that skip into a failure.
final class MountRequirementTests: XCTestCase {
    private let noFuseDevice = "/nonexistent/drivefs-test/fuse"

    func testMissingFuseDeviceSkipsByDefault() {
        XCTAssertThrowsError(try MountedDriveFS.requireFuse(environment: [:], fuseDevice: noFuseDevice)) { error in
            XCTAssertTrue(error is XCTSkip, "\(error)")
        }
    }

    func testMissingFuseDeviceFailsWhenMountsAreRequired() {
        XCTAssertThrowsError(try MountedDriveFS.requireFuse(environment: ["DRIVEFS_MOUNT_REQUIRED": "1"], fuseDevice: noFuseDevice)) { error in
            XCTAssertFalse(error is XCTSkip, "DRIVEFS_MOUNT_REQUIRED=1 must turn the skip into a failure")
            XCTAssertTrue("\(error)".contains(noFuseDevice), "\(error)")
        }
    }

    func testMissingFusermountFailsWhenMountsAreRequired() throws {
        let device = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-fake-fuse-\(UUID().uuidString)").path
        XCTAssertTrue(FileManager.default.createFile(atPath: device, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: device) }
        XCTAssertThrowsError(try MountedDriveFS.requireFuse(environment: ["DRIVEFS_MOUNT_REQUIRED": "1"], fuseDevice: device,
                                                            which: { _ in nil })) { error in
            XCTAssertFalse(error is XCTSkip)
            XCTAssertTrue("\(error)".contains("fusermount is missing"), "\(error)")
        }
        XCTAssertThrowsError(try MountedDriveFS.requireFuse(environment: [:], fuseDevice: device, which: { _ in nil })) { error in
            XCTAssertTrue(error is XCTSkip, "\(error)")
        }
        XCTAssertEqual(try MountedDriveFS.requireFuse(environment: ["DRIVEFS_MOUNT_REQUIRED": "1"], fuseDevice: device,
                                                      which: { $0 == "fusermount3" ? "/usr/bin/fusermount3" : nil }),
                       "/usr/bin/fusermount3")
    }
}
