@testable import DriveClient
@testable import DriveFSCore
import Foundation
import Glibc
import XCTest

/// A local file an upload cannot read is the local disk's failure, not a bad request: whoever waits
/// for the upload (`fsync`, `close`) hears EIO, never EINVAL.
final class UploadSourceErrorTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("upload-source-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A directory opens but cannot be read (EISDIR): the read fails, as a failing disk's would.
    func testAReadErrorOfTheSourceIsEIO() {
        XCTAssertThrowsError(try PreparedSource(.file(path: directory))) { error in
            guard let drive = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(FilesystemError(drive).errno, EIO, "\(drive)")
            XCTAssertTrue("\(drive)".contains(directory), "the message names the file: \(drive)")
            XCTAssertTrue(UploadQueue.isPermanent(drive, in: .create), "another try reads the same file")
        }
    }

    func testAMissingSourceIsEIO() {
        XCTAssertThrowsError(try PreparedSource(.file(path: directory + "/gone"))) { error in
            guard let drive = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(FilesystemError(drive).errno, EIO, "\(drive)")
        }
    }
}
