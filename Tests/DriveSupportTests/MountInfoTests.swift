import DriveSupport
import XCTest

/// The one reader of `/proc/self/mountinfo` (the cache directory's lock and the bridge's
/// connection guard both ask it).
final class MountInfoTests: XCTestCase {
    private let table = """
    36 35 98:0 / /mnt/plain rw,noatime master:1 - ext3 /dev/root rw
    40 35 0:41 / /home/me/my\\040drive rw,nosuid,nodev - fuse.drivefs drivefs:me@example.com rw,user_id=0
    41 35 0:52 / /home/me/tab\\011and\\134slash rw shared:7 master:2 - fuse fuse rw
    42 35 8:17 / /media/usb rw - fuseblk /dev/sdb1 rw
    not a line of mountinfo
    43 35 0:60 / /home/me/my\\040drive rw - fuse.drivefs drivefs rw
    """

    func testFieldsAreReadAndPathsDecoded() {
        let entries = MountInfo.entries(table)
        XCTAssertEqual(entries.count, 5, "the line that is not mountinfo is left out")
        XCTAssertEqual(entries[0], MountInfo.Entry(major: 98, minor: 0, mountPoint: "/mnt/plain", type: "ext3"))
        XCTAssertEqual(entries[1].mountPoint, "/home/me/my drive")
        XCTAssertEqual(entries[1].type, "fuse.drivefs")
        XCTAssertEqual(entries[2].mountPoint, "/home/me/tab\tand\\slash", "optional fields before the dash are skipped")
        XCTAssertEqual(entries.map(\.isFuse), [false, true, true, false, true], "fuseblk is a block device's mount")
        XCTAssertEqual(entries.last { $0.mountPoint == "/home/me/my drive" }?.minor, 60, "the newest mount last")
    }

    func testABackslashNotFollowedByThreeOctalDigitsIsKept() {
        XCTAssertEqual(MountInfo.unescaped("/a\\b"), "/a\\b")
        XCTAssertEqual(MountInfo.unescaped("/a\\08"), "/a\\08")
        XCTAssertEqual(MountInfo.unescaped("/end\\"), "/end\\")
    }
}
