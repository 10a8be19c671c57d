import DriveFSCore
import DriveSupport
import Glibc
import XCTest

/// The one map of a local file's errno to what the writer sees (staging copies, the block cache).
final class LocalErrorMapTests: XCTestCase {
    func testEveryRowOfTheLocalErrorMap() {
        let rows: [(Int32, Int32)] = [(ENOSPC, ENOSPC), (EDQUOT, ENOSPC), (EINTR, EINTR), (EIO, EIO), (EISDIR, EIO),
                                      (ENOENT, EIO), (EBADF, EIO), (EINVAL, EIO)]
        for (local, seen) in rows {
            XCTAssertEqual(FilesystemError(local: local).errno, seen, "errno \(local)")
            XCTAssertEqual(FilesystemError(local: SystemCallError("pwrite", errno: local)).errno, seen, "errno \(local)")
        }
    }
}
